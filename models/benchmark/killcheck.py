#!/usr/bin/python3
"""The killed test of the real bugs (posts.py): each pair's buggy and fixed programs are
trained in PyTorch with Keras semantics (generate.torch_check) over 3 seeds (initial
weights and batch order), scored like models/suite scores its mutants (training accuracy
against the true labels, or R^2), and the buggy one counts as killed only when its mean is
below the fix's by more than the suite's margin with a one-sided Welch p < 0.05. A fix must
also train cleanly: every seed at or above the suite's minimum score for a base.

Run: /usr/bin/python3 models/benchmark/killcheck.py [PAIR ...]  (writes kill_log.json; exit 1
when a pair is not killed or a fix does not train).
"""
import json
import os
import sys
from multiprocessing import Pool

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import generate as kb  # noqa: E402
import posts  # noqa: E402
import posts_a  # noqa: E402,F401
import posts_b  # noqa: E402,F401
import posts_c  # noqa: E402,F401
import posts_d  # noqa: E402,F401

SEEDS = (0, 1, 2)


def scores(p, kind):
    suite = posts.suite()
    v = p[kind]
    task = "regression" if v["task"] == "regression" else "classification"
    out = []
    for s in SEEDS:
        model = v["net"](v["cfg"]["seed"] + s)
        cfg = dict(v["cfg"], seed=v["cfg"]["seed"] + s, nesterov=v["cfg"].get("nesterov") == "true")
        try:
            kb.torch_check(model, v["x"], v["y"], cfg, p["in_shape"])
            sc = suite.score(model, {"x": v["x"], "in_shape": p["in_shape"], "task": v["task"]}, v["ref"])
        except Exception:  # the program crashes: the worst score
            sc = 0.0 if task == "classification" else -1.0
        out.append(round(float(sc), 4))
    return task, out


def judge(i):
    torch.set_num_threads(1)
    p = posts.PAIRS[i]
    suite = posts.suite()
    task, bug = scores(p, "buggy")
    _, fix = scores(p, "fixed")
    p_value = suite.welch_p(fix, bug)
    killed = bool(np.mean(fix) - np.mean(bug) > suite.MARGIN[task] and p_value < 0.05)
    clean = bool(min(fix) >= suite.MIN_SCORE[task])
    return {"pair": p["name"], "split": posts.split_of(p["name"]), "task": task, "buggy": bug, "fixed": fix,
            "p": round(p_value, 5), "killed": killed, "fix_trains": clean, "dropped": p["dropped"]}


def main(argv):
    only = set(argv)
    todo = [i for i, p in enumerate(posts.PAIRS) if not only or p["name"] in only]
    with Pool(2) as pool:  # forked workers share PAIRS: pass indices (the nets are closures)
        rows = pool.map(judge, todo)
    path = os.path.join(HERE, "kill_log.json")
    log = {}
    if only and os.path.exists(path):
        log = {r["pair"]: r for r in json.load(open(path))["pairs"]}
    for r in rows:
        log[r["pair"]] = r
        print(f"{r['pair']:16s} {r['split']:7s} buggy {r['buggy']} fixed {r['fixed']} p={r['p']:.4f} "
              f"killed={r['killed']} fix_trains={r['fix_trains']}", flush=True)
    names = [p["name"] for p in posts.PAIRS]
    with open(path, "w") as f:
        json.dump({"seeds": list(SEEDS), "pairs": [log[n] for n in names if n in log]}, f, indent=1)
        f.write("\n")
    # A kept pair must be killed and its fix must train; a dropped one says why it is not kept.
    return 0 if all(r["killed"] and r["fix_trains"] for r in rows if not r["dropped"]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
