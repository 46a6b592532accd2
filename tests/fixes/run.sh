#!/usr/bin/env bash
# Verified fixes end to end (issue 9) on small models/benchmark cases:
#   a healthy case is never "fixed" (exit 0, no "fixes", --export-fixed writes nothing);
#   faulty cases get a verified first fix with the contract's keys, the same on a rerun,
#   and the localization those fixes confirm (repair_localization);
#   --export-fixed writes a model that `inspect` loads, that trains to verdict ok on the
#   ORIGINAL data (graph change, label remap and feature scaling alike), and that passes
#   onnx.checker (full_check) where /usr/bin/python3 has onnx;
#   bad option values and impossible combinations (a Keras baseline detector, --no-probes,
#   an unwritable export path) exit 2 naming the option.
# Usage: run.sh path/to/deeplocalize SOURCE_DIR [WORK_DIR]
set -u
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh" "$@"
cd "$src/models/benchmark" || exit 2
py=/usr/bin/python3
[ -x "$py" ] || py="$(command -v python3)"
[ -n "$py" ] || { echo "SKIP: no python3 to read the JSON reports"; exit 77; }

# run NAME CASE [options...]: train CASE with JSON on $work/NAME.json; sets $rc.
run() {
  local name="$1" case="$2"
  shift 2
  "$bin" train "$case/model.onnx" "$case/data.csv" --format json -q "$@" > "$work/$name.json" 2> "$work/$name.err"
  rc=$?
}

# check_json FILE PYTHON_EXPR...: each expression (with r = the report) must be true.
check_json() {
  local file="$1"
  shift
  "$py" - "$file" "$@" <<'EOF' || fail "$file: $(cat "$file.why" 2> /dev/null)"
import json, sys
path = sys.argv[1]
r = json.load(open(path))
contract = {"change", "root_cause", "verified", "before", "after", "seconds"}
fixes = (r.get("findings") or [{}])[0].get("fixes")
for expr in sys.argv[2:]:
    if not eval(expr):
        open(path + ".why", "w").write("not true: " + expr)
        sys.exit(1)
EOF
}

# (a) A healthy case: nothing to fix, nothing written.
run healthy so_31880720_fixed --verify-fixes --export-fixed "$work/healthy.onnx"
[ "$rc" = 0 ] || fail "healthy so_31880720_fixed: exit $rc, want 0"
check_json "$work/healthy.json" 'r["verdict"] == "ok"' 'not any("fixes" in f for f in r["findings"])'
[ -e "$work/healthy.onnx" ] && fail "healthy so_31880720_fixed: --export-fixed wrote $work/healthy.onnx"

# (b) Faulty cases: exit 1, a verified first fix, every fix with the contract's keys.
# --max-trials keeps them short: each case's verified repair is among its first proposals.
for spec in exploding_lr_buggy:3:nan_loss labels_one_based_buggy:2:invalid_labels \
            so_31880720_buggy:2:softmax_single_unit; do
  IFS=: read -r case trials symptom <<< "$spec"
  run "$case" "$case" --verify-fixes --max-trials "$trials"
  [ "$rc" = 1 ] || fail "$case --verify-fixes: exit $rc, want 1"
  check_json "$work/$case.json" 'r["verdict"] == "fault"' "r['findings'][0]['symptom'] == '$symptom'" \
    'fixes and fixes[0]["verified"] is True' 'len(fixes) <= '"$trials" \
    'all(contract <= set(f) for f in fixes)' \
    'all({"loss", "accuracy"} <= set(f["before"]) and {"loss", "accuracy"} <= set(f["after"]) for f in fixes)' \
    'all(isinstance(f["seconds"], (int, float)) and f["seconds"] >= 0 for f in fixes)' \
    'all(isinstance(f["change"], str) and f["change"] for f in fixes)'
done
# The regression case's fix turns an infinite loss finite; the label case's maps the ids.
check_json "$work/exploding_lr_buggy.json" 'fixes[0]["root_cause"] == "learning_rate"' \
  'fixes[0]["before"]["loss"] is None or fixes[0]["before"]["loss"] > 1e6' 'fixes[0]["after"]["loss"] < 1' \
  'fixes[0]["before"]["accuracy"] is None and fixes[0]["after"]["accuracy"] is None'
check_json "$work/labels_one_based_buggy.json" 'fixes[0]["root_cause"] == "labels"' 'fixes[0]["after"]["accuracy"] > 0.9'
check_json "$work/so_31880720_buggy.json" 'fixes[0]["root_cause"] == "activation"' 'fixes[0]["after"]["accuracy"] == 1'
# Localization by repair (docs/fixes.md): the output layer's own repair confirms the
# finding's layer; a smaller learning rate or remapped labels blame no layer.
check_json "$work/so_31880720_buggy.json" 'r["findings"][0]["repair_localization"]["status"] == "confirmed"' \
  'r["findings"][0]["repair_localization"]["confirmed_by_repair"] is True' \
  'r["findings"][0]["repair_localization"]["layer_ranking"][0]["layer"] == r["findings"][0]["layer"]["index"]'
for case in exploding_lr_buggy labels_one_based_buggy; do
  check_json "$work/$case.json" 'r["findings"][0]["repair_localization"]["status"] == "not_layer"' \
    'r["findings"][0]["repair_localization"]["layer_blamed"] is False' \
    'r["findings"][0]["repair_localization"]["repair"] in [f["change"] for f in fixes if f["verified"]]'
done
check_json "$work/healthy.json" 'not any("repair_localization" in f for f in r["findings"])'
# Deterministic: the same trials and numbers on a rerun (the seconds aside).
run exploding_again exploding_lr_buggy --verify-fixes --max-trials 3
"$py" - "$work/exploding_lr_buggy.json" "$work/exploding_again.json" <<'EOF' || fail "exploding_lr_buggy: the fixes differ between two runs"
import json, sys
def fixes(p):
    f = json.load(open(p))["findings"][0]["fixes"]
    for x in f:
        x.pop("seconds")
    return f
sys.exit(0 if fixes(sys.argv[1]) == fixes(sys.argv[2]) else 1)
EOF

# (c) --export-fixed (which implies --verify-fixes): a graph change, a label remap and a
# feature scaling, each recorded in the model, which then trains cleanly on the original data.
has_onnx=false
"$py" -c "import onnx" 2> /dev/null && has_onnx=true
for spec in so_31880720_buggy:2:'[n.op_type for n in m.graph.node][-1] == "Sigmoid"' \
            labels_one_based_buggy:2:'"label_map" in meta.get("deeplocalize.preprocessing", "")' \
            so_39525358_buggy:12:'"standardize" in meta.get("deeplocalize.preprocessing", "")'; do
  IFS=: read -r case trials change <<< "$spec"
  out="$work/$case.fixed.onnx"
  run "export_$case" "$case" --export-fixed "$out" --max-trials "$trials"
  [ "$rc" = 1 ] || fail "$case --export-fixed: exit $rc, want 1"
  [ -s "$out" ] || { fail "$case --export-fixed: no $out"; continue; }
  "$bin" inspect "$out" > "$work/$case.inspect" 2>&1 || fail "$case: inspect of the repaired model failed"
  "$bin" train "$out" "$case/data.csv" --format json -q > "$work/retrain_$case.json" 2> "$work/retrain_$case.err"
  rc=$?
  [ "$rc" = 0 ] || fail "$case: the repaired model on the original data exits $rc, want 0 (verdict ok)"
  check_json "$work/retrain_$case.json" 'r["verdict"] == "ok" and not r["findings"]'
  # The repaired model reaches what its verified trial promised.
  check_json "$work/retrain_$case.json" \
    "abs(r['training']['accuracy'][-1] - json.load(open('$work/export_$case.json'))['findings'][0]['fixes'][0]['after']['accuracy']) < 1e-6"
  if $has_onnx; then
    "$py" - "$out" "$change" <<'EOF' || fail "$case: the repaired model fails onnx.checker or lacks its change ($change)"
import sys, onnx
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m, full_check=True)
meta = {p.key: p.value for p in m.metadata_props}
sys.exit(0 if eval(sys.argv[2]) else 1)
EOF
  fi
done

# (d) Bad option values: exit 2, the message names the option.
for opt in "--max-trials 0" "--max-trials 101" "--trial-budget -1" "--trial-budget 0" "--trial-jobs 0"; do
  # shellcheck disable=SC2086
  "$bin" train exploding_lr_buggy/model.onnx exploding_lr_buggy/data.csv --verify-fixes $opt > /dev/null 2> "$work/opt.err"
  rc=$?
  [ "$rc" = 2 ] || fail "$opt: exit $rc, want 2"
  grep -q -- "${opt%% *}" "$work/opt.err" || fail "$opt: the message does not name ${opt%% *}: $(head -1 "$work/opt.err")"
done

# (e) Combinations that cannot work are usage errors, found before any training: a Keras
# baseline detector or --no-probes (no probes, so no trials), an unwritable export path.
for combo in "--verify-fixes --detector keras-union" "--export-fixed $work/k.onnx --no-probes" \
  "--export-fixed /nonexistent-dir/x.onnx"; do
  # shellcheck disable=SC2086
  "$bin" train exploding_lr_buggy/model.onnx exploding_lr_buggy/data.csv $combo > /dev/null 2> "$work/combo.err"
  rc=$?
  [ "$rc" = 2 ] || fail "$combo: exit $rc, want 2"
  opt="${combo%% *}"
  grep -q -- "$opt" "$work/combo.err" || fail "$combo: the message does not name $opt: $(head -1 "$work/combo.err")"
done
[ -e "$work/k.onnx" ] && fail "--no-probes: --export-fixed wrote a model"
"$bin" batch "$src/models/benchmark/manifest.json" --verify-fixes --detector keras-union -q > /dev/null 2> "$work/combo.err"
[ "$?" = 2 ] || fail "batch --verify-fixes --detector keras-union: want exit 2"

if [ "$failures" -gt 0 ]; then
  echo "$failures failure(s); outputs in $work"
  exit 1
fi
echo "fixes: all checks passed"
