#!/usr/bin/env bash
# s2s vs PyTorch decoding speed, side by side in one run (docs/benchmarks.md).
#
#   bench/compare.sh MODEL INPUT
#
# Runs bench_decode (s2s) and bench/torch_decode.py (PyTorch, own KV cache)
# on the same safetensors model and input, with 1 and 2 threads. First it
# checks that both produce the same greedy translations (fails below 95%
# identical lines) with the same token log-probs (`s2s score`), then prints the median figures of RUNS runs: greedy at
# batch 1 and 32, beam BEAM at batch 1, and the ratio s2s/PyTorch.
# Runs of the two sides are interleaved so that a change in the machine's
# load hits both. Without PyTorch, it runs the s2s side only (exit 0).
# Not part of CI.
#
# Environment (defaults in brackets):
#   BENCH_DECODE  the bench_decode binary [build/bench_decode]
#   S2S           the s2s binary, for the log-prob check [next to BENCH_DECODE]
#   PYTHON        an interpreter that imports torch [/usr/bin/python3, else python3]
#   RUNS [3]  THREADS ["1 2"]  MIN_LEN [20]  MAX_LEN [20]  BEAM [4]
#   S2S_REPEAT [3]  TORCH_REPEAT [1]  (passes over the input per run)
#   KEEP          directory to keep the outputs in [a temporary one, removed]
#   OMP_WAIT_POLICY [PASSIVE], for both sides: on a machine shared with other
#                 jobs, spinning OpenMP threads (libgomp's default) wait for
#                 descheduled ones and multi-threaded PyTorch slows down up
#                 to 10x; PASSIVE measures the work instead of the contention.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
if [ $# -ne 2 ]; then
    echo "usage: bench/compare.sh MODEL INPUT" >&2
    exit 2
fi
model=$1 input=$2
for f in "$model" "$input"; do
    [ -r "$f" ] || { echo "compare.sh: $f: cannot read" >&2; exit 2; }
done

bench=${BENCH_DECODE:-$repo/build/bench_decode}
if [ ! -x "$bench" ]; then
    echo "compare.sh: $bench: not found; build it (scripts/setup.sh build) or set BENCH_DECODE" >&2
    exit 2
fi
runs=${RUNS:-3} threads_list=${THREADS:-1 2} min_len=${MIN_LEN:-20} max_len=${MAX_LEN:-20}
beam=${BEAM:-4} s2s_repeat=${S2S_REPEAT:-3} torch_repeat=${TORCH_REPEAT:-1}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
common=(-m "$model" -i "$input" --min-len "$min_len" --max-len "$max_len" --beam "$beam")

# Debian's python3-torch is seen by Debian's interpreter only, not by a
# pyenv/venv python3 earlier on PATH.
if [ -z "${PYTHON:-}" ]; then
    PYTHON=python3
    [ -x /usr/bin/python3 ] && PYTHON=/usr/bin/python3
fi
if ! "$PYTHON" -c 'import torch' 2>/dev/null; then
    echo "compare.sh: PyTorch not found by $PYTHON (Debian: apt-get install python3-torch);"
    echo "running the s2s side only."
    for th in $threads_list; do
        echo
        echo "## s2s, $th thread(s)"
        "$bench" "${common[@]}" --threads "$th" --repeat "$s2s_repeat"
    done
    exit 0
fi

if [ -n "${KEEP:-}" ]; then
    out=$KEEP
    mkdir -p "$out"
else
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi
n_lines=$(wc -l < "$input")

# Identical lines of two dumps: prints "same total".
same_lines() {
    awk 'NR == FNR { a[FNR] = $0; n = FNR; next }
         { if (FNR in a && a[FNR] == $0) same++ }
         END { print same + 0, n + 0 }' "$1" "$2"
}

# Fails loudly unless dump $2 matches $1 on >= 95% of the input's lines.
check_same() {
    local what=$1 ref=$2 got=$3 same total
    read -r same total < <(same_lines "$ref" "$got")
    if [ "$total" -ne "$n_lines" ] || [ "$(wc -l < "$got")" -ne "$n_lines" ]; then
        echo "compare.sh: FAIL: $what: dumps have $total and $(wc -l < "$got") lines," \
             "the input $n_lines" >&2
        exit 1
    fi
    echo "greedy translations, $what: $same/$total lines identical"
    if [ $((same * 100)) -lt $((total * 95)) ]; then
        echo "compare.sh: FAIL: $what: only $same of $total greedy translations are identical" \
             "(< 95%): the two implementations do not compute the same model." >&2
        echo "first differences (< s2s, > torch):" >&2
        diff "$ref" "$got" | head -8 >&2 || true
        exit 1
    fi
}

# The check above is weak on a random model that repeats a few tokens, so
# the greedy token log-probs of PyTorch must also equal `s2s score` of the
# same translations (to 1e-3) wherever the translations are identical.
check_scores() {
    local s2s_txt=$1 torch_txt=$2 torch_scores=$3
    local cli=${S2S:-$(dirname "$bench")/s2s}
    if [ ! -x "$cli" ]; then
        echo "(no s2s binary at $cli, set S2S: log-prob check skipped)"
        return
    fi
    paste "$input" "$s2s_txt" | "$cli" score -m "$model" > "$out/s2s.scores.jsonl"
    "$PYTHON" - "$s2s_txt" "$torch_txt" "$torch_scores" "$out/s2s.scores.jsonl" <<'EOF'
import json, sys
s2s, torch, tscores, sscores = (open(p, encoding="utf-8").read().split("\n") for p in sys.argv[1:])
worst, tokens, lines = 0.0, 0, 0
for a, b, t, j in zip(s2s, torch, tscores, sscores):
    if not j or a != b:
        continue
    ref = json.loads(j)["token_logprobs"]
    got = [float(v) for v in t.split()]
    # without </s> in the output, `s2s score` adds a </s> term at the end
    worst = max([worst] + [abs(x - y) for x, y in zip(ref, got)])
    tokens += len(got)
    lines += 1
print("token log-probs of those %d translations (%d tokens): max |s2s score - torch| = %.2g"
      % (lines, tokens, worst))
if worst > 1e-3:
    sys.exit("compare.sh: FAIL: PyTorch's log-probs differ from `s2s score` by %.3g" % worst)
EOF
}

# Appends "side threads run row sentences/s tokens/s" lines from the
# sentences/s table: its first three rows, the ones both sides have
# (bench_decode adds beam x 32, then a roofline table of the same rows).
collect() {
    local side=$1 th=$2 run=$3 file=$4
    awk -F'|' -v s="$side" -v t="$th" -v r="$run" '
        /^\| search \| batch \| sentences/ { on = 1; next }
        on && !/^\|/ { exit }
        on && n < 3 && /^\| (greedy|beam) [0-9]+ \|/ {
            gsub(/ /, "", $4); gsub(/ /, "", $5); print s, t, r, ++n, $4, $5 }' "$file" >> "$out/results"
    [ "$(grep -c "^$side $th $run " "$out/results")" -eq 3 ] ||
        { echo "compare.sh: $side, $th thread(s): no table in $file" >&2; cat "$file" >&2; exit 1; }
}

echo "model $model, input $input ($n_lines lines), min_len $min_len, max_len $max_len;" \
     "$runs runs per figure, medians; OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
echo "s2s: $bench (--repeat $s2s_repeat); torch: $("$PYTHON" -c 'import torch; print(torch.__version__)')" \
     "with $PYTHON (--repeat $torch_repeat)"
: > "$out/results"
for run in $(seq "$runs"); do
    for th in $threads_list; do
        s2s_dump=() torch_dump=()
        if [ "$run" -eq 1 ]; then
            s2s_dump=(--dump "$out/s2s.$th.txt")
            torch_dump=(--dump "$out/torch.$th.txt" --dump-scores "$out/torch.$th.scores")
        fi
        load=$(cut -d' ' -f1 /proc/loadavg)
        "$bench" "${common[@]}" --threads "$th" --repeat "$s2s_repeat" "${s2s_dump[@]}" \
            > "$out/s2s.$th.$run.out"
        "$PYTHON" "$here/torch_decode.py" "${common[@]}" --threads "$th" --repeat "$torch_repeat" \
            "${torch_dump[@]}" > "$out/torch.$th.$run.out"
        collect s2s "$th" "$run" "$out/s2s.$th.$run.out"
        collect torch "$th" "$run" "$out/torch.$th.$run.out"
        if [ "$run" -eq 1 ]; then
            check_same "s2s vs torch, $th thread(s)" "$out/s2s.$th.txt" "$out/torch.$th.txt"
            [ "$th" != "${threads_list%% *}" ] ||
                check_scores "$out/s2s.$th.txt" "$out/torch.$th.txt" "$out/torch.$th.scores"
            [ "$th" = "${threads_list%% *}" ] ||
                check_same "s2s $th vs ${threads_list%% *} thread(s)" \
                    "$out/s2s.${threads_list%% *}.txt" "$out/s2s.$th.txt"
        fi
        awk -v r="$run" -v t="$th" -v l="$load" '
            $3 == r && $2 == t { tok[$1] = tok[$1] sep[$1] $6; sep[$1] = " / " }
            END { printf "run %d, %d thread(s), load %s: target tokens/s s2s %s, torch %s\n",
                  r, t, l, tok["s2s"], tok["torch"] }' "$out/results"
    done
done

echo
echo "| search | batch | threads | s2s sentences/s | s2s tokens/s | torch sentences/s | torch tokens/s | s2s/torch |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
awk -v beam="$beam" -v tl="$threads_list" '
    function median(key,    n, i, j, v, tmp) {
        n = split(vals[key], v, " ")
        for (i = 2; i <= n; i++)  # insertion sort: a handful of runs
            for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { tmp = v[j]; v[j] = v[j - 1]; v[j - 1] = tmp }
        return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    { vals[$1 " " $2 " " $4 " sent"] = vals[$1 " " $2 " " $4 " sent"] " " $5
      vals[$1 " " $2 " " $4 " tok"] = vals[$1 " " $2 " " $4 " tok"] " " $6 }
    END {
        name[1] = "greedy"; batch[1] = 1; name[2] = "greedy"; batch[2] = 32
        name[3] = "beam " beam; batch[3] = 1
        nt = split(tl, ths, " ")
        for (r = 1; r <= 3; r++)
            for (k = 1; k <= nt; k++) {
                t = ths[k]
                ss = median("s2s " t " " r " sent"); st = median("s2s " t " " r " tok")
                ts = median("torch " t " " r " sent"); tt = median("torch " t " " r " tok")
                printf "| %s | %d | %d | %.1f | %.0f | %.1f | %.0f | %.1fx |\n",
                       name[r], batch[r], t, ss, st, ts, tt, (tt > 0 ? st / tt : 0)
            }
    }' "$out/results"

first=${threads_list%% *}
echo
echo "s2s, $first thread(s), run 1:"
grep -E '^(decoder FLOPs|measured greedy|beam [0-9]+ / greedy)' "$out/s2s.$first.1.out" || true
echo "torch, $first thread(s), run 1:"
grep -E '^beam [0-9]+ / greedy' "$out/torch.$first.1.out" || true
