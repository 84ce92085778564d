#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-14 (ASan + UBSan) in build-fuzz/
# and runs each for SECONDS (default 60), starting from its seed corpus
# (tests/fuzz/corpus/TARGET/) with its dictionary (tests/fuzz/TARGET.dict).
#   tests/fuzz/run.sh [--keep-going] [SECONDS] [TARGET...]
# --keep-going: libFuzzer's fork mode, which goes on after a finding and
# keeps every crashing input (to collect findings; CI stops at the first).
# New inputs go to build-fuzz/corpus/TARGET/, a crashing input to
# build-fuzz/artifacts/TARGET/, emptied at each run (commit it to tests/fuzz/findings/TARGET/,
# and to crashes/TARGET/ once fixed). Prints libFuzzer's final figures
# per target; exits 1 if any target found something.
set -euo pipefail
cd "$(dirname "$0")/../.."
fork=()
if [ "${1:-}" = "--keep-going" ]; then
  fork=(-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
  shift
fi
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(config model tokenizer tsv server vocab cli checkpoint)

scripts/setup.sh --clang build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DS2S_FUZZ=ON -DS2S_TESTS=OFF
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=()
printf '%-10s %10s %8s %8s %8s %8s  %s\n' target execs exec/s cov ft corpus result
for t in "${targets[@]}"; do
  work=build-fuzz/corpus/$t art=build-fuzz/artifacts/$t log=build-fuzz/fuzz_$t.log
  rm -rf "$art"
  mkdir -p "$work" "$art"
  # One process, one thread: the decoding threads are TSan's job; a 2 GB
  # memory cap and a 10 s per-input limit make a blow-up a finding.
  # (The subshell keeps bash's "Aborted" note out of the output.)
  rc=0
  (OMP_NUM_THREADS=1 "build-fuzz/tests/fuzz/fuzz_$t" -max_total_time="$secs" -print_final_stats=1 \
    -dict="tests/fuzz/$t.dict" -artifact_prefix="$art/" -rss_limit_mb=2048 -timeout=10 \
    "${fork[@]}" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1) 2>/dev/null || rc=$?
  done_line=$(grep -E '^#[0-9]+' "$log" | tail -1)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  # fork mode prints no final stats: "#EXECS: cov: .. exec/s N .."
  [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$done_line")
  [ -n "$rate" ] || rate=$(sed -n 's/.* exec\/s:\{0,1\} \([0-9]*\).*/\1/p' <<<"$done_line")
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$done_line")
  result=ok
  if [ "$rc" -ne 0 ] || [ -n "$(ls "$art")" ]; then
    result="FOUND: $(ls "$art" | wc -l) input(s) in $art/"
    failed+=("$t")
    grep -E '^SUMMARY|runtime error|^==[0-9]+== ?ERROR' "$log" | sort -u | head -6 >&2 || true
  fi
  printf '%-10s %10s %8s %8s %8s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]} (logs: build-fuzz/fuzz_TARGET.log)" >&2
  exit 1
fi
