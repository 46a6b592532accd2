# Shared by the end-to-end shell tests whose usage is
#   run.sh path/to/deeplocalize SOURCE_DIR [WORK_DIR]
# (tests/fixes/run.sh, tests/interrupt/run.sh). Source it with those arguments:
#   . "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh" "$@"
# Sets $bin and $src (absolute paths) and $work (WORK_DIR or a new temp dir, emptied and
# created); defines fail MESSAGE (prints "FAIL: MESSAGE") and its count, $failures.
# shellcheck shell=bash disable=SC2034  # the variables are for the sourcing script
bin="$(realpath "$1")"
src="$(realpath "$2")"
work="${3:-$(mktemp -d)}"
rm -rf "$work"
mkdir -p "$work"
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
