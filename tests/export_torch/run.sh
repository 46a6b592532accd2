#!/usr/bin/env bash
# scripts/export_torch.py end to end (skipped, exit 77, without python3-torch): a
# module:callable MLP with Dropout and BatchNorm1d and torchvision's resnet18 are exported
# in training mode with a dynamic batch and the metadata of a torch optimizer and loss;
# deeplocalize reads that metadata, sees no eval-mode export or fixed batch, and trains
# the MLP.
# Usage: run.sh DEEPLOCALIZE SOURCE_DIR WORK_DIR
set -uo pipefail
dl="$1" src="$2" work="$3"
py=/usr/bin/python3
fail() { echo "export_torch: $*" >&2; exit 1; }
"$py" -c "import torch, onnx, torchvision" 2>/dev/null || { echo "export_torch: python3-torch not installed, skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
start=$(date +%s)

cat > "$work/tiny_net.py" <<'PY'
import torch
from torch import nn
def make():
    return nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 3))
PY
PYTHONPATH="$work:$src/scripts" "$py" - "$work" <<'PY' || fail "the exports failed"
import sys, onnx, torch
import export_torch as et
work = sys.argv[1]
# the command line, with a torchvision name (random init: weights=None)
assert et.main(["resnet18", "--input-shape", "3,32,32", "--loss", "cross_entropy", "--optimizer", "sgd", "--lr",
                "0.05", "--momentum", "0.9", "--nesterov", "-o", work + "/resnet18.onnx"]) == 0
# the module API, with a torch optimizer and loss
torch.manual_seed(0)
import tiny_net
net = tiny_net.make()
meta = et.export_model(net, torch.zeros(2, 6), work + "/mlp.onnx", optimizer=torch.optim.Adam(net.parameters(), lr=0.003),
                       loss=torch.nn.CrossEntropyLoss(), epochs=3, batch_size=16)
m = onnx.load(work + "/mlp.onnx")
props = {p.key: p.value for p in m.metadata_props}
assert props == meta, (props, meta)
assert props["deeplocalize.optimizer"] == "adam" and props["deeplocalize.learning_rate"] == "0.003", props
assert props["deeplocalize.loss"] == "sparse_categorical_crossentropy" and props["deeplocalize.from_logits"] == "true"
ops = {n.op_type for n in m.graph.node}
assert "Dropout" in ops and "BatchNormalization" in ops, ops   # training form kept
assert m.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
# parameters with requires_grad=False are written to deeplocalize.frozen
frozen = tiny_net.make()
frozen[0].weight.requires_grad_(False)
meta = et.export_model(frozen, torch.zeros(2, 6), work + "/frozen.onnx", loss=torch.nn.CrossEntropyLoss())
assert meta["deeplocalize.frozen"] == "0.weight", meta
assert "deeplocalize.frozen" not in et.export_model(net, torch.zeros(2, 6), work + "/unfrozen.onnx")
# a loss deeplocalize has no equivalent of is refused by name
try:
    et.training_metadata(loss=torch.nn.NLLLoss())
    raise SystemExit("NLLLoss was accepted")
except ValueError as e:
    assert "NLLLoss" in str(e)
PY

"$dl" inspect "$work/resnet18.onnx" > "$work/resnet18.txt" || fail "inspect resnet18 failed"
grep -q "optimizer *sgd" "$work/resnet18.txt" || fail "resnet18: optimizer not in the metadata"
grep -q "nesterov *true" "$work/resnet18.txt" || fail "resnet18: nesterov not in the metadata"
grep -q "learning_rate *0.05" "$work/resnet18.txt" || fail "resnet18: learning rate not in the metadata"
grep -q "^notes" "$work/resnet18.txt" && fail "resnet18: a training-mode export got eval-mode/fixed-batch notes"
grep -q "state: .*(running statistics" "$work/resnet18.txt" || fail "resnet18: BatchNorm running statistics missing"

"$py" -c "
import numpy as np
rng = np.random.default_rng(1)
x = rng.normal(size=(48, 6)); y = (x[:, 0] > 0).astype(int) + (x[:, 1] > 0.5)
np.savetxt('$work/mlp.csv', np.c_[x, y], delimiter=',', fmt='%.6g')"
"$dl" train "$work/mlp.onnx" "$work/mlp.csv" -q --format json --report "$work/mlp.json"
rc=$?
[[ $rc -eq 0 || $rc -eq 1 ]] || fail "training the exported MLP exited $rc"
"$py" - "$work/mlp.json" <<'PY' || fail "the MLP report is not as expected"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["training"]["epochs"] == 3, r["training"]
assert r["notes"] == [], r["notes"]
PY
echo "export_torch: ok ($(( $(date +%s) - start )) s)"
