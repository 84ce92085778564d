# Build options and the compiler flags they set. Included by the top-level
# CMakeLists.txt before any target is defined, so every target gets them.
#
#   BUILD_SHARED_LIBS  libs2s.so (default) or libs2s.a
#   S2S_NATIVE         -march=native: for a build that runs only here, never
#                      for a package (scripts/setup.sh turns it on for the
#                      development build)
#   S2S_WERROR         more warnings, all of them errors (CI's builds)
#   S2S_ASAN, S2S_UBSAN, S2S_TSAN   one sanitizer each; S2S_SANITIZE is
#                      ASan + UBSan. TSan excludes the other two.
#   S2S_FUZZ           libFuzzer targets in tests/fuzz/ (clang only); the
#                      library is built with ASan, UBSan and fuzzer coverage

option(BUILD_SHARED_LIBS "Build libs2s as a shared library (OFF: static)" ON)
option(S2S_NATIVE "Tune for this machine's CPU (-march=native); off for packages" OFF)
option(S2S_WERROR "All warnings, as errors" OFF)
option(S2S_ASAN "AddressSanitizer (with LeakSanitizer)" OFF)
option(S2S_UBSAN "UndefinedBehaviorSanitizer, aborting on the first report" OFF)
option(S2S_TSAN "ThreadSanitizer (with clang and Archer: scripts/test.sh --tsan)" OFF)
option(S2S_SANITIZE "AddressSanitizer and UBSan (S2S_ASAN + S2S_UBSAN)" OFF)
option(S2S_FUZZ "libFuzzer targets in tests/fuzz (needs clang)" OFF)

if(S2S_SANITIZE OR S2S_FUZZ)
  set(S2S_ASAN ON)
  set(S2S_UBSAN ON)
endif()
if(S2S_TSAN AND (S2S_ASAN OR S2S_UBSAN))
  message(FATAL_ERROR "S2S_TSAN cannot be combined with S2S_ASAN or S2S_UBSAN")
endif()
if(S2S_FUZZ AND NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "S2S_FUZZ needs clang (libFuzzer): configure with CC=clang-14")
endif()

add_compile_options(-Wall -Wextra -Wno-unused-parameter)
if(S2S_WERROR)
  add_compile_options(-Werror -Wshadow -Wpointer-arith -Wstrict-prototypes
                      -Wmissing-prototypes -Wvla -Wformat=2 -Wno-format-nonliteral -Wundef)
endif()
if(S2S_NATIVE)
  add_compile_options(-march=native)
endif()

set(S2S_SANITIZERS "")
if(S2S_ASAN)
  list(APPEND S2S_SANITIZERS address)
endif()
if(S2S_UBSAN)
  list(APPEND S2S_SANITIZERS undefined)
  add_compile_options(-fno-sanitize-recover=undefined)
endif()
if(S2S_TSAN)
  list(APPEND S2S_SANITIZERS thread)
endif()
if(S2S_SANITIZERS)
  list(JOIN S2S_SANITIZERS "," S2S_SANITIZERS)
  add_compile_options(-fsanitize=${S2S_SANITIZERS} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${S2S_SANITIZERS})
  # What an out-of-tree program linked with this build needs (tests/install_test.sh).
  set(S2S_SANITIZER_FLAGS "-fsanitize=${S2S_SANITIZERS}")
endif()
if(S2S_FUZZ)
  # Coverage for libFuzzer everywhere; only the fuzz targets link its main().
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# Calls inside libs2s.so may be inlined as in the static library: nothing
# interposes s2s's own symbols.
if(BUILD_SHARED_LIBS)
  add_compile_options(-fno-semantic-interposition)
endif()
