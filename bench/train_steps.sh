#!/usr/bin/env bash
# The steady-state step time of the shipped zh-en config in fp32 and bf16
# at 1 thread: the median over steps 6..STEPS of one run of each per
# round, interleaved (docs/training.md, "Memory and precision"). A step's
# time comes from the progress lines (--log-every 1: tokens/s so far) and
# the log's tokens per step; the median leaves out the first steps
# (oneDNN generates its kernels in the first) and steps another process
# held up, which bench/train_speed.sh's tokens/s over the whole run keeps.
#   bench/train_steps.sh [BUILD] [ROUNDS] [STEPS]     (defaults: build 3 100)
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3}
STEPS=${3:-100}
CONFIG=${CONFIG:-configs/zh-en.yaml}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
SETS=(--set train.max_steps="$STEPS" --set train.valid_every=0 --set train.save_every=0
      --set train.guided_alignment.layer=-1 --set train.guided_coref.layer=-1
      --set train.unk_replace=0 --threads 1 --log-every 1)

# median ms of steps 6..STEPS of one run in compute type $1
median_step() {
    "$BUILD/s2s" train "$CONFIG" "${SETS[@]}" --set train.compute_type="$1" \
        -o "$TMP/m.safetensors" 2> "$TMP/err" > /dev/null || { cat "$TMP/err" >&2; exit 1; }
    sed -n 's/^step [0-9]*\/[0-9]* .* \([0-9]*\) tok\/s .*/\1/p' "$TMP/err" > "$TMP/rates"
    sed -n 's/.*"tokens": \([0-9]*\).*/\1/p' "$TMP/m.train.log" > "$TMP/tokens"
    [ "$(wc -l < "$TMP/rates")" -eq "$STEPS" ] || { echo "train_steps.sh: no progress lines" >&2; exit 1; }
    paste "$TMP/tokens" "$TMP/rates" |
        awk '{ c += $1; t = c / $2; if (NR > 5) printf "%.3f\n", (t - p) * 1000; p = t }' |
        sort -n | awk '{ a[NR] = $1 } END { printf "%.1f", a[int((NR + 1) / 2)] }'
    rm -f "$TMP"/m.*
}

echo "| round | fp32 ms/step | bf16 ms/step | fp32 / bf16 |"
echo "|---:|---:|---:|---:|"
for r in $(seq "$ROUNDS"); do
    f=$(median_step fp32)
    b=$(median_step bf16)
    printf '| %s | %s | %s | %.2fx |\n' "$r" "$f" "$b" "$(echo "$f / $b" | bc -l)"
done
