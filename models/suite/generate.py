#!/usr/bin/python3
"""Generates the fault suite: healthy bases, their benign variants (healthy cases) and
their mutants (buggy cases), each as an ONNX model with metadata, CSV data and the
expected diagnosis, in two splits by base: development (tuning) and held-out (reporting).

Run: /usr/bin/python3 models/suite/generate.py [--out DIR] [--jobs N] [--only BASE,...]
     (Debian python3-torch, python3-onnx, python3-sklearn; no downloads; deterministic)
Writes DIR/dev/manifest.json and DIR/heldout/manifest.json (deeplocalize batch
manifests), one folder per case, and DIR/kill_log.json (every base, mutant and benign
change with its scores and the verdict of the killed test). Default DIR: build/suite.

Killed or equivalent (DeepCrime-style): every base and mutant is trained in PyTorch with
Keras semantics over 3 seeds (initial weights and batch order); its score is the training
accuracy against the base's own labels (classification) or R^2 (regression), after the
last epoch. A mutant is a buggy case only when its mean score is below the base's by more
than MARGIN and a one-sided Welch t-test gives p < 0.05 (a crash or NaN scores 0); the
others are dropped as equivalent. A base must reach MIN_SCORE over all 3 seeds; a benign
change must stay within MARGIN of its base's mean (one seed, the exported one).
"""
import argparse
import json
import math
import os
import sys
import zlib
from multiprocessing import Pool

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "benchmark"))
import generate as kb  # noqa: E402  (models/benchmark/generate.py: Keras-semantics helpers)
import torch  # noqa: E402

import bases as suite_bases  # noqa: E402
import mutations  # noqa: E402
from spec import build  # noqa: E402

SEEDS = (0, 1, 2)
MARGIN = {"classification": 0.05, "regression": 0.10}
MIN_SCORE = {"classification": 0.70, "regression": 0.50}
META = ["loss", "optimizer", "learning_rate", "momentum", "nesterov", "epochs", "batch_size", "seed",
        "targets"]


def kind(spec):
    return "regression" if spec["task"] == "regression" else "classification"


def heldout(base_name):
    return zlib.crc32(base_name.encode()) % 3 == 0


def score(model, spec, y_ref):
    """Accuracy against y_ref (classification) or R^2 (regression), model in eval mode."""
    model.eval()
    with torch.no_grad():
        x = torch.tensor(np.asarray(spec["x"], dtype=np.float32)).reshape((len(spec["x"]),) + tuple(spec["in_shape"]))
        p = model(x).numpy()
    if not np.all(np.isfinite(p)):
        return 0.0 if kind(spec) == "classification" else -1.0
    y = np.asarray(y_ref, dtype=np.float64).reshape(len(p), -1)
    if spec["task"] == "regression":
        r2 = 1.0 - ((p - y) ** 2).sum() / max(((y - y.mean()) ** 2).sum(), 1e-12)
        return float(max(r2, -1.0))
    if spec["task"] in ("binary", "multilabel"):
        return float(((p > 0.5) == (y > 0.5)).mean())
    ids = y.argmax(1) if y.shape[1] > 1 else y.reshape(-1)
    return float((p.argmax(1) == ids).mean())


def train_score(spec, seed, y_ref):
    model, _ = build(spec, seed)
    cfg = dict(spec["cfg"], seed=spec["cfg"]["seed"] + seed)
    try:
        kb.torch_check(model, spec["x"], spec["y"], cfg, spec["in_shape"])
    except Exception:  # e.g. class ids out of range: the program crashes
        return 0.0 if kind(spec) == "classification" else -1.0
    return score(model, spec, y_ref)


def welch_p(a, b):
    """One-sided p-value of mean(a) > mean(b) (Welch's t-test)."""
    a, b = np.asarray(a), np.asarray(b)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    diff = a.mean() - b.mean()
    if va + vb < 1e-12:
        return 0.0 if diff > 0 else 1.0
    t = diff / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    from scipy import stats  # python3-scipy comes with python3-sklearn
    return float(stats.t.sf(t, df))


def ref_labels(base, mutant):
    return mutant["y"] if base["task"] == "regression" else base["y"]


def layer_nodes(spec, proto, touched):
    """ONNX node names of the tool's layers (contract) that hold the touched spec layers."""
    _, spans = build(spec, 0)
    prefixes = tuple(f"/{j}/" for i in touched for j in range(*spans[i]))
    out = []
    for layer in kb.onnx_layers(proto):
        if any(n.startswith(prefixes) for n in layer):
            out += [n for n in layer if n not in out]
    return out


def write_case(out_dir, name, spec, expected):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    model, _ = build(spec, 0)
    cfg = spec["cfg"]
    meta = {k: cfg[k] for k in META if k in cfg}
    for k in ("nesterov",):
        if k in meta:
            meta[k] = "true" if meta[k] else "false"
    meta["from_logits"] = "false"
    proto = kb.export(model, spec["in_shape"], os.path.join(d, "model.onnx"), meta)
    kb.write_csv(os.path.join(d, "data.csv"), spec["x"], spec["y"])
    expected = dict(expected)
    expected["nodes"] = layer_nodes(spec, proto, expected.pop("touched", []))
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")
    return {"name": name, "model": name + "/model.onnx", "data": name + "/data.csv", "options": {},
            "expected": name + "/expected.json", "kind": expected["kind"], "source": "suite", "pair": None}


def process(args):
    base, out_root = args
    torch.set_num_threads(1)
    split = "heldout" if heldout(base["name"]) else "dev"
    out_dir = os.path.join(out_root, split)
    k = kind(base)
    base_scores = [train_score(base, s, base["y"]) for s in SEEDS]
    log = {"base": base["name"], "split": split, "scores": base_scores, "mutants": [], "benign": []}
    if min(base_scores) < MIN_SCORE[k]:
        log["dropped"] = f"does not train cleanly: min score {min(base_scores):.3f} < {MIN_SCORE[k]}"
        return log, []
    mean = float(np.mean(base_scores))
    cases = [write_case(out_dir, base["name"], base, {"fault": False, "root_causes": [], "kind": "healthy",
                                                       "notes": "suite base"})]
    for bname, b in mutations.benign(base):
        sc = train_score(b, 0, base["y"])
        ok = sc >= mean - MARGIN[k]
        log["benign"].append({"change": bname, "score": sc, "kept": ok})
        if ok:
            cases.append(write_case(out_dir, f"{base['name']}__{bname}", b,
                                    {"fault": False, "root_causes": [], "kind": "healthy",
                                     "notes": f"suite base {base['name']} with a benign change: {bname}"}))
    for op, m, touched, causes in mutations.mutants(base):
        ref = ref_labels(base, m)
        sc = [train_score(m, s, ref) for s in SEEDS]
        p = welch_p(base_scores, sc)
        killed = float(np.mean(sc)) < mean - MARGIN[k] and p < 0.05
        log["mutants"].append({"operator": op, "scores": sc, "p": p, "killed": killed})
        if killed:
            cases.append(write_case(out_dir, f"{base['name']}__{op}", m,
                                    {"fault": True, "root_causes": causes, "touched": touched, "kind": "buggy",
                                     "operator": op, "notes": f"suite base {base['name']}, mutation {op}"}))
    return log, [(split, c) for c in cases]


def write_manifests(out, cases, logs):
    for split, cs in cases.items():
        os.makedirs(os.path.join(out, split), exist_ok=True)
        tmp = os.path.join(out, split, "manifest.json.part")
        with open(tmp, "w") as f:
            json.dump({"cases": cs}, f, indent=1)
        os.replace(tmp, os.path.join(out, split, "manifest.json"))
    with open(os.path.join(out, "kill_log.json"), "w") as f:
        json.dump(logs, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "build", "suite"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    todo = [b for b in suite_bases.bases() if not only or b["name"] in only]
    logs, cases = [], {"dev": [], "heldout": []}
    with Pool(a.jobs) as pool:
        # Manifests are rewritten after every base, so an interrupted run leaves a usable
        # suite of the bases finished so far (in base order, whatever the job count).
        for log, cs in pool.imap(process, [(b, a.out) for b in todo]):
            logs.append(log)
            for split, c in cs:
                cases[split].append(c)
            killed = sum(m["killed"] for m in log["mutants"])
            print(f"{log['base']:28s} {log['split']:7s} score {np.mean(log['scores']):.3f} "
                  f"{log.get('dropped', '')} mutants killed {killed}/{len(log['mutants'])} "
                  f"benign kept {sum(b['kept'] for b in log['benign'])}/{len(log['benign'])}", flush=True)
            write_manifests(a.out, cases, logs)
    write_manifests(a.out, cases, logs)
    for split, cs in cases.items():
        print(f"{split}: {sum(c['kind'] == 'buggy' for c in cs)} buggy, {sum(c['kind'] == 'healthy' for c in cs)} healthy")


if __name__ == "__main__":
    main()
