#!/usr/bin/env bash
# Measures what the repetition guard (decode.repetition_penalty,
# decode.no_repeat_ngram_size) does to the test splits: each split is
# translated by its shipped model with the guard off and with the model's
# settings (the schema's defaults unless the model says otherwise), and
# the script prints how many lines change, how many translations match
# the reference exactly each way (spaces ignored, --tokens output) and how
# many hold a token three times in a row.
#
#   scripts/repetition_guard_check.sh build/s2s [extra translate args...]
#
# Extra arguments go to both runs (e.g. --beam 4); guard flags among them
# set "on" (--repetition-penalty 1.2 measures another penalty), since the
# "off" run turns the guard off after them.
set -euo pipefail
s2s=${1:?usage: $0 BUILD/s2s [extra translate args]}
shift
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for pair in zh-en en-zh; do
    test=data/corpus/test.$pair.tsv
    model=${MODELS:-models}/$pair.safetensors
    cut -f1 "$test" >"$tmp/src"
    cut -f2 "$test" | tr -d ' ' >"$tmp/ref"
    for mode in off on; do
        guard=()
        [ "$mode" = off ] && guard=(--repetition-penalty 1 --no-repeat-ngram-size 0)
        rc=0
        "$s2s" translate -m "$model" --tokens -q "$@" "${guard[@]}" <"$tmp/src" >"$tmp/$mode" || rc=$?
        if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
            echo "repetition_guard_check: $pair ($mode) failed with exit $rc" >&2
            exit 1
        fi
        tr -d ' ' <"$tmp/$mode" >"$tmp/$mode.nospace"
    done
    lines=$(wc -l <"$tmp/src")
    changed=$(paste -d '\t' "$tmp/off" "$tmp/on" | awk -F'\t' '$1 != $2' | wc -l)
    exact_off=$(paste -d '\t' "$tmp/off.nospace" "$tmp/ref" | awk -F'\t' '$1 == $2' | wc -l)
    exact_on=$(paste -d '\t' "$tmp/on.nospace" "$tmp/ref" | awk -F'\t' '$1 == $2' | wc -l)
    # outputs with a token three times in a row (a loop)
    loops() { awk '{ for (i = 3; i <= NF; i++) if ($i == $(i-1) && $i == $(i-2)) { n++; break } } END { print n + 0 }' "$1"; }
    echo "$pair: $lines lines; guard changes $changed; exact off $exact_off, on $exact_on;" \
        "loops off $(loops "$tmp/off"), on $(loops "$tmp/on")"
done
