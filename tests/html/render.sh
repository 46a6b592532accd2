#!/usr/bin/env bash
# Renders the HTML report of a real faulty run to a PNG in headless Chromium and checks
# that the page parses as XML, that the PNG is non-trivial (> 20 KB) and that it shows
# the red of the faulty layer's frame and of the first-failure line.
# Usage: render.sh BUILD_DIR [OUT_DIR]. Exits 77 (CTest's SKIP_RETURN_CODE) when
# Chromium is not installed (scripts/install-deps.sh --browser installs it).
# docs/report-example.{html,png} come from this script: WINDOW=1200,1520 render.sh build out
set -u
build=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
chromium=${CHROMIUM:-/usr/bin/chromium}
if [[ ! -x "$chromium" ]]; then
  echo "render: $chromium not found; skipped (install it with scripts/install-deps.sh --browser)"
  exit 77
fi
out=${2:-$build/html-render}
mkdir -p "$out"
out=$(realpath "$out")
window=${WINDOW:-1200,2400}
rm -f "$out/report.html" "$out/report.png"

# A faulty benchmark case: the learning rate is too high (0.5 here, so the weights grow
# for 20 iterations before layer 1's output overflows), trained on past the fault.
# Without the benchmark, the demo model with a learning rate that diverges.
cd "$root" || exit 2
case_dir=models/benchmark/exploding_lr_buggy
if [[ -f $case_dir/model.onnx ]]; then
  args=("$case_dir/model.onnx" "$case_dir/data.csv" --lr 0.5 --epochs 2 --no-stop)
else
  args=(models/demo/model.onnx models/demo/data.csv --lr 3 --optimizer sgd --no-stop)
fi
"$build/deeplocalize" train "${args[@]}" --report "$out/report.html" --quiet > "$out/stdout.txt" 2> "$out/stderr.txt"
rc=$?
if [[ $rc -ne 1 ]]; then
  echo "render: expected exit 1 (fault) from deeplocalize train ${args[*]}, got $rc"
  cat "$out/stderr.txt"
  exit 1
fi
if [[ -s "$out/stdout.txt" ]]; then
  echo "render: --quiet with --report printed on stdout"
  exit 1
fi
if command -v python3 > /dev/null; then
  python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$out/report.html" || {
    echo "render: report.html is not well-formed XML"
    exit 1
  }
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
timeout 180 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
  --user-data-dir="$profile" --screenshot="$out/report.png" --window-size="$window" \
  "file://$out/report.html" > "$out/chromium.log" 2>&1
if [[ ! -f "$out/report.png" ]]; then
  echo "render: chromium wrote no screenshot"
  tail -20 "$out/chromium.log"
  exit 1
fi
size=$(stat -c %s "$out/report.png")
if [[ $size -le 20480 ]]; then
  echo "render: $out/report.png is only $size bytes"
  exit 1
fi
if command -v python3 > /dev/null; then
  python3 "$here/png_colors.py" "$out/report.png" || exit 1
fi
echo "render: $out/report.png ($size bytes)"
