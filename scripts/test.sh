#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite.
#   scripts/test.sh              Release build in build/
#   scripts/test.sh --sanitize   AddressSanitizer + UBSan build in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--sanitize" ]; then
  scripts/setup.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DS2S_SANITIZE=ON -DS2S_NATIVE=ON
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  ctest --test-dir build-asan --output-on-failure
else
  scripts/setup.sh build
  ctest --test-dir build --output-on-failure
fi
