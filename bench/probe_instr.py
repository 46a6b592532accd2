#!/usr/bin/env python3
# The probes' work counted in instructions (valgrind's callgrind), free of the host's
# noise: wall-clock figures of a 3% cost move by 1 to 6 points between invocations on a
# shared machine (bench/README.md, runs 49 and 50), instruction counts not at all.
# Per case, dl_bench_train runs four times under callgrind: probes off and on, each with
# S1 and S2 timed steps after WARMUP (default 2); the difference of the two counts is
# S2 - S1 steady iterations (default 9 and 25: iterations 11 to 26, where the step
# statistics are full at 2 in 16 as in a long run, runtime/probes.h), so loading the
# model and the first, all-full iterations cancel out. Prints instructions per step off
# and on, the overhead, and the functions whose counts the probes change most.
# What it does not see: memory traffic, caches and the host's noise. A count is the
# work; the time of a step also depends on where its data is.
# callgrind does not run AVX-512: the binary must be built without it, e.g.
#   cmake -S . -B build-avx2 -DCMAKE_BUILD_TYPE=Release -DDL_NATIVE=OFF \
#         -DCMAKE_CXX_FLAGS=-march=x86-64-v3 && cmake --build build-avx2 --target dl_bench_train
# (AVX2 + FMA: the machine class of issue 17's report.) ~500x slower than native or more:
# LeNet-5 and shufflenet_v2 about 5 minutes a case on 2 cores, mobilenet_v2 and the
# transformers well over half an hour.
# Usage: bench/probe_instr.py BIN CASES [TOP], e.g. bench/probe_instr.py build-avx2/bench/dl_bench_train s,b 12
# Environment: DATA (default /work/bench-data), S1, S2, WARMUP, JOBS (parallel runs,
# default the core count: nothing else should be timed meanwhile), KEEP=DIR (keep
# callgrind's files there).
import concurrent.futures, os, re, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cases import CASES  # noqa: E402

D = os.environ.get("DATA", "/work/bench-data")
S1, S2 = int(os.environ.get("S1", 9)), int(os.environ.get("S2", 25))
WARMUP = int(os.environ.get("WARMUP", 2))
JOBS = int(os.environ.get("JOBS", os.cpu_count() or 1))  # (every core: run it alone)
LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*?)(\s+\[(?!clone )[^\]]*\])?$")
TOTAL = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+PROGRAM TOTALS")


def functions(out_file):
    """Exclusive instruction counts per function (inlined code under its function)."""
    text = subprocess.run(["callgrind_annotate", "--auto=no", "--inclusive=no", "--threshold=100", out_file],
                          capture_output=True, text=True, check=True).stdout
    counts, total = {}, None
    for line in text.splitlines():
        t = TOTAL.match(line)
        if t:
            total = int(t.group(1).replace(",", ""))
            continue
        m = LINE.match(line)
        if not m:
            continue
        name = re.sub(r" \([\d,]+x\)$", "", m.group(2).split(":", 1)[-1])
        name = re.sub(r" \[clone [^\]]*\]", "", name)  # (a clone is its function's work)
        counts[name] = counts.get(name, 0) + int(m.group(1).replace(",", ""))
    # Every instruction under some function, or callgrind_annotate's format is not the one read here.
    if total is None or sum(counts.values()) != total:
        raise SystemExit(f"{out_file}: could not read callgrind_annotate's listing (functions sum to "
                         f"{sum(counts.values())}, PROGRAM TOTALS {total})")
    return counts


def run(binary, case, mode, steps, workdir):
    model, data, batch, _, _ = CASES[case]
    out = os.path.join(workdir, f"{case}_{mode}_{steps}.out")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, f"{D}/{model}", f"{D}/{data}",
           "--batch", str(batch), "--steps", str(steps), "--warmup", str(WARMUP), "--threads", "1",
           "--modes", mode, "--rounds", "1", "--peak-n", "0"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    return (case, mode, steps), functions(out)


def short(name):
    """The name without namespaces and template arguments (an op's lambdas made them
    kilobytes long), so that the member function shows: UnaryOp<>::bwd_step<>(...)."""
    name = name.replace("dl::rt::", "").replace("(anonymous namespace)::", "")
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
            if depth == 1:
                out.append("<>")
        elif ch == ">" and depth > 0:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)[:160]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__ or "usage: bench/probe_instr.py BIN CASES [TOP]")
    binary, cases = sys.argv[1], sys.argv[2].split(",")
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 12
    # The window must be a long run's steady state: past the first, all-full iterations
    # (kFirstFull = 8, runtime/probes.h), whole periods of the sparsest schedule (kFullEvery
    # = 16), and short of every case's first epoch end (32 batches: cases c and l).
    if WARMUP + S1 < 8 or (S2 - S1) % 16 or WARMUP + S2 > 31:
        sys.exit("need WARMUP + S1 >= 8, S2 - S1 a multiple of 16, WARMUP + S2 <= 31")
    for c in cases:
        if c not in CASES:
            sys.exit(f"unknown case {c!r} (bench/cases.py)")
    keep = os.environ.get("KEEP")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = keep or tmp
        os.makedirs(workdir, exist_ok=True)
        jobs = [(binary, c, m, s, workdir) for c in cases for m in ("off", "probes") for s in (S1, S2)]
        with concurrent.futures.ThreadPoolExecutor(JOBS) as pool:
            counts = dict(pool.map(lambda j: run(*j), jobs))
    n = S2 - S1
    for c in cases:
        per = {}
        for mode in ("off", "probes"):
            a, b = counts[(c, mode, S2)], counts[(c, mode, S1)]
            per[mode] = {k: (a.get(k, 0) - b.get(k, 0)) / n for k in set(a) | set(b)}
        off, on = sum(per["off"].values()), sum(per["probes"].values())
        print(f"PROBEINSTR case={c} model={CASES[c][0]} off_per_step={off:.0f} probes_per_step={on:.0f} "
              f"overhead_pct={100 * (on - off) / off:.2f} iterations={n}")
        delta = {k: per["probes"].get(k, 0) - per["off"].get(k, 0) for k in set(per["off"]) | set(per["probes"])}
        for k in sorted(delta, key=lambda k: -abs(delta[k]))[:top]:
            print(f"  {delta[k]:+12.0f} {100 * delta[k] / off:+6.2f}%  (off {per['off'].get(k, 0):11.0f})  {short(k)}")


if __name__ == "__main__":
    main()
