#!/usr/bin/env bash
# Trains every case of models/modern (recurrent, embedding and, when present, attention
# models; models/modern/generate.py) with `deeplocalize train --format json` and checks the
# primary finding against the case's expected.json: the verdict, the symptom and root cause
# (one of the accepted ones), and the layer (it must contain every expected node).
# Usage: check.sh path/to/deeplocalize [workdir [cases]]: `cases` is another folder of such
# cases (models/modern/generate.py --out DIR: re-made with other seeds and sizes); then the
# learning-rate x100 checks of lr_x100.txt, which belong to models/modern's own cases, are
# left out.
set -u
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
work=${2:-$(mktemp -d)}
cases=${3:-$here/../../models/modern}
mkdir -p "$work"
/usr/bin/python3 - "$bin" "$cases" "$work" "${3:+other}" "$here/lr_x100.txt" <<'PY'
import json, os, subprocess, sys, time
bin, root, work, other, lr_list = sys.argv[1:6]
cases = sorted(d for d in os.listdir(root) if os.path.isfile(os.path.join(root, d, "expected.json")))
if not cases:
    print("modern: no cases under " + root)
    sys.exit(1)
failed, start = [], time.time()
for name in cases:
    d = os.path.join(root, name)
    want = json.load(open(os.path.join(d, "expected.json")))
    t0 = time.time()
    p = subprocess.run([bin, "train", os.path.join(d, "model.onnx"), os.path.join(d, "data.csv"), "--format", "json",
                        "--quiet", "--trace", os.path.join(work, name + ".trace")], capture_output=True, text=True)
    took = time.time() - t0
    problems = []
    if p.returncode not in (0, 1):
        problems.append("exit %d: %s" % (p.returncode, p.stderr.strip()[-300:]))
        report = None
    else:
        report = json.loads(p.stdout)
    if report is not None:
        fault = report["verdict"] == "fault"
        # "fault": bool (generate.py's cases); "verdict": "fault"/"ok" in older attention cases.
        want["fault"] = want["fault"] if "fault" in want else want["verdict"] == "fault"
        if fault != want["fault"]:
            problems.append("verdict %s, expected %s" % (report["verdict"], "fault" if want["fault"] else "ok"))
        if (p.returncode == 1) != fault:
            problems.append("exit %d with verdict %s" % (p.returncode, report["verdict"]))
        if fault and want["fault"]:
            f = report["findings"][0]
            if f["symptom"] not in want["symptoms"]:
                problems.append("symptom %s, expected one of %s" % (f["symptom"], want["symptoms"]))
            if f["root_cause"] not in want["root_causes"]:
                problems.append("root cause %s, expected one of %s" % (f["root_cause"], want["root_causes"]))
            nodes = (f.get("layer") or {}).get("nodes", [])
            if not set(want["nodes"]) <= set(nodes):
                problems.append("layer %s, expected one holding %s" % (nodes, want["nodes"]))
        if not fault and not want["fault"] and report["findings"]:
            problems.append("findings on a healthy case")
    first = report["findings"][0] if report and report["findings"] else None
    summary = "%s / %s / %s" % (first["symptom"], first["root_cause"], (first.get("layer") or {}).get("nodes")) if first else "ok"
    print("modern: %-28s %5.1f s  %-4s %s%s" % (name, took, "ok" if not problems else "FAIL", summary,
                                                "" if not problems else "\n    " + "\n    ".join(problems)))
    if problems:
        failed.append(name)
# Learning rate x100 on healthy cases without an x100 case of their own (lr_x100.txt): a
# fault whose root cause is the learning rate.
variants = [] if other else [l.split() for l in open(lr_list) if l.strip() and not l.startswith("#")]
for name, lr in variants:
    d = os.path.join(root, name)
    p = subprocess.run([bin, "train", os.path.join(d, "model.onnx"), os.path.join(d, "data.csv"), "--lr", lr,
                        "--format", "json", "--quiet"], capture_output=True, text=True)
    f = json.loads(p.stdout)["findings"] if p.returncode in (0, 1) else []
    ok = p.returncode == 1 and f and f[0]["root_cause"] == "learning_rate"
    print("modern: %-28s at --lr %-4s %-4s %s" % (name, lr, "ok" if ok else "FAIL",
          "%s / %s" % (f[0]["symptom"], f[0]["root_cause"]) if f else "exit %d, no finding" % p.returncode))
    if not ok:
        failed.append(name + " at --lr " + lr)
print("modern: %d/%d cases as expected in %.1f s" % (len(cases) + len(variants) - len(failed), len(cases) + len(variants),
                                                     time.time() - start))
sys.exit(1 if failed else 0)
PY
