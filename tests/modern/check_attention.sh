#!/usr/bin/env bash
# Trains the attention and LayerNorm cases of models/modern (models/modern/attention_cases.py)
# and checks each against its expected.json: the verdict (and exit code), and for a
# fault the primary finding's symptom, root cause and layer nodes. Also checks that the
# probes record an attention feature for the encoder's inner softmaxes and none for a
# model's output softmax (models/benchmark/healthy_iris_mlp).
# Usage: check_attention.sh path/to/deeplocalize [workdir]
set -u
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
work=${2:-$(mktemp -d)}
mkdir -p "$work"
exec /usr/bin/python3 - "$bin" "$root" "$work" <<'PY'
import json, os, struct, subprocess, sys, time
bin, root, work = sys.argv[1:4]
sys.path.insert(0, os.path.join(root, "models", "modern"))
import attention_cases  # noqa: E402  (numpy only at import time)

failures = []

def fail(msg):
    print("modern_attention: FAIL " + msg)
    failures.append(msg)

def trace_probes(path):
    b = open(path, "rb").read()
    nl = b.index(b"\n")
    (n,) = struct.unpack("<Q", b[nl + 1:nl + 9])
    return json.loads(b[nl + 9:nl + 9 + n])["probes"]

total = 0.0
for case in attention_cases.CASES:
    d = os.path.join(root, "models", "modern", case.name)
    exp = json.load(open(os.path.join(d, "expected.json")))
    trace = os.path.join(work, case.name + ".dltrace")
    t0 = time.time()
    r = subprocess.run([bin, "train", os.path.join(d, "model.onnx"), os.path.join(d, "data.csv"), "--format", "json",
                        "--quiet", "--trace", trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dt = time.time() - t0
    total += dt
    if r.returncode not in (0, 1):
        fail("%s: exit %d: %s" % (case.name, r.returncode, r.stderr.strip()[-400:]))
        continue
    rep = json.loads(r.stdout)
    got = rep["verdict"]
    first = rep["findings"][0] if rep["findings"] else None
    what = "%s %s %s" % (got, first["symptom"], first["root_cause"]) if first else got
    print("modern_attention: %-26s %-48s %5.1f s" % (case.name, what, dt))
    if got != exp["verdict"] or r.returncode != (1 if got == "fault" else 0):
        fail("%s: verdict %s (exit %d), expected %s" % (case.name, got, r.returncode, exp["verdict"]))
        continue
    if got == "fault":
        if first["symptom"] not in exp["symptoms"]:
            fail("%s: symptom %s, expected one of %s" % (case.name, first["symptom"], exp["symptoms"]))
        if first["root_cause"] not in exp["root_causes"]:
            fail("%s: root cause %s, expected one of %s" % (case.name, first["root_cause"], exp["root_causes"]))
        nodes = (first.get("layer") or {}).get("nodes", [])
        missing = [n for n in exp["nodes"] if n not in nodes]
        if missing:
            fail("%s: layer %s lacks %s" % (case.name, first.get("layer"), missing))

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

print("modern_attention: %d cases in %.1f s, %d failed" % (len(attention_cases.CASES), total, len(failures)))
sys.exit(1 if failures else 0)
PY
