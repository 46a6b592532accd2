#!/usr/bin/env bash
# Installs the Debian packages deeplocalize needs to build and test. Idempotent:
# packages already present are skipped and apt is not touched at all when nothing
# is missing. Usage: scripts/install-deps.sh [--dev]
#   --dev  also installs what the fixture generators need (python3-torch, sklearn).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler
  libeigen3-dev libcli11-dev doctest-dev
  nlohmann-json3-dev libfmt-dev libfast-float-dev
  python3 python3-onnx python3-numpy python3-yaml
)
if [[ "${1:-}" == "--dev" ]]; then
  packages+=(python3-torch python3-sklearn libbenchmark-dev)
fi

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
