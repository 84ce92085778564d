#!/usr/bin/env bash
# The main job: set up, build, and translate the sample sentences.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
# Until trained models ship, translate with a randomly initialised model.
model=build/demo-zh-en.safetensors
build/s2s init configs/demo.yaml -o "$model" --seed 1
echo "== zh -> en (random weights: the output is noise until a trained model ships)"
build/s2s translate -m "$model" < examples/sentences.zh
