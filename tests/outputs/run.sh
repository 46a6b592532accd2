#!/usr/bin/env bash
# Outputs never destroy anything (issue 18, items 5-8):
#   5. an output path that is a special file, a symlink, an input (also by hard link or
#      another spelling) or another output is refused up front (exit 2), the target
#      untouched, unless --force (inputs) — special files and symlinks even then;
#   6. a planted NAME.tmp symlink is not followed; 4 concurrent writers of one
#      --report/--trace/--save (and batch --json) leave one complete file, also when
#      some of them are SIGKILLed at random points; no temporary file after clean runs;
#   7. node and case names with ESC, BEL, NUL, DEL, C1, bidi controls, U+FFFE/U+FFFF and
#      invalid UTF-8 come out visible (\x1b, \u{fffe}) in inspect, convert, the text
#      report, the batch lines, Markdown and JUnit (parsed with xml.etree);
#   8. a command whose stdout cannot be written (>/dev/full) exits 2 and says why.
# Usage: run.sh path/to/deeplocalize SOURCE_DIR [WORK_DIR]
set -u
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh" "$@"
cd "$work" || exit 2
cp "$src/models/demo/model.onnx" m.onnx
cp "$src/models/demo/data.csv" d.csv
quick=(--epochs 1 -q)

sum() { sha256sum "$1" | cut -d' ' -f1; }

# refused FRAGMENT ARGS...: exit 2 with FRAGMENT in the message.
refused() {
  local fragment="$1" out rc
  shift
  out=$("$bin" "$@" 2>&1 > /dev/null)
  rc=$?
  [[ $rc -eq 2 && "$out" == *"$fragment"* ]] || fail "deeplocalize $*: expected exit 2 and '$fragment', got $rc: $out"
}

# No byte of FILE is a control character other than newline, and it is valid UTF-8.
clean_text() {
  python3 - "$1" <<'EOF'
import sys
b = open(sys.argv[1], "rb").read()
b.decode("utf-8")  # raises on invalid UTF-8
bad = [c for c in b if (c < 0x20 and c != 0x0a) or c == 0x7f]
sys.exit(1 if bad else 0)
EOF
}

# --- 5. Outputs that would destroy something -------------------------------------------
model_sum=$(sum m.onnx) data_sum=$(sum d.csv)
refused "--report m.onnx: it is the same file as the model m.onnx" train m.onnx d.csv "${quick[@]}" --report m.onnx
refused "--trace d.csv: it is the same file as the data d.csv" train m.onnx d.csv "${quick[@]}" --trace d.csv
ln m.onnx hard.onnx
mkdir -p sub
refused "--save hard.onnx: it is the same file as the model m.onnx" train m.onnx d.csv "${quick[@]}" --save hard.onnx
refused "--save sub/../m.onnx: it is the same file as the model" train m.onnx d.csv "${quick[@]}" --save sub/../m.onnx
refused "--export-fixed ./m.onnx: it is the same file as the model" train m.onnx d.csv "${quick[@]}" --export-fixed ./m.onnx
refused "--trace x and --report ./sub/../x are the same file" train m.onnx d.csv "${quick[@]}" --trace x --report ./sub/../x
refused "-o m.onnx: it is the same file as the model" convert m.onnx -o m.onnx
[[ $(sum m.onnx) == "$model_sum" && $(sum d.csv) == "$data_sum" ]] || fail "an input was modified by a refused run"
[[ -e x ]] && fail "a refused run wrote x"

mkfifo fifo
refused "--report fifo: it is a FIFO" train m.onnx d.csv "${quick[@]}" --report fifo
[[ -p fifo ]] || fail "the FIFO was replaced"
if [[ $(id -u) -eq 0 ]]; then  # our own /dev/null twin: replacing it is what must not happen
  mknod null c 1 3
  refused "--save null: it is a character device" train m.onnx d.csv "${quick[@]}" --save null
  [[ -c null ]] || fail "the character device was replaced"
fi
echo precious > victim.txt
ln -s victim.txt r.json
refused "--report r.json: it is a symlink (to victim.txt)" train m.onnx d.csv "${quick[@]}" --report r.json --force
[[ -L r.json && $(cat victim.txt) == precious ]] || fail "the symlink or its target was replaced"
refused "--trace -: this output is a binary file" train m.onnx d.csv "${quick[@]}" --trace -
refused "the directory nodir does not exist" train m.onnx d.csv "${quick[@]}" --report nodir/r.json

# --force: overwriting the input model on purpose (a retrained model in place) works.
"$bin" train m.onnx d.csv "${quick[@]}" --save m.onnx --force > /dev/null 2>&1
[[ $? -le 1 ]] || fail "train --save m.onnx --force failed"
[[ $(sum m.onnx) != "$model_sum" ]] || fail "--save m.onnx --force did not replace the model"
"$bin" inspect m.onnx > /dev/null || fail "the model saved in place does not load"
cp "$src/models/demo/model.onnx" m.onnx

# analyze, batch and merge.
"$bin" train m.onnx d.csv "${quick[@]}" --trace t.trace > /dev/null
refused "--report t.trace: it is the same file as the trace t.trace" analyze t.trace --report t.trace
mkdir -p cases/c1 cases/c2
for c in c1 c2; do cp m.onnx d.csv cases/$c/ && mv cases/$c/d.csv cases/$c/data.csv && mv cases/$c/m.onnx cases/$c/model.onnx; done
echo '{"epochs": 1}' > cases/c1/options.json
echo '{"epochs": 1}' > cases/c2/options.json
"$bin" batch cases -q -j 2 --json s1.json > /dev/null
[[ -s s1.json ]] || fail "batch --json wrote no summary"
s1_sum=$(sum s1.json)
refused "--json s1.json: it is the same file as the summary s1.json" merge s1.json --json s1.json
refused "--junit ./s1.json: it is the same file as the summary" merge s1.json --junit ./s1.json
refused "it is the same file as the model of case 'c1'" batch cases -q --json cases/c1/model.onnx
refused "--json cases/c1/c1.json and --reports (case 'c1') cases/c1/c1.json are the same file" \
  batch cases -q --json cases/c1/c1.json --reports cases/c1
touch notadir
refused "--reports notadir: exists and is not a directory" batch cases -q --reports notadir
[[ $(sum s1.json) == "$s1_sum" ]] || fail "merge overwrote its input"

# --- 6. Temporary files and concurrent writers -----------------------------------------
ln -s victim.txt planted.json.tmp
"$bin" train m.onnx d.csv "${quick[@]}" --format json --report planted.json > /dev/null
[[ $(cat victim.txt) == precious ]] || fail "a planted planted.json.tmp symlink was followed"
python3 -c "import json,sys; json.load(open('planted.json'))" || fail "planted.json is not the report"

valid_outputs() {  # NAME: NAME.json complete JSON, NAME.trace loads, NAME.onnx loads (each if present)
  if [[ -e "$1.json" ]]; then
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if 'verdict' in r else 1)" "$1.json" \
      || fail "$2: $1.json is torn or not a report"
  fi
  if [[ -e "$1.trace" ]]; then
    "$bin" analyze "$1.trace" -q --report "$1.check" > /dev/null 2>&1
    [[ $? -le 1 ]] || fail "$2: $1.trace is torn"
  fi
  if [[ -e "$1.onnx" ]]; then "$bin" inspect "$1.onnx" > /dev/null 2>&1 || fail "$2: $1.onnx is torn"; fi
}
writer() {  # NAME EPOCHS: one training run writing NAME.{json,trace,onnx}
  "$bin" train m.onnx d.csv --epochs "$2" --no-stop -q --format json --report "$1.json" --trace "$1.trace" \
    --save "$1.onnx" > /dev/null 2> "$1.err.$BASHPID"
}
pids=()
for k in 1 2 3 4; do writer cc 3 & pids+=($!); done
for p in "${pids[@]}"; do wait "$p" || [[ $? -eq 1 ]] || fail "a concurrent writer failed: $(cat cc.err.* | head -3)"; done
[[ -e cc.json && -e cc.trace && -e cc.onnx ]] || fail "concurrent writers left no output"
valid_outputs cc "4 concurrent writers"
pids=()
for k in 1 2 3 4; do "$bin" batch cases -q -j 1 --json sc.json > /dev/null 2>&1 & pids+=($!); done
for p in "${pids[@]}"; do wait "$p" || [[ $? -eq 1 ]] || fail "a concurrent batch failed"; done
python3 -c "import json; json.load(open('sc.json'))" || fail "4 concurrent batch --json left a torn summary"
ls ./*.tmp cases/*.tmp 2> /dev/null | grep -v planted.json.tmp && fail "temporary files left after clean runs"

# SIGKILL at random points while 4 writers share the outputs: what is at each path is
# always one complete file (an older complete one is there from the start).
t0=$(date +%s%N)
writer calib 40
t=$((($(date +%s%N) - t0) / 1000000))  # ms
RANDOM=18
for round in 1 2 3; do
  cp cc.json kk.json && cp cc.trace kk.trace && cp cc.onnx kk.onnx
  pids=()
  for k in 1 2 3 4; do writer kk 40 & pids+=($!); done
  for p in "${pids[@]}"; do
    # 4 writers share 2 cores, so each takes about 2t: the kills spread over 0.2t..3.2t.
    sleep "$(awk -v t="$t" -v r="$RANDOM" 'BEGIN { printf "%.3f", t * (0.2 + r / 32768.0 * 0.6) / 1000 }')"
    kill -KILL "$p" 2> /dev/null
  done
  wait 2> /dev/null
  [[ -e kk.json && -e kk.trace && -e kk.onnx ]] || fail "round $round: an output vanished after SIGKILL"
  valid_outputs kk "SIGKILL round $round"
done

# --- 7. Names that carry terminal escapes or invalid UTF-8 -----------------------------
python3 - m.onnx hostile.onnx <<'EOF'
import sys
d = open(sys.argv[1], "rb").read()
names = {b"/0/Gemm": b"\x1b[2J\x07\x00\x7f", b"/2/Gemm": b"\xef\xbf\xbe\xffabc", b"/4/Gemm": b"\x1b[31mX\x80",
         b"/1/Relu": b"\xc2\x9b\xe2\x80\xaerr", b"/3/Relu": b"\x1b]0;pwn", b"/5/Softmax": b"\x1b[2J\x07sm\xef\xbf\xbf"}
for old, new in names.items():  # the node's name field (tag 0x1a) before its op_type (tag 0x22)
    op = old.split(b"/")[-1]
    key = b"\x1a" + bytes([len(old)]) + old + b'"' + bytes([len(op)]) + op
    assert d.count(key) == 1, old
    d = d.replace(key, b"\x1a" + bytes([len(new)]) + new + b'"' + bytes([len(op)]) + op)
assert d.count(b"\x0a\x05input") == 2  # the graph input's name, where it is declared and used
d = d.replace(b"\x0a\x05input", b"\x0a\x05i\x1b[5m")
open(sys.argv[2], "wb").write(d)
EOF
"$bin" inspect hostile.onnx > inspect.txt 2>&1 || fail "inspect hostile.onnx failed: $(head -3 inspect.txt)"
"$bin" convert hostile.onnx > convert.txt 2>&1 || fail "convert hostile.onnx failed: $(head -3 convert.txt)"
"$bin" train hostile.onnx d.csv --lr 50 --epochs 2 --verbose --report report_file.txt > report.txt 2> /dev/null
[[ $? -eq 1 ]] || fail "train hostile.onnx --lr 50 should find the fault"
for f in inspect.txt convert.txt report.txt report_file.txt; do
  clean_text "$f" || fail "$f has raw control characters or invalid UTF-8"
done
for f in inspect.txt report.txt report_file.txt; do
  grep -qF '\x1b[31mX\x80' "$f" || fail "$f does not show the escaped node name"
done
grep -qF '%i\x1b[5m: [N, 4]' convert.txt || fail "convert does not show the escaped input name"
grep -qF '\u{fffe}\xffabc' inspect.txt || fail "inspect does not show U+FFFE and the invalid byte visibly"
bad=$'h\x1b[31m\x07'
mkdir -p "hcases/$bad"
cp hostile.onnx "hcases/$bad/model.onnx" && cp d.csv "hcases/$bad/data.csv"
echo '{"lr": 50, "epochs": 2}' > "hcases/$bad/options.json"
"$bin" batch hcases -j 1 --junit h.xml --summary-md h.md --json h.json > batch.txt 2> /dev/null
[[ $? -eq 1 ]] || fail "batch on hcases should find the fault"
python3 -c "import sys, xml.etree.ElementTree as ET; ET.parse('h.xml')" || fail "the JUnit XML is not well-formed"
for f in h.md batch.txt h.xml; do
  clean_text "$f" || fail "$f has raw control characters or invalid UTF-8"
  grep -qF 'h\x1b[31m\x07' "$f" || fail "$f does not show the escaped case name"
done
grep -qF '\u{ffff}' h.xml || fail "JUnit does not show U+FFFF visibly"
"$bin" train m.onnx $'no\x1b[2Jsuch\xff.csv' > /dev/null 2> err.txt
clean_text err.txt || fail "an error message carries raw control characters or invalid UTF-8"
grep -qF 'no\x1b[2Jsuch\xff.csv' err.txt || fail "the error message does not show the file name visibly"

# --- 8. stdout that cannot be written --------------------------------------------------
full() {
  local out rc
  out=$("$bin" "$@" 2>&1 > /dev/full)
  rc=$?
  [[ $rc -eq 2 && "$out" == *"cannot write to standard output: No space left on device"* ]] \
    || fail "deeplocalize $* >/dev/full: expected exit 2 and the reason, got $rc: $out"
}
full inspect m.onnx
full convert m.onnx
full train m.onnx d.csv --epochs 1
full analyze t.trace
full batch cases -j 1
full merge s1.json
full --help
full train --help
full --version

if [[ $failures -eq 0 ]]; then
  echo "outputs: all checks passed"
  cd / && rm -rf "$work"
  exit 0
fi
echo "outputs: $failures failures (work files in $work)"
exit 1
