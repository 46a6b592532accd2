#!/bin/bash
# Runs the benchmark harness: deeplocalize (probes off / probes / probes + online
# analysis) and PyTorch on the same models, weights, data and thread count, rounds
# alternating between the two in this one invocation, then prints a markdown table.
#
#   bench/run.sh [BUILD_DIR]        (default: build; `make bench` runs it)
#
# Environment: ROUNDS (5; ROUNDS_C for case c and the torchvision nets, default 3),
# THREADS (the thread counts to run, default "1 nproc"), DATA (BUILD_DIR/bench-data),
# CASES (default "a b c r m s l t e": r resnet18, m mobilenet_v2, s shufflenet_v2_x0_5,
# l the LSTM classifier, t the TransformerEncoder (bench/seq_nets.py), e the ConvTranspose
# autoencoder (bench/ae_net.py)),
# MICRO=0 skips the Google Benchmark GEMM peak, PROFILE=0 skips the per-op-type
# profile of the torchvision nets and of the probes' cost on them.
# TORCH_ISA=avx2 runs PyTorch as on an AVX2+FMA machine without AVX-512 (oneDNN's
# convolutions, ATen's kernels and OpenBLAS capped at AVX2; the header names the cap):
# pair it with a deeplocalize build for such a machine, e.g.
#   cmake -S . -B build-avx2 -DDL_NATIVE=OFF -DCMAKE_CXX_FLAGS='-march=x86-64-v3'
#   TORCH_ISA=avx2 bench/run.sh build-avx2
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
ROUNDS=${ROUNDS:-5}
ROUNDS_C=${ROUNDS_C:-3}
THREADS=${THREADS:-"1 $(nproc)"}
DATA=${DATA:-$BUILD/bench-data}
CASES=${CASES:-a b c r m s l t k e}
MICRO=${MICRO:-1}
PROFILE=${PROFILE:-1}
PY=/usr/bin/python3
TORCH_ISA=${TORCH_ISA:-}
case $TORCH_ISA in
  "") ;;
  avx2) export ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 OPENBLAS_CORETYPE=Haswell ;;
  *) echo "TORCH_ISA: only avx2 (or unset: PyTorch picks the CPU's widest ISA)" >&2; exit 2 ;;
esac
DRIVER=$BUILD/bench/dl_bench_train
MICROBIN=$BUILD/bench/dl_micro_bench

# PyTorch on Debian's reference BLAS is several times slower: compare against OpenBLAS.
if ! dpkg -s libopenblas0-pthread >/dev/null 2>&1; then
  echo "installing libopenblas0-pthread (PyTorch's BLAS) ..."
  SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get install -y libopenblas0-pthread >/dev/null || {
    $SUDO apt-get update >/dev/null && $SUDO apt-get install -y libopenblas0-pthread >/dev/null; }
fi
[ -x "$DRIVER" ] || { echo "missing $DRIVER: build the dl_bench_train target first" >&2; exit 2; }
# OpenBLAS (Debian's 0.3.21) falls back to its SSE3 kernels ("Prescott") on a CPU model it
# does not know (seen on an Intel Xeon of family 6, model 207, with AVX-512: run 63), and
# PyTorch's products then run at a fraction of the CPU's speed. The comparison is against
# PyTorch at its best on this CPU: name the kernel set of the CPU's widest ISA instead.
blas_note=
if [ -z "$TORCH_ISA" ] && [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  blas_core=$($PY -c "
import ctypes, os
f = ctypes.CDLL(os.path.realpath('/usr/lib/x86_64-linux-gnu/libblas.so.3')).openblas_get_corename
f.restype = ctypes.c_char_p
print(f().decode())" 2>/dev/null || true)
  if [ "$blas_core" = Prescott ]; then
    if grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
    elif grep -qw avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell; fi
    [ -n "${OPENBLAS_CORETYPE:-}" ] &&
      blas_note="; OpenBLAS does not know this CPU (it picked Prescott, SSE3 kernels): OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE"
  fi
fi

# Models, and the data both sides read (the CSV parsed once into .npy).
if [ ! -f "$DATA/wide4096.npy" ] || [ ! -f "$DATA/lenet5.onnx" ] || [ ! -f "$DATA/cifar1k.npy" ] ||
  [ ! -f "$DATA/seq1k.npy" ] || [ ! -f "$DATA/ae1k.npy" ]; then
  $PY "$ROOT/bench/gen_bench_models.py" "$DATA" >/dev/null
fi
if [ ! -f "$DATA/mnist60k.npy" ]; then
  $PY -c "
import numpy as np, sys
with open(sys.argv[1]) as f:
    f.readline()
    np.save(sys.argv[2], np.loadtxt(f, delimiter=',', dtype=np.float32))" "$DATA/mnist60k.csv" "$DATA/mnist60k.npy"
fi

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "# deeplocalize benchmark  $(date -u +%Y-%m-%dT%H:%MZ)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; threads $THREADS; rounds $ROUNDS (c: $ROUNDS_C)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "torch $($PY -c 'import torch; print(torch.__version__)' 2>/dev/null), BLAS $(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 | sed 's|.*/x86_64-linux-gnu/||')"
# The widest vector ISA of this CPU (a native build targets it; DL_NATIVE=OFF builds do not).
isa=sse2; grep -qw avx2 /proc/cpuinfo && isa="avx2+fma"; grep -qw avx512f /proc/cpuinfo && isa=avx512f
native=$(sed -n 's/^DL_NATIVE:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
flags=$(sed -n 's/^CMAKE_CXX_FLAGS:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
tune=$(sed -n 's/^DL_TUNE:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
echo "cpu vector ISA: $isa; $BUILD configured with DL_NATIVE=${native:-ON} (ON: -march=native, the kernels use $isa)," \
  "DL_TUNE '${tune}' (native builds' -mtune; empty: the compiler's choice), CMAKE_CXX_FLAGS '${flags}'"
echo "PyTorch's ISA: ${TORCH_ISA:-the widest of the CPU}${TORCH_ISA:+ (ONEDNN_MAX_CPU_ISA=$ONEDNN_MAX_CPU_ISA ATEN_CPU_CAPABILITY=$ATEN_CPU_CAPABILITY OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE)}$blas_note"

if [ "$MICRO" = 1 ] && [ -x "$MICROBIN" ]; then
  "$MICROBIN" --benchmark_filter='BM_(Eigen|Kernel)Gemm' --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_format=csv 2>/dev/null >"$OUT/peak.csv" || true
fi

# case: model batch data steps warmup (bench/cases.py, the one list of the cases)
spec() { $PY "$ROOT/bench/cases.py" "$1"; }

$PY "$ROOT/bench/pytorch_bench.py" --kernels
for c in $CASES; do
  read -r model batch data steps warmup <<<"$(spec "$c")"
  [ -f "$DATA/$model.onnx" ] || { echo "== ($c) $model: not generated (see gen_bench_models.py's message)"; continue; }
  rounds=$ROUNDS; case $c in c | r | m | s | l | t | e) rounds=$ROUNDS_C ;; esac
  for th in $THREADS; do
    echo "== ($c) $model batch $batch, $th thread(s): $steps steps after $warmup warm-up, $rounds rounds" \
      "(C++ and PyTorch alternate; load $(cut -d' ' -f1 /proc/loadavg))"
    for r in $(seq 1 "$rounds"); do
      "$DRIVER" "$DATA/$model.onnx" "$DATA/$data" --batch "$batch" --steps "$steps" --warmup "$warmup" \
        --rounds 1 --threads "$th" --peak-n 2048 | tee -a "$OUT/cpp.log" | grep -E '^round' | sed "s/^round 0/  cpp $r/"
      $PY "$ROOT/bench/pytorch_bench.py" "$DATA/$model.onnx" "$DATA/$data" --batch "$batch" --steps "$steps" \
        --warmup "$warmup" --rounds 1 --threads "$th" | tee -a "$OUT/py.log" | grep -E '^round' |
        sed "s/^round 0/  py  $r/"
    done
  done
  if [ "$PROFILE" = 1 ] && case $c in r | m | s | l | t | e) true ;; *) false ;; esac; then
    echo "== ($c) $model: time per op type, 1 thread, probes off (dl_bench_train --profile)"
    "$DRIVER" "$DATA/$model.onnx" "$DATA/$data" --batch "$batch" --steps "$steps" --warmup "$warmup" --threads 1 \
      --profile --modes off | sed -n '/by op type/,/^OPSHARE/p' | grep -v '^OPSHARE'
    echo "== ($c) $model: probe cost per op type, 1 thread (dl_bench_train --profile --modes off,probes, $rounds rounds)"
    "$DRIVER" "$DATA/$model.onnx" "$DATA/$data" --batch "$batch" --steps "$steps" --warmup "$warmup" --threads 1 \
      --profile --modes off,probes --rounds "$rounds" | sed -n '/^probe cost/,$p' | grep -v '^PROBECOST'
  fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

$PY - "$OUT" "$CASES" <<'EOF'
import csv, os, re, statistics, sys
out, cases = sys.argv[1], sys.argv[2].split()
rows = {}
for log in ("cpp.log", "py.log"):
    path = os.path.join(out, log)
    if not os.path.exists(path):
        continue
    for line in open(path):
        if line.startswith("RESULT "):
            kv = dict(p.split("=", 1) for p in line.split()[1:])
            rows.setdefault((kv["model"].replace(".onnx", ""), kv["mode"], kv["threads"]), []).append(kv)
peak = None
pcsv = os.path.join(out, "peak.csv")
if os.path.exists(pcsv):
    best = {}
    lines = open(pcsv).readlines()
    hdr = next((i for i, l in enumerate(lines) if l.startswith("name,")), None)
    if hdr is not None:
        for r in csv.DictReader(lines[hdr:]):
            m = re.match(r'BM_(Eigen|Kernel)Gemm/n:(\d+)/threads:(\d+)/real_time_median', r["name"])
            if m and r.get("FLOPS"):
                best[(m.group(1), int(m.group(2)), int(m.group(3)))] = float(r["FLOPS"]) / 1e9
    if best:
        t = max(k[2] for k in best)
        eig = {k: v for k, v in best.items() if k[0] == "Eigen"}
        if eig:
            peak = max(v for k, v in eig.items() if k[2] == t)
        for kind, label in (("Eigen", "Eigen MatrixXf product (the machine's peak)"),
                            ("Kernel", "runtime GEMM kernel + pool")):
            for th in sorted({k[2] for k in best if k[0] == kind}):
                row = sorted((k[1], v) for k, v in best.items() if k[0] == kind and k[2] == th)
                print("GEMM %s, %d thread(s): %s GFLOP/s (n: value, median of 3)" % (
                    label, th, ", ".join("%d: %.0f" % x for x in row)))
        print("peak used below: %.1f GFLOP/s (best n, %d threads)" % (peak or float("nan"), t))
        print()

def med(key, model, mode, threads):
    v = [float(r[key]) for r in rows.get((model, mode, threads), []) if key in r]
    return statistics.median(v) if v else float("nan")

names = {"a": ("mlp_a", "(a) MLP 784-256-128-10, batch 64"), "b": ("lenet5", "(b) LeNet-5 28x28, batch 64"),
         "c": ("wide_c", "(c) MLP 4096-4096-10, batch 256"),
         "r": ("resnet18", "(r) resnet18 3x32x32, batch 16, Adam"),
         "m": ("mobilenet_v2", "(m) mobilenet_v2 3x32x32, batch 16, Adam"),
         "s": ("shufflenet_v2_x0_5", "(s) shufflenet_v2_x0_5 3x32x32, batch 16, Adam"),
         "l": ("lstm_cls", "(l) LSTM 64x32 -> 128, batch 32, Adam"),
         "t": ("transformer", "(t) TransformerEncoder 2 layers, d 128, 4 heads, seq 64, batch 16, Adam"),
         "k": ("transformer_causal", "(k) the same under a causal -inf mask, batch 16, Adam"),
         "e": ("conv_ae", "(e) ConvTranspose + Upsample autoencoder 3x32x32, MSE, batch 16, Adam")}
print("| model | threads | dl probes off (steps/s) | dl probes on | dl probes + online analysis | probe overhead wall / CPU | "
      "with analysis wall / CPU | PyTorch (steps/s) | dl probes on / PyTorch | CPU ms/step dl probes on / PyTorch | dl GFLOP/s (probes on) | PyTorch GFLOP/s | "
      "GEMM efficiency: vs peak | vs same-round Eigen peak | vs same-round kernel peak |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for c in cases:
    model, label = names[c]
    for th in sorted({k[2] for k in rows if k[0] == model}, key=int):
        m = lambda key, mode: med(key, model, mode, th)
        off, on, full = (m("steps_per_s", mode) for mode in ("off", "probes", "full"))
        py = m("steps_per_s", "pytorch")
        gf = m("gflops", "probes")
        eff = m("efficiency", "probes")
        kp = m("kernel_peak_gflops", "probes")
        eff2 = gf / peak if peak else float("nan")
        # PyTorch runs the same products: its GFLOP/s is our FLOPs per step at its pace.
        py_gf = gf / on * py if on > 0 else float("nan")
        print("| %s | %s | %.2f | %.2f | %.2f | %+.1f%% / %+.1f%% | %+.1f%% / %+.1f%% | %.2f | %.2fx | %.1f / %.1f | %.1f | %.1f | %.0f%% | %.0f%% | %.0f%% |" % (
            label, th, off, on, full, m("overhead_pct", "probes"), m("cpu_overhead_pct", "probes"),
            m("overhead_pct", "full"), m("cpu_overhead_pct", "full"), py, on / py,
            m("cpu_us_per_step", "probes") / 1e3, m("cpu_us_per_step", "pytorch") / 1e3,
            gf, py_gf, 100 * eff2, 100 * eff, 100 * gf / kp if kp == kp and kp > 0 else float("nan")))
print()
print("Medians over rounds. Overheads are medians of per-round paired ratios (each round runs off, probes, full back")
print("to back); CPU overhead compares the process CPU time per step, which a busy machine disturbs far less than")
print("wall time. GFLOP/s count the Gemm/Conv/ConvTranspose/MatMul/LSTM/GRU/RNN products of forward and backward from the graph's shapes")
print("(PyTorch's: the same FLOPs per step at its pace). CPU ms/step: process CPU time per step of each side.")
EOF
