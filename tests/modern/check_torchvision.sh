#!/usr/bin/env bash
# Issue 16, item 5 on the torchvision models of item 3 themselves (models/modern holds
# small look-alikes: a 45 MB resnet18 does not belong in the repository): resnet18 and
# mobilenet_v3_small (random init, 3x32x32, 3 classes, BatchNorm in training mode) are
# exported with scripts/export_torch.py (Adam 1e-3, batch 32) and trained on 192 images
# of three shapes. Healthy, each must come out `ok`; at --lr 0.1 (x100) each must be a
# fault whose root cause is the learning rate. Skipped (77) without python3-torch and
# under DL_TESTS_LIGHT=1 (the sanitizer job: resnet18 trains for minutes there).
# Usage: check_torchvision.sh DEEPLOCALIZE SOURCE_DIR WORK_DIR
set -uo pipefail
dl="$1" src="$2" work="$3"
py=/usr/bin/python3
if [[ -n "${DL_TESTS_LIGHT:-}" ]]; then echo "torchvision_diagnosis: DL_TESTS_LIGHT is set, skipped"; exit 77; fi
"$py" -c "import torch, torchvision, onnx" 2>/dev/null || { echo "torchvision_diagnosis: python3-torch not installed, skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
start=$(date +%s)
PYTHONPATH="$src/scripts" "$py" - "$work" <<'PY' || { echo "torchvision_diagnosis: export failed"; exit 1; }
import sys
import numpy as np
import export_torch as et
work = sys.argv[1]
# 3x32x32 images of one of three shapes (a bar, a column, a square) at a random place, tinted
# per channel, on noise; pixels rounded to 0.1 (models/modern/cnn_cases.py's data at 32x32).
rng = np.random.default_rng(5)
rows, side = 192, 32
y = rng.integers(0, 3, rows)
x = rng.normal(0, 0.15, size=(rows, 3, side, side))
for r in range(rows):
    cy, cx = rng.integers(5, side - 5, size=2)
    tint = rng.uniform(0.6, 1.2, size=3)[:, None, None]
    if y[r] == 0:
        x[r, :, cy - 1:cy + 2, cx - 5:cx + 6] += tint
    elif y[r] == 1:
        x[r, :, cy - 5:cy + 6, cx - 1:cx + 2] += tint
    else:
        x[r, :, cy - 3:cy + 3, cx - 3:cx + 3] += tint
x = np.round(x * 10) / 10 + 0.0
np.savetxt(work + "/shapes.csv", np.c_[x.reshape(rows, -1), y], delimiter=",", fmt="%g")
# Epochs: mobilenet_v3_small is still improving after 4 (deeplocalize then says
# training_too_short, rightly) and has converged by 10.
for name, epochs in (("resnet18", 4), ("mobilenet_v3_small", 10)):
    assert et.main([name, "--input-shape", "3,32,32", "--num-classes", "3", "--loss", "cross_entropy",
                    "--optimizer", "Adam", "--lr", "0.001", "--epochs", str(epochs), "--batch-size", "32",
                    "-o", "%s/%s.onnx" % (work, name)]) == 0
PY
failed=0
for name in resnet18 mobilenet_v3_small; do
  for lr in "" 0.1; do
    label=$name${lr:+ at lr $lr}
    t0=$(date +%s)
    "$dl" train "$work/$name.onnx" "$work/shapes.csv" ${lr:+--lr $lr} --format json -q > "$work/$name$lr.json"
    rc=$?
    verdict=$("$py" - "$work/$name$lr.json" "$lr" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
f = r["findings"][0] if r["findings"] else None
want_fault = sys.argv[2] != ""
got = "%s%s" % (r["verdict"], " (%s / %s)" % (f["symptom"], f["root_cause"]) if f else "")
ok = (r["verdict"] == "fault" and f["root_cause"] == "learning_rate") if want_fault else (r["verdict"] == "ok" and not f)
print(("ok   " if ok else "FAIL ") + got + ("" if ok else ", expected " + ("a learning_rate fault" if want_fault else "ok")))
PY
)
    [[ $rc -eq 0 || $rc -eq 1 ]] || verdict="FAIL exit $rc"
    echo "torchvision_diagnosis: $(printf '%-30s' "$label") $(( $(date +%s) - t0 )) s  $verdict"
    [[ $verdict == ok* ]] || failed=1
  done
done
echo "torchvision_diagnosis: $([[ $failed -eq 0 ]] && echo ok || echo FAILED) ($(( $(date +%s) - start )) s)"
exit $failed
