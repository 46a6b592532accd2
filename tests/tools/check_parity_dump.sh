#!/usr/bin/env bash
# The op-by-op parity check (ctest parity_dump): dl_parity_dump trains the
# mobilenet_v3_small parity fixture (opset 17) for 2 steps and dumps iterations 0 and 1;
# parity_dump.py grads then requires every parameter's gradient and weight (before the
# update) within 1e-3 of torch float64's, measured as max |x - x64| / rms(x64) (torch's own
# float32 run: 1e-4 at worst, deeplocalize 1.1e-4 native on Zen 4, 1.4e-4 in an AVX2 build), and the two losses
# within the parity tests' 1e-4 of the reference. A copy of the dump with one gradient
# scaled by 1.01 must fail the same check (the check is not vacuous), and a dump compared
# with itself has no Relu sign flips. Skipped (77) without python3-torch.
# Usage: check_parity_dump.sh DL_PARITY_DUMP SOURCE_DIR WORK_DIR
set -uo pipefail
tool="$1" src="$2" work="$3"
py=/usr/bin/python3
fx="$src/tests/fixtures/parity"
case=mobilenet_v3_small_scce_momentum
"$py" -c "import torch, torchvision, onnx" 2>/dev/null || { echo "parity_dump: python3-torch not installed, skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
fail() { echo "parity_dump: FAILED: $*"; exit 1; }

"$tool" "$fx/cnn/${case}_opset17.onnx.gz" "$fx/cnn/images.csv" --iterations 0,1 --steps 2 --out "$work/run.dump" \
  || fail "dl_parity_dump exited $?"
for it in 0 1; do
  "$py" "$fx/parity_dump.py" grads "$case" "$work/run.dump" --iteration "$it" \
    --max-grad-error 1e-3 --max-weight-error 1e-3 > "$work/grads$it.txt" 2>&1
  rc=$?
  grep -E "^(worst|FAIL)" "$work/grads$it.txt"
  [[ $rc == 0 ]] || fail "iteration $it: gradients or weights past 1e-3 of float64 (exit $rc, $work/grads$it.txt)"
done
"$py" "$fx/parity_dump.py" losses "$work/run.dump" --reference "$fx/cnn/$case.txt" > "$work/losses.txt" 2>&1 \
  || fail "losses past 1e-4 of the reference ($work/losses.txt)"
tail -1 "$work/losses.txt"
"$py" "$fx/parity_dump.py" flips "$work/run.dump" "$work/run.dump" --iteration 1 > "$work/flips.txt" 2>&1 \
  && grep -q "^0 Relu sign flips" "$work/flips.txt" || fail "a dump against itself ($work/flips.txt)"

# The negative control: features.0.0.weight's gradient at iteration 0, times 1.01.
"$py" - "$work/run.dump" "$work/scaled.dump" <<'PY' || fail "could not write the scaled dump"
import struct, sys
import numpy as np
data = bytearray(open(sys.argv[1], "rb").read())
name = b"features.0.0.weight"
at = data.find(b"G" + struct.pack("<qI", 0, len(name)) + name)
assert at > 0
pos = at + 13 + len(name)
rank, = struct.unpack_from("<I", data, pos)
n = int(np.prod(struct.unpack_from("<%dq" % rank, data, pos + 4)))
pos += 4 + 8 * rank
g = np.frombuffer(data, np.float32, n, pos) * np.float32(1.01)
data[pos:pos + 4 * n] = g.tobytes()
open(sys.argv[2], "wb").write(data)
PY
"$py" "$fx/parity_dump.py" grads "$case" "$work/scaled.dump" --iteration 0 --max-grad-error 1e-3 \
  > "$work/scaled.txt" 2>&1 && fail "a gradient scaled by 1.01 passed ($work/scaled.txt)"
grep "^FAIL scaled.dump: gradient of features.0.0.weight" "$work/scaled.txt" \
  || fail "the scaled gradient was not the reason ($work/scaled.txt)"
echo "parity_dump: ok"
