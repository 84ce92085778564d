#!/usr/bin/env bash
# The page of `s2s serve` in a real browser: Debian's headless Chromium,
# driven over the DevTools protocol by puppeteer-core (tests/serve_browser_test.js).
# puppeteer-core is installed by scripts/setup.sh from npm into tests/npm/
# (S2S_NPM_DIR), so the test downloads nothing (its own browser download is
# never used). Skipped (exit 77) when setup recorded that the npm registry
# could not be reached, with that reason; without chromium, node, a CJK
# font or puppeteer-core it is skipped too, except under CI (CI=true),
# where scripts/setup.sh has installed them and their absence is a failure.
#
#     bash tests/serve_browser_test.sh build/s2s
#     SCREENSHOT_OUT=docs/serve-screenshot.png bash tests/serve_browser_test.sh build/s2s
set -u
S2S=${1:?usage: serve_browser_test.sh PATH/TO/s2s}
case $S2S in /*) ;; *) S2S=$PWD/$S2S ;; esac
. "$(dirname "${BASH_SOURCE[0]}")/browser_lib.sh"
browser_needs
fc-list :lang=zh | grep -q . || missing "no CJK font: Chinese would show as empty boxes"

TMP=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

# en-zh with a coreference head: its encoder map turns to it; zh-en served
# without one (taken out of a copy): its encoder map keeps the view.
python3 "$ROOT/tests/strip_coref_head.py" "$ROOT/models/zh-en.safetensors" "$TMP/zh-en.safetensors" ||
  { echo "FAIL: strip_coref_head.py"; exit 1; }
COREF_CAPTION=$("$S2S" inspect "$ROOT/models/en-zh.safetensors" |
  sed -n 's/^coreference head (encoder): layer \(.*\), head \(.*\)$/layer \1 · head \2/p')
[ -n "$COREF_CAPTION" ] || { echo "FAIL: no coreference head in s2s inspect"; exit 1; }
export COREF_CAPTION
"$S2S" serve -m "$TMP/zh-en.safetensors" -m "$ROOT/models/en-zh.safetensors" --port 0 \
  >"$TMP/serve.out" 2>"$TMP/serve.err" &
server=$!
for _ in $(seq 100); do grep -q '^listening on' "$TMP/serve.out" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$TMP/serve.out")
[ -n "$url" ] || { echo "FAIL: the server did not start"; cat "$TMP/serve.err"; exit 1; }
timeout 300 node "$ROOT/tests/serve_browser_test.js" "$NPM_DIR/node_modules/puppeteer-core" "$CHROMIUM" \
  "$url" "$TMP/profile" "${SCREENSHOT_OUT:-}"
