#!/bin/bash
# Two builds' traces and reports of the bundled models, side by side: for each model and
# thread count, `deeplocalize train --trace --format json` with both binaries, then
# whether the traces are the same bytes, whether the JSON reports are equal but for
# their timings (keys ending in _s), and dl_trace_diff's summary (which probes'
# statistics differ, the worst relative difference).
#
#   bench/trace_cmp.sh OLD_DEEPLOCALIZE NEW_DEEPLOCALIZE [DL_TRACE_DIFF]
#
# Environment: THREADS (default "1 2"), MODELS (folders under models/, default the ten
# below: the transformers, the conv autoencoder, the LSTM, LayerNorm, BatchNorm nets).
# Exit status 1 when a report differs, 2 when a run failed (exit status other than 0 or 1).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { sed -n 2,12p "$0" >&2; exit 2; }
OLD=$(realpath "$1")
NEW=$(realpath "$2")
DIFF=$(realpath -m "${3:-$(dirname "$NEW")/bench/dl_trace_diff}")
THREADS=${THREADS:-"1 2"}
MODELS=${MODELS:-"modern/transformer_healthy modern/transformer_causal_healthy modern/transformer_padded_healthy
  modern/transformer_lr_x100 modern/causal_masked_fill_healthy modern/healthy_conv_autoencoder
  modern/healthy_lstm_classifier modern/layernorm_single_value modern/healthy_resnet_bn benchmark/healthy_batchnorm_mlp"}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
status=0
cd "$ROOT/models"
for m in $MODELS; do
  for t in $THREADS; do
    failed=""
    for side in OLD NEW; do
      bin=$OLD; [ $side = NEW ] && bin=$NEW
      rc=0
      "$bin" train "$m/model.onnx" "$m/data.csv" --threads "$t" --trace "$OUT/$side.trace" --format json \
        >"$OUT/$side.json" 2>"$OUT/$side.err" || rc=$?
      # (exit 1 is a faulty verdict, not an error)
      [ $rc -le 1 ] || failed="$failed $side (exit $rc: $(head -c 300 "$OUT/$side.err"))"
    done
    if [ -n "$failed" ]; then
      echo "$m threads $t: failed:$failed"
      status=2
      continue
    fi
    trace=differ
    cmp -s "$OUT/OLD.trace" "$OUT/NEW.trace" && trace=same
    report=$(/usr/bin/python3 - "$OUT/OLD.json" "$OUT/NEW.json" <<'PY'
import json, sys
def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if not k.endswith("_s")}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o
a, b = (strip(json.load(open(p))) for p in sys.argv[1:3])
print("equal" if a == b else "DIFFER")
PY
)
    [ "$report" = equal ] || [ $status -eq 2 ] || status=1
    diff=""
    [ -x "$DIFF" ] && diff="; $("$DIFF" "$OUT/OLD.trace" "$OUT/NEW.trace" 2>&1 | tail -1 || true)"
    echo "$m threads $t: trace $trace, reports $report$diff"
  done
done
exit $status
