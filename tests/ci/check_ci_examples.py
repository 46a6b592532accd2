#!/usr/bin/python3
"""Checks the CI examples in examples/ci/: they parse as YAML (python3-yaml), have the
structure they document (a matrix of shards and a merge job; GitLab `parallel:`), and
every option they pass to `deeplocalize batch` / `merge` exists (from --help).

Usage: check_ci_examples.py SOURCE_DIR DEEPLOCALIZE"""
import re
import subprocess
import sys

import yaml

source, binary = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def load(name):
    with open(f"{source}/examples/ci/{name}", encoding="utf-8") as f:
        text = f.read()
    check("\t" not in text, f"{name}: tabs are not allowed in YAML indentation")
    return text, yaml.safe_load(text)


def scripts(node):
    """Every string of a parsed YAML document."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from scripts(v)
    elif isinstance(node, list):
        for v in node:
            yield from scripts(v)


def options_of(command):
    out = subprocess.run([binary, command, "--help"], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"--[a-z][a-z0-9-]*", out))


known = {"batch": options_of("batch"), "merge": options_of("merge")}


def check_commands(name, doc):
    seen = set()
    for s in scripts(doc):
        for m in re.finditer(r"deeplocalize (batch|merge)\b([^\n]*(?:\n\s+--[^\n]*)*)", s):
            seen.add(m.group(1))
            for opt in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", m.group(2)):
                check(opt in known[m.group(1)], f"{name}: 'deeplocalize {m.group(1)}' has no option {opt}")
    check(seen == {"batch", "merge"}, f"{name}: runs {sorted(seen)}, expected batch and merge")


# GitHub Actions
text, gh = load("github-actions.yml")
check(isinstance(gh, dict), "github-actions.yml: not a mapping")
triggers = gh.get("on", gh.get(True))  # YAML 1.1 reads the key `on` as true
check(triggers is not None, "github-actions.yml: no `on:` triggers")
jobs = gh.get("jobs", {})
matrix_jobs = [j for j, v in jobs.items() if "shard" in v.get("strategy", {}).get("matrix", {})]
check(len(matrix_jobs) == 1, "github-actions.yml: expected one job with a matrix over `shard`")
merge_jobs = [j for j, v in jobs.items() if matrix_jobs and matrix_jobs[0] in
              ([v["needs"]] if isinstance(v.get("needs"), str) else v.get("needs", []))]
check(len(merge_jobs) == 1, "github-actions.yml: expected a merge job that needs the matrix job")
check("$GITHUB_STEP_SUMMARY" in text and "--summary-md" in text, "github-actions.yml: no job summary from --summary-md")
check("actions/upload-artifact" in text and "actions/download-artifact" in text, "github-actions.yml: no artifacts")
for j, v in jobs.items():
    check(isinstance(v.get("steps"), list) and all(isinstance(s, dict) for s in v["steps"]),
          f"github-actions.yml: job {j} has no list of steps")
check_commands("github-actions.yml", gh)

# GitLab CI
text, gl = load("gitlab-ci.yml")
check(isinstance(gl, dict), "gitlab-ci.yml: not a mapping")
parallel = [j for j, v in gl.items() if isinstance(v, dict) and isinstance(v.get("parallel"), int)]
check(len(parallel) == 1, "gitlab-ci.yml: expected one job with `parallel: N`")
stages = gl.get("stages", [])
for j, v in gl.items():
    if isinstance(v, dict) and "script" in v:
        check(v.get("stage") in stages, f"gitlab-ci.yml: job {j} has a stage not in `stages`")
check("CI_NODE_INDEX" in text, "gitlab-ci.yml: the shard summaries are not named by CI_NODE_INDEX")
check_commands("gitlab-ci.yml", gl)

for f in failures:
    print("FAIL:", f)
print(f"check_ci_examples: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
