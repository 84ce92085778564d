#!/usr/bin/env bash
# `s2s train` and `s2s vocab build` end to end: a short run and its files,
# the JSON-lines log, progress output, bad data (exit 2, file:line), SIGINT
# (exit 130 and a loadable checkpoint) and --resume.   cli_train_test.sh PATH_TO_s2s
set -u
s2s=$1
here=$(cd "$(dirname "$0")" && pwd)
data=$here/data/train
. "$here/lib.sh"
json_lines() {  # every line of $1 is a JSON object with step, loss, lr, tokens
  python3 - "$1" <<'PY'
import json, sys
for i, line in enumerate(open(sys.argv[1]), 1):
    o = json.loads(line)
    assert o["step"] == i and o["tokens"] > 0 and o["lr"] > 0 and o["loss"] > 0, line
PY
}

cfg=$data/reverse.yaml
short="--set train.max_steps=20 --set train.valid_every=10 --set train.save_every=10"

# ---- a short run ----
check "train: short run" run 0 "$s2s" train "$cfg" -o "$tmp/m.safetensors" $short --log-every 5
check "train: plain progress lines off a terminal" err_has "step 10/20"
check "train: validation line" err_has "valid step 20: loss"
check "train: model loads" run 0 "$s2s" inspect "$tmp/m.safetensors"
check "train: optimizer state beside the model" test -s "$tmp/m.optim.safetensors"
check "train: best model" run 0 "$s2s" inspect "$tmp/m.best.safetensors"
check "train: log has a line per step" test "$(wc -l <"$tmp/train.log")" -eq 20
check "train: log lines are JSON" json_lines "$tmp/train.log"
check "train: validation in the log" grep -q '"step": 20, .*"valid": {"loss"' "$tmp/train.log"
check "train: no temp files left" test -z "$(ls "$tmp" | grep -i tmp)"
check "train: --quiet is quiet" run 0 "$s2s" train "$cfg" -o "$tmp/q.safetensors" $short --quiet \
  --set train.log="$tmp/q.log"
check "train: --quiet prints nothing" test ! -s "$tmp/err"
check "train: same seed, same log" cmp -s "$tmp/train.log" "$tmp/q.log"
check "train: translate with the result" run 0 "$s2s" translate -m "$tmp/m.safetensors" "1 2 3"

# ---- errors ----
check "train: no config" run 2 "$s2s" train
check "train: unknown option" run 2 "$s2s" train "$cfg" --bogus
check "train: missing data file" run 2 "$s2s" train "$cfg" -o "$tmp/x.safetensors" \
  --set data.train=/nonexistent/train.tsv
check "train: missing data file named" err_has "/nonexistent/train.tsv"
cp "$data/bad_no_tab.tsv" "$tmp/bad.tsv"
check "train: line without a tab" run 2 "$s2s" train "$cfg" -o "$tmp/x.safetensors" \
  --set data.train="$tmp/bad.tsv"
check "train: file and line named" err_has "bad.tsv:3: expected source<TAB>target"
printf '1 2\t2 1\n\x00\x01\x02garbage\n' >"$tmp/corrupt.tsv"
check "train: corrupt data file" run 2 "$s2s" train "$cfg" -o "$tmp/x.safetensors" \
  --set data.dev="$tmp/corrupt.tsv"
check "train: corrupt file and line named" err_has "corrupt.tsv:2:"
check "train: nothing written after a data error" test ! -e "$tmp/x.safetensors"

# ---- SIGINT, then --resume ----
"$s2s" train "$cfg" -o "$tmp/long.safetensors" --set train.max_steps=1000000 \
  --set train.valid_every=0 --set train.log="$tmp/long.log" --quiet --threads 1 2>"$tmp/long.err" &
pid=$!
for _ in $(seq 1 300); do  # until a few steps are logged (at most 30 s)
  [ -s "$tmp/long.log" ] && [ "$(wc -l <"$tmp/long.log")" -ge 3 ] && break
  sleep 0.1
done
kill -INT "$pid"
wait "$pid"
rc=$?
check "SIGINT: exit 130" test "$rc" -eq 130
check "SIGINT: checkpoint loads" run 0 "$s2s" inspect "$tmp/long.safetensors"
check "SIGINT: optimizer state written" test -s "$tmp/long.optim.safetensors"
steps=$(wc -l <"$tmp/long.log")
check "resume: continues" run 0 "$s2s" train "$cfg" -o "$tmp/long.safetensors" \
  --resume "$tmp/long.safetensors" --set train.max_steps=$((steps + 3)) \
  --set train.valid_every=0 --set train.log="$tmp/long.log"
check "resume: log continues at the next step" test "$(wc -l <"$tmp/long.log")" -eq $((steps + 3))
check "resume: log still numbered from 1" json_lines "$tmp/long.log"
check "resume: missing checkpoint" run 2 "$s2s" train "$cfg" -o "$tmp/y.safetensors" \
  --resume "$tmp/none.safetensors"

# ---- vocab build ----
check "vocab build: source column" run 0 "$s2s" vocab build "$data/reverse_train.tsv" \
  --column src -o "$tmp/v.txt"
check "vocab build: specials then 10 digits" test "$(wc -l <"$tmp/v.txt")" -eq 14
check "vocab build: specials first" test "$(head -4 "$tmp/v.txt" | tr '\n' ' ')" = "<pad> <unk> <s> </s> "
check "vocab build: max size" run 0 "$s2s" vocab build "$data/reverse_train.tsv" \
  --column tgt --max-size 6 -o "$tmp/v6.txt"
check "vocab build: 6 lines" test "$(wc -l <"$tmp/v6.txt")" -eq 6
check "vocab build: bad line" run 2 "$s2s" vocab build "$data/bad_no_tab.tsv" --column src -o "$tmp/b.txt"
check "vocab build: bad line named" err_has "bad_no_tab.tsv:3:"
check "vocab build: usage" run 2 "$s2s" vocab build "$data/reverse_train.tsv" -o "$tmp/b.txt"

finish cli_train
