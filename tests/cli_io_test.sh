#!/usr/bin/env bash
# Failed writes are failures: every command with a closed stdout, with
# stdout on /dev/full, and the files s2s writes (model, HTML report, vocab)
# on a full filesystem. A lost write exits 1 with one message; the old file
# stays whole and no temp file is left. And input that never ends a line.
#   cli_io_test.sh PATH_TO_s2s
#   cli_io_test.sh PATH_TO_s2s --full-disk DIR   (internal: the tmpfs part)
set -u
s2s=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

cfg=$here/data/ref/pre_relu_tied.yaml
one_line_err() { [ "$(wc -l <"$tmp/err")" -eq 1 ] || { echo "  stderr has $(wc -l <"$tmp/err") lines:"; cat "$tmp/err"; return 1; }; }
no_temp() { [ -z "$(ls -a "$1" | grep '\.tmp')" ] || { echo "  temp files left in $1:"; ls -a "$1"; return 1; }; }

# ---- the files written on a full disk ----
# full_disk DIR LABEL ERROR: DIR starts empty. Old files are written first;
# then, with LABEL "tmpfs", the rest of DIR's small filesystem is filled, so
# every new write fails with ERROR. Needs $model (align reads it).
full_disk() {
  local dir=$1 why=$2
  printf 'OLD MODEL' >"$dir/m.safetensors"
  printf 'OLD REPORT' >"$dir/r.html"
  printf 'OLD VOCAB' >"$dir/v.txt"
  if [ "$why" = tmpfs ]; then
    head -c 100M /dev/zero >"$dir/fill" 2>/dev/null
    check "$why: the filesystem is full" bash -c "! printf x >'$dir/probe' 2>/dev/null"
    rm -f "$dir/probe"
  fi
  check "$why: init exits 1" run 1 "$s2s" init "$cfg" -o "$dir/m.safetensors" --seed 3
  check "$why: init names the file and the error" err_has "m.safetensors: cannot write: $3"
  check "$why: init: one line" one_line_err
  check "$why: the old model is intact" test "$(cat "$dir/m.safetensors")" = "OLD MODEL"
  check "$why: align --html exits 1" run 1 "$s2s" align -m "$model" --max-len 4 --html "$dir/r.html" "die katze"
  check "$why: align --html names the error" err_has "r.html: cannot write: $3"
  check "$why: the old report is intact" test "$(cat "$dir/r.html")" = "OLD REPORT"
  check "$why: vocab build exits 1" run 1 "$s2s" vocab build "$tmp/words.tsv" --column src -o "$dir/v.txt"
  check "$why: vocab build names the error" err_has "v.txt: cannot write: $3"
  check "$why: the old vocab is intact" test "$(cat "$dir/v.txt")" = "OLD VOCAB"
  check "$why: no temp file left" no_temp "$dir"
}

model=$tmp/m.safetensors
check "init a model" run 0 "$s2s" init "$cfg" -o "$model" --seed 3
seq 1 3000 | sed 's/.*/w& x\tt/' >"$tmp/words.tsv"  # a 17 kB vocab

if [ "${2:-}" = "--full-disk" ]; then  # inside the private mount namespace
  full_disk "$3" tmpfs "No space left on device"
  finish cli_io_tmpfs
  exit
fi

printf 'die katze\tthe cat\nder hund\tthe dog\n' >"$tmp/pairs.tsv"
printf 'die katze\nder hund\n' >"$tmp/in.txt"

# Every command that prints, and what it reads on stdin.
printing=(
  "translate|$tmp/in.txt|translate -m $model --max-len 4"
  "translate|/dev/null|translate -m $model --max-len 4 die katze"
  "score|$tmp/pairs.tsv|score -m $model"
  "inspect|/dev/null|inspect $model"
  "eval|/dev/null|eval -m $model --max-len 4 $tmp/pairs.tsv"
  "align|$tmp/in.txt|align -m $model --max-len 4"
  "align|$tmp/in.txt|align -m $model --max-len 4 --format json"
  "config|/dev/null|config show $cfg"
  "config|/dev/null|config check $cfg"
  "help|/dev/null|--help"
)
for entry in "${printing[@]}"; do
  IFS='|' read -r name input args <<<"$entry"
  # shellcheck disable=SC2086  # args is a word list
  check "closed stdout: $args: exit 1" bash -c "'$s2s' $args <'$input' >&- 2>'$tmp/err'; [ \$? -eq 1 ]"
  check "closed stdout: $args: message" err_has "^s2s $name: writing standard output: Bad file descriptor$"
  check "closed stdout: $args: one line" one_line_err
  check "full stdout: $args: exit 1" bash -c "'$s2s' $args <'$input' >/dev/full 2>'$tmp/err'; [ \$? -eq 1 ]"
  check "full stdout: $args: message" err_has "^s2s $name: writing standard output: No space left on device$"
  check "full stdout: $args: one line" one_line_err
done

# A long run stops at the first flush point that fails instead of decoding
# the rest of its input into a full disk: s2s exits while `head` still has
# lines to give, so head dies of SIGPIPE (141).
check "translate into a full disk stops early" bash -c \
  "yes 'die katze' | head -n 200000 | '$s2s' translate -m '$model' --max-len 2 >/dev/full 2>/dev/null; [ \"\${PIPESTATUS[*]}\" = '141 141 1' ]"

# Commands that print nothing on stdout still write their files whole with
# stdout closed: descriptor 1 is not handed to the model's temp file.
check "closed stdout: init exits 0" bash -c "'$s2s' init '$cfg' -o '$tmp/c.safetensors' --seed 3 >&-"
check "closed stdout: init writes the same model" cmp -s "$tmp/c.safetensors" "$model"
check "closed stdout: vocab build exits 0" bash -c "'$s2s' vocab build '$tmp/pairs.tsv' --column src -o '$tmp/c.txt' >&- 2>/dev/null"
check "closed stdout: vocab build writes the vocab" test "$(wc -l <"$tmp/c.txt")" -eq 8

# ---- endless input ----
# Issue 27, item 8: a line that never ends (/dev/zero, a pipe with no
# newline) was "read through to its end", forever, at 100% CPU. It is read
# through up to 64 MiB (S2S_LINE_SKIP_MAX_BYTES), then the command stops:
# exit 2, one line naming FILE:LINE. (timeout: the old code never ends.)
endless=(
  "translate|-|translate -m $model --max-len 4"
  "score|-|score -m $model"
  "eval|/dev/zero|eval -m $model --max-len 4 /dev/zero"
  "align|/dev/zero|align -m $model --max-len 4 --eval /dev/zero"
  "probe coref|/dev/zero|probe coref -m $model /dev/zero"
  "vocab build|/dev/zero|vocab build /dev/zero --column src -o $tmp/endless.txt"
  "train|/dev/zero|train $cfg --set data.train=/dev/zero -o $tmp/endless.safetensors"
)
for entry in "${endless[@]}"; do
  IFS='|' read -r name file args <<<"$entry"
  where=${file/#-/<stdin>}
  # shellcheck disable=SC2086  # args is a word list
  check "endless line: $args: exit 2" run 2 timeout -k 10 30 "$s2s" $args </dev/zero
  check "endless line: $args: message" err_has \
    "^s2s${name:+ $name}: $where:1: line longer than 67108864 bytes, the most s2s reads through"
  check "endless line: $args: one line" one_line_err
done
check "endless line: nothing written" \
  test ! -e "$tmp/endless.txt" -a ! -e "$tmp/endless.safetensors"
# The lines before it are translated; a pipe with no newline stops alike.
check "endless line after a good one: exit 2" run 2 timeout -k 10 30 bash -c \
  "{ echo 'die katze'; head -c 80M /dev/zero; } | '$s2s' translate -m '$model' --max-len 4"
check "endless line after a good one: its translation" lines 1
check "endless line after a good one: line 2 named" err_has "^s2s translate: <stdin>:2: line longer"
check "a pipe with no newline: exit 2" run 2 timeout -k 10 30 bash -c \
  "yes | tr -d '\\n' | '$s2s' translate -m '$model' --max-len 4"

# ---- a FIFO with no writer ----
# fopen of a FIFO waits for a writer: a model, config or vocab path naming
# one with no writer hung before any check. Refused at once, exit 2, one
# line. (timeout: the old code waits forever.)
mkfifo "$tmp/nowriter"
nowriter=(
  "cannot read: not a regular file|inspect $tmp/nowriter"
  "cannot read: not a regular file|translate -m $tmp/nowriter x"
  "cannot open: a FIFO with no writer|config check $tmp/nowriter"
  "cannot open: a FIFO with no writer|translate -m $model --config $tmp/nowriter x"
  "cannot open: a FIFO with no writer|init $cfg --set vocab.src=$tmp/nowriter -o $tmp/nw.st"
)
for entry in "${nowriter[@]}"; do
  IFS='|' read -r why args <<<"$entry"
  # shellcheck disable=SC2086  # args is a word list
  check "FIFO with no writer: $args: exit 2" run 2 timeout -k 10 30 "$s2s" $args </dev/null
  check "FIFO with no writer: $args: message" err_has "^s2s ${args%% *}\( check\)\?: $tmp/nowriter: $why$"
  check "FIFO with no writer: $args: one line" one_line_err
done

# ---- files on a full disk ----
# A real full filesystem: a 256 kB tmpfs in a private mount namespace (needs
# root or CAP_SYS_ADMIN; the mount vanishes with the namespace). 77: no mount.
mkdir "$tmp/tmpfs"
if unshare -m true 2>/dev/null; then
  unshare -m bash -c "mount -t tmpfs -o size=256k tmpfs '$tmp/tmpfs' 2>/dev/null || exit 77
    bash '$0' '$s2s' --full-disk '$tmp/tmpfs'" >"$tmp/tmpfs.log" 2>&1
  rc=$?
else
  rc=77
fi
case $rc in
  0) pass=$((pass + 1)) ;;
  77) echo "cli_io: mounting a tmpfs is not permitted here: skipping the tmpfs part" ;;
  *) fail=$((fail + 1)); echo "FAIL: the tmpfs full-disk checks:"; cat "$tmp/tmpfs.log" ;;
esac
# Everywhere: a file-size limit (ulimit -f 4: RLIMIT_FSIZE of 4 kB) makes
# write(2) fail with EFBIG, as a full disk fails with ENOSPC. SIGXFSZ is
# ignored so that the write fails instead of killing the process. (An
# LD_PRELOAD shim over write() would not do: glibc's stdio calls its own
# internal write, which a preloaded library cannot replace.)
mkdir "$tmp/limited"
full_disk_limited() {
  trap '' XFSZ
  ulimit -f 4
  full_disk "$tmp/limited" "file-size limit" "File too large"
  echo "$pass $fail" >"$tmp/limited.counts"
}
(full_disk_limited)
read -r pass fail <"$tmp/limited.counts"

finish cli_io
