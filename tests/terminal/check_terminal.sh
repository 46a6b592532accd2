#!/usr/bin/env bash
# The terminal experience: no ANSI escapes when stdout/stderr are pipes; --quiet prints
# nothing but the report (nothing at all with --report FILE); --verbose adds the
# per-layer table; --report FILE.html writes HTML. On a pseudo-terminal (util-linux
# `script`, when installed): colour by default, none with NO_COLOR.
# Usage: check_terminal.sh path/to/deeplocalize [workdir]
set -u
bin=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work"
cd "$work" || exit 2
model=$root/models/demo/model.onnx
data=$root/models/demo/data.csv
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
has_esc() { grep -q $'\x1b' "$1"; }
has_sgr() { grep -qE $'\x1b\\[[0-9;]*m' "$1"; }

# Pipes: plain output, no escapes (a faulty run: the report has coloured parts on a TTY).
"$bin" train "$model" "$data" --lr 50 --epochs 2 > out.txt 2> err.txt
[[ $? -eq 1 ]] || fail "train --lr 50 should exit 1"
has_esc out.txt && fail "ANSI escape on stdout (a pipe)"
has_esc err.txt && fail "ANSI escape on stderr (a pipe)"
grep -q "FAULT" out.txt || fail "no report on stdout"
grep -q "epoch 1/2" err.txt || fail "no plain progress lines on stderr"

# --quiet: the report only; with --report FILE nothing at all.
"$bin" train "$model" "$data" --epochs 2 --quiet > out.txt 2> err.txt
[[ -s err.txt ]] && fail "--quiet wrote on stderr: $(head -2 err.txt)"
grep -q "OK" out.txt || fail "--quiet did not print the report"
"$bin" train "$model" "$data" --epochs 2 --quiet --report r.txt --trace t.dltrace > out.txt 2> err.txt
[[ -s out.txt || -s err.txt ]] && fail "--quiet --report printed something"
grep -q "OK" r.txt || fail "--report r.txt has no report"
has_esc r.txt && fail "ANSI escape in the report file"

# --verbose: the per-layer table (train and analyze).
"$bin" train "$model" "$data" --epochs 2 --verbose > out.txt 2> /dev/null
grep -q "Per-layer statistics" out.txt || fail "train --verbose has no per-layer table"
"$bin" train "$model" "$data" --epochs 2 > out.txt 2> /dev/null
grep -q "Per-layer statistics" out.txt && fail "the per-layer table without --verbose"
"$bin" analyze t.dltrace --verbose > out.txt 2> err.txt
grep -q "Per-layer statistics" out.txt || fail "analyze --verbose has no per-layer table"

# HTML by file name (stdout keeps the text report) or --format html.
"$bin" train "$model" "$data" --epochs 2 --report r.html > out.txt 2> /dev/null
head -c 15 r.html | grep -q "<!DOCTYPE html>" || fail "--report r.html is not HTML"
grep -q "^deeplocalize" out.txt || fail "stdout is not the text report with --report r.html"
"$bin" analyze t.dltrace --format html > out.html 2> /dev/null
head -c 15 out.html | grep -q "<!DOCTYPE html>" || fail "analyze --format html is not HTML"
"$bin" analyze t.dltrace --report a.HTML --quiet > out.txt
[[ -s out.txt ]] && fail "analyze --quiet --report printed something"
head -c 15 a.HTML | grep -q "<!DOCTYPE html>" || fail "analyze --report a.HTML is not HTML"

# A pseudo-terminal: colour by default, none with NO_COLOR.
if command -v script > /dev/null; then
  cmd="'$bin' train '$model' '$data' --lr 50 --epochs 2"
  TERM=xterm script -qec "$cmd" /dev/null > tty.txt 2>&1
  has_sgr tty.txt || fail "no colour on a terminal"
  NO_COLOR=1 TERM=xterm script -qec "$cmd" /dev/null > tty.txt 2>&1
  has_sgr tty.txt && fail "colour on a terminal with NO_COLOR=1"
  grep -q "FAULT" tty.txt || fail "no report on the terminal"
else
  echo "check_terminal: util-linux script not found; terminal checks skipped"
fi

echo "check_terminal: $failed failed"
[[ $failed -eq 0 ]]
