#!/usr/bin/env bash
# Throughput of builds side by side: REPS invocations of dl_bench_train per binary, the
# binaries alternating, each 4 rounds of probes off and on; prints per binary and mode the
# median steps/s over all rounds. Cases as in run.sh's spec (from the repo root):
#   bench/speed_ab.sh MODEL DATA BATCH THREADS REPS BIN...
#   e.g. bench/speed_ab.sh transformer.onnx seq1k.npy 16 1 3 OLD/dl_bench_train NEW/dl_bench_train
# Binaries are named by their file names (copy them to distinct names). DATA dir: $DATA
# (default /work/bench-data).
set -eu
model=$1 data=$2 batch=$3 threads=$4 reps=$5
shift 5
dir=${DATA:-/work/bench-data}
for _ in $(seq "$reps"); do
  for bin in "$@"; do
    "$bin" "$dir/$model" "$dir/$data" --batch "$batch" --steps 16 --warmup 2 --threads "$threads" \
      --modes off,probes --rounds 4 --peak-n 0 2>&1 |
      awk -v n="$(basename "$bin")" '/^round [0-9]+  (off|probes) / {print n, $3, $4}'
  done
done | /usr/bin/python3 -c '
import collections, statistics, sys
d = collections.defaultdict(list)
for line in sys.stdin:
    name, mode, v = line.split()
    d[(name, mode)].append(float(v))
for (name, mode), v in sorted(d.items()):
    print(f"{name:24s} {mode:7s} median {statistics.median(v):8.2f} steps/s  rounds={len(v)}")
'
