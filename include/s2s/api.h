// s2s/api.h — S2S_API, the mark of the library's public functions.
//
// libs2s is built with -fvisibility=hidden: a function is part of its ABI
// (exported from libs2s.so) only when its declaration in include/s2s/
// carries S2S_API. Everything else in src/ is internal: the s2s command,
// its tools (s2s_tools) and the tests link the internals statically
// (the s2s_internal target), and no program using the library can reach
// them. tests/exported_symbols_test.sh holds the exported functions of
// libs2s.so equal to the S2S_API declarations.
#ifndef S2S_API_H
#define S2S_API_H

#if defined(__GNUC__) || defined(__clang__)
#define S2S_API __attribute__((visibility("default")))
#else
#define S2S_API
#endif

#endif
