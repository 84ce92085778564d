# Shared by the shell tests: a temp folder ($tmp, removed on exit), pass/fail
# counters and the checks. Source it after setting `here`.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $name"; fi
}
run() {  # run EXPECTED_RC CMD... : stdout in $tmp/out, stderr in $tmp/err
  local want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ "$rc" -eq "$want" ] || { echo "  exit $rc, wanted $want: $*"; cat "$tmp/err"; return 1; }
}
err_has() { grep -q -- "$1" "$tmp/err" || { echo "  stderr lacks '$1':"; cat "$tmp/err"; return 1; }; }
out_has() { grep -q -- "$1" "$tmp/out" || { echo "  stdout lacks '$1':"; head -20 "$tmp/out"; return 1; }; }
lines() { [ "$(wc -l <"$tmp/out")" -eq "$1" ] || { echo "  $(wc -l <"$tmp/out") lines, wanted $1"; return 1; }; }
finish() {  # finish NAME: the closing line ctest reads, and the exit status
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
edit() {  # edit FILE N TEXT...: FILE with line N replaced by printf's TEXT (NUL bytes kept)
  local f=$1; shift
  local out=$tmp/edit.$$ n
  cp "$f" "$out"
  while [ $# -gt 0 ]; do
    n=$1 text=$2; shift 2
    { head -n $((n - 1)) "$out"; printf "$text\n"; tail -n +$((n + 1)) "$out"; } >"$out.new"
    mv "$out.new" "$out"
  done
  cat "$out"
}
