#!/usr/bin/env bash
# Generates the ONNX backend node tests (model.onnx + test_data_set_0/*.pb per case)
# from Debian's python3-onnx, which ships the generators but not the data.
# Usage: scripts/gen-conformance-data.sh OUTDIR   -> OUTDIR/node/test_*/
# Idempotent: does nothing when OUTDIR/.stamp records the installed onnx version and
# OUTDIR/node holds the tests.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
outdir=$1
# Debian's interpreter, explicitly: a pyenv python3 may come first on PATH without onnx.
python=/usr/bin/python3

if [[ ! -x $python ]]; then
  echo "gen-conformance-data: $python not found; install python3 and python3-onnx" >&2
  echo "  (scripts/install-deps.sh installs them)" >&2
  exit 1
fi
if ! version=$($python -c 'import onnx; print(onnx.__version__)' 2>/dev/null); then
  echo "gen-conformance-data: $python cannot import onnx; install python3-onnx" >&2
  echo "  (sudo apt-get install python3-onnx, or scripts/install-deps.sh)" >&2
  exit 1
fi

stamp=$outdir/.stamp
if [[ -f $stamp && $(cat "$stamp") == "onnx $version" ]] &&
   compgen -G "$outdir/node/test_*/model.onnx" >/dev/null; then
  exit 0
fi

# Generate into a temporary sibling and move it into place, so an interrupted run
# never leaves a half-filled OUTDIR/node that a later run would take as complete.
mkdir -p "$outdir"
tmp=$(mktemp -d "$outdir/.gen.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# numpy >= 1.24 removed the aliases the onnx 1.12 generators still use.
$python - "$tmp" <<'EOF'
import sys
import numpy as np
np.float = float
np.int = int
np.bool = bool
np.object = object
out = sys.argv[1]
sys.argv = ["onnx-backend-test-tools", "generate-data", "-o", out]
from onnx.backend.test import cmd_tools
cmd_tools.main()
EOF

if ! compgen -G "$tmp/node/test_*/model.onnx" >/dev/null; then
  echo "gen-conformance-data: the generator produced no node tests in $tmp/node" >&2
  exit 1
fi

rm -rf "$outdir/node" "$stamp"
mv "$tmp/node" "$outdir/node"
echo "onnx $version" >"$stamp"
count=$(find "$outdir/node" -mindepth 1 -maxdepth 1 -type d -name 'test_*' | wc -l)
echo "gen-conformance-data: $count node tests (onnx $version) in $outdir/node"
