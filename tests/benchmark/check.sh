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
/usr/bin/python3 - "$work/summary.json" "$here/floor.json" "${#fix_args[@]}" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
f = json.load(open(sys.argv[2]))
checks = [("detected", t["detected"], ">=", f["detected_min"]),
          ("localized", t["localized"], ">=", f["localized_min"]),
          ("root cause", t["root_cause"], ">=", f["root_cause_min"]),
          ("false alarms", t["false_alarms"], "<=", f["false_alarms_max"])]
if sys.argv[3] != "0":
    checks += [("verified fixes", t["fixes"]["verified"], ">=", f["fixes_verified_min"]),
               ("fixes within 10% of the fixed version", t["fixes"]["within_10pct_of_fixed"], ">=",
                f["fixes_within_10pct_min"])]
else:
    print("benchmark: DL_TESTS_LIGHT is set: no repair trials, the fix floors are not checked")
bad = [c for c in checks if not (c[1] >= c[3] if c[2] == ">=" else c[1] <= c[3])]
fixes = ""
if "fixes" in t:
    fixes = (f", verified fixes {t['fixes']['verified']}/{t['fixes']['faults_with_trials']}, within 10% of the "
             f"fixed version {t['fixes']['within_10pct_of_fixed']}/{t['fixes']['faults_with_trials']}")
print(f"benchmark: detected {t['detected']}/{t['faulty']}, localized {t['localized']}/{t['localizable']}, "
      f"root cause {t['root_cause']}/{t['root_cause_cases']}, false alarms {t['false_alarms']}/{t['non_faulty']}"
      + fixes)
for name, got, op, want in bad:
    print(f"benchmark: {name} {got} is not {op} the floor {want}")
print(f"benchmark: {len(checks) - len(bad)} passed, {len(bad)} failed")
sys.exit(1 if bad else 0)
PY
