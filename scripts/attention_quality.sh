#!/usr/bin/env bash
# The quality table of docs/attention.md: for each zh -> en model, its
# alignment and coreference heads calibrated on the dev split (into copies
# in a temporary folder), then on the test split BLEU and exact match
# (`s2s eval`), the AER of the calibrated alignment head (`s2s align
# --eval`), the antecedent accuracy of the calibrated coreference head
# (`s2s probe coref`), and the seed examples: 吃 aligned to "eat" in
# 我爱吃苹果, and 它 giving its antecedent its largest weight in the
# coreference head (猫 and 动物).
#
#   scripts/attention_quality.sh S2S MODEL...     one Markdown row per model
set -euo pipefail
s2s=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
dev=$root/data/corpus/dev.zh-en.tsv test=$root/data/corpus/test.zh-en.tsv
gold=$root/tests/data/coref/gold.zh-en.tsv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The calibrated ("stored") row's figure of a table that s2s prints.
stored() { awk '/stored/ { print $3 }'; }

# seed_coref MODEL SENTENCE ANTECEDENT: "yes" when the pronoun's row gives
# the antecedent its largest weight.
seed_coref() {
  "$s2s" probe coref -m "$1" "$gold" --show "$2" 2>&1 |
    grep -q -- " $3 .*<- largest  <- antecedent" && echo yes || echo no
}

echo "| model | BLEU | exact match | AER (head) | antecedent accuracy (head) | 吃-eat | 它→猫 | 它→动物 |"
echo "|---|---:|---:|---:|---:|:-:|:-:|:-:|"
for m in "$@"; do
  name=$(basename "$m" .safetensors)
  "$s2s" align -m "$m" --calibrate "$dev" -o "$tmp/a.safetensors" >/dev/null
  "$s2s" probe coref -m "$tmp/a.safetensors" "$dev" --calibrate -o "$tmp/c.safetensors" >/dev/null
  c=$tmp/c.safetensors
  read -r bleu exact < <("$s2s" eval -m "$c" "$test" --json |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.2f %.2f%%" % (j["bleu"], 100 * j["exact_match"]))')
  aer_row=$("$s2s" align -m "$c" --eval "$test" | awk '/stored/ { print $3 " (" $1 "/" $2 ")" }')
  coref_row=$("$s2s" probe coref -m "$c" "$test" | awk '/stored/ { print $3 " (" $1 "/" $2 ")" }')
  eat=$("$s2s" align -m "$c" --format pharaoh 我爱吃苹果 | grep -qw 2-3 && echo yes || echo no)
  cat_=$(seed_coref "$c" "那只猫坐在垫子上，它看起来很舒服。" 猫)
  animal=$(seed_coref "$c" "这只动物没有过马路，因为它太累了。" 动物)
  echo "| $name | $bleu | $exact | $aer_row | $coref_row | $eat | $cat_ | $animal |"
done
