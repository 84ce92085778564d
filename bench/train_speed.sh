#!/usr/bin/env bash
# Training tokens/s of the shipped zh-en config in fp32 and bf16 at 1 and 2
# threads, beside the PyTorch peer of the same model and batches
# (bench/torch_train.py: torch.optim.Adam, fp32 and torch's bf16 autocast),
# every run interleaved round by round (docs/training.md, "Memory and precision").
#   bench/train_speed.sh [BUILD] [ROUNDS] [STEPS] [THREADS...]
# defaults: build 3 30 1 2. The guided terms and <unk> replacement are off on
# the s2s side, as the peer has none. Without torch (Debian: apt-get install
# python3-torch) the peer's rows are left out, with a message.
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3}
STEPS=${3:-30}
shift $(( $# < 3 ? $# : 3 ))
THREADS=("$@")
[ ${#THREADS[@]} -gt 0 ] || THREADS=(1 2)
CONFIG=${CONFIG:-configs/zh-en.yaml}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3  # Debian's python3-torch
VARIANTS=(s2s-fp32 s2s-bf16)
if "$PY" -c "import torch" 2> /dev/null; then
    VARIANTS+=(torch-fp32 torch-bf16)
else
    echo "bench/train_speed.sh: no torch for $PY: the PyTorch peer is left out" \
         "(Debian: apt-get install python3-torch)" >&2
fi
# shellcheck source=bench/median.sh
. "$(dirname "$0")/median.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
S2S_SETS=(--set train.max_steps="$STEPS" --set train.valid_every=0 --set train.save_every=0
          --set train.guided_alignment.layer=-1 --set train.guided_coref.layer=-1
          --set train.unk_replace=0)

declare -A TOKS
for r in $(seq "$ROUNDS"); do
    for t in "${THREADS[@]}"; do
        for v in "${VARIANTS[@]}"; do
            case $v in
            s2s-*)
                "$BUILD/s2s" train "$CONFIG" --threads "$t" "${S2S_SETS[@]}" \
                    --set train.compute_type="${v#s2s-}" -o "$TMP/m.safetensors" \
                    > /dev/null 2> "$TMP/err" || { cat "$TMP/err" >&2; exit 1; }
                tok=$(run_tok_s "$TMP/err")
                rm -f "$TMP"/m.* ;;
            torch-*)
                tok=$("$PY" "$HERE/torch_train.py" "$CONFIG" --steps "$STEPS" --threads "$t" \
                      --dtype "${v#torch-}" --cache "$TMP/pairs.pickle" | awk '{print $2}') ;;
            esac
            TOKS[$t,$v]="${TOKS[$t,$v]:-} $tok"
        done
    done
done
echo "| threads | variant | tokens/s (rounds) | median | vs s2s fp32 | vs torch fp32 |"
echo "|---:|---|---|---:|---:|---:|"
for t in "${THREADS[@]}"; do
    f32=$(echo "${TOKS[$t,s2s-fp32]}" | median)
    tf32=$(echo "${TOKS[$t,torch-fp32]:-}" | median)
    for v in "${VARIANTS[@]}"; do
        med=$(echo "${TOKS[$t,$v]}" | median)
        vs_t="-"
        [ -n "$tf32" ] && vs_t=$(printf '%.2fx' "$(echo "$med / $tf32" | bc -l)")
        printf '| %s | %s | %s | %s | %.2fx | %s |\n' "$t" "$v" "$(echo ${TOKS[$t,$v]} | tr ' ' ',')" \
            "$med" "$(echo "$med / $f32" | bc -l)" "$vs_t"
    done
done
