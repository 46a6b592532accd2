#!/usr/bin/env bash
# Installs the Debian packages deeplocalize needs to build and test. Idempotent:
# packages already present are skipped and apt is not touched at all when nothing
# is missing. Usage: scripts/install-deps.sh [--dev] [--fuzz] [--browser]
#   --dev   also installs what the fixture generators and the benchmarks need (python3-torch,
#           torchvision, sklearn, Google Benchmark, oneDNN for bench/conv_bench.cpp).
#   --fuzz  also installs clang-14 and its libFuzzer/sanitizer runtimes (make fuzz).
#   --browser  also installs Chromium, for the test that renders the HTML report in
#              headless Chromium (tests/html/render.sh; skipped without Chromium).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler
  libeigen3-dev libcli11-dev doctest-dev
  nlohmann-json3-dev libfmt-dev libfast-float-dev zlib1g-dev time
  python3 python3-onnx python3-numpy python3-yaml
)
for flag in "$@"; do
  case "$flag" in
    --dev) packages+=(python3-torch python3-torchvision python3-sklearn libbenchmark-dev libdnnl-dev) ;;
    --fuzz) packages+=(clang-14 libclang-rt-14-dev) ;;
    --browser) packages+=(chromium) ;;
    *) echo "install-deps: unknown option $flag (known: --dev, --fuzz, --browser)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
