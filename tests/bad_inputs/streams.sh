#!/usr/bin/env bash
# Inputs that cases.txt cannot express: pipes, process substitution, FIFOs and endless
# streams for every reader, and the peak memory (GNU time's maximum resident set size)
# of the inputs that declare sizes they do not hold. Usage: streams.sh path/to/deeplocalize
# Each case: its exit code, a message fragment, and at most 256 MB more than a healthy
# run of the same model (the issue's bound: no input under 1 MB costs more).
set -u
bin=$(realpath "$1")
files=$(cd "$(dirname "$0")" && pwd)/files
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
timer=/usr/bin/time
[[ -x $timer ]] || timer=""

# check NAME WANT_EXIT FRAGMENT -- command...: runs the command (a bash string, so
# pipes and <(...) work) under a 60 s timeout and checks exit code, output and memory.
check() {
  local name=$1 want=$2 fragment=$3 cmd=$4 got out rss=0
  if [[ -n $timer ]]; then
    out=$(cd "$work" && timeout 60 $timer -f 'RSS_KB=%M' -o "$work/rss" bash -c "$cmd" 2>&1 </dev/null)
    got=$?
    rss=$(sed -n 's/^RSS_KB=//p' "$work/rss" 2>/dev/null | tail -1)
  else
    out=$(cd "$work" && timeout 60 bash -c "$cmd" 2>&1 </dev/null)
    got=$?
  fi
  local max_kb=$((baseline_kb + 256 * 1024))
  if [[ $got -eq $want && "$out" == *"$fragment"* && ${rss:-0} -le $max_kb ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $name: $cmd"
    echo "  expected exit $want, '$fragment', at most $max_kb KB"
    echo "  got exit $got, ${rss:-?} KB: $(echo "$out" | head -3)"
  fi
}

D=$bin
M=$files/good.onnx
C=$files/good.csv
baseline_kb=0
if [[ -n $timer ]]; then
  $timer -f '%M' -o "$work/base" "$D" train "$M" "$C" --targets 3 --epochs 1 -q >/dev/null 2>&1
  baseline_kb=$(tail -1 "$work/base")
fi

# Finite streams work for the data and the model (sniffing must not consume a pipe).
check "csv on stdin" 0 "" "cat $C | $D train $M /dev/stdin --targets 3 --epochs 1 -q >/dev/null; r=\$?; [ \$r -le 1 ] && exit 0 || exit \$r"
check "csv via <()" 0 "" "$D train $M <(cat $C) --targets 3 --epochs 1 -q >/dev/null; r=\$?; [ \$r -le 1 ] && exit 0 || exit \$r"
check "model via <()" 0 "" "$D train <(cat $M) $C --targets 3 --epochs 1 -q >/dev/null; r=\$?; [ \$r -le 1 ] && exit 0 || exit \$r"
check "inspect on stdin" 0 "input    x: float32 [N, 4]" "cat $M | $D inspect /dev/stdin"
mkfifo "$work/fifo.csv"
check "csv via a FIFO" 0 "" "(cat $C > $work/fifo.csv &); $D train $M $work/fifo.csv --targets 3 --epochs 1 -q >/dev/null; r=\$?; [ \$r -le 1 ] && exit 0 || exit \$r"

# Endless streams stop at the memory cap (or at once when plainly binary), exit 2.
check "endless csv" 2 "stopped reading after 16.0 MB: the input does not end within the limit of 16.0 MB" \
  "$D train $M <(yes 1,2,3,4,0,1,0) --targets 3 --max-memory 16"
check "endless model" 2 "stopped reading after 16.0 MB: the input does not end within the limit of 16.0 MB (raise it with --max-memory)" \
  "$D train <(yes B) $C --targets 3 --max-memory 16"
check "/dev/zero data" 2 "/dev/zero:1:1: a NUL byte: this is binary data, not CSV text" "$D train $M /dev/zero --targets 3"
check "/dev/urandom data" 2 "a NUL byte: this is binary data, not CSV text" "$D train $M /dev/urandom --targets 3"
check "/dev/zero model" 2 "/dev/zero: not an ONNX model" "$D train /dev/zero $C --targets 3"
check "/dev/zero trace" 2 "/dev/zero: not a deeplocalize trace" "$D analyze /dev/zero"
check "/dev/zero summary" 2 "/dev/zero: invalid JSON: binary data" "$D merge /dev/zero"

# Declared sizes the file does not hold cost no memory.
check "npy declaring 2.6 GB" 2 "truncated: the header declares shape (140000000, 5)" \
  "$D train $M $files/npy_declares_huge.npy --targets 3"
check "npz declaring 3 GB" 2 "more than DEFLATE can expand (1032:1)" "$D train $M $files/npz_declares_3gb.npz --targets 3"

echo "bad_inputs streams: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
