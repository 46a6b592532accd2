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
import time
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


def refused(args, fragments, code=2):
    p = subprocess.run([binary, *args], capture_output=True, text=True)
    assert p.returncode == code, f"{' '.join(args)}: exit {p.returncode}, expected {code}\n{p.stdout}\n{p.stderr}"
    for fragment in fragments:
        assert fragment in p.stderr, f"{' '.join(args)}: '{fragment}' not in\n{p.stderr}"
    return p


def peak_rss_mb(args, kill_above_mb=1024):
    """Runs deeplocalize ARGS; returns (exit code, stderr, its peak RSS in MB, from
    wait4). A child that passes kill_above_mb is killed, so that a regression cannot
    take the shared machine's memory."""
    err = os.path.join(work, "peak.err")
    pid = os.fork()
    if pid == 0:
        fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 2)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        os.execv(binary, [binary, *args])
    killed = False
    while True:
        wpid, status, usage = os.wait4(pid, os.WNOHANG)
        if wpid:
            break
        try:
            with open(f"/proc/{pid}/status") as f:
                rss_kb = next((int(l.split()[1]) for l in f if l.startswith("VmRSS:")), 0)
            if rss_kb > kill_above_mb * 1024 and not killed:
                os.kill(pid, 9)
                killed = True
        except (FileNotFoundError, ProcessLookupError):
            pass
        time.sleep(0.01)
    return os.waitstatus_to_exitcode(status), open(err).read(), usage.ru_maxrss / 1024


# merge: a 50,000-deep array inside a case of a valid summary (about 100 KB) is refused
# at once, naming the file and the line, in bounded memory.
text = open(out("s0.json")).read()
deep = out("deep.json")
with open(deep, "w") as f:
    f.write(text.replace('"name":', '"deep": ' + "[" * 50000 + "]" * 50000 + ', "name":', 1))  # in cases[0]
assert os.path.getsize(deep) < 1 << 20
code, err, peak = peak_rss_mb(["merge", deep, out("s1.json"), "--json", out("deep-merged.json")])
assert code == 2 and deep in err and "nested deeper than 64 levels" in err, (code, err)
assert peak < 256, f"merge of a 50,000-deep summary peaked at {peak:.0f} MB"
print(f"merge of a 50,000-deep summary: exit 2, peak RSS {peak:.0f} MB")


def edited(name, edit):
    s = json.load(open(out("s1.json")))
    edit(s)
    path = out(name)
    with open(path, "w") as f:
        json.dump(s, f)
    return path


# merge: fields out of range, unknown values, summaries of another version or manifest.
s0 = out("s0.json")
refused(["merge", s0, edited("v99.json", lambda s: s.update(summary_version=99))], [out("v99.json") + ": summary_version: 99"])
refused(["merge", s0, edited("neg.json", lambda s: s["cases"][0].update(index=-1))], [out("neg.json") + ": cases[0].index"])
refused(["merge", s0, edited("big.json", lambda s: s["cases"][0].update(index=10**18))], ["cases[0].index"])
refused(["merge", s0, edited("status.json", lambda s: s["cases"][0].update(status="weird"))], ["cases[0].status"])
refused(["merge", s0, edited("manifest.json", lambda s: s.update(manifest="0" * 16))], [out("manifest.json") + ": manifest"])
p = refused(["merge", s0, edited("total.json", lambda s: s.update(total_cases=10**15))], ["total_cases"])
assert "-1530494976" not in p.stdout + p.stderr

# batch: --reports onto a file is a usage error, before any case runs.
refused(["batch", cases, "--reports", out("r.xml")], ["--reports", "not a directory"])

# batch: a symlink loop and a dangling link are errors of their cases; the rest runs;
# names that are one file name ('a<b', 'a>b') get one report each.
odd = os.path.join(work, "odd")
for name in ("a<b", "a>b"):
    shutil.copytree(os.path.join(cases, "healthy"), os.path.join(odd, name))
os.symlink("loop", os.path.join(odd, "loop"))
os.symlink(os.path.join(work, "nothing"), os.path.join(odd, "dangling"))
p = subprocess.run([binary, "batch", odd, "--json", out("odd.json"), "--reports", out("reports"), "-q"],
                   capture_output=True, text=True)
assert p.returncode == 2, (p.returncode, p.stderr)
odd_summary = json.load(open(out("odd.json")))
status = {c["name"]: c["status"] for c in odd_summary["cases"]}
assert status == {"a<b": "ok", "a>b": "ok", "dangling": "input_error", "loop": "input_error"}, status
assert len(os.listdir(out("reports"))) == 2, os.listdir(out("reports"))
shutil.rmtree(work)
print("check_batch_outputs: ok")
