#!/usr/bin/env bash
# Decoding speed per compute type, engine and whole process, in one run
# (docs/benchmarks.md).
#
#   bench/compute_types.sh MODEL INPUT [BUILD]        (BUILD: build/)
#
# Rows greedy x 1, greedy x 32, beam 4 x 1, beam 4 x 32; columns fp32, int8
# and bf16, each as bench_decode (the engine, s2s_translate on tokenized
# input) and as `s2s translate` (the whole process: load, tokenize,
# decode, detokenize, print), in target tokens/s at THREADS threads. With
# BASE=DIR (a build of another commit, e.g. main's) its fp32 figures are
# added as the first columns and every figure divided by them. Runs are
# interleaved (each run takes every column once) so that a change in the
# machine's load hits them all; each figure is the median of RUNS runs.
# Each build's programs run with its own libs2s (LD_LIBRARY_PATH), so a
# copy of a build directory measures what was copied.
#
# Beside each row: the roofline (the decoder's matrix FLOPs per target
# token at the best fp32 GFLOP/s bench_decode measures, see there) and the
# fastest engine column's fraction of it. THREADS may list several counts
# ("1 2"): a table for each.
#
# Environment: RUNS [3]  THREADS [1]  REPEAT [1] (passes of bench_decode)
#   TYPES ["fp32 int8 bf16"]  MIN_LEN, MAX_LEN (given to both sides when set)
#   OMP_WAIT_POLICY [PASSIVE], as bench/compare.sh.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bench/compute_types.sh MODEL INPUT [BUILD]" >&2; exit 2; }
model=$1 input=$2 build=${3:-build}
runs=${RUNS:-3} thread_list=${THREADS:-1} repeat=${REPEAT:-1} types=${TYPES:-fp32 int8 bf16}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
len=()
[ -z "${MIN_LEN:-}" ] || len+=(--min-len "$MIN_LEN")
[ -z "${MAX_LEN:-}" ] || len+=(--max-len "$MAX_LEN")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rows=("1 1" "1 32" "4 1" "4 32")  # beam batch

builds=("$build")
[ -z "${BASE:-}" ] || builds=("$BASE" "$build")
for threads in $thread_list; do
: >"$out/figures"
# the roofline of each row, from one run with the matmul table
LD_LIBRARY_PATH=$build "$build/bench_decode" -m "$model" -i "$input" --threads "$threads" --beam 4 \
  --repeat 1 "${len[@]}" 2>/dev/null | awk -F'|' '/^\| (greedy|beam) [0-9]+ \| [0-9]+ \| [0-9]+ \| [0-9]+ \| [0-9.]+ \|$/ {
    gsub(/ /, "", $4); print "roof", "engine", ++n, $4 }' >>"$out/figures"
for r in $(seq "$runs"); do
  for b in "${builds[@]}"; do
    tlist=$types
    [ "$b" != "${BASE:-}" ] || tlist=base
    for t in $tlist; do
      ct=(--compute-type "$t")
      [ "$t" != base ] || ct=()
      # the engine: bench_decode prints its four rows; its stderr the tokens
      LD_LIBRARY_PATH=$b "$b/bench_decode" -m "$model" -i "$input" --threads "$threads" --beam 4 \
        --repeat "$repeat" "${len[@]}" "${ct[@]}" --no-matmul >"$out/e" 2>"$out/tok"
      grep '^| \(greedy\|beam\) ' "$out/e" | awk -F'|' -v t="$t" \
        '{gsub(/ /,"",$2); print t, "engine", NR, $5}' >>"$out/figures"
      for k in 0 1 2 3; do
        set -- ${rows[$k]}
        tokens=$(sed -n "$((k + 1))s/.*: //p" "$out/tok")
        start=$(date +%s.%N)
        LD_LIBRARY_PATH=$b "$b/s2s" translate -m "$model" --threads "$threads" --beam "$1" --batch "$2" \
          "${len[@]}" "${ct[@]}" <"$input" >/dev/null 2>&1
        end=$(date +%s.%N)
        echo "$t cli $((k + 1)) $(echo "$tokens / ($end - $start)" | bc -l)" >>"$out/figures"
      done
    done
  done
done

python3 - "$out/figures" "$types" "${BASE:+base}" <<'PY'
import collections, statistics, sys
fig = collections.defaultdict(list)
for line in open(sys.argv[1]):
    t, side, row, v = line.split()
    fig[t, side, int(row)].append(float(v))
types = (["base"] if sys.argv[3] else []) + sys.argv[2].split()
names = ["greedy x 1", "greedy x 32", "beam 4 x 1", "beam 4 x 32"]
cols = [(t, s) for t in types for s in ("engine", "cli")]
print("| config | " + " | ".join(f"{t} {s}" for t, s in cols) + " | roofline | best engine / roofline |")
print("|---|" + "---:|" * (len(cols) + 2))
for r in range(1, 5):
    cells = []
    for t, s in cols:
        m = statistics.median(fig[t, s, r])
        ref = statistics.median(fig[types[0], s, r])
        cells.append(f"{m:,.0f}" + ("" if t == types[0] else f" ({m / ref:.2f}x)"))
    roof = fig["roof", "engine", r][0]
    best = max(statistics.median(fig[t, "engine", r]) for t in types)
    cells += [f"{roof:,.0f}", f"{best / roof:.3f}"]
    print(f"| {names[r - 1]} | " + " | ".join(cells) + " |")
PY
echo
echo "target tokens/s, median of $runs interleaved runs, $threads thread(s); model $model, input $input"
done
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); flags:" \
  $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_vnni|avx512_bf16|amx_bf16|amx_int8)$' | tr '\n' ' ')
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
