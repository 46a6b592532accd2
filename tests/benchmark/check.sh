#!/usr/bin/env bash
# Runs the benchmark (models/benchmark) with `deeplocalize batch` and fails when a score
# falls below the committed floor (tests/benchmark/floor.json).
# Usage: check.sh path/to/deeplocalize [workdir]
set -u
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work"
# --verify-fixes: every fault also gets its candidate repairs tried (issue 9); a generous
# budget so that a slow build tries the same repairs as a fast one. DL_TESTS_LIGHT=1 (the
# sanitizer run, `make test-sanitize`) diagnoses without the repair trials, which are most
# of the time there: the repairs run under the sanitizers in the `fixes` and `demo` tests.
fix_args=(--verify-fixes --trial-budget 900)
if [[ -n "${DL_TESTS_LIGHT:-}" ]]; then fix_args=(); fi
"$bin" batch "$here/../../models/benchmark/manifest.json" --jobs 2 --json "$work/summary.json" -q \
  "${fix_args[@]}"
status=$?
if [[ $status -ge 2 ]]; then echo "benchmark: batch failed with exit $status"; exit 1; fi
/usr/bin/python3 - "$work/summary.json" "$here/floor.json" "$here/../../models/benchmark/kill_log.json" \
  "${#fix_args[@]}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
t = s["totals"]
f = json.load(open(sys.argv[2]))
# The real bugs added for issue 15 (models/benchmark/posts*.py) are the pairs of the kill log;
# the original 53 cases keep their own false-alarm bound.
new_pairs = {p["pair"] for p in json.load(open(sys.argv[3]))["pairs"]}
original_fa = sum(1 for c in s["cases"] if c.get("pair") not in new_pairs and (c.get("scores") or {}).get("false_alarm"))
light = sys.argv[4] == "0"
# Without repair trials a root cause is not corrected by a verified repair (issue 15 item 3:
# 31 instead of 32 on the merged tree of session 8), so the light run does not check it.
checks = [("detected", t["detected"], ">=", f["detected_min"]),
          ("localized", t["localized"], ">=", f["localized_min"]),
          ("false alarms", t["false_alarms"], "<=", f["false_alarms_max"]),
          ("false alarms on the original 53 cases", original_fa, "<=", f["false_alarms_max_original"])]
if not light:
    checks.append(("root cause", t["root_cause"], ">=", f["root_cause_min"]))
if not light:
    checks += [("verified fixes", t["fixes"]["verified"], ">=", f["fixes_verified_min"]),
               ("fixes within 10% of the fixed version", t["fixes"]["within_10pct_of_fixed"], ">=",
                f["fixes_within_10pct_min"])]
else:
    print("benchmark: DL_TESTS_LIGHT is set: no repair trials, the fix and root-cause floors are not checked")
for name, st in sorted(t.get("splits", {}).items()):
    fl = f.get("splits", {}).get(name, {})
    for key, label, op in (("detected", "detected", ">="), ("localized", "localized", ">="),
                           ("root_cause", "root cause", ">="), ("false_alarms", "false alarms", "<=")):
        if light and key == "root_cause":
            continue
        want = fl.get(key + ("_max" if op == "<=" else "_min"))
        if want is not None:
            checks.append((f"{name} {label}", st[key], op, want))


def rate(tt, k, n, key):
    iv = tt["intervals"].get(key)
    span = f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv else ""
    return f"{tt[k]}/{tt[n]}{span}"


fixes = ""
if "fixes" in t:
    fixes = (f", verified fixes {t['fixes']['verified']}/{t['fixes']['faults_with_trials']}, within 10% of the "
             f"fixed version {t['fixes']['within_10pct_of_fixed']}/{t['fixes']['faults_with_trials']}")
bad = [c for c in checks if not (c[1] >= c[3] if c[2] == ">=" else c[1] <= c[3])]
print(f"benchmark: detected {t['detected']}/{t['faulty']}, localized {t['localized']}/{t['localizable']}, "
      f"root cause {t['root_cause']}/{t['root_cause_cases']}, false alarms {t['false_alarms']}/{t['non_faulty']} "
      f"({original_fa} on the original cases)" + fixes)
for name, st in sorted(t.get("splits", {}).items()):  # 95% Wilson intervals
    print(f"benchmark {name}: detected {rate(st, 'detected', 'faulty', 'detected')}, localized "
          f"{rate(st, 'localized', 'localizable', 'localized')}, root cause "
          f"{rate(st, 'root_cause', 'root_cause_cases', 'root_cause')}, false alarms "
          f"{rate(st, 'false_alarms', 'non_faulty', 'false_alarms')}")
for name, got, op, want in bad:
    print(f"benchmark: {name} {got} is not {op} the floor {want}")
print(f"benchmark: {len(checks) - len(bad)} passed, {len(bad)} failed")
sys.exit(1 if bad else 0)
PY
