#!/usr/bin/env python3
# Interleaved A/B of the probe overhead: base vs new dl_bench_train, per case and thread count.
# Usage: bench/probe_ab.py CASES THREADS [REPS [ROUNDS]], e.g. bench/probe_ab.py t,s 1,2 2 5 (from the repo root;
# cases as in bench/run.sh spec, data in /work/bench-data, base binary in /work/base-bin).
import subprocess, sys, re, statistics
D = "/work/bench-data"
BINS = {"base": "/work/base-bin/dl_bench_train", "new": "build/bench/dl_bench_train"}
CASES = {"t": ("transformer.onnx", "seq1k.npy", 16, 16, 2), "s": ("shufflenet_v2_x0_5.onnx", "cifar1k.npy", 16, 16, 2),
         "l": ("lstm_cls.onnx", "seq1k.npy", 32, 16, 2), "a": ("mlp_a.onnx", "mnist60k.npy", 64, 300, 20),
         "r": ("resnet18.onnx", "cifar1k.npy", 16, 16, 2), "m": ("mobilenet_v2.onnx", "cifar1k.npy", 16, 16, 2)}
cases = sys.argv[1].split(",")
threads = [int(t) for t in sys.argv[2].split(",")]
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 2
rounds = sys.argv[4] if len(sys.argv) > 4 else "5"
for c in cases:
    m, d, b, s, w = CASES[c]
    for t in threads:
        ratios = {"base": [], "new": []}
        offs = {"base": [], "new": []}
        for rep in range(reps):
            for name in (["base", "new"] if rep % 2 == 0 else ["new", "base"]):
                cmd = [BINS[name], f"{D}/{m}", f"{D}/{d}", "--batch", str(b), "--steps", str(s), "--warmup", str(w),
                       "--threads", str(t), "--rounds", rounds, "--modes", "off,probes", "--peak-n", "0"]
                out = subprocess.run(cmd, capture_output=True, text=True).stdout
                per = {}
                for line in out.splitlines():
                    mm = re.match(r"round (\d+)\s+(off|probes)\s+[\d.]+ steps/s\s+[\d.]+ GFLOP/s\s+([\d.]+) us CPU", line)
                    if mm: per.setdefault(int(mm.group(1)), {})[mm.group(2)] = float(mm.group(3))
                for r, v in per.items():
                    if "off" in v and "probes" in v:
                        ratios[name].append(v["probes"] / v["off"] - 1)
                        offs[name].append(v["off"])
        print(f"{m} threads {t}: " + "  ".join(
            f"{n}: overhead median {100*statistics.median(ratios[n]):+.1f}% over {len(ratios[n])} paired rounds "
            f"(off {statistics.median(offs[n])/1000:.2f} ms CPU/step)" for n in ("base", "new")), flush=True)
