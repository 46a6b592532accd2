#!/usr/bin/python3
"""Copies a small, fixed sample of a generated suite into models/suite/sample (committed),
for the floor test `make test` runs (tests/suite/check.sh): per split, every STEP-th case
in name order among the small cases (data file under 200 kB): about 10 buggy and 6
healthy cases per split.

Run: /usr/bin/python3 models/suite/make_sample.py SUITE_DIR   (after generate.py)
"""
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = {"buggy": 10, "healthy": 6}
MAX_DATA_BYTES = 200_000


def main(src):
    out = os.path.join(HERE, "sample")
    shutil.rmtree(out, ignore_errors=True)
    for split in ("dev", "heldout"):
        cases = json.load(open(os.path.join(src, split, "manifest.json")))["cases"]
        small = sorted((c for c in cases if os.path.getsize(os.path.join(src, split, c["data"])) <= MAX_DATA_BYTES),
                       key=lambda c: c["name"])
        picked = []
        for kind, n in TARGET.items():
            of_kind = [c for c in small if c["kind"] == kind]
            picked += of_kind[::max(1, len(of_kind) // n)][:n]
        picked.sort(key=lambda c: c["name"])
        for c in picked:
            shutil.copytree(os.path.join(src, split, c["name"]), os.path.join(out, split, c["name"]))
        with open(os.path.join(out, split, "manifest.json"), "w") as f:
            json.dump({"cases": picked}, f, indent=1)
            f.write("\n")
        print(f"{split}: {len(picked)} cases ({sum(c['kind'] == 'buggy' for c in picked)} buggy)")


if __name__ == "__main__":
    main(sys.argv[1])
