#!/usr/bin/env bash
# The HTML report of `s2s align --html` in headless Chromium (Debian's
# chromium): the page loads with no console error, draws its heatmap, every
# sentence / map type / layer / head / </s> combination draws (the page's
# #selftest), and a screenshot is taken. Exits 77 (skipped) without
# /usr/bin/chromium.   html_render_test.sh PATH_TO_s2s
# SCREENSHOT_OUT=FILE keeps the screenshot (of a random model; the docs' pictures
# of the shipped models come from tests/attention_grid_test.sh).
set -u
s2s=$1
chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  echo "html_render: skipped: $chromium not found (apt-get install chromium to run it)"
  exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync
       --user-data-dir="$tmp/profile" --enable-logging=stderr --v=0)
chrome() {  # chrome OUT LOG ARGS... : chromium with a time limit
  local out=$1 log=$2; shift 2
  timeout 120 "$chromium" "${flags[@]}" "$@" >"$out" 2>"$log"
}
no_page_error() {  # window.onerror marks the page
  if grep -o 'class="s2s-js-error"[^<]*' "$1"; then return 1; fi
}
no_console_errors() {  # console messages and uncaught exceptions land in the log
  if grep -E 'CONSOLE|Uncaught|SyntaxError|TypeError|ReferenceError' "$1"; then return 1; fi
}

model=$tmp/m.safetensors
"$s2s" init "$here/data/ref/pre_relu_tied.yaml" -o "$model" --seed 1 >/dev/null || exit 1
page=$tmp/report.html
check "s2s align --html" "$s2s" align -m "$model" --max-len 7 --html "$page" \
  "der hund sitzt auf der matte" "die katze ist klein" "我爱吃苹果 der hund" >/dev/null

check "loads: exit 0" chrome "$tmp/dom.html" "$tmp/load.log" --dump-dom "file://$page"
check "loads: script ran to the end" grep -q 'data-s2s-status="ok"' "$tmp/dom.html"
check "loads: one heatmap drawn" grep -q 'data-s2s-maps="1"' "$tmp/dom.html"
check "loads: cells carry their weight" grep -qE 'title="[^"]+ → [^"]+: 0\.[0-9]{4}"' "$tmp/dom.html"
check "loads: no page error" no_page_error "$tmp/dom.html"
check "loads: no console errors" no_console_errors "$tmp/load.log"

# 3 sentences x 3 map types x (2 layers + avg + all) x (4 heads + avg + all) x 2
check "selftest: exit 0" chrome "$tmp/self.html" "$tmp/self.log" --dump-dom "file://$page#selftest"
check "selftest: every view drawn" grep -q 'data-s2s-selftest="432"' "$tmp/self.html"
check "selftest: no page error" no_page_error "$tmp/self.html"
check "selftest: no console errors" no_console_errors "$tmp/self.log"

# A model with a coreference head (s2s probe coref --calibrate) and --ref
# lines with a coreference column: the page opens on the encoder map at
# that head, the pronoun's row and its antecedent's cell marked.
cal=$tmp/cal.safetensors
gold=$here/data/coref/gold.en-zh.tsv
check "coref: calibrate" bash -c "'$s2s' probe coref -m '$here/../models/en-zh.safetensors' '$gold' --calibrate -o '$cal' >/dev/null"
read -r cl ch < <("$s2s" inspect "$cal" | sed -n 's/^coreference head (encoder): layer \(.*\), head \(.*\)$/\1 \2/p')
check "coref: page" bash -c "head -2 '$gold' | '$s2s' align -m '$cal' --ref --map enc --html '$tmp/coref.html' >/dev/null"
check "coref: loads" chrome "$tmp/coref_dom.html" "$tmp/coref.log" --dump-dom "file://$tmp/coref.html"
check "coref: opens on the encoder map at the head" \
  grep -q "<figcaption>layer $cl · head $ch</figcaption>" "$tmp/coref_dom.html"
check "coref: the pronoun's row marked" grep -q '<th class="row pron">it</th>' "$tmp/coref_dom.html"
check "coref: one antecedent cell marked" test "$(grep -o 'class="[a-z ]*ante"' "$tmp/coref_dom.html" | wc -l)" -eq 1
check "coref: no console errors" no_console_errors "$tmp/coref.log"

# A model with attention variants: the page names each head's pattern and
# hatches the keys it hides (td.unseen), apart from cells of weight 0.
vmodel=$tmp/v.safetensors
"$s2s" init "$here/data/ref/pre_relu_tied.yaml" -o "$vmodel" --seed 1 \
  --set model.encoder_attention.type=local --set model.encoder_attention.window=1 \
  --set 'model.encoder_attention.heads=[1, 2]' --set model.cross_attention.type=linear \
  --set 'model.cross_attention.heads=[3]' >/dev/null || exit 1
check "variants: s2s align --html" "$s2s" align -m "$vmodel" --max-len 7 --html "$tmp/v.html" \
  "der hund sitzt auf der matte" >/dev/null
check "variants: loads at a view" chrome "$tmp/v_dom_all.html" "$tmp/v.log" --dump-dom "file://$tmp/v.html#map=enc&layer=0&head=1"
# the view's maps, without the grid of every layer and head below them (tests/attention_grid_test.sh)
without_grid() { perl -0pe 's/<div id="grid">.*//s' "$1" >"$2"; }
without_grid "$tmp/v_dom_all.html" "$tmp/v_dom.html"
check "variants: the caption names the head's pattern" \
  grep -q '<figcaption>layer 0 · head 1: local, window 1</figcaption>' "$tmp/v_dom.html"
check "variants: every head's pattern listed" \
  grep -q 'head 0: full</span>.*head 1: local, window 1</span>.*head 2: local, window 1</span>.*head 3: full</span>' "$tmp/v_dom.html"
# 6 tokens and </s>: 7 x 7 cells, of which |i - j| <= 1 are seen (7 + 2 x 6)
check "variants: the hidden keys hatched, and only they" \
  test "$(grep -o 'class="[a-z ]*unseen"' "$tmp/v_dom.html" | wc -l)" -eq 30
check "variants: the hatched cells carry no weight" bash -c "[ \$(grep -oE '<td [^>]*class=\"[a-z ]*unseen\"' '$tmp/v_dom.html' | grep -c 'data-w=\"0.000000\"') -eq 30 ]"
check "variants: no console errors" no_console_errors "$tmp/v.log"
check "variants: cross-attention of a linear head" chrome "$tmp/v_dom2_all.html" "$tmp/v2.log" --dump-dom "file://$tmp/v.html#map=cross&layer=1&head=3"
without_grid "$tmp/v_dom2_all.html" "$tmp/v_dom2.html"
check "variants: a linear head hides nothing" bash -c "grep -q '<figcaption>layer 1 · head 3: linear</figcaption>' '$tmp/v_dom2.html' && ! grep -qE 'class=\"[a-z ]*unseen\"' '$tmp/v_dom2.html'"
check "variants: selftest: exit 0" chrome "$tmp/v_self.html" "$tmp/v_self.log" --dump-dom "file://$tmp/v.html#selftest"
# 1 sentence x 3 map types x (2 layers + avg + all) x (4 heads + avg + all) x 2
check "variants: selftest: every view drawn" grep -q 'data-s2s-selftest="144"' "$tmp/v_self.html"
check "variants: selftest: no page error" no_page_error "$tmp/v_self.html"
check "variants: selftest: no console errors" no_console_errors "$tmp/v_self.log"
check "full model: no pattern named" bash -c "! grep -qE '<figcaption>[^<]*head [^<]*: ' '$tmp/dom.html' && ! grep -q 'class=\"pat ' '$tmp/dom.html'"

check "screenshot: exit 0" chrome /dev/null "$tmp/shot.log" --hide-scrollbars --window-size=900,640 \
  --screenshot="$tmp/shot.png" "file://$page"
check "screenshot: a PNG" bash -c "head -c 8 '$tmp/shot.png' | od -An -tx1 | grep -q '89 50 4e 47'"
check "screenshot: no console errors" no_console_errors "$tmp/shot.log"
if [ -n "${SCREENSHOT_OUT:-}" ] && [ -f "$tmp/shot.png" ]; then cp "$tmp/shot.png" "$SCREENSHOT_OUT"; fi

finish html_render
