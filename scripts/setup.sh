#!/usr/bin/env bash
# Installs what s2s needs from Debian 12 (only what is missing) and builds it.
#   scripts/setup.sh [BUILD_DIR] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config libdnnl-dev ocl-icd-opencl-dev opencl-c-headers
          libyaml-dev libcriterion-dev libjansson-dev python3 python3-numpy python3-yaml
          libopencc-dev libopencc-data)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

build=${1:-build}
shift || true
echo "setup: building in $build/ (log: $build/build.log)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
if ! cmake --build "$build" -j "$(nproc)" >"$build/build.log" 2>&1; then
  tail -n 40 "$build/build.log"
  echo "setup: the build failed; the whole log is $build/build.log" >&2
  exit 1
fi
