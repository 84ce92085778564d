#!/usr/bin/env bash
# Training tokens/s and peak RSS of the shipped zh-en config under the
# memory and precision options (docs/training.md, "Memory and precision"),
# runs of each variant interleaved round by round, one thread each.
#   bench/train_memory.sh [BUILD] [ROUNDS] [STEPS] [VARIANT...]
# A VARIANT is a name=--set list, e.g. "bf16=train.compute_type=bf16";
# default: plain, checkpoint_activations: layer.
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3}
STEPS=${3:-30}
shift $(( $# < 3 ? $# : 3 ))
VARIANTS=("$@")
[ ${#VARIANTS[@]} -gt 0 ] || VARIANTS=("plain=" "layer=train.checkpoint_activations=layer")
CONFIG=${CONFIG:-configs/zh-en.yaml}
# shellcheck source=bench/median.sh
. "$(dirname "$0")/median.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
declare -A TOKS RSS
for r in $(seq "$ROUNDS"); do
    for v in "${VARIANTS[@]}"; do
        name=${v%%=*}
        sets=()
        IFS=',' read -ra kv <<< "${v#*=}"
        for s in "${kv[@]}"; do [ -n "$s" ] && sets+=(--set "$s"); done
        /usr/bin/time -f "rss %M" -o "$TMP/time" "$BUILD/s2s" train "$CONFIG" --threads 1 \
            --set train.max_steps="$STEPS" --set train.valid_every=0 --set train.save_every=0 \
            "${sets[@]}" -o "$TMP/$name.safetensors" > /dev/null 2> "$TMP/err" || {
            cat "$TMP/err" >&2; exit 1; }
        tok=$(run_tok_s "$TMP/err")
        rss=$(awk '/^rss/ {print $2}' "$TMP/time")
        TOKS[$name]="${TOKS[$name]:-} $tok"
        RSS[$name]="${RSS[$name]:-} $rss"
    done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
first=${VARIANTS[0]%%=*}
base=$(echo "${TOKS[$first]}" | median)
echo "| variant | tokens/s (rounds) | median | vs $first | peak RSS (MB, median) |"
echo "|---|---|---:|---:|---:|"
for v in "${VARIANTS[@]}"; do
    name=${v%%=*}
    med=$(echo "${TOKS[$name]}" | median)
    rss=$(echo "${RSS[$name]}" | median)
    printf '| %s | %s | %s | %.2fx | %.0f |\n' "$name" "$(echo ${TOKS[$name]} | tr ' ' ',')" \
        "$med" "$(echo "$med / $base" | bc -l)" "$(echo "$rss / 1024" | bc -l)"
done
