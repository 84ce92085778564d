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
# Quantised files (s2s quantize): a missing scale, an unknown dtype and a
# bad scale are each refused in one line naming the tensor.
check "quantize writes an int8 copy" run 0 "$S2S" quantize "$tmp/small.safetensors" -o "$tmp/q8.safetensors" --type int8
check "the copy translates" run 0 "$S2S" translate -m "$tmp/q8.safetensors" --compute-type int8 "a b"
check "quantize refuses another type" run 2 "$S2S" quantize "$tmp/small.safetensors" -o "$tmp/x.safetensors" --type fp16
check "naming the choices" err_has "int8 or bf16"
for edit in scale-missing dtype-f16 scale-negative; do
  python3 - "$tmp/q8.safetensors" "$tmp/bad.safetensors" "$edit" <<'PY'
import json, struct, sys
src, dst, edit = sys.argv[1], sys.argv[2], sys.argv[3]
raw = bytearray(open(src, "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
name = "encoder.layers.0.ffn.fc1.weight"
if edit == "scale-missing":  # renamed: the I8 matrix has no scales, the file a stray tensor
    header[name + "_scal"] = header.pop(name + "_scale")
elif edit == "dtype-f16":
    header["encoder.layers.0.ffn.fc1.bias"]["dtype"] = "F16"
else:
    b, e = header[name + "_scale"]["data_offsets"]
    raw[8 + n + b:8 + n + b + 4] = struct.pack("<f", -1.0)
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
PY
  check "a quantised file with $edit is refused" run 2 fast 10 "$S2S" translate -m "$tmp/bad.safetensors" "a b"
  check "in one line ($edit)" one_line
  check "naming the file ($edit)" err_has "bad.safetensors"
done
check "scale-negative names the scale" err_has "encoder.layers.0.ffn.fc1.weight_scale' holds -1"
finish cli_hostile_model
