#!/usr/bin/env bash
# The shipped models load and translate the sample sentences as documented
# (README, docs/toy-corpus.md).   shipped_models_test.sh PATH_TO_s2s
set -u
s2s=$1
root=$(cd "$(dirname "$0")/.." && pwd)
pass=0 fail=0
expect() {  # expect MODEL INPUT WANTED
  local got
  got=$("$s2s" translate -m "$root/models/$1" "$2" 2>&1)
  if [ "$got" = "$3" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2 -> '$got', wanted '$3'"; fi
}
expect zh-en.safetensors "我爱吃苹果" "I love to eat apples."
expect zh-en.safetensors "我爱吃苹果。" "I love to eat apples."
expect zh-en.safetensors "那只猫坐在垫子上，它看起来很舒服。" "That cat sits on the mat, it looks very comfortable."
expect en-zh.safetensors "The animal didn't cross the street because it was too tired." "这只动物没有过马路，因为它太累了。"
expect en-zh.safetensors "I love to eat apples." "我爱吃苹果。"
# typed spellings, normalised before tokenizing (docs/toy-corpus.md, Normalisation)
expect zh-en.safetensors "你喜欢猫吗?" "Do you like cats?"
expect zh-en.safetensors "你喜欢猫吗" "Do you like cats?"
expect zh-en.safetensors "那只猫坐在垫子上,它看起来很舒服." "That cat sits on the mat, it looks very comfortable."
expect zh-en.safetensors "我愛吃蘋果" "I love to eat apples."
expect zh-en.safetensors "我有2只猫" "I have two cats."
expect en-zh.safetensors "The animal didnt cross the street because it was too tired." "这只动物没有过马路，因为它太累了。"
expect en-zh.safetensors "The animal did not cross the street because it was too tired." "这只动物没有过马路，因为它太累了。"
note=$("$s2s" translate -m "$root/models/zh-en.safetensors" --verbose 我有2只猫 2>&1 >/dev/null)
if [ "$note" = "s2s translate: argument:1: normalised: 我有两只猫" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: --verbose printed '$note'"; fi
# the files from examples/, as scripts/run.sh translates them
n=$("$s2s" translate -m "$root/models/zh-en.safetensors" <"$root/examples/sentences.zh" | wc -l)
if [ "$n" -eq "$(wc -l <"$root/examples/sentences.zh")" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: a line per sample"; fi
# "eat" gives 吃 its largest weight under the calibrated alignment head, and
# the whole sentence aligns as the corpus conventions say ("to" unaligned)
links=$("$s2s" align -m "$root/models/zh-en.safetensors" --format pharaoh 我爱吃苹果)
if [ "$links" = "0-0 1-1 2-3 3-4" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: alignment '$links', wanted '0-0 1-1 2-3 3-4' (吃-eat is 2-3)"; fi
# the seeds' self-attention (issue 16): in the calibrated coreference head
# the pronoun gives its antecedent its largest weight (itself excluded)
seed() {  # seed MODEL GOLD SENTENCE ANTECEDENT
  local row
  row=$("$s2s" probe coref -m "$root/models/$1" "$root/tests/data/coref/$2" --show "$3" 2>&1 | grep -- '<- largest')
  case $row in
    *" $4 "*"<- largest  <- antecedent"*) pass=$((pass + 1)) ;;
    *) fail=$((fail + 1)); echo "FAIL: $3: the largest weight is on '$row', wanted $4" ;;
  esac
}
seed en-zh.safetensors gold.en-zh.tsv "The animal didn't cross the street because it was too tired." animal
seed zh-en.safetensors gold.zh-en.tsv "那只猫坐在垫子上，它看起来很舒服。" 猫
seed zh-en.safetensors gold.zh-en.tsv "这只动物没有过马路，因为它太累了。" 动物
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
