#!/usr/bin/env bash
# `s2s plot` in a real browser: Debian's headless Chromium driven by
# puppeteer-core (tests/plot_browser_test.js), as serve_browser_test.sh
# does. The logs of a short real run (docs/plot-logs/: configs/zh-en.yaml,
# 200 steps, full attention in fp32 and bf16, local attention; see
# docs/training.md "Plotting a run") are drawn as SVG and as HTML; each
# loads with no console error or outside request, with the panels and
# series the logs call for. Skipped (exit 77) as serve_browser_test.sh is:
# without chromium, node or puppeteer-core, except under CI=true.
#
#     bash tests/plot_browser_test.sh build/s2s
#     SCREENSHOT_OUT=docs/plot-screenshot.png bash tests/plot_browser_test.sh build/s2s
set -u
. "$(dirname "${BASH_SOURCE[0]}")/browser_lib.sh"
logs=("$ROOT"/docs/plot-logs/zh-en.fp32.train.log "$ROOT"/docs/plot-logs/zh-en.bf16.train.log
      "$ROOT"/docs/plot-logs/zh-en.local.train.log)
labels=(--label "full attention, fp32" --label "full attention, bf16" --label "local attention (window 1), fp32")
for out in "$TMP/plot.svg" "$TMP/plot.html"; do
  "$S2S" plot "${logs[@]}" "${labels[@]}" -o "$out" 2>"$TMP/err" ||
    { echo "FAIL: s2s plot -o $out"; cat "$TMP/err"; exit 1; }
done
timeout 300 node "$ROOT/tests/plot_browser_test.js" "$PUPPETEER" "$CHROMIUM" \
  "$TMP/profile" "$TMP/plot.svg" "$TMP/plot.html" "${SCREENSHOT_OUT:-}" "${logs[@]}"
