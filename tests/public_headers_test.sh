#!/usr/bin/env bash
# The command line (src/cli) and the benchmarks (bench/) are built on the
# public API only: every header they include is a system header,
# include/s2s/*.h, or the CLI's own src/cli/*.h.
#
#     bash tests/public_headers_test.sh
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bad=$(grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$ROOT"/src/cli/*.[ch] "$ROOT"/bench/*.c |
      grep -Ev '#[[:space:]]*include[[:space:]]*"(s2s|cli)/[a-z0-9_]+\.h"')
if [ -n "$bad" ]; then
  echo "internal headers included outside the library:"
  echo "$bad"
  exit 1
fi
n=$(cat "$ROOT"/src/cli/*.[ch] "$ROOT"/bench/*.c | grep -c '#include "')
echo "public_headers: $n includes, all public"
