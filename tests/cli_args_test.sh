#!/usr/bin/env bash
# The shared option parser of every command (src/cli/args.c): options after
# positionals, `--` ending them, --help listing every option the parser
# takes (each listed option parsed back), did-you-mean for a mistyped flag,
# --version, and --flush / a terminal answering line by line.
#   cli_args_test.sh PATH_TO_s2s
set -u
s2s=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
py=/usr/bin/python3

model=$tmp/m.safetensors
rmodel=$tmp/r.safetensors
dev=$here/data/align/dev.tsv
check "init after its positional: -o last" run 0 "$s2s" init "$here/data/ref/pre_relu_tied.yaml" --seed 1 -o "$model"
check "init reverse model" run 0 "$s2s" init "$here/data/align/reverse.yaml" -o "$rmodel" --seed 2

# ---- options anywhere, `--` ends them ----
check "translate: options after the sentence" run 0 "$s2s" translate -m "$model" "die katze" --n-best 2 --max-len 4
check "translate: --n-best after the sentence took effect (2 n-best lines)" lines 2
check "translate: n-best format" bash -c "! grep -qv '^0 ||| ' '$tmp/out'"
check "translate: --name=value" run 0 "$s2s" translate -m "$model" "die katze" --n-best=2 --max-len=4
check "translate: --n-best=2 gives 2 lines" lines 2
check "translate -- --beam 4: two sentences" run 0 "$s2s" translate -m "$model" --max-len 3 -- --beam 4
check "translate -- --beam 4: 2 output lines" lines 2
check "translate -- --beam: sentence, not option" run 0 "$s2s" translate -m "$model" --max-len 3 --tokens -- --beam
check "translate -- --beam: 1 line" lines 1
check "score: -m after nothing else" bash -c "printf 'die katze\tthe cat\n' | '$s2s' score --max-len 4 -m '$model' | grep -q '\"tokens\"'"
check "eval: options after TEST.tsv" run 0 "$s2s" eval "$dev" -m "$model" --max-len 6 --json
check "eval: JSON output" out_has '"sentences"'
check "eval-align: --reverse after the file" run 0 "$s2s" eval-align -m "$model" "$dev" --max-len 8 --reverse "$rmodel"
check "eval-align: symmetrised figures" out_has "^grow-diag .*reverse model"
check "align: --format after the sentence" run 0 "$s2s" align -m "$model" "die katze" --max-len 6 --format json
check "align: JSON line" out_has '"alignment"'
check "a switch refuses =value" run 2 "$s2s" translate -m "$model" --tokens=yes x
check "  names it" err_has "s2s translate: --tokens takes no value"
check "a value option at the end" run 2 "$s2s" translate -m "$model" x --beam
check "  says it needs a value" err_has "s2s translate: --beam needs a value (N)"

# ---- --no- forms (issue 32) ----
# A switch that sets a boolean key is switched off by its --no- form, and
# the later of the two wins, as for every decoding option.
check "--no-replace-unknowns: exit 0" run 0 "$s2s" translate -m "$here/../models/zh-en.safetensors" -q 我想吃巧克力。 --no-replace-unknowns
check "  prints <unk>" out_has "^I want to eat <unk>.$"
check "--no-replace-unknowns then --replace-unknowns" run 0 "$s2s" translate -m "$here/../models/zh-en.safetensors" -q 我想吃巧克力。 --no-replace-unknowns --replace-unknowns
check "  copies the word" out_has "^I want to eat 巧克力.$"
check "--no-replace-unknowns=x: exit 2" run 2 "$s2s" translate -m "$model" x --no-replace-unknowns=x
check "  names the option as typed" err_has "s2s translate: --no-replace-unknowns takes no value"
check "--help shows the --no- form" run 0 "$s2s" translate --help
check "  --[no-]replace-unknowns" out_has "^  --\[no-\]replace-unknowns .*--no-replace-unknowns to false"

# ---- did you mean ----
check "translate --bean: exit 2" run 2 "$s2s" translate -m "$model" x --bean 4
check "  did you mean --beam" err_has "s2s translate: unknown option '--bean' (did you mean '--beam'?)"
check "  one line" test "$(wc -l <"$tmp/err")" -eq 1
check "vocab build --min-cont: exit 2" run 2 "$s2s" vocab build x.tsv --min-cont 2
check "  did you mean --min-count" err_has "did you mean '--min-count'"
check "align --symetrize: did you mean" run 2 "$s2s" align -m "$model" --symetrize union x
check "  --symmetrize" err_has "did you mean '--symmetrize'"
check "far from any option: no guess" run 2 "$s2s" eval --zzzzzzzz
check "  points at --help" err_has "unknown option '--zzzzzzzz' (see s2s eval --help)"

# ---- --version ----
want=$(sed -n 's/^#define S2S_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' "$here/../include/s2s/version.h" | paste -sd.)
check "--version: exit 0" run 0 "$s2s" --version
check "--version prints s2s $want" test "$(cat "$tmp/out")" = "s2s $want"
check "version: the same" bash -c "[ \"\$('$s2s' version)\" = 's2s $want' ]"

# ---- --help: every command, every option parses back ----
# Each option line of the help ("  -o, --output OUT   ...") is given back to
# the command, with a value when it shows one, before --help: an option the
# parser does not take would fail with exit 2 instead of printing the help.
# The commands are read from `s2s --help` (its rows: src/cli/cli.h), each
# with its subcommands where the row's second word names them
# ("vocab build", "config check|show|...").
commands=()
while read -r name second _; do
  if [[ $second =~ ^[a-z][a-z|-]*$ ]]; then
    IFS='|' read -ra subs <<<"$second"
    for sub in "${subs[@]}"; do commands+=("$name $sub"); done
  else
    commands+=("$name")
  fi
done < <("$s2s" --help | sed -n '/^commands:$/,/^$/p' | grep -E '^  [a-z]')
check "--help lists the commands (${#commands[*]}: ${commands[*]})" test "${#commands[@]}" -ge 19
for c in "${commands[@]}"; do
  for h in --help -h; do
    check "$c $h: exit 0 on stdout" run 0 "$s2s" $c $h
    check "$c $h: usage line" out_has "^usage: s2s ${c%% *}"
  done
  cp "$tmp/out" "$tmp/help"
  n=0
  while read -r name value; do
    n=$((n + 1))
    forms=("$name")
    [[ $name == *"[no-]"* ]] && forms=("${name/\[no-\]/}" "${name/\[no-\]/no-}")  # --x, --no-x
    for form in "${forms[@]}"; do
      args=("$form"); [ -n "$value" ] && args+=(1)
      check "$c: listed $form parses back" run 0 "$s2s" $c "${args[@]}" --help
    done
  done < <(grep -E '^  (-[a-zA-Z], )?--' "$tmp/help" | sed -E 's/^  (-[a-zA-Z], )?(--(\[no-\])?[a-z-]+)( ([^ ]+))?.*/\2 \5/; s/ \[.*//')
  check "$c: help lists options ($n)" test "$n" -ge 1
done
check "translate --help lists the decode flags with their keys" bash -c "'$s2s' translate --help | grep -q -- '--beam N .*decode.beam_size'"
check "translate --help lists --flush" bash -c "'$s2s' translate --help | grep -q -- '--flush'"
check "translate --help: a decode flag's schema default" bash -c "'$s2s' translate --help | grep -- '--max-len N' | grep -q 'the schema.s is 128'"
check "s2s --help mentions --version" bash -c "'$s2s' --help | grep -q -- '--version'"

# ---- line by line: --flush on a pipe, and a terminal ----
# A coprocess writes one line, must read its answer within the timeout
# (the process still running, its stdin open), then writes another.
check "--flush: each line answered while stdin stays open" "$py" - "$s2s" "$model" <<'PY'
import os, select, subprocess, sys
s2s, model = sys.argv[1:3]
def answer(p, timeout):
    r, _, _ = select.select([p.stdout], [], [], timeout)
    return p.stdout.readline() if r else None
def session(extra):
    p = subprocess.Popen([s2s, "translate", "-m", model, "--max-len", "4", "--tokens"] + extra,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    got = []
    for line in (b"die katze\n", b"der hund\n"):
        p.stdin.write(line); p.stdin.flush()
        got.append(answer(p, 20 if extra else 1.5))
    p.stdin.close(); rest = p.stdout.read(); p.wait()
    return got, rest
got, rest = session(["--flush"])
assert all(g is not None and g.endswith(b"\n") for g in got), got
assert rest == b"", rest
# Without --flush a pipe is read in chunks: no answer before the end.
got, rest = session([])
assert got == [None, None], got
assert rest.count(b"\n") == 2, rest
PY
check "a terminal on stdin: each line answered at once" "$py" - "$s2s" "$model" <<'PY'
import os, pty, select, subprocess, sys
s2s, model = sys.argv[1:3]
master, slave = pty.openpty()
p = subprocess.Popen([s2s, "translate", "-m", model, "--max-len", "4", "--tokens"],
                     stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
os.close(slave)
for line in (b"die katze\n", b"der hund\n"):
    os.write(master, line)
    r, _, _ = select.select([p.stdout], [], [], 20)
    assert r, "no answer to %r" % line
    assert p.stdout.readline().endswith(b"\n")
os.write(master, b"\x04")  # Ctrl-D: end of input
assert p.wait(timeout=20) == 0
os.close(master)
PY
check "align --flush: answered while stdin stays open" "$py" - "$s2s" "$model" <<'PY'
import select, subprocess, sys
s2s, model = sys.argv[1:3]
p = subprocess.Popen([s2s, "align", "-m", model, "--max-len", "6", "--flush", "--format", "pharaoh"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
for line in (b"die katze\n", b"der hund\n"):
    p.stdin.write(line); p.stdin.flush()
    r, _, _ = select.select([p.stdout], [], [], 20)
    assert r, "no answer to %r" % line
    p.stdout.readline()
p.stdin.close(); p.wait()
PY

finish cli_args
