#!/usr/bin/env bash
# `s2s train` and `s2s vocab build` end to end: a short run and its files,
# the JSON-lines log, progress output, bad data (exit 2, file:line), SIGINT
# (exit 130 and a loadable checkpoint), --resume, signal masks per thread,
# SIGTERM and a SIGINT storm, where outputs may go and
# the checks before the first step, failed log writes (exit 1), and a kill
# at every checkpoint rename followed by --resume.
#   cli_train_test.sh PATH_TO_s2s PATH_TO_fault_rename.so
set -u
s2s=$1
fault_shim=$2
here=$(cd "$(dirname "$0")" && pwd)
data=$here/data/train
. "$here/lib.sh"
json_lines() {  # every line of $1 is a JSON object with step, loss, lr, tokens
  # (lr >= 0: a cosine schedule ends at 0, and a resumed run may end there)
  python3 - "$1" <<'PY'
import json, sys
for i, line in enumerate(open(sys.argv[1]), 1):
    o = json.loads(line)
    assert o["step"] == i and o["tokens"] > 0 and o["lr"] >= 0 and o["loss"] > 0, line
PY
}

cfg=$data/reverse.yaml
short="--set train.max_steps=20 --set train.valid_every=10 --set train.save_every=10"

# ---- a short run ----
check "train: short run" run 0 "$s2s" train "$cfg" -o "$tmp/m.safetensors" $short --log-every 5
check "train: plain progress lines off a terminal" err_has "step 10/20"
check "train: validation line" err_has "valid step 20: loss"
check "train: model loads" run 0 "$s2s" inspect "$tmp/m.safetensors"
check "train: checkpoint beside the model" test -s "$tmp/m.ckpt.safetensors"
check "train: the checkpoint loads as a model" run 0 "$s2s" inspect "$tmp/m.ckpt.safetensors"
check "train: best model" run 0 "$s2s" inspect "$tmp/m.best.safetensors"
check "train: log named after the output" test -s "$tmp/m.train.log"
check "train: log has a line per step" test "$(wc -l <"$tmp/m.train.log")" -eq 20
check "train: log lines are JSON" json_lines "$tmp/m.train.log"
check "train: validation in the log" grep -q '"step": 20, .*"valid": {"loss"' "$tmp/m.train.log"
check "train: no temp files left" test -z "$(ls "$tmp" | grep -i tmp)"
check "train: --quiet is quiet" run 0 "$s2s" train "$cfg" -o "$tmp/q.safetensors" $short --quiet \
  --set train.log="$tmp/q.log"
check "train: --quiet prints nothing" test ! -s "$tmp/err"
check "train: same seed, same log" cmp -s "$tmp/m.train.log" "$tmp/q.log"
cp "$tmp/m.train.log" "$tmp/first.log"
check "train: a second run" run 0 "$s2s" train "$cfg" -o "$tmp/m.safetensors" $short --quiet
check "train: a second run appends to the log" test "$(wc -l <"$tmp/m.train.log")" -eq 40
check "train: the first run's lines stay" cmp -s "$tmp/first.log" <(head -n 20 "$tmp/m.train.log")
check "train: translate with the result" run 0 "$s2s" translate -m "$tmp/m.safetensors" "1 2 3"

# ---- the memory plan ----
check "train --plan" run 0 "$s2s" train "$cfg" -o "$tmp/plan.safetensors" --plan
check "train --plan: the total" out_has "total"
check "train --plan: the batch shape" out_has "7 source rows, 7 target rows"
check "train --plan: writes nothing" test -z "$(ls "$tmp" | grep plan)"
plan_total() { awk '$1 == "total" {print $2}' "$tmp/out"; }
none=$(plan_total)
check "train --plan: checkpointed" run 0 "$s2s" train "$cfg" -o "$tmp/plan.safetensors" --plan \
  --set train.checkpoint_activations=layer
check "train --plan: checkpointing holds less" test "$(plan_total)" -lt "$none"
check "train: checkpointed run" run 0 "$s2s" train "$cfg" -o "$tmp/ck.safetensors" \
  --set train.max_steps=2 --set train.checkpoint_activations=layer
check "train: the plan's line at the start" err_has "memory: .* MB (weights"
check "train --plan: attention_chunk" run 0 "$s2s" train "$cfg" -o "$tmp/plan.safetensors" --plan \
  --set train.attention_chunk=2
check "train --plan: attention_chunk holds less" test "$(plan_total)" -lt "$none"
check "train --plan: attention_chunk named" out_has "attention_chunk: 2"
check "train: attention_chunk run" run 0 "$s2s" train "$cfg" -o "$tmp/ac.safetensors" \
  --set train.max_steps=2 --set train.attention_chunk=2 --set train.checkpoint_activations=layer
check "train: a negative attention_chunk" run 2 "$s2s" train "$cfg" -o "$tmp/x.safetensors" \
  --set train.attention_chunk=-1
check "train: a negative attention_chunk named" err_has "attention_chunk"

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
[ "$rc" -eq 130 ] || { echo "  exit $rc; stderr:"; cat "$tmp/long.err"; }
check "SIGINT: checkpoint loads" run 0 "$s2s" inspect "$tmp/long.safetensors"
check "SIGINT: checkpoint written" test -s "$tmp/long.ckpt.safetensors"
steps=$(wc -l <"$tmp/long.log")
check "resume: continues" run 0 "$s2s" train "$cfg" -o "$tmp/long.safetensors" \
  --resume "$tmp/long.safetensors" --set train.max_steps=$((steps + 3)) \
  --set train.valid_every=0 --set train.log="$tmp/long.log"
check "resume: log continues at the next step" test "$(wc -l <"$tmp/long.log")" -eq $((steps + 3))
check "resume: log still numbered from 1" json_lines "$tmp/long.log"
check "resume: missing checkpoint" run 2 "$s2s" train "$cfg" -o "$tmp/y.safetensors" \
  --resume "$tmp/none.safetensors"
check "resume: missing checkpoint named" err_has "no checkpoint .*none.ckpt.safetensors"

# ---- a signal while the data loads ----
# opened_by_child PID NAME: waits (at most 30 s) until a child of PID (s2s
# under timeout) has a file named NAME open, and prints that child's pid
# (PID itself if none did in time).
opened_by_child() {
  local c
  for _ in $(seq 1 300); do
    for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
      ls -l /proc/"$c"/fd 2>/dev/null | grep -q "$2" && { echo "$c"; return; }
    done
    sleep 0.1
  done
  echo "$1"
}

# Issue 27, item 8: training read its data with SIGINT and SIGTERM blocked
# and never looked at them, so a pipe that goes on kept it loading until
# SIGKILL. Now the loader stops at the next line: exit 130, nothing written.
mkfifo "$tmp/endless.tsv"
(while printf '1 2\t2 1\n%.0s' $(seq 1 1000); do sleep 0.1; done >"$tmp/endless.tsv") \
  2>/dev/null &
writer=$!
timeout -k 10 60 "$s2s" train "$cfg" -o "$tmp/endless.safetensors" \
  --set data.train="$tmp/endless.tsv" 2>"$tmp/endless.err" &
pid=$!
opened_by_child "$pid" endless.tsv >/dev/null
kill -TERM "$pid"  # timeout hands it on to s2s
wait "$pid"
rc=$?
kill "$writer" 2>/dev/null
check "SIGTERM while loading: exit 130" test "$rc" -eq 130
check "SIGTERM while loading: says so" \
  grep -q "^s2s train: interrupted before the first step; nothing written$" "$tmp/endless.err"
check "SIGTERM while loading: one line" test "$(wc -l <"$tmp/endless.err")" -eq 1
check "SIGTERM while loading: nothing written" \
  test -z "$(ls "$tmp" | grep '^endless\.' | grep -v '^endless\.\(tsv\|err\)$')"

# A writer that holds the pipe open and says nothing: the read blocks, and
# a second signal ends the run (before the first step only).
mkfifo "$tmp/silent.tsv"
(exec 3>"$tmp/silent.tsv"; sleep 60) &
writer=$!
timeout -k 10 60 "$s2s" train "$cfg" -o "$tmp/silent.safetensors" \
  --set data.train="$tmp/silent.tsv" 2>"$tmp/silent.err" &
pid=$!
c=$(opened_by_child "$pid" silent.tsv)
# To s2s itself: timeout ignores a second signal once it has handed one on.
kill -TERM "$c"
sleep 0.5
kill -TERM "$c"
wait "$pid"
rc=$?
kill "$writer" 2>/dev/null
check "SIGTERM twice on a silent pipe: exit 130" test "$rc" -eq 130
check "SIGTERM twice on a silent pipe: says so" \
  grep -q "^s2s train: interrupted before the first step; nothing written$" "$tmp/silent.err"
check "SIGTERM twice on a silent pipe: nothing written" test ! -e "$tmp/silent.safetensors"
check "a data FIFO with no writer: exit 2" run 2 timeout -k 10 30 "$s2s" train "$cfg" \
  -o "$tmp/silent.safetensors" --set data.train="$tmp/silent.tsv"
check "a data FIFO with no writer: named" err_has "silent.tsv: cannot open: a FIFO with no writer"

# ---- signals: no handler runs on a training thread ----
# SIGINT and SIGTERM are blocked in every thread but one, which takes them
# with sigwait() (docs/reliability.md "Signals"). The zh-en model's FFN
# products have K = 256 > 84, where oneDNN's sgemm keeps its stack in a heap
# block: a handler's frame there corrupted the heap (7 storms in 20
# aborted; scripts/sigint_loop.sh counts more runs).
sig_cfg=("$here/../configs/zh-en.yaml" --set data.train="$here/../data/corpus/dev.zh-en.tsv"
  --set train.valid_every=0 --set train.save_every=0 --threads 2)
sig_run() {  # sig_run NAME: a long run in the background, pid in $pid
  "$s2s" train "${sig_cfg[@]}" -o "$tmp/$1.safetensors" --set train.max_steps=1000000 \
    --log-every 1000000 2>"$tmp/$1.err" &
  pid=$!
  for _ in $(seq 1 300); do  # until a few steps are logged (at most 30 s)
    [ -s "$tmp/$1.train.log" ] && [ "$(wc -l <"$tmp/$1.train.log")" -ge 3 ] && break
    sleep 0.1
  done
}
masks() {  # masks PID: a line per thread, 1 if it blocks SIGINT, SIGTERM and SIGUSR1, else 0
  local f m
  for f in /proc/"$1"/task/*/status; do
    m=$(awk '/^SigBlk:/ { print $2 }' "$f")
    echo $(( (0x$m & 0x4202) == 0x4202 ))
  done
}
one_checkpoint() {  # one_checkpoint NAME: one interruption; a whole checkpoint of the last step
  local n steps
  n=$(grep -c "interrupted after step" "$tmp/$1.err")
  [ "$n" -eq 1 ] || { echo "  $n interruption lines"; cat "$tmp/$1.err"; return 1; }
  steps=$(wc -l <"$tmp/$1.train.log")
  grep -q "interrupted after step $steps;" "$tmp/$1.err" ||
    { echo "  not the log's $steps steps"; cat "$tmp/$1.err"; return 1; }
  "$s2s" inspect "$tmp/$1.ckpt.safetensors" >/dev/null && [ -z "$(ls "$tmp" | grep "^$1\..*tmp")" ]
}
sig_run term
masks "$pid" >"$tmp/masks"
check "signals: the run has main, worker and waiter threads" test "$(wc -l <"$tmp/masks")" -ge 3
check "signals: every thread but one blocks SIGINT and SIGTERM" \
  test "$(grep -c 0 "$tmp/masks")" -eq 1
kill -TERM "$pid"
wait "$pid"
rc=$?
check "SIGTERM: exit 130 as SIGINT" test "$rc" -eq 130
check "SIGTERM: one checkpoint, whole" one_checkpoint term
steps=$(wc -l <"$tmp/term.train.log")
# Issue 32: the message gives the whole command, config and options included,
# and that command (with a nearer end) resumes, saying from which step.
resume_cmd=$(sed -n 's/.*; continue with: s2s train //p' "$tmp/term.err")
check "SIGTERM: the resume command names the config and the run's options" \
  grep -q "continue with: s2s train ${sig_cfg[0]} .*-o $tmp/term.safetensors .*--log-every 1000000 --resume $tmp/term.safetensors\$" "$tmp/term.err"
check "SIGTERM: resumes with the printed command" \
  run 0 bash -c "\"\$0\" train $resume_cmd --set train.max_steps=$((steps + 1))" "$s2s"
check "SIGTERM: the resumed run says its step" err_has "^resumed from step $steps ($tmp/term.safetensors)$"
check "resume: no CONFIG is named as missing" run 2 "$s2s" train --resume "$tmp/term.safetensors"
check "resume: the message says CONFIG is missing" err_has "^s2s train: no CONFIG given"
for k in 1 2; do
  sig_run storm$k
  for _ in $(seq 1 300); do kill -INT "$pid" 2>/dev/null || break; done  # a burst, then more
  for _ in $(seq 1 2000); do  # until it has exited (bash reaps it at once: kill fails)
    kill -INT "$pid" 2>/dev/null || break
    sleep 0.005
  done
  { wait "$pid"; rc=$?; } 2>/dev/null  # no "Aborted" notice from bash
  check "SIGINT storm $k: exit 130" test "$rc" -eq 130
  [ "$rc" -eq 130 ] || { echo "  exit $rc; stderr:"; cat "$tmp/storm$k.err"; }
  check "SIGINT storm $k: one checkpoint, whole" one_checkpoint storm$k
done

# ---- where outputs may go ----
tiny="--set train.max_steps=2 --set train.valid_every=0 --quiet"
mkdir -p "$tmp/cfgs/sub"
printf 'base: %s\ntrain:\n  output: ../escaped.safetensors\n' "$cfg" >"$tmp/cfgs/sub/out.yaml"
check "outside: train.output leaving the config's folder" run 2 "$s2s" train "$tmp/cfgs/sub/out.yaml" $tiny
check "outside: named" err_has "train.output '.*escaped.safetensors' is outside the config's folder"
check "outside: nothing written" test ! -e "$tmp/cfgs/escaped.safetensors"
check "outside: --allow-outside" run 0 "$s2s" train "$tmp/cfgs/sub/out.yaml" $tiny --allow-outside
check "outside: written with --allow-outside" test -s "$tmp/cfgs/escaped.safetensors"
echo precious >"$tmp/victim.txt"
printf 'base: %s\ntrain:\n  output: m.safetensors\n  log: ../../victim.txt\n' "$cfg" \
  >"$tmp/cfgs/sub/log.yaml"
check "outside: train.log leaving the config's folder" run 2 "$s2s" train "$tmp/cfgs/sub/log.yaml" $tiny
check "outside: train.log named" err_has "train.log '.*victim.txt' is outside"
check "outside: the file is untouched" test "$(cat "$tmp/victim.txt")" = precious
check "inside: a config's own outputs" run 0 "$s2s" train "$tmp/cfgs/sub/log.yaml" $tiny \
  --set train.log="$tmp/cfgs/sub/own.log"
check "inside: --set paths are the user's" test -s "$tmp/cfgs/sub/own.log"
printf 'base: %s\ntrain:\n  output: m.safetensors\n  log: m.log\n' "$cfg" >"$tmp/cfgs/sub/moved.yaml"
check "-o: the log moves with the output" run 0 "$s2s" train "$tmp/cfgs/sub/moved.yaml" $tiny \
  -o "$tmp/moved.safetensors"
check "-o: BASE.train.log beside OUT" test "$(wc -l <"$tmp/moved.train.log")" -eq 2
check "-o: not the config's log" test ! -e "$tmp/cfgs/sub/m.log"

# ---- --init X -o X ----
cp "$tmp/m.safetensors" "$tmp/init.safetensors"
check "init: output = --init refused" run 2 "$s2s" train "$cfg" --init "$tmp/init.safetensors" \
  -o "$tmp/./init.safetensors" $tiny
check "init: says why" err_has "is the --init model"
check "init: the model is untouched" cmp -s "$tmp/m.safetensors" "$tmp/init.safetensors"
check "init: --overwrite" run 0 "$s2s" train "$cfg" --init "$tmp/init.safetensors" \
  -o "$tmp/init.safetensors" $tiny --overwrite
check "init: overwritten with --overwrite" test "$(cmp -s "$tmp/m.safetensors" "$tmp/init.safetensors"; echo $?)" -eq 1

# ---- checked before the first step, and failed writes ----
# Without the check, 10^6 steps with save_every 0 would run before the first write.
forever="--set train.max_steps=1000000 --set train.save_every=0 --set train.valid_every=0"
# An output that cannot be written is a failed write, exit 1, as for `init -o`
# and `vocab build -o` (it was 2 here; one rule now, docs/reliability.md).
check "unwritable output: refused before training" run 1 timeout 60 "$s2s" train "$cfg" \
  -o "$tmp/nodir/m.safetensors" $forever
check "unwritable output: named" err_has "nodir/m.safetensors: cannot write the model there"
check "output onto a folder: refused before training" run 1 timeout 60 "$s2s" train "$cfg" \
  -o "$tmp" $forever
check "output onto a folder: named" err_has "$tmp: is a folder, not a model file"
check "unwritable log: refused before training" run 1 timeout 60 "$s2s" train "$cfg" \
  -o "$tmp/w.safetensors" --set train.log="$tmp/nodir/w.log" $forever
check "unwritable log: named" err_has "nodir/w.log: cannot open for appending"
if [ -w /dev/full ]; then
  check "log write fails: exit 1" run 1 "$s2s" train "$cfg" -o "$tmp/f.safetensors" $tiny \
    --set train.log=/dev/full
  check "log write fails: says so" err_has "/dev/full: cannot write: No space left on device"
fi

# ---- a kill at every checkpoint rename, then --resume ----
# The preloaded hook SIGKILLs the run just before its Nth rename (best model,
# checkpoint, model: three per checkpoint here), for N = 1, 2, ... until a
# run has fewer renames than N. Whatever the kill left, --resume (or, before
# the first checkpoint, a fresh run) ends with the files an unkilled run
# writes, byte for byte.
fault="--set train.max_steps=4 --set train.save_every=2 --set train.valid_every=2 --threads 1 --quiet"
mkdir -p "$tmp/ref"
check "fault: reference run" run 0 "$s2s" train "$cfg" -o "$tmp/ref/m.safetensors" $fault
n=1
while [ "$n" -le 12 ]; do
  d=$tmp/kill$n
  mkdir -p "$d"
  {  # the braces keep bash's "Killed" notice out of the test output
    LD_PRELOAD=$fault_shim S2S_FAULT_KILL_AT_RENAME=$n \
      ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0" \
      "$s2s" train "$cfg" -o "$d/m.safetensors" $fault 2>"$d/err"
    rc=$?
  } 2>/dev/null
  [ "$rc" -eq 0 ] && break  # fewer renames than n
  check "fault $n: killed" test "$rc" -eq 137
  if [ -e "$d/m.ckpt.safetensors" ]; then
    check "fault $n: resumes" run 0 "$s2s" train "$cfg" -o "$d/m.safetensors" \
      --resume "$d/m.safetensors" $fault
    check "fault $n: the log as an unkilled run's" cmp "$tmp/ref/m.train.log" "$d/m.train.log"
  else
    check "fault $n: no checkpoint yet" run 2 "$s2s" train "$cfg" -o "$d/m.safetensors" \
      --resume "$d/m.safetensors" $fault
    check "fault $n: a fresh run" run 0 "$s2s" train "$cfg" -o "$d/m.safetensors" $fault
    # The killed run's lines had no checkpoint behind them: dropped, not appended to.
    check "fault $n: the fresh run's log as an unkilled run's" \
      cmp "$tmp/ref/m.train.log" "$d/m.train.log"
  fi
  for f in m.safetensors m.ckpt.safetensors m.best.safetensors; do
    check "fault $n: $f as an unkilled run's" cmp "$tmp/ref/$f" "$d/$f"
  done
  n=$((n + 1))
done
check "fault: every rename of the run was tried" test "$n" -ge 6

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
