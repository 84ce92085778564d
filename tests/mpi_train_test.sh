#!/usr/bin/env bash
# Data-parallel `s2s train` under mpirun (issue 19): two processes give, step
# for step, the same weights (1e-5 relative) as one process with the same
# global batch, with label smoothing, clipping, guided alignment, guided
# coreference and <unk> replacement on; the log's "ranks" and per-rank
# token counts; --resume from two processes into one; a killed rank names
# itself and leaves the checkpoint whole; SIGUSR1 (which mpirun forwards)
# and SIGINT write one checkpoint; a rank put out of step (mpi_skew.c) is
# caught by the weight hash after the next validation. A build without MPI
# instead checks that it refuses to run under a launcher, then skips (77).
#   mpi_train_test.sh PATH_TO_s2s ON|OFF [PATH_TO_mpi_skew.so]
set -u
s2s=$1
mpi=$2
skew=${3:-none}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
reverse=$here/data/train/reverse.yaml

if [ "$mpi" != ON ]; then
  check "no MPI: refuses to run as one of several processes" \
    run 2 env PMI_SIZE=3 "$s2s" train "$reverse" -o "$tmp/x.safetensors"
  check "no MPI: the message says why" \
    err_has "started as 3 processes (mpirun?), but this s2s was built without MPI"
  check "no MPI: nothing written" test ! -e "$tmp/x.safetensors"
  if command -v mpirun >/dev/null; then
    check "no MPI: an mpirun fails" run 2 mpirun --allow-run-as-root --oversubscribe -np 2 \
      "$s2s" train "$reverse" -o "$tmp/x.safetensors"
    check "no MPI: nothing written by it" test ! -e "$tmp/x.safetensors"
  fi
  finish mpi_train >&2 || exit 1
  echo "skipped: this build has no MPI (-DS2S_MPI=OFF or no libopenmpi-dev)"
  exit 77
fi
command -v mpirun >/dev/null || { echo "skipped: no mpirun (install openmpi-bin)"; exit 77; }
mpirun=(mpirun --allow-run-as-root --oversubscribe -np 2)
# In the sanitizer build: OpenMPI's runtime keeps some memory to the end
# (suppressed by library; frame-pointer unwinding loses its frames, which
# were built without them, so malloc's stacks are unwound the slow way).
export LSAN_OPTIONS="suppressions=$here/lsan_mpi.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:fast_unwind_on_malloc=0"

# max over tensors of |a - b| / |a| (Euclidean norms); exit 1 above tol.
# (Element by element, a weight that gets little gradient drifts further:
# Adam divides its rounding noise by the gradient's own small size.) The key
# projections' biases are left out: softmax ignores a shift common to every
# key, so their true gradient is 0 and what they get is rounding noise, which
# Adam scales to steps of the learning rate's size whatever the noise's size;
# two processes order the sums differently, so their noise differs. They
# change no output.
same_weights() {  # same_weights A B TOL
  python3 - "$@" <<'PY'
import array, json, struct, sys
def load(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in head.items():
        if k == "__metadata__" or v["dtype"] != "F32" or k.endswith("k_proj.bias"):
            continue
        a, b = v["data_offsets"]
        out[k] = array.array("f", data[a:b])  # little-endian, as the file
    return out
a, b, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
assert a.keys() == b.keys() and a, (sorted(a), sorted(b))
def norm(v):
    return sum(x * x for x in v) ** 0.5
worst = max(norm([x - y for x, y in zip(a[k], b[k])]) / max(norm(a[k]), 1e-30) for k in a)
print(f"  largest relative difference {worst:.3g} (tolerance {tol:g})")
sys.exit(0 if worst <= tol else 1)
PY
}
ckpt_step() { python3 -c "
import json, struct, sys
f = open(sys.argv[1], 'rb'); n = struct.unpack('<Q', f.read(8))[0]
print(json.loads(f.read(n))['__metadata__']['s2s.train.step'])" "$1"; }

# ---- the reverse task: label smoothing and a clip that bites ----
args=(--set train.max_steps=20 --set train.valid_every=10 --set train.save_every=10
      --set train.label_smoothing=0.1 --set train.clip_norm=0.5 --threads 1 --quiet)
check "reverse: one process" run 0 "$s2s" train "$reverse" -o "$tmp/one.safetensors" "${args[@]}"
check "reverse: two processes" run 0 "${mpirun[@]}" "$s2s" train "$reverse" \
  -o "$tmp/two.safetensors" "${args[@]}"
check "reverse: the same weights after 20 steps" same_weights "$tmp/one.safetensors" "$tmp/two.safetensors" 1e-5
check "reverse: the same best model" same_weights "$tmp/one.best.safetensors" "$tmp/two.best.safetensors" 1e-5
check "reverse: one log, a line per step" test "$(wc -l <"$tmp/two.train.log")" -eq 20
log_checks() {  # the two-process log against the one-process log
  python3 - "$1" "$2" <<'PY'
import json, sys
one = [json.loads(l) for l in open(sys.argv[1])]
two = [json.loads(l) for l in open(sys.argv[2])]
assert two[0]["ranks"] == 2, two[0]
assert all("ranks" not in o for o in two[1:]) and all("ranks" not in o for o in one)
for a, b in zip(one, two):
    lo, hi = b["rank_tokens"]
    assert a["tokens"] == b["tokens"] and 0 < lo <= hi and lo + hi == b["tokens"], (a, b)
    assert abs(a["loss"] - b["loss"]) <= 1e-5 * a["loss"], (a, b)
    assert b["allreduce_ms"] >= 0 and "rank_tokens" not in a
    assert ("valid" in a) == ("valid" in b)
PY
}
check "reverse: log says how the work was split" log_checks "$tmp/one.train.log" "$tmp/two.train.log"
check "reverse: attention_chunk, two processes" run 0 "${mpirun[@]}" "$s2s" train "$reverse" \
  -o "$tmp/chunk.safetensors" "${args[@]}" --set train.attention_chunk=3
check "reverse: attention_chunk under mpirun gives the plain weights" \
  same_weights "$tmp/one.safetensors" "$tmp/chunk.safetensors" 1e-5

# ---- guided alignment, guided coreference, <unk> replacement (a corpus slice) ----
corpus=$root/data/corpus
if [ -s "$corpus/train.en-zh.tsv" ]; then
  head -n 300 "$corpus/train.en-zh.tsv" >"$tmp/train.tsv"
  head -n 20 "$corpus/dev.en-zh.tsv" >"$tmp/dev.tsv"
  small=(--set model.d_model=32 --set model.ffn_dim=64 --set model.dropout=0
         --set train.batch_tokens=600 --set data.train="$tmp/train.tsv" --set data.dev="$tmp/dev.tsv"
         --set train.max_steps=20 --set train.valid_every=20 --set train.warmup_steps=10
         --threads 1 --quiet --allow-outside)
  check "guided: one process" run 0 "$s2s" train "$root/configs/en-zh.yaml" \
    -o "$tmp/g1.safetensors" "${small[@]}"
  check "guided: two processes" run 0 "${mpirun[@]}" "$s2s" train "$root/configs/en-zh.yaml" \
    -o "$tmp/g2.safetensors" "${small[@]}"
  check "guided: the same weights after 20 steps" same_weights "$tmp/g1.safetensors" "$tmp/g2.safetensors" 1e-5
  check "guided: both terms logged" grep -q '"guided": .*"coref": ' "$tmp/g2.train.log"
  check "guided: log says how the work was split" log_checks "$tmp/g1.train.log" "$tmp/g2.train.log"
else
  echo "FAIL: $corpus/train.en-zh.tsv is missing (scripts/corpus.sh makes it)"
  fail=$((fail + 1))
fi

# ---- --resume: two processes to step 10, one process from there ----
# (a schedule that does not depend on max_steps, so 10 + 10 steps are 20)
flat=(--set train.schedule=inverse_sqrt --set train.valid_every=0 --set train.save_every=10
      --set train.label_smoothing=0.1 --threads 1 --quiet)
check "resume: one process, 20 steps" run 0 "$s2s" train "$reverse" -o "$tmp/r1.safetensors" \
  "${flat[@]}" --set train.max_steps=20
check "resume: two processes, 10 steps" run 0 "${mpirun[@]}" "$s2s" train "$reverse" \
  -o "$tmp/r2.safetensors" "${flat[@]}" --set train.max_steps=10
check "resume: one process, steps 11 to 20" run 0 "$s2s" train "$reverse" \
  -o "$tmp/r2.safetensors" --resume "$tmp/r2.safetensors" "${flat[@]}" --set train.max_steps=20
check "resume: the same weights as the uninterrupted run" same_weights "$tmp/r1.safetensors" "$tmp/r2.safetensors" 1e-5
check "resume: two processes again, to step 30" run 0 "${mpirun[@]}" "$s2s" train "$reverse" \
  -o "$tmp/r2.safetensors" --resume "$tmp/r2.safetensors" "${flat[@]}" --set train.max_steps=30
check "resume: the log has 30 lines" test "$(wc -l <"$tmp/r2.train.log")" -eq 30

# ---- faults ----
long=(--set train.max_steps=1000000 --set train.valid_every=0 --set train.save_every=20
      --threads 1 --log-every 1000000)
wait_lines() {  # wait_lines LOG N: until LOG has N lines (at most 30 s)
  for _ in $(seq 1 300); do
    [ -s "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ] && return 0
    sleep 0.1
  done
  return 1
}
"${mpirun[@]}" "$s2s" train "$reverse" -o "$tmp/k.safetensors" "${long[@]}" 2>"$tmp/k.err" &
pid=$!
wait_lines "$tmp/k.train.log" 45
for child in $(pgrep -P "$pid"); do  # rank 1, by the rank mpirun gave it
  tr '\0' '\n' <"/proc/$child/environ" | grep -qx OMPI_COMM_WORLD_RANK=1 && kill -KILL "$child"
done
wait "$pid"
rc=$?
check "dead rank: mpirun fails" test "$rc" -ne 0
check "dead rank: the message names the rank" grep -q "rank 1 .*exited on signal 9" "$tmp/k.err"
check "dead rank: the checkpoint loads" run 0 "$s2s" inspect "$tmp/k.ckpt.safetensors"
check "dead rank: --resume goes on" run 0 "${mpirun[@]}" "$s2s" train "$reverse" \
  -o "$tmp/k.safetensors" --resume "$tmp/k.safetensors" --quiet --threads 1 \
  --set train.max_steps=$(($(ckpt_step "$tmp/k.ckpt.safetensors") + 2))

if [ "$skew" != none ]; then
  check "out of step: the run stops" run 2 "${mpirun[@]}" -x LD_PRELOAD="$skew" \
    -x S2S_FAULT_SKEW_RANK=1 -x ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0" \
    "$s2s" train "$reverse" -o "$tmp/o.safetensors" --set train.max_steps=20 \
    --set train.valid_every=5 --threads 1 --quiet
  check "out of step: the message names the rank" \
    err_has "after step 5 the weights of rank 1 differ from rank 0's"
  check "out of step: nothing trained past it" test ! -e "$tmp/o.safetensors"
fi

for sig in USR1 INT; do
  rm -f "$tmp/s.train.log"
  # SIGKILL 10 s after the SIGTERM, not 1 s: a busy machine may need more
  # for the step and the checkpoint.
  "${mpirun[@]}" --mca odls_base_sigkill_timeout 10 "$s2s" train "$reverse" \
    -o "$tmp/s.safetensors" "${long[@]}" --set train.save_every=0 2>"$tmp/s.err" &
  pid=$!
  wait_lines "$tmp/s.train.log" 5
  kill -"$sig" "$pid"
  wait "$pid"
  rc=$?
  # mpirun forwards SIGUSR1; SIGINT it turns into SIGTERM for the ranks and
  # exits 1 itself, whatever they return (OpenMPI's rule).
  want=$([ "$sig" = USR1 ] && echo 130 || echo 1)
  check "SIG$sig: mpirun exits $want" test "$rc" -eq "$want"
  [ "$rc" -eq "$want" ] || cat "$tmp/s.err"
  check "SIG$sig: one checkpoint, at the last logged step" \
    test "$(ckpt_step "$tmp/s.ckpt.safetensors")" -eq "$(wc -l <"$tmp/s.train.log")"
  [ "$sig" = USR1 ] && check "SIGUSR1: rank 0 says so, the other rank not" \
    test "$(grep -c "^interrupted after step" "$tmp/s.err")" -eq 1
done

finish mpi_train
