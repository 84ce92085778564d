#!/usr/bin/env bash
# The main job: set up, build, and translate the sample sentences with the
# shipped toy models (models/, trained by configs/zh-en.yaml and en-zh.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
echo "== zh -> en (models/zh-en.safetensors)"
paste examples/sentences.zh <(build/s2s translate -m models/zh-en.safetensors < examples/sentences.zh) | sed 's/\t/  ->  /'
echo "== en -> zh (models/en-zh.safetensors)"
paste examples/sentences.en <(build/s2s translate -m models/en-zh.safetensors < examples/sentences.en) | sed 's/\t/  ->  /'
echo "== where \"eat\" looked (cross-attention of the calibrated alignment head)"
build/s2s align -m models/zh-en.safetensors --format text 我爱吃苹果
echo "== where \"it\" looked (encoder self-attention; its gold antecedent is \"animal\")"
build/s2s probe coref -m models/en-zh.safetensors tests/data/coref/gold.en-zh.tsv \
  --show "The animal didn't cross the street because it was too tired."
