#!/usr/bin/python3
"""Tables of a suite run: per split (development, held-out) the detection, localization,
root-cause and false-alarm rates with 95% Wilson intervals, then per mutation operator
and per benign change, as Markdown.

Run: /usr/bin/python3 models/suite/report.py DIR [DIR...]   (each DIR holds dev.json and
heldout.json, the `deeplocalize batch --json` summaries of DIR/dev and DIR/heldout; `make
suite`). Several DIRs are pooled split by split: a suite generated in parts.
With DIR/dev-fixes.json and DIR/heldout-fixes.json (`batch --verify-fixes` over the
samples of models/suite/fix_sample.py; `make suite-fixes`) it also prints the verified-fix
rate per split and how often a repair confirmed the first diagnosis.
"""
import json
import math
import os
import sys
from collections import defaultdict


def wilson(k, n, z=1.959963984540054):
    if n == 0:
        return 0.0, 1.0
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, c - h), min(1.0, c + h)


def rate(k, n):
    if n == 0:
        return "n/a"
    lo, hi = wilson(k, n)
    return f"{k}/{n} = {100 * k / n:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}]"


def fix_rows(cases):
    """Counts over the detected faults that tried repairs (`batch --verify-fixes`)."""
    n = verified = guess = with_layer = layer = 0
    for c in cases:
        fix = c.get("fix")
        if not isinstance(fix, dict) or c["scores"].get("detected") is not True:
            continue
        n += 1
        verified += fix.get("verified") is True
        guess += fix.get("first_root_cause_confirmed") is True
        if isinstance((c.get("primary") or {}).get("layer"), dict):
            with_layer += 1
            layer += fix.get("localization") == "confirmed"
    return n, verified, guess, with_layer, layer


def fixes_table(dirs):
    """Verified fixes per split, pooled over `dirs`, from DIR/<split>-fixes.json (or the
    split's own summary when it was run with --verify-fixes): the `batch --verify-fixes`
    summary of a sample (models/suite/fix_sample.py) or of the whole split."""
    rows = []
    for split in ("dev", "heldout"):
        buggy, counts = 0, [0, 0, 0, 0, 0]
        found = False
        for d in dirs:
            for name in (split + "-fixes.json", split + ".json"):
                path = os.path.join(d, name)
                if not os.path.exists(path):
                    continue
                s = json.load(open(path))
                if not s.get("options", {}).get("verify_fixes"):
                    continue
                found = True
                buggy += sum(c["kind"] == "buggy" for c in s["cases"])
                counts = [a + b for a, b in zip(counts, fix_rows(s["cases"]))]
                break
        if found:
            rows.append((split, buggy, counts))
    if not rows:
        return
    print("\n| split (--verify-fixes) | buggy cases run | verified fix for detected faults | "
          "first root cause confirmed by a repair | primary layer confirmed by a layer-only repair |")
    print("|---|---|---|---|---|")
    for split, buggy, (n, verified, guess, with_layer, layer) in rows:
        print(f"| {split} | {buggy} | {rate(verified, n)} | {rate(guess, n)} | {rate(layer, with_layer)} |")


TOTAL_KEYS = ("detected", "faulty", "localized", "localizable", "root_cause", "root_cause_cases", "false_alarms",
              "non_faulty")


def main(dirs):
    """Tables over the runs in `dirs`, pooled split by split (a suite generated in parts,
    e.g. `generate.py --only` into several folders)."""
    rows, per_op, per_benign = [], defaultdict(lambda: defaultdict(lambda: [0, 0])), defaultdict(lambda: [0, 0])
    for split in ("dev", "heldout"):
        paths = [os.path.join(d, split + ".json") for d in dirs if os.path.exists(os.path.join(d, split + ".json"))]
        if not paths:
            continue
        t = dict.fromkeys(TOTAL_KEYS, 0)
        for path in paths:
            s = json.load(open(path))
            for key in TOTAL_KEYS:
                t[key] += s["totals"][key]
            for c in s["cases"]:
                sc, name = c["scores"], c["name"]
                change = name.split("__", 1)[1] if "__" in name else "(base)"
                if c["kind"] == "buggy":
                    for key in ("detected", "localized", "root_cause"):
                        if sc.get(key) is not None:
                            per_op[change][key][0] += bool(sc[key])
                            per_op[change][key][1] += 1
                elif sc.get("false_alarm") is not None:
                    per_benign[change][0] += bool(sc["false_alarm"])
                    per_benign[change][1] += 1
        rows.append((split, t))
    print("| split | detected (killed mutants) | localized (layer mutants) | accepted root cause | "
          "false alarms (healthy runs) |")
    print("|---|---|---|---|---|")
    for split, t in rows:
        print(f"| {split} | {rate(t['detected'], t['faulty'])} | {rate(t['localized'], t['localizable'])} | "
              f"{rate(t['root_cause'], t['root_cause_cases'])} | {rate(t['false_alarms'], t['non_faulty'])} |")
    fixes_table(dirs)
    print("\n| mutation operator (both splits) | detected | localized | root cause |")
    print("|---|---|---|---|")
    for op in sorted(per_op):
        r = per_op[op]
        print(f"| {op} | {rate(*r['detected'])} | {rate(*r['localized'])} | {rate(*r['root_cause'])} |")
    print("\n| healthy case (both splits) | false alarms |")
    print("|---|---|")
    for ch in sorted(per_benign):
        print(f"| {ch} | {rate(*per_benign[ch])} |")


if __name__ == "__main__":
    main(sys.argv[1:] or ["build/suite"])
