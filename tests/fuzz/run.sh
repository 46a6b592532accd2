#!/usr/bin/env bash
# Runs each libFuzzer target for a bounded time on its corpus (BUILD/fuzz-corpus/<target>,
# seeded by seed-corpus.sh; the inputs libFuzzer finds are added there). A crash, leak,
# sanitizer report, input taking over 10 s (a hang) or RSS over 2 GB fails the target:
# the input is saved as BUILD/fuzz-artifacts/<target>/{crash,leak,timeout,oom}-<sha1>,
# to be fixed and added to tests/fuzz/regressions/<target>/. Runs every target, then
# fails if any failed. Logs: BUILD/fuzz-logs/<target>.log.
#
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS_PER_TARGET [TARGET...]
#   TARGET: onnx csv npy trace manifest merge (default: all)
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:?usage: run.sh BUILD_DIR SECONDS [TARGET...]}"
seconds="${2:?usage: run.sh BUILD_DIR SECONDS [TARGET...]}"
shift 2
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(onnx csv npy trace manifest merge)

export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
mkdir -p "$build/fuzz-logs"
failed=()
summary=()
for t in "${targets[@]}"; do
  bin="$build/fuzz/fuzz_$t"
  if [[ ! -x "$bin" ]]; then
    echo "fuzz: $bin is not built (configure with -DDL_FUZZ=ON, build target fuzz_targets)" >&2
    failed+=("$t")
    continue
  fi
  corpus="$build/fuzz-corpus/$t"
  artifacts="$build/fuzz-artifacts/$t/"
  log="$build/fuzz-logs/$t.log"
  mkdir -p "$corpus" "$artifacts"
  dict=()
  [[ -f "$root/tests/fuzz/$t.dict" ]] && dict=(-dict="$root/tests/fuzz/$t.dict")
  echo "fuzz: $t for ${seconds}s (log $log)"
  stamp="$build/fuzz-logs/$t.start"
  touch "$stamp"
  start=$(date +%s)
  "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$artifacts" "${dict[@]}" "$corpus" > "$log" 2>&1
  rc=$?
  elapsed=$(( $(date +%s) - start ))
  runs="$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)"
  cov="$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)"
  line="$(printf '%-9s %s runs in %ss, %s, corpus %s files' "$t" "${runs:-?}" "$elapsed" "${cov:-cov: ?}" \
          "$(find "$corpus" -type f | wc -l)")"
  if [[ $rc -ne 0 ]]; then
    failed+=("$t")
    line+=" FAILED (exit $rc): $(find "$artifacts" -type f -newer "$stamp" | tr '\n' ' ')"
    echo "---- $log (last 60 lines)"
    tail -60 "$log"
  fi
  summary+=("$line")
done
echo "fuzz summary:"
printf '  %s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
