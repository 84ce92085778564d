#!/usr/bin/env bash
# Proves that a refactor changed nothing: runs the same commands with a
# build of BASE_REV and with NEW_DIR and compares what they print, then
# times both on the decode benchmark (issue 28's acceptance criteria).
#
#   scripts/compare_behaviour.sh [--no-speed] [--rounds N] [--out DIR] BASE_REV [NEW_DIR]
#
#   BASE_REV  any commit git knows (9f2c0a5, main~3, a tag). It is checked
#             out in the worktree ${TMPDIR:-/tmp}/s2s-base-<short sha>,
#             outside the repository, and built there in build/ (Release,
#             S2S_NATIVE=ON, S2S_TESTS=OFF; targets s2s_cli and
#             bench_decode, -j ${JOBS:-2}). A later run at the same commit
#             reuses the worktree and its build. Remove it with
#             `git worktree remove --force DIR`.
#   NEW_DIR   the new build, built by the caller (default: build/ of this
#             repository): its s2s and bench_decode.
#   --no-speed     the behaviour checks only
#   --rounds N     rounds of the speed benchmark (default 3)
#   --out DIR      where the outputs go (default: a new
#                  ${TMPDIR:-/tmp}/s2s-compare-<short sha>.XXXXXX)
#
# Both builds run on the same inputs, this repository's files: the shipped
# models, data/corpus/test.{zh-en,en-zh}.tsv (the test split of each
# direction), configs/ and tests/data/train/. Each build's programs run with
# its own libs2s (LD_LIBRARY_PATH). The checks, one line each, `same` or
# `DIFFERS` with the first line where the two part (or `FAILED` when a
# command exits non-zero):
#
#   translate PAIR TYPE greedy         `s2s translate` of the split's sources,
#   translate PAIR TYPE beam4-nbest4   and with --beam 4 --n-best 4 --json:
#                                      stdout and stderr byte for byte
#   score PAIR TYPE                    `s2s score` of its source<TAB>target
#                                      pairs: the same tokens, every number
#                                      within 1e-6 (absolute); stderr byte
#                                      for byte
#     each for TYPE = --compute-type fp32, bf16 and int8, --threads 2
#   train reverse log, model           20 steps of tests/data/train/reverse.yaml
#   train zh-en log, model             20 steps of configs/zh-en.yaml (guided
#                                      alignment and coreference, dropout,
#                                      unk_replace) on data/corpus/dev.zh-en.tsv,
#                                      validated on 200 test lines;
#     both --threads 1, validation and a checkpoint every 10 steps. The
#     JSON-lines log must be identical, value for value, without
#     "allreduce_ms" (the only timing-dependent field: milliseconds spent in
#     MPI's all-reduce, logged only on several processes; nothing in a
#     one-process log depends on time). The written model must be the same
#     file byte for byte. Progress lines on stderr (tok/s) are not compared.
#
# Then the speed rows: docs/benchmarks.md's "Greedy decoding and matmul
# throughput" commands (bench_decode on configs/demo.yaml at seed 1, 64
# copies of examples/sentences.zh, --max-len 20, 1 and 2 threads), run
# base, new, base, new, ... for N rounds, with OMP_WAIT_POLICY=PASSIVE as
# bench/compare.sh (unless set). Each row: the median of each build, the
# ratio new/base and the spread. Speed is printed, never failed.
#
# Exit status: 0 when every behaviour check is `same`, 1 when one is not,
# 2 for bad usage or a build that fails. On the 2-core development machine
# a full run takes about 35 s once the base is built (behaviour 25 s, speed
# 10 s), and building the base about 30 s more.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
helper=$root/scripts/compare_behaviour.py

usage() {
  echo "usage: scripts/compare_behaviour.sh [--no-speed] [--rounds N] [--out DIR] BASE_REV [NEW_DIR]" >&2
  exit 2
}
die() {
  echo "compare_behaviour: $*" >&2
  exit 2
}

speed=1 rounds=3 out="" args=()
while [ $# -gt 0 ]; do
  case $1 in
  --no-speed) speed=0 ;;
  --rounds) [ $# -ge 2 ] || usage; rounds=$2; shift ;;
  --out) [ $# -ge 2 ] || usage; out=$2; shift ;;
  -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  -*) usage ;;
  *) args+=("$1") ;;
  esac
  shift
done
if [ ${#args[@]} -lt 1 ] || [ ${#args[@]} -gt 2 ]; then usage; fi
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds takes a positive integer, not '$rounds'"
rev=$(git -C "$root" rev-parse --verify --quiet "${args[0]}^{commit}") || die "no such commit: ${args[0]}"
short=$(git -C "$root" rev-parse --short "$rev")
new=$(cd "${args[1]:-$root/build}" 2>/dev/null && pwd) || die "no build directory ${args[1]:-$root/build}"
for p in s2s bench_decode; do
  [ -x "$new/$p" ] || [ "$p$speed" = bench_decode0 ] || die "$new/$p is missing: build it first"
done

# ---- the base build ----
wt=${TMPDIR:-/tmp}/s2s-base-$short
if [ ! -e "$wt" ]; then
  echo "building $short in $wt (log: $wt/build/build.log)"
  git -C "$root" worktree add --detach --quiet "$wt" "$rev"
fi
[ "$(git -C "$wt" rev-parse HEAD 2>/dev/null)" = "$rev" ] ||
  die "$wt is not a worktree at $short: remove it (git worktree remove --force $wt) and run again"
[ -z "$(git -C "$wt" status --porcelain --untracked-files=no)" ] ||
  die "$wt has local changes, so its build is not $short's: remove it and run again"
mkdir -p "$wt/build"
{ { [ -f "$wt/build/CMakeCache.txt" ] ||
    cmake -S "$wt" -B "$wt/build" -DCMAKE_BUILD_TYPE=Release -DS2S_NATIVE=ON -DS2S_TESTS=OFF; } &&
  cmake --build "$wt/build" -j "${JOBS:-2}" --target s2s_cli bench_decode; } >"$wt/build/build.log" 2>&1 || { tail -n 30 "$wt/build/build.log"; die "the build of $short failed"; }
declare -A build=([base]=$wt/build [new]=$new)

if [ -z "$out" ]; then out=$(mktemp -d "${TMPDIR:-/tmp}/s2s-compare-$short.XXXXXX"); fi
mkdir -p "$out/input" "$out/base" "$out/new"
out=$(cd "$out" && pwd)

# where the new build comes from, as its CMake cache says
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$new/CMakeCache.txt" 2>/dev/null || true)
from="source unknown"
if [ -n "$src" ] && head=$(git -C "$src" rev-parse --short HEAD 2>/dev/null); then
  from="$src at $head"
  [ -z "$(git -C "$src" status --porcelain --untracked-files=no)" ] || from+=" with uncommitted changes"
fi
echo "base: $short ($wt/build)"
echo "new:  $new ($from)"
echo "outputs: $out"
echo

# ---- running and comparing ----
# run SIDE NAME STDIN PROGRAM ARGS...: SIDE's PROGRAM into $out/SIDE/NAME.{out,err,rc}
run() {
  local side=$1 name=$2 input=$3 prog=$4 rc=0
  shift 4
  LD_LIBRARY_PATH=${build[$side]} "${build[$side]}/$prog" "$@" <"$input" \
    >"$out/$side/$name.out" 2>"$out/$side/$name.err" || rc=$?
  echo "$rc" >"$out/$side/$name.rc"
}

checks=0 failed=0
report() {  # report LABEL RESULT
  printf '%-34s %s\n' "$1" "$2"
  checks=$((checks + 1))
  [ "${2%% *}" = same ] || failed=$((failed + 1))
}

# The first line where files $1 (base) and $2 (new) part, each side cut to
# 120 bytes around the first byte that differs (cmp's words when the lines
# agree: a newline missing at the end).
first_diff() {
  local where
  where=$(LC_ALL=C awk -v other="$2" '
    function clip(s, at,   from) {
      from = at > 40 ? at - 40 : 1
      return (from > 1 ? "..." : "") substr(s, from, 120) (from + 120 <= length(s) ? "..." : "")
    }
    function show(n, a, b,   i) {
      for (i = 1; i <= length(a) && substr(a, i, 1) == substr(b, i, 1); i++) {}
      printf "line %d: base \047%s\047 new \047%s\047\n", n, clip(a, i), clip(b, i)
      shown = 1
      exit
    }
    { if ((getline b < other) <= 0) b = "(no such line)"; if ($0 != b) show(NR, $0, b) }
    END { if (!shown && (getline b < other) > 0) show(NR + 1, "(no such line)", b) }' "$1")
  echo "${where:-$(cmp "$1" "$2" 2>&1)}"
}

# ran LABEL NAME: both sides' NAME exited 0; else reports the failure.
ran() {
  local side rc msg=""
  for side in base new; do
    rc=$(cat "$out/$side/$2.rc")
    [ "$rc" = 0 ] || msg+="$side exited $rc ($(head -n 1 "$out/$side/$2.err")); "
  done
  [ -n "$msg" ] || return 0
  report "$1" "FAILED: ${msg%; }"
  return 1
}

# same_text LABEL NAME EXT...: NAME.EXT byte for byte, for each EXT
same_text() {
  local label=$1 name=$2 ext
  shift 2
  for ext in "$@"; do
    cmp -s "$out/base/$name.$ext" "$out/new/$name.$ext" && continue
    report "$label" "DIFFERS ($ext) $(first_diff "$out/base/$name.$ext" "$out/new/$name.$ext")"
    return
  done
  report "$label" same
}

# same_json LABEL BASE_FILE NEW_FILE HELPER_ARGS...: JSON lines, through the helper
same_json() {
  local label=$1 result
  result=$(python3 "$helper" jsonl "$2" "$3" "${@:4}") || true
  report "$label" "$result"
}

threads=2  # translate and score; a batch splits across threads by sentence
for pair in zh-en en-zh; do
  model=$root/models/$pair.safetensors
  cut -f1 "$root/data/corpus/test.$pair.tsv" >"$out/input/test.$pair.src"
  cut -f1,2 "$root/data/corpus/test.$pair.tsv" >"$out/input/test.$pair.pairs"
  for type in fp32 bf16 int8; do
    opts=(-m "$model" --compute-type "$type" --threads "$threads")
    for side in base new; do
      run $side "translate.$pair.$type.greedy" "$out/input/test.$pair.src" s2s translate "${opts[@]}"
      run $side "translate.$pair.$type.beam4" "$out/input/test.$pair.src" s2s translate "${opts[@]}" \
        --beam 4 --n-best 4 --json
      run $side "score.$pair.$type" "$out/input/test.$pair.pairs" s2s score "${opts[@]}"
    done
    for kind in greedy beam4; do
      label="translate $pair $type ${kind/beam4/beam4-nbest4}"
      if ran "$label" "translate.$pair.$type.$kind"; then
        same_text "$label" "translate.$pair.$type.$kind" out err
      fi
    done
    label="score $pair $type"
    if ran "$label" "score.$pair.$type"; then
      if cmp -s "$out/base/score.$pair.$type.err" "$out/new/score.$pair.$type.err"; then
        same_json "$label" "$out/base/score.$pair.$type.out" "$out/new/score.$pair.$type.out" --tol 1e-6
      else
        same_text "$label" "score.$pair.$type" err
      fi
    fi
  done
done

# train NAME CONFIG ARGS...: 20 steps on both sides, then the log and the model
train() {
  local name=$1 side
  shift
  for side in base new; do
    rm -rf "$out/$side/train.$name" && mkdir -p "$out/$side/train.$name"
    run $side "train.$name" /dev/null s2s train "$@" -o "$out/$side/train.$name/model.safetensors" \
      --set train.max_steps=20 --set train.valid_every=10 --set train.save_every=10 --threads 1
  done
  ran "train $name" "train.$name" || return 0
  same_json "train $name log" "$out"/{base,new}/"train.$name/model.train.log" --drop allreduce_ms
  if cmp -s "$out"/{base,new}/"train.$name/model.safetensors"; then
    report "train $name model" same
  else
    report "train $name model" "DIFFERS $(cmp "$out"/{base,new}/"train.$name/model.safetensors" | sed 's/.*differ: //')"
  fi
}
train reverse "$root/tests/data/train/reverse.yaml"
head -n 200 "$root/data/corpus/test.zh-en.tsv" >"$out/input/valid.zh-en.tsv"
train zh-en "$root/configs/zh-en.yaml" --set data.train="$root/data/corpus/dev.zh-en.tsv" \
  --set data.dev="$out/input/valid.zh-en.tsv"

echo
if [ "$failed" -eq 0 ]; then
  echo "behaviour: all $checks checks the same"
else
  echo "behaviour: $failed of $checks checks NOT the same (outputs in $out/base and $out/new)"
fi

# ---- speed ----
if [ "$speed" -eq 1 ]; then
  export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
  demo=$out/input/demo.safetensors
  LD_LIBRARY_PATH=$new "$new/s2s" init "$root/configs/demo.yaml" -o "$demo" --seed 1 >/dev/null
  for _ in $(seq 64); do cat "$root/examples/sentences.zh"; done >"$out/input/bench.zh"
  : >"$out/speed.tsv"
  echo
  echo "speed: bench_decode (docs/benchmarks.md), median of $rounds interleaved round(s); load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for r in $(seq "$rounds"); do
    for t in 1 2; do
      for side in base new; do
        run $side "bench.t$t.r$r" /dev/null bench_decode -m "$demo" -i "$out/input/bench.zh" \
          --max-len 20 --threads "$t"
        [ "$(cat "$out/$side/bench.t$t.r$r.rc")" = 0 ] ||
          { echo "bench_decode failed ($side): $(head -n 1 "$out/$side/bench.t$t.r$r.err")"; continue; }
        # the decoding table (target tokens/s) and the matmul table (GFLOP/s)
        awk -F'|' -v t="$t" -v side="$side" '
          function trim(s) { gsub(/^ +| +$/, "", s); return s }
          /^$/ { table = "" }
          /sentences\/s/ { table = "decode"; next }
          /matmul \(M x K/ { table = "matmul"; next }
          table == "decode" && /^\| (greedy|beam)/ {
            search = trim($2); sub(/^greedy 1$/, "greedy", search)
            printf "%s\t%s x %s\ttok/s\t%s\t%s\n", t, search, trim($3), side, trim($5)
          }
          table == "matmul" && /^\| [0-9]/ { printf "%s\tmatmul %s\tGFLOP/s\t%s\t%s\n", t, trim($2), side, trim($3) }
        ' "$out/$side/bench.t$t.r$r.out" >>"$out/speed.tsv"
      done
    done
  done
  python3 "$helper" speed "$out/speed.tsv" | tee "$out/speed.txt"
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
echo "took ${SECONDS}s"
[ "$failed" -eq 0 ] || exit 1
