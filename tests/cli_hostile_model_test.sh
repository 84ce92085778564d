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
# splice SRC DST OLD NEW: SRC's tensors under its stored config with OLD
# replaced by NEW (s2s init of such a config would refuse).
splice() {
  python3 - "$@" <<'PY'
import json, struct, sys
src, dst, old, new = sys.argv[1:5]
raw = open(src, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
config = header["__metadata__"]["s2s.config"]
assert old in config, old
header["__metadata__"]["s2s.config"] = config.replace(old, new)
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
PY
}
for change in "max_len: 16/max_len: 250000000" "encoder_layers: 1/encoder_layers: 20000000"; do
  splice "$tmp/small.safetensors" "$tmp/big.safetensors" "${change%/*}" "${change#*/}"
  check "the file is small ($change)" test "$(stat -c %s "$tmp/big.safetensors")" -lt 16000
  check "inspect refuses it fast ($change)" run 2 fast 10 "$S2S" inspect "$tmp/big.safetensors"
  check "the message names the file ($change)" err_has "big.safetensors"
  check "in one line ($change)" one_line
done

# Issue 27: decoding sizes from a model file or a flag. A stored n_best of
# 2^30 + 1 wrapped `m * n_best` on 4 lines (a heap overflow write); a stored
# or given max_len_ratio past INT_MAX / n cut lines or failed with no
# message. Each is refused at its bound (s2s/config.h), naming the source.
printf 'a b\nb a\na\nb\n' >"$tmp/four.txt"
for change in "n_best: 1  # default/n_best: 1073741825" \
  "beam_size: 1  # default/beam_size: 10000" \
  "max_len_ratio: 0.0  # default/max_len_ratio: 400000000"; do
  key=${change%%:*}
  splice "$tmp/small.safetensors" "$tmp/dec.safetensors" "${change%/*}" "${change#*/}"
  check "a stored $key past its bound is refused" \
    run 2 fast 10 "$S2S" translate -m "$tmp/dec.safetensors" <"$tmp/four.txt"
  check "naming the file and key ($key)" err_has "dec.safetensors (s2s.config):.*decode.$key"
  check "and the bound ($key)" err_has "must be >= [01] and <= [16]"
done
for flag in "--n-best 1073741825" "--n-best 2147483647" "--beam 65" "--max-len-ratio 4e8" \
  "--max-len-ratio 1e9 --beam 2"; do
  # shellcheck disable=SC2086 # the flag and its value are two words
  check "$flag is refused" run 2 fast 10 "$S2S" translate -m "$tmp/small.safetensors" $flag \
    <"$tmp/four.txt"
  check "$flag names the bound" err_has "is out of range; must be >= [01] and <= \(64\|100\)"
  check "$flag in one line" one_line
done
check "--batch past its bound is refused" \
  run 2 "$S2S" translate -m "$tmp/small.safetensors" --batch 2147483647 <"$tmp/four.txt"
check "--batch names its bounds" err_has "--batch needs an integer from 1 to 4096, got '2147483647'"
check "--n-best 64 on four lines translates" \
  run 0 fast 60 "$S2S" translate -m "$tmp/small.safetensors" --n-best 64 <"$tmp/four.txt"
check "into 4 x 64 lines at most" test "$(wc -l <"$tmp/out")" -le 256
sed 's/^  max_len: 10$/  max_len: 10\n  n_best: 1073741825/' "$tmp/small.yaml" >"$tmp/nbest.yaml"
check "config check refuses the same n_best" run 2 "$S2S" config check "$tmp/nbest.yaml"
check "at its line" err_has "nbest.yaml:13:11: decode.n_best"

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
