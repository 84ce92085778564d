#!/usr/bin/env bash
# Interrupts short `s2s train` runs at random moments and counts how they
# end: the loop that found the heap corruption of docs/reliability.md
# "Signals". Not part of ctest (tests/cli_train_test.sh runs a short storm).
#   scripts/sigint_loop.sh [-n RUNS] [--storm] [--sig INT|TERM] [--s2s PATH]
#                          [--config YAML] [--set KEY=VALUE ...]
# Each run trains the config (by default configs/zh-en.yaml, whose FFN
# products have K = 256 > 84, on its 1k dev pairs, quick to load) on two
# threads and gets one signal 0.2 to 1.5 s after its first step, or with
# --storm a signal every ~2 ms for 2 s. A run should exit 130 with a
# checkpoint that loads; the tally counts exit codes (134 is an abort:
# glibc's "malloc(): corrupted ...", 139 a segfault). Exit 0 when every run
# ended so.
set -u
cd "$(dirname "$0")/.."
runs=20 storm=0 sig=INT s2s=build/s2s config=configs/zh-en.yaml
sets=() own=0
while [ $# -gt 0 ]; do
  case $1 in
  -n) runs=$2; shift ;;
  --storm) storm=1 ;;
  --sig) sig=$2; shift ;;
  --s2s) s2s=$2; shift ;;
  --config) config=$2 own=1; shift ;;
  --set) sets+=(--set "$2"); shift ;;
  *) echo "usage: $0 [-n RUNS] [--storm] [--sig INT|TERM] [--s2s PATH] [--config YAML] [--set K=V]" >&2
     exit 2 ;;
  esac
  shift
done
[ "$own" -eq 1 ] || sets+=(--set data.train="$PWD/data/corpus/dev.zh-en.tsv")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
declare -A tally=()
bad_ckpt=0
one_run() {  # one_run I: one interrupted run, tallied
  rm -f "$tmp"/m.*
  "$s2s" train "$config" -o "$tmp/m.safetensors" --threads 2 --quiet \
    --set train.max_steps=1000000 --set train.valid_every=0 --set train.save_every=0 \
    "${sets[@]}" 2>"$tmp/err" &
  local pid=$! rc end
  until [ -s "$tmp/m.train.log" ] || ! kill -0 "$pid" 2>/dev/null; do sleep 0.02; done
  sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.3f", 0.2 + 1.3 * rand() }')"
  if [ "$storm" -eq 1 ]; then
    end=$((SECONDS + 2))
    while [ "$SECONDS" -lt "$end" ] && kill -s "$sig" "$pid" 2>/dev/null; do sleep 0.002; done
  else
    kill -s "$sig" "$pid"
  fi
  wait "$pid"
  rc=$?
  tally[$rc]=$((${tally[$rc]:-0} + 1))
  if [ "$rc" -eq 130 ]; then
    "$s2s" inspect "$tmp/m.ckpt.safetensors" >/dev/null 2>&1 || bad_ckpt=$((bad_ckpt + 1))
  else
    echo "run $1: exit $rc: $(tail -n 1 "$tmp/err")"
  fi
}
for i in $(seq 1 "$runs"); do
  one_run "$i" 2>/dev/null  # no "Aborted" notices from bash
done
printf '%s runs, SIG%s%s:' "$runs" "$sig" "$([ "$storm" -eq 1 ] && echo ' storm')"
for rc in "${!tally[@]}"; do printf ' exit %s x%s' "$rc" "${tally[$rc]}"; done
printf '; unreadable checkpoints after exit 130: %s\n' "$bad_ckpt"
[ "${#tally[@]}" -eq 1 ] && [ -n "${tally[130]:-}" ] && [ "$bad_ckpt" -eq 0 ]
