#!/usr/bin/env bash
# Sets up, builds and runs the test suite.
#   scripts/test.sh              Release build in build/, the whole suite
#   scripts/test.sh --sanitize   AddressSanitizer + UBSan, static libs2s, in
#                                build-asan/, the whole suite but the docs'
#                                figures (label `figures`: numbers, not memory)
#   scripts/test.sh --tsan       ThreadSanitizer (clang-14, LLVM's OpenMP) in
#                                build-tsan/, the tests that decode on threads
#                                (serve_api: the server's worker pool)
# The gcc builds treat warnings as errors (-DS2S_WERROR=ON); the clang ones
# (TSan here, tests/fuzz/run.sh) do not, as clang warns differently.
# Each ends with the tests ctest skipped, each with its reason
# (scripts/ctest_skips.py), after ctest's pass count.
set -euo pipefail
cd "$(dirname "$0")/.."

# run_ctest BUILD [ARGS...]: the suite in BUILD, then its skips; ctest's status.
run_ctest() {
  local build=$1 rc=0
  shift
  rm -f "$build/ctest-junit.xml"
  ctest --test-dir "$build" --output-on-failure --output-junit "$PWD/$build/ctest-junit.xml" "$@" || rc=$?
  python3 scripts/ctest_skips.py "$build/ctest-junit.xml"
  return $rc
}

case "${1:-}" in
--sanitize)
  scripts/setup.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DS2S_SANITIZE=ON -DS2S_WERROR=ON \
    -DBUILD_SHARED_LIBS=OFF
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_ctest build-asan -LE '^figures$'
  ;;
--tsan)
  scripts/setup.sh --clang build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DS2S_TSAN=ON
  # libgomp is not instrumented, so TSan misses the ordering its barriers
  # give and reports races that cannot happen. LLVM's libomp, which clang
  # links, announces its fork, join, barrier and task events to the Archer
  # tool (libarcher.so), and Archer passes them to TSan as happens-before
  # edges; ignore_noninstrumented_modules skips accesses inside the
  # uninstrumented runtimes (libomp, oneDNN) themselves. Without Archer,
  # test_threads fails on such a report: the set-up checks itself.
  export OMP_TOOL_LIBRARIES=/usr/lib/llvm-14/lib/libarcher.so
  export TSAN_OPTIONS="ignore_noninstrumented_modules=1 halt_on_error=1 second_deadlock_stack=1"
  run_ctest build-tsan -R '^(threads|cli|cli_align|shipped_models|serve_api)$'
  ;;
"")
  scripts/setup.sh build -DS2S_WERROR=ON
  run_ctest build
  ;;
*)
  echo "usage: scripts/test.sh [--sanitize | --tsan]" >&2
  exit 2
  ;;
esac
