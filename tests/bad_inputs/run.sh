#!/usr/bin/env bash
# Runs the bad-input corpus (cases.txt): every case must exit with its code and print
# the fragment that names the problem. Usage: run.sh path/to/deeplocalize [workdir]
set -u
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work"
# A CSV made of one 1 GiB line, generated here rather than committed.
if [ ! -f "$work/one_gb_line.csv" ]; then
  yes '1,' | tr -d '\n' | head -c 1073741824 > "$work/one_gb_line.csv"
fi
# 300 KB that would need 9.3 GB as float32 (50,000 columns x 50,002 rows, most of them
# empty): over the default data cap of 8 GiB without --max-memory.
if [ ! -f "$work/over_default_cap.csv" ]; then
  { yes 1 | head -n 50000 | paste -sd, -; yes '' | head -n 50000; echo 1; } > "$work/over_default_cap.csv"
fi
passed=0 failed=0
while IFS= read -r line; do
  [[ -z "$line" || "$line" == \#* ]] && continue
  args=${line%% | *}
  rest=${line#* | }
  want=${rest%% | *}
  fragment=${rest#* | }
  args=${args//F\//$here/files/}
  args=${args//GEN\//$work/}
  # shellcheck disable=SC2086
  out=$(cd "$work" && timeout 120 "$bin" $args 2>&1 </dev/null)
  got=$?
  if [[ $got -eq $want && "$out" == *"$fragment"* ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: deeplocalize $args"
    echo "  expected exit $want and '$fragment'"
    echo "  got exit $got: $(echo "$out" | head -3)"
  fi
done < "$here/cases.txt"
rm -f "$work/one_gb_line.csv" "$work/over_default_cap.csv"
echo "bad_inputs: $passed passed, $failed failed"
# Pipes, FIFOs, endless streams and peak memory: cases a line of cases.txt cannot express.
"$here/streams.sh" "$bin" || failed=$((failed + 1))
[[ $failed -eq 0 ]]
