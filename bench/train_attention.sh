#!/usr/bin/env bash
# Training tokens/s of the zh -> en attention variants (docs/attention.md):
# each config of configs/attention/ and the shipped configs/zh-en.yaml
# trains STEPS steps (no validation, no checkpoints) at 1 thread, ROUNDS
# rounds interleaved (full, variant, variant, ..., full, ...), and the
# median of each is printed with its ratio to full's.
#
#   bench/train_attention.sh S2S [STEPS [ROUNDS]]      (default 200 steps, 3 rounds)
set -euo pipefail
s2s=$1 steps=${2:-200} rounds=${3:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
configs=("$root/configs/zh-en.yaml" "$root"/configs/attention/*.yaml)
for r in $(seq "$rounds"); do
  for c in "${configs[@]}"; do
    name=$(basename "$c" .yaml)
    "$s2s" train "$c" --threads 1 --allow-outside -o "$tmp/m.safetensors" \
      --set train.max_steps="$steps" --set train.valid_every=0 --set train.save_every=0 \
      --set train.log="$tmp/train.log" 2>&1 |
      sed -n 's/.* after step [0-9]* (\([0-9]*\) tok\/s).*/\1/p' >>"$tmp/$name"
  done
done
python3 - "$tmp" "${configs[@]}" <<'PY'
import os, statistics, sys
tmp, configs = sys.argv[1], sys.argv[2:]
med = {}
for c in configs:
    name = os.path.basename(c)[:-5]
    with open(os.path.join(tmp, name)) as f:
        med[name] = statistics.median(float(x) for x in f.read().split())
print("| config | training tokens/s | / full |")
print("|---|---:|---:|")
for name, v in med.items():
    print("| %s | %.0f | %.2f |" % (name, v, v / med["zh-en"]))
PY
