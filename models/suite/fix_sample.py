#!/usr/bin/python3
"""A fixed, seeded sample of a generated suite's buggy cases, stratified by mutation
operator, for measuring verified fixes (`batch --verify-fixes` retrains every detected
fault up to 12 times, too slow for a whole split on a shared 2-core machine).

Per split and operator, at most PER_OP cases drawn with random.Random(SEED) from that
operator's cases in name order; every operator with a case is represented. Writes
OUT/<split>-fixes/manifest.json with absolute paths into SUITE_DIR/<split>.

Run: /usr/bin/python3 models/suite/fix_sample.py SUITE_DIR OUT [--per-op 5] [--seed 15]
     (--per-op 0 takes every buggy case of the split)
"""
import argparse
import json
import os
import random
from collections import defaultdict


def sample(cases, per_op, seed):
    by_op = defaultdict(list)
    for c in sorted(cases, key=lambda c: c["name"]):
        if c["kind"] == "buggy" and "__" in c["name"]:
            by_op[c["name"].split("__", 1)[1]].append(c)
    rng = random.Random(seed)
    picked = []
    for op in sorted(by_op):
        of_op = by_op[op]
        picked += of_op if per_op <= 0 or len(of_op) <= per_op else rng.sample(of_op, per_op)
    return sorted(picked, key=lambda c: c["name"])


def absolute(case, root):
    out = dict(case)
    for key in ("model", "data", "expected"):
        if isinstance(out.get(key), str) and not os.path.isabs(out[key]):
            out[key] = os.path.join(root, out[key])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite")
    ap.add_argument("out")
    ap.add_argument("--per-op", type=int, default=5)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--splits", default="dev,heldout")
    a = ap.parse_args()
    for split in a.splits.split(","):
        root = os.path.abspath(os.path.join(a.suite, split))
        cases = json.load(open(os.path.join(root, "manifest.json")))["cases"]
        picked = [absolute(c, root) for c in sample(cases, a.per_op, a.seed)]
        d = os.path.join(a.out, split + "-fixes")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "manifest.json"), "w") as f:
            json.dump({"cases": picked}, f, indent=1)
            f.write("\n")
        ops = len({c["name"].split("__", 1)[1] for c in picked})
        print(f"{split}: {len(picked)} buggy cases over {ops} operators -> {d}/manifest.json")


if __name__ == "__main__":
    main()
