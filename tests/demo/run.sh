#!/usr/bin/env bash
# The demo `make run` shows a newcomer: the healthy model comes out ok (exit 0), the
# faulty one (softmax over one unit) is diagnosed at its last layer with a verified fix.
# Usage: run.sh DEEPLOCALIZE SOURCE_DIR WORK_DIR
set -uo pipefail
dl="$1" src="$2" work="$3"
mkdir -p "$work"
fail() { echo "demo: $*" >&2; exit 1; }

"$dl" train "$src/models/demo/model.onnx" "$src/models/demo/data.csv" -q --format json \
  --report "$work/healthy.json"
[[ $? -eq 0 ]] || fail "the healthy demo should exit 0"
grep -q '"verdict": "ok"' "$work/healthy.json" || fail "the healthy demo should be ok"

"$dl" train "$src/models/demo/faulty/model.onnx" "$src/models/demo/faulty/data.csv" -q \
  --verify-fixes --format json --report "$work/faulty.json"
[[ $? -eq 1 ]] || fail "the faulty demo should exit 1"
python3 - "$work/faulty.json" <<'PY' || fail "the faulty demo's diagnosis is not the expected one"
import json, sys
r = json.load(open(sys.argv[1]))
f = r["findings"][0]
assert r["verdict"] == "fault", r["verdict"]
assert f["symptom"] == "softmax_single_unit", f["symptom"]
assert f["root_cause"] == "activation", f["root_cause"]
assert f["layer"]["index"] == 2, f["layer"]
assert any(x["verified"] for x in f.get("fixes", [])), "no verified fix"
PY
echo "demo: ok"
