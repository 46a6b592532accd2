#!/usr/bin/env python3
# The probe overhead of one build, or of two side by side (A/B): per case and thread count,
# REPS invocations of dl_bench_train per binary (alternating, each binary first in turn),
# each ROUNDS rounds of probes off and on in one process; the
# figure is the median of every per-round paired ratio (probes on against off, process CPU
# time per step), with the quartiles of those ratios.
# Usage: bench/probe_ab.py CASES THREADS [REPS [ROUNDS]], e.g. bench/probe_ab.py t,s 1,2 2 5
# (from the repo root; cases as in bench/cases.py). Environment: NEW (default
# build/bench/dl_bench_train), BASE (default /work/base-bin/dl_bench_train; empty: NEW alone),
# BINS (comma-separated: any number of binaries instead, named by file name), DATA (default
# /work/bench-data), WARMUP and STEPS (override every case's warm-up and timed steps: e.g.
# WARMUP=8 STEPS=64 times a long run's steady state, where 1 iteration in 8 is recorded in
# full, instead of the first ones, which are all full: runtime/probes.h). MIN=1: each
# invocation runs `--profile` instead and gives its PROBEMIN figure (the probes' cost from
# each program step's shortest time over the invocation's rounds: light and full
# iterations and their mix in the timed window), and the figure is the median over the
# invocations; less noisy on a shared machine than the per-round ratios (bench/README.md,
# run 38). WALL=1 (with MIN=1): the profile's laps read the wall clock only
# (`--wall-laps`: no system call per program step, run 56).
import os, re, statistics, subprocess, sys

D = os.environ.get("DATA", "/work/bench-data")
BINS = {"new": os.environ.get("NEW", "build/bench/dl_bench_train")}
if os.environ.get("BASE", "/work/base-bin/dl_bench_train"):
    BINS = {"base": os.environ.get("BASE", "/work/base-bin/dl_bench_train"), **BINS}
if os.environ.get("BINS"):  # any number of binaries, named by their file names
    BINS = {os.path.basename(b): b for b in os.environ["BINS"].split(",")}
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cases import CASES  # model, data, batch, steps, warm-up: the harness's spec

cases = sys.argv[1].split(",")
threads = [int(t) for t in sys.argv[2].split(",")]
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 2
rounds = sys.argv[4] if len(sys.argv) > 4 else "5"
names = list(BINS)
MIN = os.environ.get("MIN", "") not in ("", "0")
WALL = os.environ.get("WALL", "") not in ("", "0")
for c in cases:
    m, d, b, s, w = CASES[c]
    s, w = int(os.environ.get("STEPS", s)), int(os.environ.get("WARMUP", w))
    for t in threads:
        ratios = {n: [] for n in names}
        offs = {n: [] for n in names}
        for rep in range(reps):
            for name in names[rep % len(names):] + names[:rep % len(names)]:  # each first in turn
                cmd = [BINS[name], f"{D}/{m}", f"{D}/{d}", "--batch", str(b), "--steps", str(s), "--warmup", str(w),
                       "--threads", str(t), "--rounds", rounds, "--modes", "off,probes", "--peak-n", "0"]
                out = subprocess.run(cmd + (["--profile"] if MIN else []) + (["--wall-laps"] if MIN and WALL else []),
                                     capture_output=True, text=True).stdout
                if MIN:
                    mm = re.search(r"PROBEMIN .*off_ms=([\d.]+) .*light_pct=([-\d.]+) full_pct=([-\d.]+) window_pct=([-\d.]+)", out)
                    if mm:
                        ratios[name].append([float(x) / 100 for x in mm.group(4, 2, 3)])
                        offs[name].append(1000 * float(mm.group(1)))
                    continue
                per = {}
                for line in out.splitlines():
                    mm = re.match(r"round (\d+)\s+(off|probes)\s+[\d.]+ steps/s\s+[\d.]+ GFLOP/s\s+([\d.]+) us CPU", line)
                    if mm: per.setdefault(int(mm.group(1)), {})[mm.group(2)] = float(mm.group(3))
                for r, v in per.items():
                    if "off" in v and "probes" in v:
                        ratios[name].append(v["probes"] / v["off"] - 1)
                        offs[name].append(v["off"])

        def summary(n):
            if MIN:
                if not ratios[n]: return f"{n}: no runs"
                col = lambda i: 100 * statistics.median(v[i] for v in ratios[n])
                return (f"{n}: PROBEMIN window median {col(0):+.1f}% (light {col(1):+.1f}%, full {col(2):+.1f}%; "
                        f"range {100*min(v[0] for v in ratios[n]):+.1f}% {100*max(v[0] for v in ratios[n]):+.1f}%) over "
                        f"{len(ratios[n])} invocations (off {statistics.median(offs[n])/1000:.2f} ms/iteration)")
            r = sorted(ratios[n])
            if not r: return f"{n}: no rounds"
            q = statistics.quantiles(r, n=4) if len(r) > 1 else [r[0], r[0], r[0]]
            return (f"{n}: overhead median {100*statistics.median(r):+.1f}% (quartiles {100*q[0]:+.1f}% "
                    f"{100*q[2]:+.1f}%) over {len(r)} paired rounds (off {statistics.median(offs[n])/1000:.2f} ms CPU/step)")
        print(f"{m} threads {t}: " + "  ".join(summary(n) for n in names), flush=True)
