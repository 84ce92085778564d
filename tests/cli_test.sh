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
check "translate --verbose lists unknown words" run 0 "$s2s" translate -m "$model" --verbose --max-len 3 "die zebra"
check "unknown word named" err_has "unknown words: zebra"
check "threads 1 and 2 agree" bash -c "'$s2s' translate -m '$model' --threads 1 --max-len 6 <'$tmp/in.txt' >'$tmp/t1' && '$s2s' translate -m '$model' --threads 2 --max-len 6 <'$tmp/in.txt' >'$tmp/t2' && cmp -s '$tmp/t1' '$tmp/t2'"

printf 'die katze\tthe cat\nder hund\tthe dog sits\n' >"$tmp/pairs.tsv"
check "score: a JSON line per pair" run 0 "$s2s" score -m "$model" <"$tmp/pairs.tsv"
check "score: 2 lines" lines 2
check "score: tokens end with </s>" grep -q '"tokens":\["the","dog","sits","</s>"\]' "$tmp/out"
printf 'no tab here\n' >"$tmp/bad.tsv"
check "score: line without tab exits 2" run 2 "$s2s" score -m "$model" <"$tmp/bad.tsv"
check "score: names the line" err_has "stdin:1: expected source<TAB>target"

check "no model: exit 2" run 2 "$s2s" translate "hello"
check "missing model file: exit 2" run 2 "$s2s" translate -m "$tmp/none.safetensors" "x"
check "missing model named" err_has "none.safetensors"
head -c 100 "$model" >"$tmp/trunc.safetensors"
check "truncated model: exit 2" run 2 "$s2s" inspect "$tmp/trunc.safetensors"
check "truncated model: one line" test "$(wc -l <"$tmp/err")" -eq 1
check "unknown command: exit 2" run 2 "$s2s" frobnicate
check "bad option value: exit 2" run 2 "$s2s" translate -m "$model" --threads zero x
check "init without -o: exit 2" run 2 "$s2s" init "$cfg"
check "init into a missing folder: exit 1" run 1 "$s2s" init "$cfg" -o "$tmp/no/such/dir/m.safetensors"
check "init: nothing half-written" test ! -e "$tmp/no"
printf 'model:\n  d_model: 30\n  heads: 4\n' >"$tmp/bad.yaml"
check "bad config: exit 2" run 2 "$s2s" init "$tmp/bad.yaml" -o "$tmp/x.safetensors"
check "bad config: file:line:col" err_has "bad.yaml:2:"
check "bad config: no output" test ! -e "$tmp/x.safetensors"
long=$(printf 'die %.0s' $(seq 1 100))
check "too long a sentence: exit 2" run 2 "$s2s" translate -m "$model" "$long"
check "too long: names the argument and says so" err_has "argument:1: 100 tokens; the model takes at most 63"

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

finish cli
