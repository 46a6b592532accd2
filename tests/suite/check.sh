#!/usr/bin/env bash
# Runs the committed sample of the generated fault suite (models/suite/sample: 16 cases of
# each split) with `deeplocalize batch` and fails when a score falls below the floor
# (tests/suite/floor.json). Usage: check.sh path/to/deeplocalize [workdir]
set -u
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work"
for split in dev heldout; do
  "$bin" batch "$here/../../models/suite/sample/$split/manifest.json" --jobs 2 -q --json "$work/$split.json" >/dev/null
  status=$?
  if [[ $status -ge 2 ]]; then echo "suite: batch over $split failed with exit $status"; exit 1; fi
done
/usr/bin/python3 - "$work" "$here/floor.json" <<'PY'
import json, os, sys
floor = json.load(open(sys.argv[2]))
bad = 0
for split in ("dev", "heldout"):
    t = json.load(open(os.path.join(sys.argv[1], split + ".json")))["totals"]
    f = floor[split]
    print(f"suite {split}: detected {t['detected']}/{t['faulty']}, localized {t['localized']}/{t['localizable']}, "
          f"root cause {t['root_cause']}/{t['root_cause_cases']}, false alarms {t['false_alarms']}/{t['non_faulty']}")
    for name, got, op, want in [("detected", t["detected"], ">=", f["detected_min"]),
                                ("localized", t["localized"], ">=", f["localized_min"]),
                                ("root cause", t["root_cause"], ">=", f["root_cause_min"]),
                                ("false alarms", t["false_alarms"], "<=", f["false_alarms_max"])]:
        if not (got >= want if op == ">=" else got <= want):
            print(f"suite {split}: {name} {got} is not {op} the floor {want}")
            bad += 1
print(f"suite: {8 - bad} passed, {bad} failed")
sys.exit(1 if bad else 0)
PY
