#!/usr/bin/env bash
# Runs the shell blocks of README.md and docs/*.md that are marked runnable,
# so that the documented commands can't drift from what s2s does.
#   docs_test.sh PATH_TO_s2s [FILE.md ...]
#
# The convention (README.md, "Runnable docs"):
# - A block fenced as ```sh test is run; plain ```sh blocks are not (use them
#   for slow commands, installs, training runs, anything that writes into
#   the repository).
# - The block runs with `bash -e` in a fresh temporary folder that looks like
#   the repository (a copy, with links for data/, so relative paths such as
#   models/zh-en.safetensors work) with build/s2s linked to the s2s under
#   test, which is also on PATH as `s2s`, and build/cmake_install.cmake to
#   its build's, so that `cmake --install build --prefix DIR` works. Files the commands write land in
#   that folder; a block that writes into the repository itself fails.
# - Lines `# => TEXT` right after a command give its expected stdout, one
#   line each (`# =>` alone: an empty line), compared exactly (trailing
#   newlines aside). A command without them only has to exit 0.
# A failure names the file and line of the command (or of the block).
set -u
s2s=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"

# A sanitizer build's libs2s.so brings libasan with it; a program the docs
# compile against it (the install block) loads it second, which ASan refuses.
if ldd "$(dirname "$s2s")/libs2s.so" 2>/dev/null | grep -q libasan; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
fi

# A static build (the sanitizer builds) has no libs2s.so: a block that
# compiles a program against it (README's install block, written for the
# shared library) gets a `cc` that adds the build's link flags
# (S2S_LINK_FLAGS, the sanitizer's, from tests/CMakeLists.txt) and the
# static library's own dependencies, as tests/install_test.sh links.
blocks_path=$tmp/bin
mkdir -p "$blocks_path"
if [ ! -e "$(dirname "$s2s")/libs2s.so" ]; then
  printf '%s\n' '#!/bin/sh' \
    '# shellcheck disable=SC2046,SC2086' \
    'exec /usr/bin/cc ${S2S_LINK_FLAGS:-} "$@" $(pkg-config --libs --static s2s)' \
    >"$blocks_path/cc"
  chmod +x "$blocks_path/cc"
fi

if [ $# -gt 0 ]; then files=("$@"); else files=("$root/README.md" "$root"/docs/*.md); fi

# What the repository holds outside the build folders, to catch blocks that
# write into it (only in a git checkout; ignored files count too, Python's
# byte-code caches from other tests running at the same time do not).
repo_state() {
  git -C "$root" status --porcelain --ignored --untracked-files=all 2>/dev/null |
    grep -v -E '^!! build(-[^/]*)?/|__pycache__/' || true
}
before=$(repo_state)

# A folder that looks like the repository: a copy, but for the corpus in
# data/ (27 MB), whose files are links.
make_work() {
  local work=$1 entry
  mkdir -p "$work/build"
  for entry in "$root"/* "$root"/.[!.]*; do
    [ -e "$entry" ] || continue
    case $(basename "$entry") in
      build | build-* | .git) ;;
      data) cp -rs "$entry" "$work/" ;;
      tests)  # not tests/npm/, the test set-up's npm packages (tens of MB), which no block uses
        mkdir -p "$work/tests"
        for e in "$entry"/*; do [ "$(basename "$e")" = npm ] || cp -r "$e" "$work/tests/"; done ;;
      *) cp -r "$entry" "$work/" ;;
    esac
  done
  for entry in "$(dirname "$s2s")"/*; do
    [ -f "$entry" ] && [ -x "$entry" ] && ln -sf "$entry" "$work/build/"
  done
  ln -sf "$s2s" "$work/build/s2s"
  # `cmake --install build` (the README's install block) installs the build under test.
  [ -f "$(dirname "$s2s")/cmake_install.cmake" ] &&
    ln -sf "$(dirname "$s2s")/cmake_install.cmake" "$work/build/"
  return 0
}

# Writes the script for one block (lines on stdin, first line number $2) to
# $1: each command marked with its line, expected output checked.
gen_script() {
  local out=$1 lineno=$2 line cmd="" cmd_line=0 want=() have_want=false
  flush() {
    [ -n "$cmd" ] || return 0
    if $have_want; then
      printf '__at=%d\n__got=$(\n%s\n)\n__check %d "$__got" <<'"'"'__S2S_EXPECTED__'"'"'\n' \
        "$cmd_line" "$cmd" "$cmd_line" >>"$out"
      printf '%s\n' "${want[@]}" >>"$out"
      printf '__S2S_EXPECTED__\n' >>"$out"
    else
      printf '__at=%d\n%s\n' "$cmd_line" "$cmd" >>"$out"
    fi
    cmd="" want=() have_want=false
  }
  # The first line of $__S2S_WHY says where and what failed.
  cat >"$out" <<'EOF'
shopt -s inherit_errexit  # -e inside $(...) too
__check() {  # __check LINE GOT, the expected lines on stdin
  local want
  want=$(cat)
  [ "$2" = "$want" ] && return 0
  { echo "$1: stdout is not what the '# =>' lines say (< wanted, > got):"
    diff <(printf '%s\n' "$want") <(printf '%s\n' "$2") | sed 's/^/  /'; } >"$__S2S_WHY"
  exit 1
}
trap '__rc=$?; [ -s "$__S2S_WHY" ] || echo "$__at: exit $__rc" >"$__S2S_WHY"' ERR
EOF
  while IFS= read -r line; do
    lineno=$((lineno + 1))
    if [[ $line == "# =>" || $line == "# => "* ]]; then
      if [ -z "$cmd" ]; then
        echo "$lineno: a '# =>' line with no command before it" >"$out.bad"
        return 1
      fi
      if [ "$line" = "# =>" ]; then want+=(""); else want+=("${line#"# => "}"); fi
      have_want=true
      continue
    fi
    if [ -n "$cmd" ] && [[ $cmd != *\\ ]]; then flush; fi
    if [ -z "$cmd" ]; then
      [[ $line =~ ^[[:space:]]*(#.*)?$ ]] && { printf '%s\n' "$line" >>"$out"; continue; }
      cmd=$line cmd_line=$lineno
    else
      cmd+=$'\n'$line
    fi
  done
  flush
}

# Runs every `sh test` block of one Markdown file.
run_file() {
  local md=$1 rel=${1#"$root"/} lineno=0 line in_block=false start=0 block=()
  while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    if ! $in_block; then
      [[ $line =~ ^\`\`\`sh[[:space:]]+test[[:space:]]*$ ]] && { in_block=true start=$lineno block=(); }
      continue
    fi
    if [[ $line =~ ^\`\`\`[[:space:]]*$ ]]; then
      in_block=false
      run_block "$md" "$start" "${block[@]}"
      continue
    fi
    block+=("$line")
  done <"$md"
  $in_block && { echo "FAIL: $rel:$start: the block is never closed"; fail=$((fail + 1)); }
  return 0
}

run_block() {
  local md=$1 rel=${1#"$root"/} start=$2
  shift 2
  n_block=$((n_block + 1))
  local work=$tmp/block$n_block script=$tmp/block$n_block.sh why=$tmp/block$n_block.why
  make_work "$work"
  if ! printf '%s\n' "$@" | gen_script "$script" "$start"; then
    echo "FAIL: $rel:$(cat "$script.bad")"
    fail=$((fail + 1))
    return
  fi
  : >"$why"
  (cd "$work" && PATH="$blocks_path:$work/build:$PATH" __S2S_WHY=$why timeout 300 bash -e "$script") \
    >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -eq 0 ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    if [ -s "$why" ]; then
      echo "FAIL: $rel:$(head -1 "$why")"
      echo "  \$ $(sed -n "$(head -1 "$why" | cut -d: -f1)p" "$md")"
      tail -n +2 "$why"
    elif [ "$rc" -eq 124 ]; then
      echo "FAIL: $rel:$start: the block took over 300 s"
    else
      echo "FAIL: $rel:$start: the block exited $rc"
    fi
    [ -s "$tmp/err" ] && { echo "  stderr:"; tail -n 5 "$tmp/err" | sed 's/^/    /'; }
  fi
  local now
  now=$(repo_state)
  if [ "$now" != "$before" ]; then
    echo "FAIL: $rel:$start: the block wrote into the repository:"
    diff <(printf '%s\n' "$before") <(printf '%s\n' "$now") | sed 's/^/  /'
    fail=$((fail + 1))
    before=$now
  fi
  rm -rf "$work"
}

n_block=0
for f in "${files[@]}"; do run_file "$f"; done
[ "$n_block" -gt 0 ] || { echo "FAIL: no \`\`\`sh test block found"; fail=$((fail + 1)); }
finish docs_test
