#!/usr/bin/env bash
# Peak training memory and step time against sequence length (docs/training.md,
# "Memory and precision"): a random model of configs/bench.yaml trained on one
# synthetic pair of LEN source and LEN target tokens (a batch of one pair),
# for plain attention, train.attention_chunk: 64, train.checkpoint_activations:
# layer and both, runs interleaved round by round, one thread each.
#   bench/train_length.sh [BUILD] [ROUNDS] [STEPS] [LEN...]
# defaults: build 1 3 128 512 2048. Prints one table: the plan's total and
# attention part (s2s train --plan), the peak RSS (/usr/bin/time) and the time
# of a step (the run's tokens per step over its tokens/s), medians over rounds.
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-1}
STEPS=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
LENS=("$@")
[ ${#LENS[@]} -gt 0 ] || LENS=(128 512 2048)
CONFIG=${CONFIG:-configs/bench.yaml}
VARIANTS=("plain=" "chunk64=train.attention_chunk=64" "layer=train.checkpoint_activations=layer"
          "both=train.attention_chunk=64,train.checkpoint_activations=layer")
# shellcheck source=bench/median.sh
. "$(dirname "$0")/median.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# one line of LEN random bench tokens a side (vocab/bench.*.txt: s0..s495, t0..t495)
for len in "${LENS[@]}"; do
    awk -v n="$len" 'BEGIN { srand(n);
        for (i = 0; i < n; i++) printf "%ss%d", i ? " " : "", int(rand() * 496);
        printf "\t";
        for (i = 0; i < n; i++) printf "%st%d", i ? " " : "", int(rand() * 496);
        printf "\n" }' > "$TMP/pair$len.tsv"
done

# the --set list of variant v at length len
sets_of() {
    local v=$1 len=$2
    SETS=(--set model.max_len=$((len + 8)) --set train.batch_tokens=$((2 * len + 16))
          --set data.train="$TMP/pair$len.tsv" --set train.max_steps="$STEPS"
          --set train.valid_every=0 --set train.save_every=0)
    local kv s
    IFS=',' read -ra kv <<< "${v#*=}"
    for s in "${kv[@]}"; do [ -n "$s" ] && SETS+=(--set "$s"); done
    return 0
}

declare -A RSS MS PLAN ATTN
for r in $(seq "$ROUNDS"); do
    for len in "${LENS[@]}"; do
        for v in "${VARIANTS[@]}"; do
            name=${v%%=*}
            sets_of "$v" "$len"
            if [ "$r" = 1 ]; then
                "$BUILD/s2s" train "$CONFIG" "${SETS[@]}" -o "$TMP/m.safetensors" --plan \
                    > "$TMP/plan"
                PLAN[$len,$name]=$(awk '$1 == "total" {print $3}' "$TMP/plan")
                ATTN[$len,$name]=$(awk '$1 == "attention" {print $3}' "$TMP/plan")
            fi
            /usr/bin/time -f "rss %M" -o "$TMP/time" "$BUILD/s2s" train "$CONFIG" --threads 1 \
                "${SETS[@]}" -o "$TMP/m.safetensors" > /dev/null 2> "$TMP/err" || {
                cat "$TMP/err" >&2; exit 1; }
            tok=$(run_tok_s "$TMP/err")
            per_step=$(tail -1 "$TMP/m.train.log" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens"])')
            RSS[$len,$name]="${RSS[$len,$name]:-} $(awk '/^rss/ {print $2}' "$TMP/time")"
            MS[$len,$name]="${MS[$len,$name]:-} $(echo "1000 * $per_step / $tok" | bc -l)"
            rm -f "$TMP"/m.*
        done
    done
done
echo "| length | variant | plan total (MB) | plan attention (MB) | peak RSS (MB) | RSS: plain / this | step (ms) | step: this / plain |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|"
for len in "${LENS[@]}"; do
    base_rss=$(echo "${RSS[$len,plain]}" | median)
    base_ms=$(echo "${MS[$len,plain]}" | median)
    for v in "${VARIANTS[@]}"; do
        name=${v%%=*}
        rss=$(echo "${RSS[$len,$name]}" | median)
        ms=$(echo "${MS[$len,$name]}" | median)
        printf '| %d | %s | %.1f | %.1f | %.0f | %.2fx | %.0f | %.2fx |\n' "$len" "$name" \
            "${PLAN[$len,$name]}" "${ATTN[$len,$name]}" "$(echo "$rss / 1024" | bc -l)" \
            "$(echo "$base_rss / $rss" | bc -l)" "$ms" "$(echo "$ms / $base_ms" | bc -l)"
    done
done
