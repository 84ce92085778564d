#!/usr/bin/env bash
# The public API stays what a program using the library sees:
# - the benchmarks (bench/) and the examples (examples/) are built on it
#   alone: every header they include is a system header or include/s2s/*.h
#   (the s2s command and the tests link the internals, s2s_internal, and
#   may include src/ headers);
# - the public headers include only each other and system headers;
# - s2s/s2s.h, the umbrella header, leaves out training (s2s/train.h) and
#   <signal.h>, and src/core includes no umbrella header.
# tests/exported_symbols_test.py checks what libs2s.so exports.
#
#     bash tests/public_headers_test.sh
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
quoted='^[[:space:]]*#[[:space:]]*include[[:space:]]*"'
public='#[[:space:]]*include[[:space:]]*"s2s/[a-z0-9_]+\.h"'
fail=0
bad=$(grep -Hn "$quoted" "$ROOT"/bench/*.c "$ROOT"/examples/*.c "$ROOT"/include/s2s/*.h | grep -Ev "$public")
if [ -n "$bad" ]; then
  echo "internal headers included outside the library:"
  echo "$bad"
  fail=1
fi
bad=$(grep -Hn -E '#[[:space:]]*include[[:space:]]*[<"](s2s/train\.h|signal\.h)[">]' "$ROOT"/include/s2s/s2s.h)
if [ -n "$bad" ]; then
  echo "s2s/s2s.h includes what a program translating does not need:"
  echo "$bad"
  fail=1
fi
bad=$(grep -rHn -E '#[[:space:]]*include[[:space:]]*"s2s/s2s\.h"' "$ROOT"/src/core)
if [ -n "$bad" ]; then
  echo "src/core includes the umbrella header:"
  echo "$bad"
  fail=1
fi
[ "$fail" -eq 0 ] || exit 1
n=$(cat "$ROOT"/bench/*.c "$ROOT"/examples/*.c "$ROOT"/include/s2s/*.h | grep -c '#include "')
echo "public_headers: $n includes, all public"
