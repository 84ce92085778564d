#!/usr/bin/env bash
# `s2s config check|show|diff|reference|schema|init|explain` and --set from
# the command line: exit codes, messages, the show round trip, canonical
# paths, docs/config.md against `s2s config reference` and
# docs/config.schema.json against `s2s config schema`, init's files,
# endless inputs (/dev/zero, a FIFO, a pipe)
# refused at the size limit, and truncated or garbled copies of every
# shipped config (exit 2 or 0, never a signal).
#
#     bash tests/cli_config_test.sh build/s2s
set -u

S2S=${1:?usage: cli_config_test.sh PATH/TO/s2s}
case $S2S in /*) ;; *) S2S=$PWD/$S2S ;; esac
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FIX=$ROOT/tests/data/config
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# Relative names in messages and outputs come out the same from anywhere.
cd "$ROOT" || exit 1
# The working directory as the kernel spells it (no links): show's paths.
ROOT_P=$(pwd -P)

passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# run CMD...: runs it, keeping stdout, stderr and the exit code.
run() {
    "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
}

# expect_rc WANT WHAT: the last run exited with WANT.
expect_rc() {
    if [ "$rc" -eq "$1" ]; then ok; else
        bad "$2: exit $rc, expected $1"
        sed 's/^/    stderr: /' "$TMP/err" | head -20
    fi
}

# expect_in FILE TEXT WHAT: TEXT is a line of, or within, out/err.
expect_in() {
    if grep -qF -- "$2" "$TMP/$1"; then ok; else
        bad "$3: '$2' not in $1"
        sed "s/^/    $1: /" "$TMP/$1" | head -20
    fi
}

expect_empty() {
    if [ ! -s "$TMP/$1" ]; then ok; else
        bad "$2: $1 is not empty"
        sed "s/^/    $1: /" "$TMP/$1" | head -20
    fi
}

# ---- check ----

run "$S2S" config check configs/*.yaml "$FIX/good.yaml"
expect_rc 0 "check of the shipped configs"
expect_in out "configs/demo.yaml: ok" "check names each good file"
expect_empty err "check of good files"

run "$S2S" config check "$FIX/unknown_key.yaml"
expect_rc 2 "check of an unknown key"
expect_in err "s2s config check: $FIX/unknown_key.yaml:3:3: unknown key 'hedas' in 'model' (did you mean 'heads'?)" \
    "unknown key message"
expect_in err "  hedas: 4" "the offending line is quoted"
expect_empty out "a bad file is not called ok"

run "$S2S" config check "$FIX/bad_syntax.yaml"
expect_rc 2 "check of a syntax error"
expect_in err "$FIX/bad_syntax.yaml:3:4: bad indentation: 3 spaces, more than the 2 of line 2 above" \
    "syntax error message"
# Issue 32: a missing colon is reported on its own line (libyaml sees it on
# the next), a tab by name and column.
printf 'model:\n  d_model: 64\n  heads: 4\n  layers: 2\ndecode:\n  beam_size: 2\n  max_len: 20\n  n_best 1\n  min_len: 1\n' \
    >"$TMP/no_colon.yaml"
run "$S2S" config check "$TMP/no_colon.yaml"
expect_rc 2 "check of a missing colon"
expect_in err "$TMP/no_colon.yaml:8:3: missing ':' after 'n_best 1'" "the missing colon's own line"
printf 'model:\n\td_model: 64\n' >"$TMP/tab.yaml"
run "$S2S" config check "$TMP/tab.yaml"
expect_in err "$TMP/tab.yaml:2:1: a tab character at column 1: YAML indents with spaces, not tabs" \
    "a tab is named"

# Several files: every problem of every bad file, the good ones still ok.
run "$S2S" config check "$FIX/wrong_type.yaml" "$FIX/good.yaml" "$FIX/several_errors.yaml" \
    "$FIX/bad_enum.yaml"
expect_rc 2 "check of good and bad files"
expect_in out "$FIX/good.yaml: ok" "the good file among bad ones"
expect_in err "$FIX/wrong_type.yaml:2:10: model.heads: expected an integer, got 'four'" "first bad file"
expect_in err "$FIX/several_errors.yaml:12:3: duplicate key 'src'" "last problem of a file with many"
# Issue 32: one prefix on every problem, not only the first.
expect_in err "s2s config check: $FIX/several_errors.yaml:12:3: duplicate key 'src'" \
    "every problem of a config has the prefix"
expect_in err "$FIX/bad_enum.yaml:2:9: model.norm: expected pre or post, got 'middle'" "last bad file"
expect_in err "3 of 4 configs have problems" "the count of bad files"

run "$S2S" config check "$TMP/no_such.yaml"
expect_rc 2 "check of a missing file"
expect_in err "no_such.yaml: cannot open: No such file or directory" "missing file message"

run "$S2S" config check "$FIX/cycle_a.yaml"
expect_rc 2 "check of a base cycle"
expect_in err "$FIX/cycle_b.yaml:3:7: base: the bases form a cycle: $FIX/cycle_a.yaml -> $FIX/cycle_b.yaml -> $FIX/cycle_a.yaml" \
    "cycle message"

run "$S2S" config check configs/demo.yaml --set model.hedas=4
expect_rc 2 "check with a misspelt --set"
expect_in err "--set model.hedas=4: unknown key 'hedas' in 'model' (did you mean 'heads'?)" \
    "--set message"
run "$S2S" config check configs/demo.yaml --set model.heads=3
expect_rc 2 "check with an --set that breaks a cross-field rule"
expect_in err "configs/demo.yaml:5:12: model.d_model: 64 is not divisible by model.heads (3)" \
    "cross-field after --set"
# An override can fix what the file alone gets wrong.
run "$S2S" config check "$FIX/cross_field.yaml" --set model.heads=4
expect_rc 0 "check where --set fixes the file"

run "$S2S" config check
expect_rc 2 "check without files"
run "$S2S" config check --frob configs/demo.yaml
expect_rc 2 "check with an unknown option"
expect_in err "unknown option '--frob'" "unknown option message"
run "$S2S" config frob
expect_rc 2 "unknown subcommand"
run "$S2S" config
expect_rc 2 "config without a subcommand"
run "$S2S" config --help
expect_rc 0 "config --help"
expect_in out "s2s config diff A B" "help lists diff"

# ---- show ----

for cfg in configs/*.yaml "$FIX/good.yaml" "$FIX/inherit_child.yaml"; do
    name=$(basename "$cfg")
    run "$S2S" config show "$cfg"
    expect_rc 0 "show $name"
    cp "$TMP/out" "$TMP/shown_$name"
    # Show, save elsewhere, check, show again: the same text.
    mkdir -p "$TMP/elsewhere"
    cp "$TMP/out" "$TMP/elsewhere/$name"
    run "$S2S" config check "$TMP/elsewhere/$name"
    expect_rc 0 "check of show's output for $name"
    run "$S2S" config show "$TMP/elsewhere/$name"
    expect_rc 0 "show of show's output for $name"
    if cmp -s "$TMP/out" "$TMP/shown_$name"; then ok; else
        bad "show round trip changed $name"
        diff "$TMP/shown_$name" "$TMP/out" | head -20
    fi
done

run "$S2S" config show configs/demo.yaml
expect_in out "  d_model: 64" "show prints the file's values"
expect_in out "  activation: relu  # default" "show marks defaults"
# Absolute and canonical: no "configs/../" on the way to the file.
expect_in out "  src: \"$ROOT_P/vocab/zh.txt\"" "show prints canonical absolute paths"
if grep -q '/\.\./\|/\./' "$TMP/out"; then bad "show left ./ or ../ in a path"; else ok; fi
mkdir -p "$TMP/sub"
rel=$(realpath --relative-to="$TMP/sub" "$ROOT_P/configs/demo.yaml")  # ../../..
(cd "$TMP/sub" && "$S2S" config show "$rel" >"$TMP/out_rel" 2>&1)
if grep -qF "  src: \"$ROOT_P/vocab/zh.txt\"" "$TMP/out_rel"; then ok; else
    bad "show from another folder, through ../"
    head -20 "$TMP/out_rel"
fi
run "$S2S" config show configs/demo.yaml --set train.guided_alignment.layer=1
expect_rc 0 "show with a nested --set"
expect_in out "  guided_alignment:" "a nested table is a block mapping"
expect_in out "    layer: 1" "the nested key set by --set"
expect_in out "    head: 0  # default" "the nested key left alone"
run "$S2S" config check configs/demo.yaml --set train.guided_alignment.lyer=1
expect_rc 2 "check with a misspelt nested --set"
expect_in err "--set train.guided_alignment.lyer=1: unknown key 'lyer' in 'train.guided_alignment' (did you mean 'layer'?)" \
    "did-you-mean inside a nested table"
run "$S2S" config check configs/demo.yaml --set train.guided_alignment.layer=2
expect_rc 2 "check with a nested --set that breaks a cross-field rule"
expect_in err "train.guided_alignment.layer: 2 is out of range; model.decoder_layers is 2" \
    "cross-field rule on a nested key"
printf 'train:\n  guided_alignment:\n    layr: 1\n' >"$TMP/nested_typo.yaml"
run "$S2S" config check "$TMP/nested_typo.yaml"
expect_rc 2 "check of a misspelt nested key"
expect_in err "$TMP/nested_typo.yaml:3:5: unknown key 'layr' in 'train.guided_alignment' (did you mean 'layer'?)" \
    "nested key error has file:line:col and did-you-mean"

run "$S2S" config show "$FIX/inherit_child.yaml" --set model.heads=16 --set decode.max_len=9
expect_rc 0 "show with --set"
expect_in out "  heads: 16" "--set beats the file and its bases"
expect_in out "  d_model: 128" "a value from the base"
expect_in out "  max_len: 9" "a second --set"
expect_in out "  encoder_layers: 3" "a value from the base's base"

run "$S2S" config show configs/demo.yaml --set model.dropout=1.5
expect_rc 2 "show with an out-of-range --set"
expect_in err "--set model.dropout=1.5: 1.5 is out of range; must be >= 0 and < 1" "range message"
expect_empty out "nothing is shown for a bad config"

run "$S2S" config show configs/demo.yaml "$FIX/good.yaml"
expect_rc 2 "show of two files"

# ---- diff ----

run "$S2S" config diff configs/demo.yaml configs/demo.yaml
expect_rc 0 "diff of a file with itself"
expect_empty out "no differences"

# The same vocabularies spelt another way (a link, a detour through ..):
# the same files, so no difference.
mkdir -p "$TMP/same/v"
ln -s "$ROOT/vocab/zh.txt" "$TMP/same/v/zh.txt"
sed -e "s#\.\./vocab/zh.txt#./v/zh.txt#" -e "s#\.\./vocab/en.txt#$ROOT/vocab/../vocab/en.txt#" \
    configs/demo.yaml >"$TMP/same/demo.yaml"
run "$S2S" config diff configs/demo.yaml "$TMP/same/demo.yaml"
expect_rc 0 "diff of configs naming the same vocab files differently"
expect_empty out "identical vocab files are not a difference"

"$S2S" config show configs/demo.yaml --set model.d_model=128 --set model.heads=8 \
    --set decode.beam_size=4 >"$TMP/wide.yaml"
run "$S2S" config diff configs/demo.yaml "$TMP/wide.yaml"
expect_rc 1 "diff of two configs that differ (as diff(1): 1)"
printf 'model.d_model: 64 -> 128\nmodel.heads: 4 -> 8\ndecode.beam_size: 1 -> 4\n' >"$TMP/want"
if cmp -s "$TMP/out" "$TMP/want"; then ok; else
    bad "diff output"
    diff "$TMP/want" "$TMP/out"
fi
run "$S2S" config diff configs/demo.yaml "$TMP/wide.yaml" --model-only
expect_rc 1 "diff --model-only of configs that differ"
printf 'model.d_model: 64 -> 128\nmodel.heads: 4 -> 8\n' >"$TMP/want"
if cmp -s "$TMP/out" "$TMP/want"; then ok; else
    bad "diff --model-only output"
    diff "$TMP/want" "$TMP/out"
fi
run "$S2S" config diff configs/demo.yaml "$FIX/unknown_key.yaml"
expect_rc 2 "diff with a bad config"
expect_in err "unknown key 'hedas'" "diff reports the bad file"
run "$S2S" config diff configs/demo.yaml
expect_rc 2 "diff of one file"
run "$S2S" config diff configs/demo.yaml "$TMP/wide.yaml" --model-only --set model.heads=8
expect_rc 2 "diff with --set is an error"
run "$S2S" config diff configs/demo.yaml /dev/zero
expect_rc 2 "diff with an endless file"

# ---- reference: docs/config.md is its output ----

run "$S2S" config reference
expect_rc 0 "config reference"
if cmp -s "$TMP/out" docs/config.md; then ok; else
    bad "docs/config.md is stale; regenerate it: build/s2s config reference > docs/config.md"
    diff docs/config.md "$TMP/out" | head -20
fi
run "$S2S" config reference configs/demo.yaml
expect_rc 2 "reference takes no file"

# ---- schema: docs/config.schema.json is its output ----

run "$S2S" config schema
expect_rc 0 "config schema"
if cmp -s "$TMP/out" docs/config.schema.json; then ok; else
    bad "docs/config.schema.json is stale; regenerate it: build/s2s config schema > docs/config.schema.json"
    diff docs/config.schema.json "$TMP/out" | head -20
fi
if python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$TMP/out"; then ok; else
    bad "config schema prints JSON"
fi
run "$S2S" config schema configs/demo.yaml
expect_rc 2 "schema takes no file"

# ---- init: a commented config that checks ----

for preset in demo zh-en bench; do
    run "$S2S" config init --preset "$preset" -o "$TMP/init_$preset.yaml"
    expect_rc 0 "init --preset $preset"
    expect_empty out "init -o writes nothing to stdout"
    run "$S2S" config check "$TMP/init_$preset.yaml"
    expect_rc 0 "check of init --preset $preset"
done
# The preset's shape is the shipped config's: no difference but the paths.
run "$S2S" config diff configs/bench.yaml "$TMP/init_bench.yaml" --model-only
expect_rc 0 "init --preset bench has the model of configs/bench.yaml"
run "$S2S" config init
expect_rc 0 "init without -o prints the config"
expect_in out "  # int (>= 1); default 512" "init comments each key with its range and default"
expect_in out "  d_model: 512" "init without a preset writes the defaults"
cp "$TMP/out" "$TMP/stdout.yaml"
run "$S2S" config check "$TMP/stdout.yaml"
expect_rc 0 "check of init's standard output"
# Issue 32: ok says which commands the config is complete for, and the
# commands refuse the same keys.
expect_in out "$TMP/stdout.yaml: ok (translate; init needs vocab.src and vocab.tgt; train needs data.train, vocab.src and vocab.tgt, and -o OUT)" \
    "check says what init's config lacks for init and train"
run "$S2S" init "$TMP/stdout.yaml" -o "$TMP/never.safetensors"
expect_rc 2 "init refuses init's config"
expect_in err "config: vocab.src and vocab.tgt must be set" "init names the keys check named"
run "$S2S" config check "$TMP/stdout.yaml" --set vocab.src=vocab/zh.txt --set vocab.tgt=vocab/en.txt
expect_in out "ok (translate, init; train needs data.train, and -o OUT)" "check with the vocabularies set"
run "$S2S" train "$TMP/stdout.yaml" --set vocab.src=vocab/zh.txt --set vocab.tgt=vocab/en.txt \
    -o "$TMP/never.safetensors"
expect_rc 2 "train refuses a config without data.train"
expect_in err "data.train is not set" "train names the key check named"
run "$S2S" config check configs/zh-en.yaml
expect_in out "configs/zh-en.yaml: ok (translate, init, train)" "a shipped config is complete"
echo "# mine" >"$TMP/mine.yaml"
run "$S2S" config init --preset demo -o "$TMP/mine.yaml"
expect_rc 2 "init does not replace a file"
expect_in err "init: $TMP/mine.yaml exists; --force replaces it" "init names the file it keeps"
if [ "$(cat "$TMP/mine.yaml")" = "# mine" ]; then ok; else bad "init changed a file it refused"; fi
run "$S2S" config init --preset demo -o "$TMP/mine.yaml" --force
expect_rc 0 "init --force replaces a file"
expect_in "mine.yaml" "  d_model: 64" "init --force wrote the preset"
run "$S2S" config init --preset big
expect_rc 2 "init with an unknown preset"
expect_in err "unknown preset 'big' (the presets are demo, zh-en and bench)" "unknown preset message"
run "$S2S" config init -o "$TMP/no_such_dir/x.yaml"
expect_rc 1 "init into a missing folder (a failed write)"
expect_in err "no_such_dir/x.yaml" "the failed write names the file"
run "$S2S" config init --preset
expect_rc 2 "init --preset without a name"

# ---- explain: one key ----

run "$S2S" config explain model.heads
expect_rc 0 "explain a key"
expect_in out "model.heads: int (>= 1); default 8" "explain gives the type, range and default"
expect_in out "Attention heads per attention block" "explain gives the help"
run "$S2S" config explain heads
expect_rc 0 "explain a bare key name"
expect_in out "model.heads: int (>= 1); default 8" "a bare name finds its section"
run "$S2S" config explain model.hedas
expect_rc 2 "explain an unknown key"
expect_in err "s2s config explain: unknown key 'hedas' in 'model' (did you mean 'model.heads'?)" "explain's did-you-mean"
# Issue 32: a word of a key finds it, where the whole name is too far off.
run "$S2S" config explain beam
expect_in err "s2s config explain: unknown key 'beam' (did you mean 'decode.beam_size'?)" "explain beam: decode.beam_size"
run "$S2S" config explain decode.beam
expect_in err "(did you mean 'decode.beam_size'?)" "explain decode.beam: decode.beam_size"
run "$S2S" config chek configs/demo.yaml
expect_in err "s2s config: unknown subcommand 'chek' (did you mean 'check'?)" "a mistyped subcommand"
run "$S2S" config explain
expect_rc 2 "explain without a key"

# ---- inspect: only what the model file stores ----

run "$S2S" inspect models/zh-en.safetensors
expect_rc 0 "inspect a shipped model"
expect_in out "decode:" "inspect shows the stored decode: section"
expect_in out "  d_model: 128" "inspect shows the stored model: section"
expect_in out "decoding state per sentence (greedy, 16 source tokens, no maps):" "inspect shows the decoding state"
expect_in out "  1024 target tokens: " "inspect shows the state at 1,024 target tokens"
for section in train data vocab; do
    if grep -q "^$section:" "$TMP/out"; then bad "inspect shows a $section: section the file does not store"; else ok; fi
done

# ---- endless and oversized inputs: refused at 1 MiB, never a hang ----

run timeout 20 "$S2S" config check /dev/zero
expect_rc 2 "check of /dev/zero"
expect_in err "s2s config check: /dev/zero: larger than 1048576 bytes (1 MiB), the limit for a config file" \
    "/dev/zero message names the file"
yes 'model: {}' | timeout 20 "$S2S" config check /dev/stdin >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_rc 2 "check of an endless pipe (yes |)"
expect_in err "s2s config check: /dev/stdin: larger than 1048576 bytes" "pipe message names the file"
mkfifo "$TMP/fifo"
yes '# endless' >"$TMP/fifo" &
writer=$!
run timeout 20 "$S2S" config check "$TMP/fifo"
expect_rc 2 "check of an endless FIFO"
expect_in err "s2s config check: $TMP/fifo: larger than 1048576 bytes" "FIFO message names the file"
yes '# endless' >"$TMP/fifo" &
writer2=$!
run timeout 60 "$S2S" translate -m models/zh-en.safetensors --config "$TMP/fifo"
expect_rc 2 "translate --config on an endless FIFO"
expect_in err "s2s translate: $TMP/fifo: larger than 1048576 bytes" "translate --config message"
kill "$writer" "$writer2" 2>/dev/null
wait "$writer" "$writer2" 2>/dev/null
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' >"$TMP/big.yaml"
run "$S2S" config check "$TMP/big.yaml"
expect_rc 2 "check of a config of 1 MiB + 1 byte"
expect_in err "s2s config check: $TMP/big.yaml: larger than 1048576 bytes" "oversized file message"

# ---- --set on init: validated, exit 2, nothing written ----

run "$S2S" init configs/demo.yaml -o "$TMP/m.safetensors" --set model.heads=5
expect_rc 2 "init with a --set that breaks a cross-field rule"
expect_in err "model.d_model: 64 is not divisible by model.heads (5)" "init --set message"
run "$S2S" init configs/demo.yaml -o "$TMP/m.safetensors" --set model.hedas=4
expect_rc 2 "init with a misspelt --set"
expect_in err "--set model.hedas=4: unknown key 'hedas'" "init misspelt --set message"
if [ ! -e "$TMP/m.safetensors" ]; then ok; else bad "init wrote a model for a bad config"; fi

# ---- truncated and garbled shipped configs: exit 0 or 2, never a signal ----

# check_variant FILE WHAT [MUST_FAIL]
check_variant() {
    run "$S2S" config check "$1"
    if [ "$rc" -ge 128 ]; then
        bad "$2: killed by signal $((rc - 128))"
    elif [ "${3:-}" = must_fail ] && [ "$rc" -ne 2 ]; then
        bad "$2: exit $rc, expected 2"
    elif [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then
        bad "$2: exit $rc"
    elif [ "$rc" -eq 2 ] && ! grep -q '^s2s config check: .*\.yaml' "$TMP/err"; then
        bad "$2: the message does not name a file"
        head -3 "$TMP/err"
    else
        ok
    fi
}

# The variants sit in a copy of the configs folder whose siblings (vocab/
# and the rest) are links to the real ones, so relative paths in them still
# resolve and nothing is written into the source tree.
mkdir -p "$TMP/tree/configs"
for e in "$ROOT"/*; do
    [ "$(basename "$e")" = configs ] || ln -s "$e" "$TMP/tree/"
done
cp configs/*.yaml "$TMP/tree/configs/"
for cfg in configs/*.yaml; do
    name=$(basename "$cfg" .yaml)
    size=$(wc -c <"$cfg")
    v=$TMP/tree/configs/fuzz_$name.yaml
    for n in 1 7 $((size / 3)) $((size / 2)) $((size - 2)); do
        head -c "$n" "$cfg" >"$v"
        check_variant "$v" "$name truncated to $n bytes"
    done
    # Values of the wrong kind, structure broken, bytes that are not UTF-8.
    sed 's/: [0-9][0-9]*/: [[/' "$cfg" >"$v"
    check_variant "$v" "$name with unclosed brackets" must_fail
    sed 's/^  \([a-z_]*\):/  \1x:/' "$cfg" >"$v"
    check_variant "$v" "$name with every key misspelt" must_fail
    sed '0,/^[a-z]/s/^\([a-z]\)/ \1/' "$cfg" >"$v"
    check_variant "$v" "$name with its first section indented" must_fail
    { cat "$cfg"; printf 'decode:\n  beam_size: \xff\xfe\n'; } >"$v"
    check_variant "$v" "$name with invalid UTF-8" must_fail
    sed 's/:/ /' "$cfg" >"$v"
    check_variant "$v" "$name with colons dropped" must_fail
    { cat "$cfg"; cat "$cfg"; } >"$v"
    check_variant "$v" "$name given twice" must_fail
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
