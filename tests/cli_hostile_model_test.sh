#!/usr/bin/env bash
# Issue 14's reproducers for model sizes, end to end: each is refused with
# exit 2 and one line naming the file, fast, with no signal.
#   - a 12-line config whose layout overflows size_t (init wrote 8.7e9
#     floats into a 0.9 MB block);
#   - model files of a few kB whose stored config asks for a 3.9 GB position
#     table (49 s) or a hundred million layers (12 s of CPU).
#
#     bash tests/cli_hostile_model_test.sh build/s2s
set -u
S2S=${1:?usage: cli_hostile_model_test.sh PATH/TO/s2s}
case $S2S in /*) ;; *) S2S=$PWD/$S2S ;; esac
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
here=$(dirname "${BASH_SOURCE[0]}")
. "$here/lib.sh"

one_line() { [ "$(wc -l <"$tmp/err")" -eq 1 ] || { echo "  not one line:"; cat "$tmp/err"; return 1; }; }
# runs within SECONDS seconds: timeout(1) exits 124 past them.
fast() { local s=$1; shift; timeout "$s" "$@"; }

cat >"$tmp/overflow.yaml" <<YAML
model:
  d_model: 1239840486
  heads: 2
  encoder_layers: 1
  decoder_layers: 1
  ffn_dim: 58647
  max_len: 16
vocab:
  src: $ROOT/tests/data/ref/src.txt
  tgt: $ROOT/tests/data/ref/tgt.txt
decode:
  max_len: 10
YAML
check "init refuses an overflowing layout" run 2 fast 10 "$S2S" init "$tmp/overflow.yaml" -o "$tmp/m.safetensors"
check "init names the limit" err_has "more than 4294967296 weights"
check "init names the config's line" err_has "overflow.yaml:2:12: model.d_model 1239840486"
check "config check refuses it too" run 2 fast 10 "$S2S" config check "$tmp/overflow.yaml"
check "init writes nothing" test ! -e "$tmp/m.safetensors"

# A small model, then copies whose stored config asks for more.
sed -e 's/d_model: 1239840486/d_model: 4/' -e 's/ffn_dim: 58647/ffn_dim: 8/' \
  "$tmp/overflow.yaml" >"$tmp/small.yaml"
check "init makes a small model" run 0 "$S2S" init "$tmp/small.yaml" -o "$tmp/small.safetensors"
for change in "max_len: 16/max_len: 250000000" "encoder_layers: 1/encoder_layers: 20000000"; do
  sed "s/$change/" "$tmp/small.yaml" >"$tmp/big.yaml"
  # The tensors of the small model under the big config: s2s init of the
  # big config would refuse, so splice its stored config in with python.
  python3 - "$tmp/small.safetensors" "$tmp/big.safetensors" "$change" <<'PY'
import json, struct, sys
src, dst, change = sys.argv[1], sys.argv[2], sys.argv[3]
old, new = change.split("/")
raw = open(src, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
header["__metadata__"]["s2s.config"] = header["__metadata__"]["s2s.config"].replace(old, new)
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
PY
  check "the file is small ($change)" test "$(stat -c %s "$tmp/big.safetensors")" -lt 16000
  check "inspect refuses it fast ($change)" run 2 fast 10 "$S2S" inspect "$tmp/big.safetensors"
  check "the message names the file ($change)" err_has "big.safetensors"
  check "in one line ($change)" one_line
done
finish cli_hostile_model
