#!/usr/bin/env bash
# Outputs survive faults (issue 7, item 4). Trains models/demo for "forever"
# (--epochs 100000 --no-stop) and, once training has started:
#   SIGINT  -> exit 130, the --report file is complete ("complete": false in JSON,
#              "interrupted" in text), --trace and --save are written;
#   SIGTERM -> exit 143, the same;
#   SIGKILL -> at any moment, --report/--trace/--save are each either complete or absent
#              (a stray FILE.tmp is allowed; a torn FILE is not), and an older report at
#              the path is either kept whole or replaced whole.
# Usage: run.sh path/to/deeplocalize SOURCE_DIR [WORK_DIR]
set -u
bin="$(realpath "$1")"
src="$(realpath "$2")"
work="${3:-$(mktemp -d)}"
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 2
model="$src/models/demo/model.onnx"
data="$src/models/demo/data.csv"
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# A valid JSON file whose "complete" is $2 (python3 when present, else a grep of the end).
json_complete_is() {
  local file="$1" want="$2"
  if command -v python3 > /dev/null; then
    python3 - "$file" "$want" <<'EOF'
import json, sys
with open(sys.argv[1]) as f:
    r = json.load(f)
want = sys.argv[2] == "true"
sys.exit(0 if r.get("complete") is want and "verdict" in r else 1)
EOF
  else
    tail -c 2 "$file" | grep -q '}' && grep -q "\"complete\": $want" "$file"
  fi
}

# Starts a long training run in the background (stderr to $1.err); sets $pid.
start_training() {
  local name="$1"
  shift
  "$bin" train "$model" "$data" --epochs 100000 --no-stop "$@" > "$name.out" 2> "$name.err" &
  pid=$!
}

# Waits until the run has printed its first epoch line (training started), at most 120 s.
wait_for_training() {
  local name="$1"
  for _ in $(seq 1 1200); do
    grep -q '^epoch 1/' "$name.err" 2> /dev/null && return 0
    kill -0 "$pid" 2> /dev/null || return 1
    sleep 0.1
  done
  return 1
}

# SIGINT / SIGTERM: a clean stop with complete outputs marked interrupted.
for sig in INT TERM; do
  want=$([[ $sig == INT ]] && echo 130 || echo 143)
  for format in json text; do
    name="sig$sig-$format"
    start_training "$name" --format "$format" --report "$name.report" --trace "$name.trace" --save "$name.onnx"
    if ! wait_for_training "$name"; then
      fail "$name: training did not start: $(head -3 "$name.err")"
      kill -KILL "$pid" 2> /dev/null
      wait "$pid" 2> /dev/null
      continue
    fi
    sleep 1
    kill -"$sig" "$pid"
    # The run stops at the end of the current iteration, then analyses and writes.
    status=0
    wait "$pid" || status=$?
    [[ $status -eq $want ]] || fail "$name: exit $status, expected $want ($(tail -3 "$name.err"))"
    if [[ ! -s "$name.report" ]]; then
      fail "$name: no report file"
    elif [[ $format == json ]]; then
      json_complete_is "$name.report" false || fail "$name: the JSON report is not complete JSON with \"complete\": false"
    else
      grep -q 'INTERRUPTED' "$name.report" && grep -q ', interrupted' "$name.report" \
        || fail "$name: the text report does not say interrupted"
      tail -1 "$name.report" | grep -q '^Timing:' || fail "$name: the text report does not end with its timing line"
    fi
    [[ -e "$name.report.tmp" ]] && fail "$name: $name.report.tmp left behind after a clean stop"
    "$bin" analyze "$name.trace" --format json --report "$name.reanalyzed" -q > /dev/null 2>&1
    [[ $? -le 1 ]] || fail "$name: the trace written on interruption does not load (deeplocalize analyze)"
    "$bin" inspect "$name.onnx" > /dev/null 2>&1 || fail "$name: the model saved on interruption does not load"
  done
done

# SIGKILL: nothing can run on a kill, so each output must be whole or absent. Kill at
# several moments of a short run (training, analysis, writing) and check every time;
# an older complete report at the path must stay whole until replaced.
echo '{"verdict": "ok", "complete": true}' > old.json
k=0
for delay in 0.2 0.5 0.8 1.1 1.4 1.7 2.0 2.5 3.0 4.0; do
  name="kill-$delay"
  k=$((k + 1))
  # Every second run starts with an older complete report at the path.
  (( k % 2 == 0 )) && cp old.json "$name.report"
  "$bin" train "$model" "$data" --epochs 300 --no-stop --format json -q \
    --report "$name.report" --trace "$name.trace" --save "$name.onnx" > /dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -KILL "$pid" 2> /dev/null
  wait "$pid" 2> /dev/null
  if [[ -e "$name.report" ]]; then
    json_complete_is "$name.report" true || fail "$name: after SIGKILL the report is torn or invalid"
  fi
  if [[ -e "$name.trace" ]]; then
    "$bin" analyze "$name.trace" -q --report "$name.reanalyzed" > /dev/null 2>&1
    [[ $? -le 1 ]] || fail "$name: after SIGKILL the trace is torn"
  fi
  if [[ -e "$name.onnx" ]]; then
    "$bin" inspect "$name.onnx" > /dev/null 2>&1 || fail "$name: after SIGKILL the saved model is torn"
  fi
done

if [[ $failures -eq 0 ]]; then
  echo "interrupt: all checks passed"
  rm -rf "$work"
  exit 0
fi
echo "interrupt: $failures failures (work files in $work)"
exit 1
