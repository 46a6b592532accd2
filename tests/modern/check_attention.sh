#!/usr/bin/env bash
# The feature probes of the attention cases of models/modern: the encoder's inner
# softmaxes record their row entropy and its LayerNorms their normalised scale, and a
# model's output softmax (models/benchmark/healthy_iris_mlp) records nothing. The cases'
# verdicts, symptoms, root causes and layers are checked by tests/modern/check.sh.
# Usage: check_attention.sh path/to/deeplocalize [workdir]
set -u
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
work=${2:-$(mktemp -d)}
mkdir -p "$work"
exec /usr/bin/python3 - "$bin" "$root" "$work" <<'PY'
import json, os, struct, subprocess, sys
bin, root, work = sys.argv[1:4]

failures = []

def fail(msg):
    print("modern_attention: FAIL " + msg)
    failures.append(msg)

def trace_probes(path):
    b = open(path, "rb").read()
    nl = b.index(b"\n")
    (n,) = struct.unpack("<Q", b[nl + 1:nl + 9])
    return json.loads(b[nl + 9:nl + 9 + n])["probes"]

# The cases' verdicts, symptoms, root causes and layers are checked by tests/modern/check.sh
# (ctest modern); this checks which steps get feature probes.
d = os.path.join(root, "models", "modern", "transformer_healthy")
subprocess.run([bin, "train", os.path.join(d, "model.onnx"), os.path.join(d, "data.csv"), "--quiet", "--trace",
                os.path.join(work, "transformer_healthy.dltrace")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

# The probes: the encoder's two attention softmaxes report their row entropy, its
# LayerNorms their normalised scale; a classifier's output softmax reports nothing.
probes = trace_probes(os.path.join(work, "transformer_healthy.dltrace"))
feats = sorted((p["feature"], p["node"]) for p in probes if p["kind"] == "feature")
want = sorted([("row_entropy", "/enc/layers.%d/self_attn/Softmax" % l) for l in (0, 1)] +
              [("normalized_scale", "/enc/layers.%d/norm%d/LayerNormalization" % (l, n)) for l in (0, 1) for n in (1, 2)])
if feats != want:
    fail("transformer_healthy: feature probes %s, expected %s" % (feats, want))
iris = os.path.join(root, "models", "benchmark", "healthy_iris_mlp")
trace = os.path.join(work, "iris.dltrace")
subprocess.run([bin, "train", os.path.join(iris, "model.onnx"), os.path.join(iris, "data.csv"), "--quiet",
                "--trace", trace], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if any(p["kind"] == "feature" for p in trace_probes(trace)):
    fail("healthy_iris_mlp: its output softmax has a feature probe")

print("modern_attention: feature probes checked, %d failed" % len(failures))
sys.exit(1 if failures else 0)
PY
