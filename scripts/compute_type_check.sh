#!/usr/bin/env bash
# Quality of each compute type against fp32 on both test splits, with the
# shipped models: BLEU and exact match (`s2s eval`), and AER of the stored
# alignment head (`s2s align --eval`). The bar (docs/benchmarks.md): BLEU
# within 0.2, exact match within 0.5 points and AER within 0.01 of fp32.
#
#     scripts/compute_type_check.sh build/s2s [TYPES...]   (default: fp32 int8 bf16)
#
# Exits 1 when a type misses the bar.
set -euo pipefail
s2s=$(realpath "${1:?usage: scripts/compute_type_check.sh BUILD/s2s [TYPES...]}")
shift
cd "$(dirname "$0")/.."
types=("${@:-fp32}")
[ $# -gt 0 ] || types=(fp32 int8 bf16)
fail=0
printf '%-6s %-5s %8s %8s %7s %9s %9s %8s\n' split type BLEU exact AER dBLEU dexact dAER
for pair in zh-en en-zh; do
  model=models/$pair.safetensors test=data/corpus/test.$pair.tsv
  base=()
  for t in fp32 "${types[@]}"; do
    [ "$t" != fp32 ] || [ ${#base[@]} -eq 0 ] || continue
    read -r bleu exact < <("$s2s" eval -m "$model" --compute-type "$t" "$test" --json |
      python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["bleu"], 100*d["exact_match"])')
    aer=$("$s2s" align -m "$model" --compute-type "$t" --eval "$test" | awk '/stored/ {print $3}')
    if [ ${#base[@]} -eq 0 ]; then base=("$bleu" "$exact" "$aer"); fi
    python3 - "$pair" "$t" "$bleu" "$exact" "$aer" "${base[@]}" <<'PY' || fail=1
import sys
pair, t, b, e, a, b0, e0, a0 = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:])
db, de, da = b - b0, e - e0, a - a0
ok = abs(db) <= 0.2 and abs(de) <= 0.5 and abs(da) <= 0.01
print(f"{pair:6} {t:5} {b:8.2f} {e:8.1f} {a:7.4f} {db:+9.2f} {de:+9.1f} {da:+8.4f}"
      + ("" if ok else "  MISSES THE BAR"))
sys.exit(0 if ok else 1)
PY
  done
done
exit $fail
