#!/usr/bin/env bash
# The grid of every layer and head and the heatmaps' labels in headless
# Chromium (tests/attention_grid_test.js, puppeteer-core from tests/npm/ as
# serve_browser_test.sh has it): `s2s align --html` reports of the shipped
# models (the sample sentences; long labels on both axes) and of a random
# model with other layer and head counts and a local encoder head, and the
# page of `s2s serve`, empty and with a translation. What it needs, and
# when it is skipped: tests/browser_lib.sh.
#
#     bash tests/attention_grid_test.sh build/s2s
#     SCREENSHOT_DIR=docs bash tests/attention_grid_test.sh build/s2s   # docs/{align,grid,coref}-screenshot.png
set -u
. "$(dirname "${BASH_SOURCE[0]}")/browser_lib.sh"
SHOTS=${SCREENSHOT_DIR:-}
case $SHOTS in /* | "") ;; *) SHOTS=$PWD/$SHOTS ;; esac
fail() { echo "FAIL: $1"; exit 1; }

zh=$ROOT/models/zh-en.safetensors en=$ROOT/models/en-zh.safetensors
# The README's sample sentences (看起来, 垫子: labels of three and two characters).
"$S2S" align -m "$zh" --html "$TMP/zh.html" 我爱吃苹果 那只猫坐在垫子上，它看起来很舒服。 >/dev/null 2>&1 ||
  fail "s2s align --html (zh-en)"
# Long English labels on the columns, long Chinese ones on the rows.
"$S2S" align -m "$en" --html "$TMP/en.html" "that cat sits on the mat , it looks very comfortable ." \
  "the animal didn't cross the street because it was too tired ." >/dev/null 2>&1 || fail "s2s align --html (en-zh)"
# 3 encoder layers, 2 decoder layers, 2 heads; encoder head 1 local, window 1.
"$S2S" init "$ROOT/tests/data/ref/pre_relu_tied.yaml" -o "$TMP/v.safetensors" --seed 1 \
  --set model.encoder_layers=3 --set model.heads=2 --set model.encoder_attention.type=local \
  --set model.encoder_attention.window=1 --set 'model.encoder_attention.heads=[1]' >/dev/null || fail "s2s init"
"$S2S" align -m "$TMP/v.safetensors" --max-len 7 --html "$TMP/v.html" "der hund sitzt auf der matte" >/dev/null 2>&1 ||
  fail "s2s align --html (random model)"
# The seed sentence on the encoder map at the coreference head (README's picture).
head -1 "$ROOT/tests/data/coref/gold.en-zh.tsv" | "$S2S" align -m "$en" --ref --map enc --html "$TMP/seed.html" \
  >/dev/null 2>&1 || fail "s2s align --html (the seed sentence)"
cat >"$TMP/cases.json" <<JSON
[{"page": "$TMP/zh.html", "model": "$zh", "shots": [["align-screenshot.png", 1000, 700, "#sent=1"],
   ["grid-screenshot.png", 1000, 1200, "#sent=1", "#grid"]]},
 {"page": "$TMP/en.html", "model": "$en"},
 {"page": "$TMP/seed.html", "model": "$en", "shots": [["coref-screenshot.png", 1000, 760, ""]]},
 {"page": "$TMP/v.html", "model": "$TMP/v.safetensors", "hatched": ["enc", 2, 1, 1]}]
JSON

serve_start -m "$zh" -m "$en"
timeout 400 node "$ROOT/tests/attention_grid_test.js" "$PUPPETEER" "$CHROMIUM" \
  "$TMP/profile" "$TMP/cases.json" "$url" "$SHOTS"
