#!/usr/bin/env bash
# The s2s command end to end: init, translate, score, inspect, and the exit
# codes and one-line messages for bad input.   cli_test.sh PATH_TO_s2s
set -u
s2s=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

cfg=$here/data/ref/pre_relu_tied.yaml
model=$tmp/m.safetensors
check "init writes a model" run 0 "$s2s" init "$cfg" -o "$model" --seed 3
check "init leaves no temp file" test -z "$(ls "$tmp" | grep tmp)"
check "inspect lists tensors" run 0 "$s2s" inspect "$model"
check "inspect shows generator.bias" grep -q "generator.bias *\[33\]" "$tmp/out"

printf 'die katze\n\nder hund sitzt auf der matte\n' >"$tmp/in.txt"
check "translate: a line per input line" run 0 "$s2s" translate -m "$model" --max-len 5 <"$tmp/in.txt"
check "translate: 3 lines" lines 3
check "translate: empty line stays empty" test -z "$(sed -n 2p "$tmp/out")"
check "translate arguments" run 0 "$s2s" translate -m "$model" --max-len 4 --tokens "die katze" "ein hund"
check "translate arguments: 2 lines" lines 2
check "translate reports unknown words" run 0 "$s2s" translate -m "$model" --max-len 3 "die Zebra" "der hund"
check "unknown word named as typed, once" bash -c "[ \"\$(cat '$tmp/err')\" = \"s2s translate: argument:1: 'Zebra' is not in the model's source vocabulary\" ]"
check "--quiet silences them" run 0 "$s2s" translate -m "$model" --quiet --max-len 3 "die zebra"
check "--quiet: nothing on stderr" test ! -s "$tmp/err"
# Input in the model's other language: one line saying so, not one per word.
zh_en=$here/../models/zh-en.safetensors
en_zh=$here/../models/en-zh.safetensors
check "other language: translated" run 0 "$s2s" translate -m "$zh_en" "I love to eat apples. Will he read books tomorrow?"
check "other language: one line on stderr" bash -c "[ \"\$(cat '$tmp/err')\" = \"s2s translate: argument:1: this looks like English; the model translates Chinese → English (10 of its 10 words are not in the model's source vocabulary)\" ]"
check "other language, en-zh" run 0 "$s2s" translate -m "$en_zh" "我爱吃苹果。他明天看书吗？"
check "other language, en-zh: one line" bash -c "[ \"\$(wc -l <'$tmp/err')\" -eq 1 ] && grep -q 'this looks like Chinese; the model translates English → Chinese' '$tmp/err'"
check "other language --json" run 0 "$s2s" translate -m "$zh_en" --json "I love apples."
check "other language --json: language_warning" /usr/bin/python3 -c "
import json; o = json.loads(open('$tmp/out').read())
assert o['language_warning'] == 'this looks like English; the model translates Chinese \u2192 English', o"
check "source language, one word unknown: named, no language line" run 0 "$s2s" translate -m "$zh_en" "我爱吃巧克力。"
check "source language: only the word" bash -c "[ \"\$(cat '$tmp/err')\" = \"s2s translate: argument:1: '巧克力' is not in the model's source vocabulary\" ]"
# A typed ASCII ! becomes the corpus's ！ before tokenizing: the message and
# the JSON name what was typed, the traditional 巧克力 too.
check "typed !, unknown" run 0 "$s2s" translate -m "$zh_en" "我爱吃巧克力!"
check "typed ! named as typed" bash -c "grep -q \"'!' is not in\" '$tmp/err' && ! grep -q '！' '$tmp/err'"
check "typed !, --json" run 0 "$s2s" translate -m "$zh_en" --json --quiet "我愛吃巧克力!"
check "--json unknown: as typed" /usr/bin/python3 -c "
import json; o = json.loads(open('$tmp/out').read())
assert o['unknown'] == ['巧克力', '!'], o"
check "source language --json: language_warning null" run 0 "$s2s" translate -m "$zh_en" --json "我爱吃苹果"
check "--json: null" out_has '"language_warning":null'
check "other language --quiet: nothing on stderr" run 0 "$s2s" translate -m "$zh_en" --quiet "I love apples."
check "--quiet: silent" test ! -s "$tmp/err"
# Sentences: each line split, translated in one batch, joined on one line.
printf 'die katze! der hund!

die katze
' >"$tmp/two.txt"
check "split: one output line per input line" run 0 "$s2s" translate -m "$model" --max-len 4 --tokens <"$tmp/two.txt"
check "split: 3 lines" lines 3
cp "$tmp/out" "$tmp/split.out"
check "sentences alone" run 0 "$s2s" translate -m "$model" --max-len 4 --tokens "die katze!" "der hund!"
check "split line = its sentences' translations joined" bash -c "[ \"\$(sed -n 1p '$tmp/split.out')\" = \"\$(paste -sd ' ' '$tmp/out')\" ]"
check "split json" run 0 "$s2s" translate -m "$model" --max-len 4 --json --beam 2 --n-best 2 "die katze! der zebra!"
check "split json: sentences, unknown, summed scores" /usr/bin/python3 -c "
import json; o = json.loads(open('$tmp/out').read())
assert o['sentences'] == ['die katze!', 'der zebra!'] and 'zebra' in o['unknown'], o
assert len(o['hypotheses']) == 2 and o['hypotheses'][0]['score'] >= o['hypotheses'][1]['score'], o"
check "split n-best: 2 lines" run 0 "$s2s" translate -m "$model" --max-len 4 --n-best 2 "die katze! der hund!"
check "split n-best: 2 lines out" lines 2
check "--no-split translates the line whole" run 0 "$s2s" translate -m "$model" --max-len 4 --no-split --json "die katze! der hund!"
check "--no-split: no sentences" /usr/bin/python3 -c "import json; assert 'sentences' not in json.loads(open('$tmp/out').read())"
long=$(printf 'die katze %.0s' $(seq 40))
check "split: a long sentence is cut, the others kept" run 3 "$s2s" translate -m "$model" --max-len 4 --tokens "der hund! $long" "der hund!"
check "split: cut named by its line" err_has "argument:1: cut to 63 tokens"
check "split: cut once, not the other line" bash -c "[ \$(grep -c 'cut to' '$tmp/err') -eq 1 ] && [ \$(wc -l <'$tmp/out') -eq 2 ]"
check "split: the first sentence kept" bash -c "[ \"\$(sed -n 1p '$tmp/out' | cut -d' ' -f1-4)\" = \"\$(sed -n 2p '$tmp/out')\" ]"
check "guard flags" run 0 "$s2s" translate -m "$model" --max-len 6 --repetition-penalty 1.5 --no-repeat-ngram-size 2 --replace-unknowns "die katze"
check "guard: bad penalty refused" run 2 "$s2s" translate -m "$model" --repetition-penalty 0.5 "die katze"
check "guard: message names the flag" err_has "repetition-penalty 0.5 (decode.repetition_penalty)"
check "replace_unknowns off by --set" run 0 "$s2s" translate -m "$model" --set decode.replace_unknowns=false "die katze"
# A forced case: a model whose <unk> logit outweighs every other writes only
# <unk>, and with one source word each is that word, as typed.
/usr/bin/python3 - "$model" "$tmp/unk.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
head = json.loads(raw[8:8 + n])
start = 8 + n + head['generator.bias']['data_offsets'][0]
data = bytearray(raw)
data[start + 4:start + 8] = struct.pack('<f', 100.0)  # id 1, <unk>
open(sys.argv[2], 'wb').write(bytes(data))
PY
noguard=(--repetition-penalty 1 --no-repeat-ngram-size 0 --set decode.no_immediate_repeat=false --max-len 3)
check "forced <unk>: replaced by the source word" run 0 "$s2s" translate -m "$tmp/unk.safetensors" "${noguard[@]}" -q Zebra
check "forced <unk>: Zebra x3" bash -c "[ \"\$(cat '$tmp/out')\" = 'Zebra Zebra Zebra' ]"
check "forced <unk>: beam, n-best, tokens" run 0 "$s2s" translate -m "$tmp/unk.safetensors" "${noguard[@]}" -q --beam 2 --n-best 2 --tokens Zebra
check "forced <unk>: every hypothesis copies" bash -c "! grep -q '<unk>' '$tmp/out' && [ \$(grep -c 'Zebra' '$tmp/out') -eq 2 ]"
check "forced <unk>: json" run 0 "$s2s" translate -m "$tmp/unk.safetensors" "${noguard[@]}" -q --json Zebra
check "forced <unk>: json text and tokens" /usr/bin/python3 -c "
import json; o = json.loads(open('$tmp/out').read()); h = o['hypotheses'][0]
assert h['text'] == 'Zebra Zebra Zebra' and h['tokens'] == ['Zebra'] * 3 and o['unknown'] == ['Zebra'], o"
check "forced <unk>: off prints <unk>" run 0 "$s2s" translate -m "$tmp/unk.safetensors" "${noguard[@]}" -q --set decode.replace_unknowns=false Zebra
check "forced <unk>: <unk> x3" bash -c "[ \"\$(cat '$tmp/out')\" = '<unk> <unk> <unk>' ]"
check "threads 1 and 2 agree" bash -c "'$s2s' translate -m '$model' --threads 1 --max-len 6 <'$tmp/in.txt' >'$tmp/t1' && '$s2s' translate -m '$model' --threads 2 --max-len 6 <'$tmp/in.txt' >'$tmp/t2' && cmp -s '$tmp/t1' '$tmp/t2'"

printf 'die katze\tthe cat\nder hund\tthe dog sits\n' >"$tmp/pairs.tsv"
check "score: a JSON line per pair" run 0 "$s2s" score -m "$model" <"$tmp/pairs.tsv"
check "score: 2 lines" lines 2
check "score: tokens end with </s>" grep -q '"tokens":\["the","dog","sits","</s>"\]' "$tmp/out"
printf 'no tab here\n' >"$tmp/bad.tsv"
check "score: line without tab exits 3" run 3 "$s2s" score -m "$model" <"$tmp/bad.tsv"
check "score: names the line" err_has "s2s score: <stdin>:1: skipped: expected source<TAB>target, found no tab"
check "score: an empty output line for it" bash -c "[ \"\$(cat '$tmp/out')\" = '' ] && [ \$(wc -l <'$tmp/out') -eq 1 ]"

check "no model: exit 2" run 2 "$s2s" translate "hello"
check "missing model file: exit 2" run 2 "$s2s" translate -m "$tmp/none.safetensors" "x"
check "missing model named" err_has "none.safetensors"
head -c 100 "$model" >"$tmp/trunc.safetensors"
check "truncated model: exit 2" run 2 "$s2s" inspect "$tmp/trunc.safetensors"
check "truncated model: one line" test "$(wc -l <"$tmp/err")" -eq 1
check "unknown command: exit 2" run 2 "$s2s" frobnicate
# Issue 32: a mistyped command gets the nearest one, as an option does.
check "a mistyped command: exit 2" run 2 "$s2s" transalte -m "$model" x
check "a mistyped command: did you mean" err_has "^s2s: unknown command 'transalte' (did you mean 'translate'?)$"
# Issue 32: a model named without its extension (as s2s serve names models)
# gets the file that has it; a file that is not a model says so first.
check "a model without .safetensors: exit 2" run 2 "$s2s" translate -m "${model%.safetensors}" x
check "a model without .safetensors: the file suggested" \
  err_has "^s2s translate: ${model%.safetensors}: cannot open: No such file or directory (did you mean $model?)$"
printf 'This is not a model.\nJust text.\n' >"$tmp/text.md"
check "a text file as the model: exit 2" run 2 "$s2s" translate -m "$tmp/text.md" x
check "a text file as the model: not a safetensors file, first" \
  err_has "^s2s translate: $tmp/text.md: not a safetensors file ("
# Issue 32: one prefix, "s2s CMD: ", on the library's messages too.
check "a missing model: the command's prefix" run 2 "$s2s" translate -m "$tmp/none.safetensors" x
check "a missing model: s2s translate: FILE" err_has "^s2s translate: $tmp/none.safetensors: cannot open"
check "bad option value: exit 2" run 2 "$s2s" translate -m "$model" --threads zero x
check "init without -o: exit 2" run 2 "$s2s" init "$cfg"
check "init into a missing folder: exit 1" run 1 "$s2s" init "$cfg" -o "$tmp/no/such/dir/m.safetensors"
check "init: nothing half-written" test ! -e "$tmp/no"
printf 'model:\n  d_model: 30\n  heads: 4\n' >"$tmp/bad.yaml"
check "bad config: exit 2" run 2 "$s2s" init "$tmp/bad.yaml" -o "$tmp/x.safetensors"
check "bad config: file:line:col" err_has "bad.yaml:2:"
check "bad config: no output" test ! -e "$tmp/x.safetensors"
long=$(printf 'die %.0s' $(seq 1 100))
check "too long a sentence: cut, exit 3" run 3 "$s2s" translate -m "$model" --max-len 5 "$long"
check "too long: names the argument and says so" err_has "s2s translate: argument:1: cut to 63 tokens (the model takes at most 63)"
cut63=$(printf 'die %.0s' $(seq 1 63))
check "too long: translated as cut" cmp -s "$tmp/out" <("$s2s" translate -m "$model" --max-len 5 "$cut63")

printf 'model:\n  d_model: 30\n' >"$tmp/fix.yaml"
check "--set fixes a file's cross-field problem" run 0 "$s2s" init "$tmp/bad.yaml" --set model.d_model=32 --set vocab.src="$here/data/ref/src.txt" --set vocab.tgt="$here/data/ref/tgt.txt" -o "$tmp/y.safetensors"
printf 'decode:\n  beam_size: 3\n  n_best: 3\n' >"$tmp/dec.yaml"
check "--config sets decode options" run 0 "$s2s" translate -m "$model" --config "$tmp/dec.yaml" --max-len 4 "die katze"
check "--config n_best 3 gives 3 lines" lines 3
check "--set decode.n_best" run 0 "$s2s" translate -m "$model" --set decode.beam_size=2 --set decode.n_best=2 --max-len 4 "die katze"
check "--set n_best 2 gives 2 lines" lines 2
printf 'model:\n  d_model: 64\n  heads: 4\n' >"$tmp/arch.yaml"
check "--config with another architecture: exit 2" run 2 "$s2s" translate -m "$model" --config "$tmp/arch.yaml" "die katze"
check "architecture difference listed" err_has "model.d_model: 32 in the model, 64 in the config"
check "--set with a typo: exit 2" run 2 "$s2s" translate -m "$model" --set decode.beam_sise=2 "die katze"
check "did you mean" err_has "did you mean 'beam_size'"
printf '\ndie katze\n' >"$tmp/nb.txt"
check "n-best with an empty line" run 0 "$s2s" translate -m "$model" --beam 3 --n-best 2 --max-len 4 <"$tmp/nb.txt"
check "n-best: one empty entry, then two hypotheses" bash -c "[ \"\$(cut -d'|' -f1 '$tmp/out' | tr -d ' ' | tr '\n' ,)\" = '0,1,1,' ] && head -1 '$tmp/out' | grep -q '^0 |||  ||| 0$'"
check "json n-best" run 0 "$s2s" translate -m "$model" --beam 3 --n-best 2 --json --max-len 4 "die katze"
check "json parses, 2 hypotheses sorted" /usr/bin/python3 -c "import json,sys; o=json.loads(open('$tmp/out').read()); h=o['hypotheses']; assert len(h)==2 and h[0]['score']>=h[1]['score'], o"

# Each decoding flag is the --set of its decode key: same bytes, same messages.
printf 'die katze\nder hund sitzt\n\nauf der matte\n' >"$tmp/flags.txt"
check "--beam 3 --n-best 2" run 0 "$s2s" translate -m "$model" --beam 3 --n-best 2 --max-len 6 --length-penalty 0.5 <"$tmp/flags.txt"
cp "$tmp/out" "$tmp/flags.out"
check "--set decode.beam_size=3 ..." run 0 "$s2s" translate -m "$model" --set decode.beam_size=3 --set decode.n_best=2 --set decode.max_len=6 --set decode.length_penalty=0.5 <"$tmp/flags.txt"
check "flags and --set give byte-identical output" cmp -s "$tmp/out" "$tmp/flags.out"
check "sampling flags" run 0 "$s2s" translate -m "$model" --sampling-topk 0 --temperature 1.5 --seed 4 --max-len 6 <"$tmp/flags.txt"
cp "$tmp/out" "$tmp/flags.out"
check "sampling --set" run 0 "$s2s" translate -m "$model" --set decode.sampling_topk=0 --set decode.temperature=1.5 --set decode.seed=4 --set decode.max_len=6 <"$tmp/flags.txt"
check "sampling flags and --set agree" cmp -s "$tmp/out" "$tmp/flags.out"
check "a later option wins" run 0 "$s2s" translate -m "$model" --set decode.beam_size=2 --beam 3 --max-len 6 <"$tmp/flags.txt"
check "--set then --beam: beam 3" cmp -s "$tmp/out" <("$s2s" translate -m "$model" --beam 3 --max-len 6 <"$tmp/flags.txt")
check "--beam 0: exit 2" run 2 "$s2s" translate -m "$model" --beam 0 "die katze"
check "--beam 0: the schema's message" err_has "--beam 0 (decode.beam_size): 0 is out of range; must be >= 1"
check "--beam x: exit 2" run 2 "$s2s" translate -m "$model" --beam x "die katze"
check "--beam x: the schema's message" err_has "--beam x (decode.beam_size): expected an integer, got 'x'"
check "--set decode.beam_size=0: the same message" run 2 "$s2s" translate -m "$model" --set decode.beam_size=0 "die katze"
check "--set: names the override" err_has "decode.beam_size=0: 0 is out of range; must be >= 1"
check "--sampling-topp 2 refused before the model is read" run 2 "$s2s" score -m "$tmp/none.safetensors" --sampling-topp 2
check "--sampling-topp 2: range" err_has "must be > 0 and <= 1"
check "--n-best raises the beam" run 0 "$s2s" translate -m "$model" --n-best 3 --max-len 4 "die katze"
check "--n-best 3: 3 lines" lines 3

# The bad-line rule: 1,000 lines with bad ones at several places (the first
# line of the second 256-line chunk, line 300, the first and last lines).
# Every other line comes out as it does alone, bad lines as empty lines,
# each named in a warning, and the exit code is 3.
words=(die der katze hund sitzt auf matte ein)
for i in $(seq 1 1000); do
  echo "${words[i % 8]} ${words[(i * 3) % 8]} ${words[(i * 5 + 1) % 8]}"
done >"$tmp/clean.txt"
edit "$tmp/clean.txt" 1 'die \377 katze' 257 'der hund\000 sitzt' 300 "$long" \
  301 '\300\200' 1000 'katze \355\240\200' >"$tmp/bad1000.txt"
check "1,000 lines with bad ones: exit 3" run 3 "$s2s" translate -m "$model" --max-len 5 <"$tmp/bad1000.txt"
check "1,000 lines in, 1,000 out" lines 1000
cp "$tmp/out" "$tmp/bad1000.out"
for n in 1 257 301 1000; do
  check "line $n skipped: empty output line" test -z "$(sed -n ${n}p "$tmp/bad1000.out")"
  check "line $n skipped: warning names <stdin>:$n" grep -q "^s2s translate: <stdin>:$n: skipped: " "$tmp/err"
done
check "line 300 cut: warning" grep -q "^s2s translate: <stdin>:300: cut to 63 tokens (the model takes at most 63)$" "$tmp/err"
check "five warnings, nothing else" test "$(wc -l <"$tmp/err")" -eq 5
check "the good lines" run 0 "$s2s" translate -m "$model" --max-len 5 <"$tmp/clean.txt"
check "every good line as in the clean file" bash -c "paste -d'|' '$tmp/out' '$tmp/bad1000.out' | awk -F'|' 'NR!=1 && NR!=257 && NR!=300 && NR!=301 && NR!=1000 && \$1 != \$2 { bad=1 } END { exit bad }'"
for n in 2 256 258 299 302 999; do
  check "line $n as translated alone" test "$(sed -n ${n}p "$tmp/bad1000.out")" = "$("$s2s" translate -m "$model" --max-len 5 "$(sed -n ${n}p "$tmp/clean.txt")")"
done
check "line 300 as its cut alone" test "$(sed -n 300p "$tmp/bad1000.out")" = "$("$s2s" translate -m "$model" --max-len 5 "$cut63" 2>/dev/null)"
check "n-best: a skipped line is one empty line" run 3 "$s2s" translate -m "$model" --n-best 2 --max-len 4 < <(printf 'die katze\ndie \377\nder hund\n')
check "n-best: 2 + 1 + 2 lines" bash -c "[ \"\$(cut -c1 '$tmp/out' | tr '\n' ,)\" = '0,0,,2,2,' ]"
check "json: a skipped line is one empty line" run 3 "$s2s" translate -m "$model" --json --max-len 4 < <(printf 'die katze\ndie \377\nder hund\n')
check "json: 3 lines, the middle one empty" bash -c "[ \$(wc -l <'$tmp/out') -eq 3 ] && [ -z \"\$(sed -n 2p '$tmp/out')\" ]"

# score: the same rule on source<TAB>target lines.
paste "$tmp/clean.txt" "$tmp/clean.txt" >"$tmp/clean.tsv"
edit "$tmp/clean.tsv" 1 'die katze' 256 'die\000\tkatze' 257 'die\t\377' \
  300 "$long\tthe cat" 600 'die\tthe cat\tthird column' >"$tmp/bad1000.tsv"
check "score, 1,000 lines with bad ones: exit 3" run 3 "$s2s" score -m "$model" <"$tmp/bad1000.tsv"
check "score: 1,000 lines out" lines 1000
cp "$tmp/out" "$tmp/score.out"
for n in 1 256 257; do
  check "score line $n: empty" test -z "$(sed -n ${n}p "$tmp/score.out")"
  check "score line $n: warning" grep -q "^s2s score: <stdin>:$n: skipped: " "$tmp/err"
done
check "score line 300: cut warning" grep -q "^s2s score: <stdin>:300: cut to 63 tokens" "$tmp/err"
check "score: four warnings" test "$(wc -l <"$tmp/err")" -eq 4
check "score: the clean pairs" run 0 "$s2s" score -m "$model" <"$tmp/clean.tsv"
# Scores of one pair in two batches agree to float rounding (about 1e-6).
same_scores() {  # same_scores A B [LINE_A]: JSON lines of A (from LINE_A) and B agree
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
a = open(sys.argv[1]).read().split("\n")[int(sys.argv[3]) - 1 if len(sys.argv) > 3 else 0:]
b = open(sys.argv[2]).read().split("\n")[:-1]
assert len(a) >= len(b) > 0, (len(a), len(b))
for x, y in zip(a, b):
    if x == y: continue
    p, q = json.loads(x), json.loads(y)
    assert p["tokens"] == q["tokens"], (p, q)
    assert all(abs(s - t) < 1e-5 for s, t in zip(p["token_logprobs"], q["token_logprobs"])), (p, q)
PY
}
check "score: every good line as in the clean file" same_scores <(awk 'NR!=1 && NR!=256 && NR!=257 && NR!=300 && NR!=600' "$tmp/out") <(awk 'NR!=1 && NR!=256 && NR!=257 && NR!=300 && NR!=600' "$tmp/score.out")
check "score line 600: the third column ignored" same_scores "$tmp/score.out" <(printf 'die\tthe cat\n' | "$s2s" score -m "$model") 600
check "score line 300: scored as cut" same_scores "$tmp/score.out" <(printf '%s\tthe cat\n' "$cut63" | "$s2s" score -m "$model" 2>/dev/null) 300

# eval: bad lines are left out of the figures.
check "eval with bad lines: exit 3" run 3 "$s2s" eval -m "$model" --max-len 5 --json "$tmp/bad1000.tsv"
check "eval: warnings name the file" err_has "s2s eval: $tmp/bad1000.tsv:257: skipped: "
check "eval: 997 sentences" /usr/bin/python3 -c "import json; assert json.load(open('$tmp/out'))['sentences'] == 997"
awk 'NR!=1 && NR!=256 && NR!=257' "$tmp/bad1000.tsv" | tr -d '\000' >"$tmp/good997.tsv"
check "eval of the good lines alone" run 3 "$s2s" eval -m "$model" --max-len 5 --json "$tmp/good997.tsv"
check "eval: the same figures" /usr/bin/python3 -c "
import json, subprocess
a = json.loads(subprocess.run(['$s2s', 'eval', '-m', '$model', '--max-len', '5', '--json', '$tmp/bad1000.tsv'], capture_output=True).stdout)
b = json.load(open('$tmp/out'))
del a['file'], b['file']
assert a == b, (a, b)"
check "eval: a file of bad lines only: exit 2" run 2 "$s2s" eval -m "$model" "$tmp/bad.tsv"
check "eval: missing file: exit 2" run 2 "$s2s" eval -m "$model" "$tmp/none.tsv"
check "eval: missing file named" err_has "none.tsv: cannot open"

# Bounded reads: a line longer than 1 MiB (S2S_LINE_MAX_BYTES) is skipped
# with a warning, read through without being held, and the lines after it
# processed; here a 3 MiB line among good ones.
head -c $((3 << 20)) /dev/zero | tr '\0' a >"$tmp/3mib"
{ echo "die katze"; cat "$tmp/3mib"; echo; echo "der hund"; } >"$tmp/huge.txt"
check "translate, a 3 MiB line: exit 3" run 3 "$s2s" translate -m "$model" --max-len 5 <"$tmp/huge.txt"
check "translate, a 3 MiB line: 3 lines out" lines 3
check "translate, a 3 MiB line: its line empty" test -z "$(sed -n 2p "$tmp/out")"
check "translate, a 3 MiB line: the line before as alone" test "$(sed -n 1p "$tmp/out")" = "$("$s2s" translate -m "$model" --max-len 5 "die katze")"
check "translate, a 3 MiB line: the line after as alone" test "$(sed -n 3p "$tmp/out")" = "$("$s2s" translate -m "$model" --max-len 5 "der hund")"
check "translate, a 3 MiB line: one warning naming it" bash -c "[ \"\$(cat '$tmp/err')\" = 's2s translate: <stdin>:2: skipped: line longer than 1048576 bytes' ]"
{ printf 'die katze\tthe cat\n'; cat "$tmp/3mib"; printf '\tthe cat\nder hund\tthe dog\n'; } >"$tmp/huge.tsv"
check "score, a 3 MiB line: exit 3" run 3 "$s2s" score -m "$model" <"$tmp/huge.tsv"
check "score, a 3 MiB line: 3 lines out, its line empty" bash -c "[ \$(wc -l <'$tmp/out') -eq 3 ] && [ -z \"\$(sed -n 2p '$tmp/out')\" ]"
check "score, a 3 MiB line: the others as alone" same_scores "$tmp/out" <(printf 'der hund\tthe dog\n' | "$s2s" score -m "$model") 3
check "score, a 3 MiB line: warning" err_has "^s2s score: <stdin>:2: skipped: line longer than 1048576 bytes$"
check "eval, a 3 MiB line: exit 3" run 3 "$s2s" eval -m "$model" --max-len 5 --json "$tmp/huge.tsv"
check "eval, a 3 MiB line: warning names the file" err_has "^s2s eval: $tmp/huge.tsv:2: skipped: line longer than 1048576 bytes$"
check "eval, a 3 MiB line: 2 sentences" /usr/bin/python3 -c "import json; assert json.load(open('$tmp/out'))['sentences'] == 2"
# Training files are not read by the bad-line rule: such a line stops the
# command, naming the file and line.
check "vocab build, a 3 MiB line: exit 2" run 2 "$s2s" vocab build "$tmp/huge.tsv" --column src -o "$tmp/v.txt"
check "vocab build, a 3 MiB line: one line naming FILE:LINE" bash -c "[ \"\$(cat '$tmp/err')\" = 's2s vocab build: $tmp/huge.tsv:2: line longer than 1048576 bytes' ]"
check "vocab build, a 3 MiB line: no output" test ! -e "$tmp/v.txt"
# A vocab file is read up to 64 MiB: an endless stream is refused.
check "a vocab of /dev/zero: exit 2" run 2 "$s2s" init "$cfg" --set vocab.src=/dev/zero -o "$tmp/z.safetensors"
check "a vocab of /dev/zero: the limit named" err_has "/dev/zero: larger than 67108864 bytes, the limit for a vocab file (64 MiB)"

# Output paths are checked before the work (s2s_check_writable), with the
# writer's message, as a failed write (exit 1).
check "init into a missing folder: exit 1" run 1 "$s2s" init "$cfg" -o "$tmp/no/dir/m.safetensors"
check "init into a missing folder: one line naming it" bash -c "[ \"\$(cat '$tmp/err')\" = 's2s init: $tmp/no/dir/m.safetensors: cannot write: No such file or directory' ]"
check "init onto a folder: exit 1" run 1 "$s2s" init "$cfg" -o "$tmp"
check "init onto a folder: says why" err_has "cannot write: a directory"
check "vocab build into a missing folder: exit 1" run 1 "$s2s" vocab build "$tmp/clean.tsv" --column src -o "$tmp/no/dir/v.txt"
check "vocab build into a missing folder: named" err_has "no/dir/v.txt: cannot write: No such file or directory"

finish cli
