#!/usr/bin/env bash
# The grid of every layer and head and the heatmaps' labels in headless
# Chromium (tests/attention_grid_test.js, puppeteer-core from tests/npm/ as
# serve_browser_test.sh has it): `s2s align --html` reports of the shipped
# models (the sample sentences; long labels on both axes) and of a random
# model with other layer and head counts and a local encoder head, and the
# page of `s2s serve`, empty and with a translation. Skipped (exit 77) as
# serve_browser_test.sh is.
#
#     bash tests/attention_grid_test.sh build/s2s
#     SCREENSHOT_DIR=docs bash tests/attention_grid_test.sh build/s2s   # docs/{align,grid,coref}-screenshot.png
set -u
S2S=${1:?usage: attention_grid_test.sh PATH/TO/s2s}
case $S2S in /*) ;; *) S2S=$PWD/$S2S ;; esac
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
NPM_DIR=${S2S_NPM_DIR:-$ROOT/tests/npm}
case $NPM_DIR in /*) ;; *) NPM_DIR=$ROOT/$NPM_DIR ;; esac
SHOTS=${SCREENSHOT_DIR:-}
case $SHOTS in /* | "") ;; *) SHOTS=$PWD/$SHOTS ;; esac

missing() {
  if [ "${CI:-}" = true ]; then echo "FAIL: $1 (scripts/setup.sh installs it)"; exit 1; fi
  echo "SKIP: $1 (scripts/setup.sh installs it)"
  exit 77
}
[ -x "$CHROMIUM" ] || missing "$CHROMIUM not found"
command -v node >/dev/null || missing "node is needed"
fc-list :lang=zh | grep -q . || missing "no CJK font: Chinese would show as empty boxes"
if [ ! -f "$NPM_DIR/node_modules/puppeteer-core/package.json" ]; then
  if [ -s "$NPM_DIR/unavailable" ]; then
    echo "SKIP: puppeteer-core is not installed: $(head -n 1 "$NPM_DIR/unavailable")"
    exit 77
  fi
  missing "puppeteer-core is not installed in $NPM_DIR"
fi

TMP=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
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

"$S2S" serve -m "$zh" -m "$en" --port 0 >"$TMP/serve.out" 2>"$TMP/serve.err" &
server=$!
for _ in $(seq 100); do grep -q '^listening on' "$TMP/serve.out" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$TMP/serve.out")
[ -n "$url" ] || { cat "$TMP/serve.err"; fail "the server did not start"; }
timeout 400 node "$ROOT/tests/attention_grid_test.js" "$NPM_DIR/node_modules/puppeteer-core" "$CHROMIUM" \
  "$TMP/profile" "$TMP/cases.json" "$url" "$SHOTS"
