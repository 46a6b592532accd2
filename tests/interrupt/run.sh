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
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh" "$@"
cd "$work" || exit 2
model="$src/models/demo/model.onnx"
data="$src/models/demo/data.csv"

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
    compgen -G "$name.report.*.tmp" > /dev/null && fail "$name: a temporary $name.report.*.tmp left behind after a clean stop"
    "$bin" analyze "$name.trace" --format json --report "$name.reanalyzed" -q > /dev/null 2>&1
    [[ $? -le 1 ]] || fail "$name: the trace written on interruption does not load (deeplocalize analyze)"
    "$bin" inspect "$name.onnx" > /dev/null 2>&1 || fail "$name: the model saved on interruption does not load"
  done
done

# SIGKILL: nothing can run on a kill, so each output must be whole or absent. A first
# run measures how long a short training takes (T); then runs are killed at fractions of
# T, most of them near the end where the analysis writes the report, trace and model.
# Every second run starts with an older complete report at the path, which must stay
# whole until it is replaced whole.
kill_run() {  # name: runs the short training in the background, sets $pid
  "$bin" train "$model" "$data" --epochs 600 --no-stop --format json -q \
    --report "$1.report" --trace "$1.trace" --save "$1.onnx" > /dev/null 2>&1 &
  pid=$!
}
t0=$(date +%s.%N)
kill_run calibrate
wait "$pid"
t1=$(date +%s.%N)
json_complete_is calibrate.report true || fail "calibrate: the report of a complete run is not complete JSON"
echo '{"verdict": "ok", "complete": true}' > old.json
k=0
for f in 0.15 0.4 0.7 0.85 0.92 0.96 0.99 1.02; do
  delay=$(awk -v a="$t0" -v b="$t1" -v f="$f" 'BEGIN { printf "%.3f", (b - a) * f }')
  name="kill-$f"
  k=$((k + 1))
  (( k % 2 == 0 )) && cp old.json "$name.report"
  kill_run "$name"
  sleep "$delay"
  kill -KILL "$pid" 2> /dev/null
  wait "$pid" 2> /dev/null
  if [[ -e "$name.report" ]]; then
    json_complete_is "$name.report" true || fail "$name: after SIGKILL at ${delay}s the report is torn or invalid"
  fi
  if [[ -e "$name.trace" ]]; then
    "$bin" analyze "$name.trace" -q --report "$name.reanalyzed" > /dev/null 2>&1
    [[ $? -le 1 ]] || fail "$name: after SIGKILL at ${delay}s the trace is torn"
  fi
  if [[ -e "$name.onnx" ]]; then
    "$bin" inspect "$name.onnx" > /dev/null 2>&1 || fail "$name: after SIGKILL at ${delay}s the saved model is torn"
  fi
  echo "SIGKILL at ${delay}s: report $([[ -e $name.report ]] && echo present || echo absent)," \
       "trace $([[ -e $name.trace ]] && echo present || echo absent), tmp files: $(ls "$name".*.tmp 2> /dev/null | wc -l)"
done

if [[ $failures -eq 0 ]]; then
  echo "interrupt: all checks passed"
  rm -rf "$work"
  exit 0
fi
echo "interrupt: $failures failures (work files in $work)"
exit 1
