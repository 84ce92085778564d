#!/usr/bin/env bash
# Training throughput of the shipped en-zh config: one process with 2
# threads, two MPI processes with 1 thread each, and one process with 1
# thread, in interleaved rounds (the machine may be shared), each run
# STEPS steps; prints every run, then the medians and, for the MPI runs,
# the gradient allreduce per step (docs/training.md, "Several processes").
#   bench/mpi_throughput.sh BUILD_DIR [ROUNDS] [STEPS]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
s2s=$(cd "$1" && pwd)/s2s
rounds=${2:-3}
steps=${3:-20}
# shellcheck source=bench/median.sh
. "$root/bench/median.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
common=(train "$root/configs/en-zh.yaml" --set train.max_steps="$steps" --set train.valid_every=0
        --set train.save_every=0 --allow-outside --log-every 1000000)
for r in $(seq 1 "$rounds"); do
  "$s2s" "${common[@]}" -o a.safetensors --threads 2 2>a.err
  mpirun --allow-run-as-root -np 2 "$s2s" "${common[@]}" -o b.safetensors --threads 1 2>b.err
  "$s2s" "${common[@]}" -o c.safetensors --threads 1 2>c.err
  ar=$(python3 -c "
import json, statistics
print(round(statistics.median(json.loads(l)['allreduce_ms'] for l in open('b.train.log')), 2))")
  echo "round $r: 1x2 $(run_tok_s a.err) tok/s  2x1 $(run_tok_s b.err) tok/s (allreduce median $ar ms)" \
       " 1x1 $(run_tok_s c.err) tok/s" | tee -a runs.txt
  rm -f ./*.train.log
done
python3 - runs.txt "$steps" <<'PY'
import re, statistics, sys
rows = [list(map(float, re.findall(r"([0-9.]+) (?:tok/s|ms)", l))) for l in open(sys.argv[1])]
med = [statistics.median(r[i] for r in rows) for i in range(4)]
print(f"median of {len(rows)}: 1x2 {med[0]:.0f} tok/s, 2x1 {med[1]:.0f} tok/s, "
      f"1x1 {med[3]:.0f} tok/s; allreduce {med[2]:.2f} ms per step")
PY
