#!/usr/bin/env bash
# docs/attention-lab.md in a real browser: rendered to HTML by marked (from
# npm, pinned in scripts/setup.sh, in tests/npm/ beside puppeteer-core) and
# loaded in Debian's headless Chromium (tests/lab_page_test.js), the
# pictures resolved from docs/. It loads with no console error or failed
# request, every picture drawn, the five experiments' sections, every
# `<!-- lab:NAME -->` block of the Markdown as preformatted text, and the
# grid block with one band per encoder layer of models/zh-en.safetensors
# and one column per head (from `s2s inspect`). Skipped (exit 77) as the
# other browser tests are (tests/browser_lib.sh), also without marked.
#
#     bash tests/lab_page_test.sh build/s2s
#     SCREENSHOT_OUT=docs/attention-lab-screenshot.png bash tests/lab_page_test.sh build/s2s
set -u
. "$(dirname "${BASH_SOURCE[0]}")/browser_lib.sh"
need_npm marked
model=$ROOT/models/zh-en.safetensors
"$S2S" inspect "$model" >"$TMP/inspect" 2>"$TMP/err" || { echo "FAIL: s2s inspect $model"; cat "$TMP/err"; exit 1; }
key() { sed -n "/^model:/,/^[^ ]/s/^  $1: *\([0-9][0-9]*\).*/\1/p" "$TMP/inspect" | head -n 1; }  # the config's model: section
layers=$(key encoder_layers) heads=$(key heads)
[ -n "$layers" ] && [ -n "$heads" ] ||
  { echo "FAIL: no encoder_layers or heads in s2s inspect $model"; cat "$TMP/inspect"; exit 1; }
timeout 300 node "$ROOT/tests/lab_page_test.js" "$PUPPETEER" "$NPM_DIR/node_modules/marked" "$CHROMIUM" \
  "$TMP/profile" "$ROOT/docs/attention-lab.md" "$TMP/attention-lab.html" "$layers" "$heads" "${SCREENSHOT_OUT:-}"
