#!/usr/bin/env bash
# Load on `s2s serve` with wrk (docs/serve.md, "Load"), each request one
# sentence of the test set:
#   1. requests/s and p50/p99 latency at 1, 8 and 64 connections;
#   2. ROUNDS rounds of: the same sentences through `s2s translate
#      --threads 2` in one batch run (the throughput the server is held
#      to: 64 connections should reach 80% of it), the server at 64
#      connections, and a server with --max-batch 1 (no dynamic batching)
#      at 64 connections; one after the other, so that a change in the
#      machine's load hits all three; medians;
#   3. the server's RSS before and after REQUESTS requests.
# Not part of CI: the figures depend on the machine and its load.
#
#   bench/serve_load.sh [MODEL]              (default models/zh-en.safetensors)
#
# Environment: S2S [build/s2s], DURATION [10] seconds per wrk run, ROUNDS [3],
# REQUESTS [100000] for the RSS check, THREADS [2] decoding workers and
# translate threads, SENTENCES [500] of data/corpus/test.zh-en.tsv.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
model=${1:-$repo/models/zh-en.safetensors}
s2s=${S2S:-$repo/build/s2s}
duration=${DURATION:-10}
requests=${REQUESTS:-100000}
threads=${THREADS:-2}
n=${SENTENCES:-500}
command -v wrk >/dev/null || { echo "serve_load: wrk is needed (apt-get install wrk)" >&2; exit 2; }
tmp=$(mktemp -d)
server=
stop_server() {
  if [ -n "$server" ]; then kill -TERM "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; fi
  server=
}
trap 'stop_server; rm -rf "$tmp"' EXIT
name=$(basename "$model" .safetensors)

cut -f1 "$repo/data/corpus/test.zh-en.tsv" | head -n "$n" >"$tmp/src.txt"
# One JSON body per line for wrk's script.
python3 -c '
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    print(json.dumps({"model": sys.argv[2], "text": line.rstrip("\n")}, ensure_ascii=False))
' "$tmp/src.txt" "$name" >"$tmp/bodies.jsonl"
cat >"$tmp/load.lua" <<'LUA'
local bodies, i = {}, 0
for line in io.lines(os.getenv("BODIES")) do bodies[#bodies + 1] = line end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  i = i % #bodies + 1
  return wrk.format(nil, "/v1/translate", nil, bodies[i])
end
local errors = 0
response = function(status) if status ~= 200 then errors = errors + 1 end end
done = function(summary, latency)
  io.write(string.format("RESULT %d %.1f %.2f %.2f %d\n", summary.requests,
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, summary.errors.status + summary.errors.connect +
    summary.errors.read + summary.errors.write + summary.errors.timeout))
end
LUA
export BODIES=$tmp/bodies.jsonl

start_server() {  # start_server ARGS...: s2s serve on a free port; sets $server, $url
  "$s2s" serve -m "$model" --threads "$threads" --port 0 "$@" >"$tmp/serve.out" 2>"$tmp/serve.err" &
  server=$!
  for _ in $(seq 200); do grep -q '^listening on' "$tmp/serve.out" && break; sleep 0.05; done
  url=$(sed -n 's/^listening on //p' "$tmp/serve.out")
  [ -n "$url" ] || { cat "$tmp/serve.err"; exit 1; }
}
rss() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$server/status"; }
load() {  # load CONNECTIONS SECONDS: one wrk run; prints "requests req/s p50 p99 errors"
  local c=$1 t=2
  [ "$c" -ge 2 ] || t=1
  wrk -t"$t" -c"$c" -d"${2}s" --timeout 30s -s "$tmp/load.lua" "$url" | sed -n 's/^RESULT //p'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
calc() { awk "BEGIN { print $1 }"; }

echo "# s2s serve under wrk: $name, $threads workers, $n sentences of the test set, ${duration} s a run"
echo "# machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%dT%H:%MZ)"
start_server
load 8 2 >/dev/null  # warm up
printf '%-34s %10s %9s %9s %7s\n' "run" "req/s" "p50 ms" "p99 ms" "errors"
for c in 1 8 64; do
  read -r total rps p50 p99 errs < <(load "$c" "$duration")
  printf '%-34s %10s %9s %9s %7s\n' "$c connections" "$rps" "$p50" "$p99" "$errs"
done

# Throughput against the batch command, and the gain of dynamic batching:
# ROUNDS rounds, each running the three one after the other, so that a
# change in the machine's load hits all three; medians.
for _ in 1 2 3 4 5 6; do cat "$tmp/src.txt"; done >"$tmp/batch.txt"
lines=$(wc -l <"$tmp/batch.txt")
main=$server main_url=$url
server=
start_server --max-batch 1
single=$server single_url=$url
load 8 2 >/dev/null
server=$main url=$main_url
rounds=${ROUNDS:-3}
: >"$tmp/batch.rate"; : >"$tmp/serve.rate"; : >"$tmp/single.rate"
for r in $(seq "$rounds"); do
  t0=$(date +%s.%N)
  "$s2s" translate -m "$model" --threads "$threads" <"$tmp/batch.txt" >/dev/null
  t1=$(date +%s.%N)
  b=$(calc "$lines / ($t1 - $t0)")
  read -r total rps _ < <(load 64 "$duration")
  url=$single_url
  read -r total one _ < <(load 64 "$duration")
  url=$main_url
  printf 'round %d: s2s translate --threads %s %.1f sentences/s; serve at 64 connections %s req/s, with --max-batch 1 %s req/s\n' \
    "$r" "$threads" "$b" "$rps" "$one"
  echo "$b" >>"$tmp/batch.rate"; echo "$rps" >>"$tmp/serve.rate"; echo "$one" >>"$tmp/single.rate"
done
b=$(median <"$tmp/batch.rate") rps=$(median <"$tmp/serve.rate") one=$(median <"$tmp/single.rate")
printf 'medians: batch %.1f sentences/s, serve %.1f req/s: %.0f%% of batch (target: at least 80%%)\n' \
  "$b" "$rps" "$(calc "100 * $rps / $b")"
printf 'dynamic batching at 64 connections: %.1f req/s against %.1f with --max-batch 1: %.2fx\n' \
  "$rps" "$one" "$(calc "$rps / $one")"
server=$single; stop_server
server=$main; stop_server

# RSS once the server has seen every shape of batch (its decoding states
# and oneDNN's kernels grow to the largest, once): after one run at 64
# connections; then REQUESTS more.
start_server
cold=$(rss)
load 64 "$duration" >/dev/null
before=$(rss)
done_requests=0
while [ "$done_requests" -lt "$requests" ]; do
  read -r total rps p50 p99 errs < <(load 64 "$duration")
  done_requests=$((done_requests + total))
done
after=$(rss)
echo "RSS: $cold MiB started, $before MiB after one warm-up run, $after MiB after $done_requests more requests at 64 connections"
stop_server
