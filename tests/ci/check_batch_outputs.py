#!/usr/bin/python3
"""End to end through the executable: `deeplocalize batch DIR --jobs 2 --junit --summary-md
--json` on cases built from models/demo, the files validated (XML parses, one test case
per model, JSON and Markdown complete), and two shards merged with `deeplocalize merge`
equal to the unsharded summary (timings aside).

Usage: check_batch_outputs.py SOURCE_DIR DEEPLOCALIZE WORK_DIR"""
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

source, binary, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
cases = os.path.join(work, "cases")
cases_spec = {
    "healthy": ({"epochs": 5}, {"fault": False}),
    "diverges": ({"epochs": 3, "optimizer": "sgd", "lr": 50}, {"fault": True, "root_causes": ["learning_rate"]}),
    "plain <&> 'name'": ({"epochs": 2}, None),
}
for name, (options, expected) in cases_spec.items():
    d = os.path.join(cases, name)
    os.makedirs(d)
    for f in ("model.onnx", "data.csv"):
        shutil.copy(os.path.join(source, "models", "demo", f), d)
    with open(os.path.join(d, "options.json"), "w") as f:
        json.dump(options, f)
    if expected is not None:
        with open(os.path.join(d, "expected.json"), "w") as f:
            json.dump(expected, f)


def run(*args):
    p = subprocess.run([binary, *args], capture_output=True, text=True)
    if p.returncode > 1:
        sys.exit(f"{' '.join(args)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


out = lambda name: os.path.join(work, name)
p = run("batch", cases, "--jobs", "2", "--junit", out("r.xml"), "--summary-md", out("s.md"), "--json", out("all.json"))
print(p.stdout)
lines = [l for l in p.stdout.splitlines() if l.startswith("[")]
assert len(lines) == 3, lines
assert [l.split()[1] for l in lines] == ["diverges", "healthy", "plain"], lines  # sorted folder order

root = ET.parse(out("r.xml")).getroot()
assert root.tag == "testsuites", root.tag
testcases = root.findall("./testsuite/testcase")
assert len(testcases) == 3, len(testcases)
assert {t.get("name") for t in testcases} == set(cases_spec), [t.get("name") for t in testcases]
for t in testcases:
    for f in t.findall("failure"):
        assert f.get("message"), "a failure without a message"
assert int(root.get("tests")) == 3

md = open(out("s.md"), encoding="utf-8").read()
assert md.startswith("### deeplocalize batch"), md[:80]
assert sum(1 for l in md.splitlines() if l.startswith("| ")) >= 4, md

summary = json.load(open(out("all.json")))
assert summary["totals"]["cases"] == 3 and summary["total_cases"] == 3, summary["totals"]

run("batch", cases, "--shard", "0/2", "--json", out("s0.json"), "-q")
run("batch", cases, "--shard", "1/2", "--json", out("s1.json"), "--in-process", "-q")
run("merge", out("s1.json"), out("s0.json"), "--json", out("merged.json"), "--junit", out("m.xml"), "-q")
ET.parse(out("m.xml"))


def strip(s):
    s.pop("wall_s")
    s["totals"].pop("median_time_to_verdict_s")
    for c in s["cases"]:
        for k in ("seconds", "timing", "time_to_verdict_s"):
            c.pop(k)
    return s


merged = json.load(open(out("merged.json")))
assert strip(merged) == strip(summary), "merged shards differ from the unsharded run"
shutil.rmtree(work)
print("check_batch_outputs: ok")
