#!/usr/bin/env bash
# Seeds the fuzz corpora from the repository's own files: BUILD/fuzz-corpus/<target>/
# gets every small .onnx / .csv / .npy / .npz / .trace / manifest file of models/ and
# tests/ (and examples/), plus a few files made here: valid traces written by
# `deeplocalize train --trace` when a deeplocalize binary is given, and manifests that
# use every case field and option. Files already in a corpus stay (libFuzzer adds the
# inputs it finds there, so a corpus grows from run to run).
#
# Usage: tests/fuzz/seed-corpus.sh BUILD_DIR [DEEPLOCALIZE]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:?usage: seed-corpus.sh BUILD_DIR [DEEPLOCALIZE]}"
deeplocalize="${2:-}"
corpus="$build/fuzz-corpus"
max_bytes=$((256 * 1024))  # larger seeds slow every mutation; big CSVs are cut instead

mkdir -p "$corpus"/{onnx,csv,npy,trace,manifest,merge}

# Copies FILE into corpus TARGET under a name made from its path.
seed() {
  local target="$1" file="$2" name
  name="$(realpath --relative-to="$root" "$file" | tr '/' '_')"
  if [[ $(stat -c %s "$file") -le $max_bytes ]]; then
    cp "$file" "$corpus/$target/$name"
  elif [[ "$target" == csv ]]; then
    head -c 16384 "$file" > "$corpus/$target/$name"  # the header and the first rows
  fi
}

cd "$root"
dirs=(models tests examples)
while IFS= read -r -d '' f; do seed onnx "$f"; done < <(find "${dirs[@]}" -name '*.onnx' -print0 2>/dev/null)
while IFS= read -r -d '' f; do seed csv "$f"; done < <(find "${dirs[@]}" -name '*.csv' -print0 2>/dev/null)
while IFS= read -r -d '' f; do seed npy "$f"; done < <(find "${dirs[@]}" \( -name '*.npy' -o -name '*.npz' \) -print0 2>/dev/null)
while IFS= read -r -d '' f; do seed trace "$f"; done < <(find "${dirs[@]}" -name '*.trace' -print0 2>/dev/null)
while IFS= read -r -d '' f; do seed manifest "$f"; done < <(find "${dirs[@]}" -name 'manifest*.json' -print0 2>/dev/null)

# Manifests with every field and option (paths resolve next to the fuzzed manifest).
cat > "$corpus/manifest/seed_all_fields.json" <<'EOF'
{"cases": [
  {"name": "a", "model": "a/model.onnx", "data": "a/data.csv", "kind": "buggy", "source": "s", "pair": "p",
   "expected": {"fault": true, "root_causes": ["dead_relu"], "nodes": ["/0/Gemm"], "notes": "n"},
   "options": {"loss": "mse", "optimizer": "sgd", "from_logits": "true", "nesterov": false, "lr": 0.01,
               "learning_rate": "1e-3", "momentum": 0.9, "decay": 0, "clipnorm": 1, "clipvalue": 0.5,
               "validation_split": 0.2, "epochs": 3, "batch_size": "16", "targets": 1, "seed": 7,
               "probe_every": 2, "no_stop": true, "max_memory": 64, "trace_max_mb": 8,
               "set": {"dead_relu.threshold": 0.5}}},
  {"name": "b", "model": "/abs/model.onnx", "data": "b.npz", "expected": "manifest.json", "kind": "fixed"},
  {"model": "c.onnx", "data": "c.npy", "expected": null, "kind": "healthy"}
]}
EOF
printf '{"cases": []}' > "$corpus/manifest/seed_empty.json"
printf '{"cases": [{"name": "x", "model": "m.onnx"}, 3, null, {"name": "x", "model": "m", "data": "d"}]}' \
  > "$corpus/manifest/seed_errors.json"

# Nesting: JSON just within and far beyond the depth limit (cli/json_input.h, 64 levels).
nest() { printf '%*s' "$1" '' | tr ' ' "$2"; }
printf '{"cases": [{"name": "n", "model": "m", "data": "d", "expected": {"fault": true, "notes": %s1%s}}]}' \
  "$(nest 60 '[')" "$(nest 60 ']')" > "$corpus/manifest/seed_nested_60.json"
printf '{"cases": [%s%s]}' "$(nest 5000 '[')" "$(nest 5000 ']')" > "$corpus/manifest/seed_nested_5000.json"
printf '{"tool": "deeplocalize", "summary_version": 2, "cases": [{"index": 0, "deep": %s%s}]}' \
  "$(nest 5000 '[')" "$(nest 5000 ']')" > "$corpus/merge/seed_nested_5000.json"

# Valid traces: short runs of the demo model and the MLP fixture.
if [[ -n "$deeplocalize" && -x "$deeplocalize" ]]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  "$deeplocalize" train models/demo/model.onnx models/demo/data.csv --epochs 2 -q \
    --trace "$corpus/trace/seed_demo.trace" --report "$tmp/r" > /dev/null || true
  "$deeplocalize" train models/demo/model.onnx models/demo/data.csv --epochs 3 --probe-every 2 --lr 50 \
    --no-stop -q --trace "$corpus/trace/seed_demo_diverging.trace" --report "$tmp/r" > /dev/null || true
  "$deeplocalize" train models/demo/model.onnx models/demo/data.csv --epochs 40 --trace-max-mb 0.05 -q \
    --trace "$corpus/trace/seed_demo_decimated.trace" --report "$tmp/r" > /dev/null || true
fi

# Valid summaries for merge: the two shards of a batch of two demo cases, one file
# each and both as one array (fuzz_merge merges an array as shards).
if [[ -n "$deeplocalize" && -x "$deeplocalize" ]]; then
  cases="$(mktemp -d)"
  for name in healthy diverging; do
    mkdir -p "$cases/$name"
    cp models/demo/model.onnx models/demo/data.csv "$cases/$name/"
  done
  echo '{"epochs": 1}' > "$cases/healthy/options.json"
  echo '{"epochs": 2, "optimizer": "sgd", "lr": 50}' > "$cases/diverging/options.json"
  echo '{"fault": true, "root_causes": ["learning_rate"]}' > "$cases/diverging/expected.json"
  for shard in 0 1; do
    "$deeplocalize" batch "$cases" --shard "$shard/2" --json "$corpus/merge/seed_shard$shard.json" -q > /dev/null || true
  done
  if [[ -f "$corpus/merge/seed_shard0.json" && -f "$corpus/merge/seed_shard1.json" ]]; then
    { echo '['; cat "$corpus/merge/seed_shard0.json"; echo ','; cat "$corpus/merge/seed_shard1.json"; echo ']'; } \
      > "$corpus/merge/seed_shards.json"
  fi
  rm -rf "$cases"
fi

for t in onnx csv npy trace manifest merge; do
  printf 'seed-corpus: %-9s %4d files\n' "$t" "$(find "$corpus/$t" -type f | wc -l)"
done
