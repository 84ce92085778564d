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

# The npm packages the tests drive, pinned (the next major versions need
# Node.js 20 or 22; Debian 12 has 18), installed here so that the test suite
# downloads nothing: yaml-language-server (tests/yaml_ls_test.sh),
# puppeteer-core (tests/serve_browser_test.sh, attention_grid_test.sh,
# plot_browser_test.sh, lab_page_test.sh; its own browser download is never
# used) and marked (lab_page_test.sh renders docs/attention-lab.md with it).
# They go to tests/npm/ (git-ignored; S2S_NPM_DIR elsewhere).
# Without the registry, setup says so and goes on; it writes the reason to
# tests/npm/unavailable, and those tests skip with it. All are
# installed together: npm removes what a later install does not name.
npm_dir=${S2S_NPM_DIR:-tests/npm}
npm_pkgs=(yaml-language-server@1.25.0 puppeteer-core@24.40.0 marked@15.0.12)
npm_missing=()
for p in "${npm_pkgs[@]}"; do
  grep -qs "\"version\": \"${p##*@}\"" "$npm_dir/node_modules/${p%@*}/package.json" || npm_missing+=("$p")
done
if [ ${#npm_missing[@]} -gt 0 ]; then
  mkdir -p "$npm_dir"
  rm -f "$npm_dir/unavailable"
  echo "setup: installing ${npm_missing[*]} from npm into $npm_dir/ (for the tests yaml_ls, serve_browser, attention_grid, plot_browser and lab_page)"
  reason=
  if ! command -v npm >/dev/null; then
    reason="npm is not installed"
  elif ! PUPPETEER_SKIP_DOWNLOAD=1 timeout 600 npm install --prefix "$npm_dir" --no-save --no-audit \
         --no-fund --ignore-scripts --loglevel=error --fetch-retries=1 "${npm_pkgs[@]}" \
         >"$npm_dir/npm.log" 2>&1; then
    # No way to the registry (no network, or a TLS-intercepting proxy whose
    # CA the system does not trust) is no failure of s2s: said, not fatal.
    first=$(grep -m 1 -E 'npm ERR!|npm error' "$npm_dir/npm.log" || tail -n 1 "$npm_dir/npm.log")
    if grep -qE 'SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER|CERT_|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH|ECONNRESET' "$npm_dir/npm.log"; then
      reason="the npm registry ($(npm config get registry 2>/dev/null)) cannot be reached: $first"
    else
      reason="npm install ${npm_missing[*]} failed: $first (log: $npm_dir/npm.log)"
    fi
  fi
  if [ -n "$reason" ]; then
    echo "$reason" >"$npm_dir/unavailable"
    echo "setup: WARNING: $reason" >&2
    echo "setup: WARNING: the tests yaml_ls, serve_browser, attention_grid, plot_browser and lab_page will be skipped" >&2
  fi
fi

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
