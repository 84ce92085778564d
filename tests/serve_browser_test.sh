#!/usr/bin/env bash
# The page of `s2s serve` in a real browser: Debian's headless Chromium,
# driven over the DevTools protocol by puppeteer-core (tests/serve_browser_test.js).
# What it needs, and when it is skipped: tests/browser_lib.sh.
#
#     bash tests/serve_browser_test.sh build/s2s
#     SCREENSHOT_OUT=docs/serve-screenshot.png bash tests/serve_browser_test.sh build/s2s
set -u
. "$(dirname "${BASH_SOURCE[0]}")/browser_lib.sh"

# en-zh with a coreference head: its encoder map turns to it; zh-en served
# without one (taken out of a copy): its encoder map keeps the view.
python3 "$ROOT/tests/strip_coref_head.py" "$ROOT/models/zh-en.safetensors" "$TMP/zh-en.safetensors" ||
  { echo "FAIL: strip_coref_head.py"; exit 1; }
COREF_CAPTION=$("$S2S" inspect "$ROOT/models/en-zh.safetensors" |
  sed -n 's/^coreference head (encoder): layer \(.*\), head \(.*\)$/layer \1 · head \2/p')
[ -n "$COREF_CAPTION" ] || { echo "FAIL: no coreference head in s2s inspect"; exit 1; }
export COREF_CAPTION
serve_start -m "$TMP/zh-en.safetensors" -m "$ROOT/models/en-zh.safetensors"
timeout 300 node "$ROOT/tests/serve_browser_test.js" "$PUPPETEER" "$CHROMIUM" \
  "$url" "$TMP/profile" "${SCREENSHOT_OUT:-}"
