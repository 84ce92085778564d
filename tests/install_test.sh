#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then examples/translate_sentences.c
# built out of the tree twice, with pkg-config and with find_package(s2s),
# and run on the shipped model; and the installed s2s run from the prefix.
#   install_test.sh BUILD_DIR C_COMPILER [EXTRA_FLAGS]
# EXTRA_FLAGS: what a program linked with this build needs too (the
# sanitizer flags of a sanitizer build).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
build=$1 cc=$2 flags=${3:-}
prefix=$tmp/prefix
model=$root/models/zh-en.safetensors
want=$(printf '我爱吃苹果\tI love to eat apples.')

check "cmake --install" run 0 cmake --install "$build" --prefix "$prefix"
libdir=$(cd "$prefix" && ls -d lib*/pkgconfig | head -1 | xargs dirname)
for f in bin/s2s include/s2s/s2s.h include/s2s/decode.h "$libdir/pkgconfig/s2s.pc" \
         "$libdir/cmake/s2s/s2sConfig.cmake" "$libdir/cmake/s2s/s2sConfigVersion.cmake"; do
  check "installed $f" [ -f "$prefix/$f" ]
done
check "no private header installed" [ ! -e "$prefix/include/s2s/util.h" ]
static=()
[ -f "$prefix/$libdir/libs2s.a" ] && static=(--static)

# The installed command runs from the prefix (it links the library statically).
run 0 "$prefix/bin/s2s" translate -m "$model" 我爱吃苹果
check "installed s2s translates" out_has "^I love to eat apples.$"

# pkg-config: oneDNN stays private (named only for a static link).
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
run 0 pkg-config --libs s2s
check "pkg-config --libs has no oneDNN" bash -c "! grep -q dnnl '$tmp/out'"
run 0 pkg-config --modversion s2s
check "pkg-config version" out_has '^[0-9]*\.[0-9]*\.[0-9]*$'
# shellcheck disable=SC2046,SC2086
run 0 "$cc" $flags $(pkg-config --cflags s2s) "$root/examples/translate_sentences.c" -o "$tmp/ts_pc" \
  $(pkg-config --libs "${static[@]}" s2s) -Wl,-rpath,"$prefix/$libdir"
check "pkg-config build" [ -x "$tmp/ts_pc" ]
run 0 "$tmp/ts_pc" "$model" 我爱吃苹果
check "pkg-config build translates" out_has "^$want	(logprob -[0-9.]*)$"

# find_package(s2s) in a project of its own.
mkdir -p "$tmp/app"
cat >"$tmp/app/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.18)
project(app C)
find_package(s2s 0.1 REQUIRED)
add_executable(translate_sentences "$root/examples/translate_sentences.c")
target_link_libraries(translate_sentences PRIVATE s2s::s2s)
CMAKE
configure() {  # configure BUILD_DIR: the app against the prefix
  run "$1" cmake -S "$tmp/app" -B "$tmp/app/$2" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags"
}
check "find_package(s2s) configures" configure 0 build
check "find_package(s2s) build" run 0 cmake --build "$tmp/app/build"
run 0 "$tmp/app/build/translate_sentences" "$model" 我爱吃苹果 猫吃鱼 我爱吃苹果。他明天看书吗？
check "find_package build translates" out_has "^$want	(logprob -[0-9.]*)$"
check "find_package build, second sentence" out_has "^猫吃鱼	Cats eat fish.	"
check "find_package build, a line of two sentences (s2s_translate_lines)" \
  out_has "^我爱吃苹果。他明天看书吗？	I love to eat apples. Will he read books tomorrow?	"
# s2sConfigVersion.cmake: a 0.x release satisfies only its own minor version.
sed -i 's/find_package(s2s 0.1 REQUIRED)/find_package(s2s 0.99 REQUIRED)/' "$tmp/app/CMakeLists.txt"
check "find_package(s2s 0.99) is refused" configure 1 build-0.99
finish install
