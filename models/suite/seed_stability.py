#!/usr/bin/python3
"""Seed stability of the verdict (issue 15, item 2): for a small fixed sample of clearly
healthy and clearly buggy cases, `deeplocalize train --seed S` for S = 1..SEEDS must give
the same verdict in at least 9 of 10 seeds (the seed sets the batch order and dropout
masks; the initial weights are the model file's).

The sample: the committed suite sample (models/suite/sample, both splits). Clearly healthy:
its healthy cases (bases and benign changes). Clearly buggy: its buggy cases whose
mutant scored, on every one of the 3 PyTorch seeds of the kill test (kill_log.json),
below the base's lowest score by more than MARGIN (a mutant only just killed may flip
between seeds by right).

Run: /usr/bin/python3 models/suite/seed_stability.py build/deeplocalize [--seeds 10] [--jobs 2]
Prints one line per case and a summary; exit 1 when a case is unstable. `make suite` runs it.
"""
import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
MARGIN = 0.2
AGREE = 0.9


def clear_cases():
    kill = {}
    for entry in json.load(open(os.path.join(HERE, "kill_log.json"))):
        for m in entry["mutants"]:
            kill[(entry["base"], m["operator"])] = (min(entry["scores"]), max(m["scores"]))
    cases = []
    for split in ("dev", "heldout"):
        root = os.path.join(HERE, "sample", split)
        for c in json.load(open(os.path.join(root, "manifest.json")))["cases"]:
            if c["kind"] == "buggy":
                base, op = c["name"].split("__", 1)
                lo_base, hi_mutant = kill.get((base, op), (0.0, 1.0))
                if hi_mutant > lo_base - MARGIN:
                    continue
            cases.append((split, c["name"], c["kind"], os.path.join(root, c["model"]), os.path.join(root, c["data"])))
    return cases


def verdict(binary, model, data, seed):
    r = subprocess.run([binary, "train", model, data, "--seed", str(seed), "--format", "json", "--quiet"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if r.returncode not in (0, 1):
        return f"exit {r.returncode}"
    return json.loads(r.stdout)["verdict"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    cases = clear_cases()
    jobs = [(c, s) for c in cases for s in range(1, a.seeds + 1)]
    with ThreadPoolExecutor(a.jobs) as pool:
        got = list(pool.map(lambda j: verdict(a.binary, j[0][3], j[0][4], j[1]), jobs))
    unstable, expected = 0, 0
    for k, (split, name, kind, _, _) in enumerate(cases):
        v = Counter(got[k * a.seeds:(k + 1) * a.seeds])
        top, n = v.most_common(1)[0]
        stable = n >= AGREE * a.seeds
        unstable += not stable
        expected += top == ("fault" if kind == "buggy" else "ok")
        print(f"{split:8s} {kind:8s} {name:50s} {dict(v)}{'' if stable else '  UNSTABLE'}")
    print(f"seed stability: {len(cases) - unstable}/{len(cases)} cases give the same verdict in >= "
          f"{AGREE * a.seeds:.0f} of {a.seeds} seeds ({sum(k == 'healthy' for _, _, k, _, _ in cases)} healthy, "
          f"{sum(k == 'buggy' for _, _, k, _, _ in cases)} buggy); the usual verdict is the expected one for "
          f"{expected}/{len(cases)}")
    return 1 if unstable else 0


if __name__ == "__main__":
    sys.exit(main())
