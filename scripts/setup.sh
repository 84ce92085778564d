#!/usr/bin/env bash
# Installs what s2s needs from Debian 12 (only what is missing) and builds it.
#   scripts/setup.sh [--clang] [BUILD_DIR] [extra cmake args...]
# The build is tuned for this machine (-DS2S_NATIVE=ON; CMake's default is
# off, for packages); extra args come after and may turn it off.
# --clang also installs clang-14 with its sanitizer and libFuzzer runtimes
# and LLVM's OpenMP (whose Archer tool lets ThreadSanitizer see OpenMP's
# synchronisation), and builds with clang-14 (TSan and fuzzing builds).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config libdnnl-dev ocl-icd-opencl-dev opencl-c-headers
          libyaml-dev libcriterion-dev libjansson-dev python3 python3-numpy python3-yaml
          libopencc-dev libopencc-data libmicrohttpd-dev libopenmpi-dev openmpi-bin
          chromium fonts-wqy-zenhei wrk)  # s2s serve; its browser test and load bench
command -v npm >/dev/null || packages+=(npm)  # tests/yaml_ls_test.sh; nodesource's node has its own
clang=0
if [ "${1:-}" = "--clang" ]; then
  clang=1
  shift
  packages+=(clang-14 libclang-rt-14-dev libomp-14-dev)
fi
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

scripts/corpus.sh

build=${1:-build}
shift || true
echo "setup: building in $build/ (log: $build/build.log)"
cc=()
[ $clang -eq 0 ] || cc=(-DCMAKE_C_COMPILER=clang-14)
cmake -S . -B "$build" "${cc[@]}" -DCMAKE_BUILD_TYPE=Release -DS2S_NATIVE=ON "$@" >/dev/null
if ! cmake --build "$build" -j "$(nproc)" >"$build/build.log" 2>&1; then
  tail -n 40 "$build/build.log"
  echo "setup: the build failed; the whole log is $build/build.log" >&2
  exit 1
fi
