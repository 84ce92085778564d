#!/usr/bin/env bash
# `s2s plot`: the SVG's structure for hand-made logs (tests/data/plot/),
# alone, overlaid, as HTML, with --label and --last-run (checked with
# xml.etree by tests/plot_check.py), bad lines skipped with FILE:LINE and
# exit 3, and the refusals (exit 2, nothing written). A trained log's
# grad_norms panels: one per sublayer of every layer.
#     cli_plot_test.sh PATH_TO_s2s
set -u
s2s=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
data=$here/data/plot
py=${S2S_PYTHON:-python3}
shape() { "$py" "$here/plot_check.py" "$@"; }

fixed3="loss=3 dev_loss=1 bleu=1 lr=3 grad_norm=3"
groups2="encoder.layers.0.self_attn=8 encoder.layers.0.ffn=4 decoder.layers.0.cross_attn=8"
check "one log: exit 0" run 0 "$s2s" plot "$data/a.train.log" -o "$tmp/a.svg"
check "one log: says what it wrote" err_has "wrote $tmp/a.svg (1 run)"
check "one log: panels and series" shape "$tmp/a.svg" "--runs=a" loss=1 dev_loss=1 bleu=1 lr=1 \
  grad_norm=1 encoder.layers.0.self_attn=4 encoder.layers.0.ffn=2 decoder.layers.0.cross_attn=4
# b holds two runs (its steps start again at 1); the second has no grad_norms.
check "two logs: exit 0" run 0 "$s2s" plot "$data/a.train.log" "$data/b.train.log" -o "$tmp/ab.svg"
check "two logs: a run each, b's two runs apart" shape "$tmp/ab.svg" "--runs=a|b (run 1)|b (run 2)" \
  $fixed3 $groups2
check "two logs: the matrices' dashes in the legend" \
  test "$(grep -c 'class="legend-matrix"' "$tmp/ab.svg")" -eq 6
check "--last-run" run 0 "$s2s" plot "$data/a.train.log" "$data/b.train.log" --last-run -o "$tmp/last.svg"
check "--last-run: b's last run alone" shape "$tmp/last.svg" "--runs=a|b" loss=2 dev_loss=1 bleu=1 \
  lr=2 grad_norm=2 encoder.layers.0.self_attn=4 encoder.layers.0.ffn=2 decoder.layers.0.cross_attn=4
check "--label" run 0 "$s2s" plot "$data/a.train.log" "$data/b.train.log" --label 'fp32 <&>' \
  --last-run -o "$tmp/label.svg"
check "--label: named so, escaped" shape "$tmp/label.svg" "--runs=fp32 <&>|b"
check "html: exit 0" run 0 "$s2s" plot "$data/a.train.log" "$data/b.train.log" -o "$tmp/ab.html"
check "html: the same picture in a page" shape "$tmp/ab.html" "--runs=a|b (run 1)|b (run 2)" \
  $fixed3 $groups2
mkdir -p "$tmp/x" && cp "$data/a.train.log" "$tmp/x/"
check "same file names: exit 0" run 0 "$s2s" plot "$data/a.train.log" "$tmp/x/a.train.log" -o "$tmp/same.svg"
check "same file names: legend" shape "$tmp/same.svg" "--runs=$data/a|$tmp/x/a"

# Bad lines: each named, skipped, the others plotted; exit 3.
check "bad lines: exit 3" run 3 "$s2s" plot "$data/bad.train.log" -o "$tmp/bad.svg"
check "bad lines: cut-off JSON" err_has "s2s plot: $data/bad.train.log:2: skipped: not JSON: "
check "bad lines: not an object" err_has "bad.train.log:3: skipped: not a JSON object"
check "bad lines: no step" err_has "bad.train.log:4: skipped: no \"step\""
check "bad lines: a string for a number" err_has "bad.train.log:5: skipped: \"loss\" is not a number"
check "bad lines: grad_norms not an object" err_has "bad.train.log:6: skipped: \"grad_norms\" is not an object"
check "bad lines: five warnings" test "$(grep -c skipped "$tmp/err")" -eq 5
check "bad lines: the good lines drawn" shape "$tmp/bad.svg" "--runs=bad" loss=1 dev_loss=0 bleu=0 lr=1 grad_norm=1
check "bad lines: empty panels say so" grep -q 'class="empty"' "$tmp/bad.svg"

# Refusals: exit 2, nothing written (the output left as it was).
echo keep >"$tmp/keep.svg"
check "empty log: exit 2" run 2 "$s2s" plot "$data/a.train.log" "$data/empty.train.log" -o "$tmp/keep.svg"
check "empty log: says so" err_has "empty.train.log: no log lines in it (the file is empty)"
check "empty log: nothing written" grep -qx keep "$tmp/keep.svg"
check "no line kept: exit 2" run 2 "$s2s" plot "$data/junk.train.log" -o "$tmp/keep.svg"
check "no line kept: every line named" err_has "junk.train.log:2: skipped: not JSON"
check "no line kept: says so" err_has "junk.train.log: no log lines in it (every line skipped)"
check "no line kept: nothing written" grep -qx keep "$tmp/keep.svg"
check "missing log: exit 2" run 2 "$s2s" plot "$tmp/nope.log" -o "$tmp/keep.svg"
check "missing log: named" err_has "$tmp/nope.log: cannot open"
check "no -o: exit 2" run 2 "$s2s" plot "$data/a.train.log"
check "no LOG: exit 2" run 2 "$s2s" plot -o "$tmp/x.svg"
check "-o of another kind: exit 2" run 2 "$s2s" plot "$data/a.train.log" -o "$tmp/x.png"
check "-o of another kind: says which" err_has "FILE.svg or FILE.html"
check "more labels than logs: exit 2" run 2 "$s2s" plot "$data/a.train.log" --label x --label y -o "$tmp/x.svg"
mkdir "$tmp/dir.svg"
check "-o a folder: exit 1" run 1 "$s2s" plot "$data/a.train.log" -o "$tmp/dir.svg"
check "-o a folder: named" err_has "$tmp/dir.svg: cannot write"
ln -s /dev/full "$tmp/full.svg"
check "-o a full device: exit 1" run 1 "$s2s" plot "$data/a.train.log" -o "$tmp/full.svg"
check "-o a full device: the reason" err_has "No space left on device"
check "-o a full device: one line" test "$(wc -l <"$tmp/err")" -eq 1
check "--help" run 0 "$s2s" plot --help
check "--help: usage" out_has "usage: s2s plot LOG... -o FILE.svg|FILE.html"
check "s2s --help lists plot" bash -c "'$s2s' --help | grep -q '^  plot LOG'"

# A trained log: `s2s train` says where it is and how to plot it, and its
# grad_norms give a panel per sublayer of each layer (2 + 1 layers: 2 x 2 + 3).
cfg=$here/data/train/reverse.yaml
check "train: exit 0" run 0 "$s2s" train "$cfg" -o "$tmp/r.safetensors" --threads 1 \
  --set train.max_steps=4 --set train.valid_every=2 --set train.grad_norms_every=2 \
  --set model.encoder_layers=2
check "train: the log and the plot command" \
  err_has "log: $tmp/r.train.log; plot it with: s2s plot $tmp/r.train.log -o $tmp/r.train.svg"
check "train: said at the start and at the end" test "$(grep -c '^log: ' "$tmp/err")" -eq 2
check "train: plot exit 0" run 0 "$s2s" plot "$tmp/r.train.log" -o "$tmp/r.train.svg"
check "train: a panel per sublayer" shape "$tmp/r.train.svg" "--runs=r" loss=1 dev_loss=1 bleu=1 lr=1 \
  grad_norm=1 encoder.layers.0.self_attn=4 encoder.layers.0.ffn=2 encoder.layers.1.self_attn=4 \
  encoder.layers.1.ffn=2 decoder.layers.0.self_attn=4 decoder.layers.0.cross_attn=4 decoder.layers.0.ffn=2

finish cli_plot
