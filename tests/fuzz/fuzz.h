// Shared by the libFuzzer targets in tests/fuzz/ (see README.md there).
#ifndef S2S_FUZZ_H
#define S2S_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "s2s/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

// The input as a NUL-terminated string (it may hold NULs before the end).
// Caller frees; aborts on out of memory.
char *s2s_fuzz_string(const uint8_t *data, size_t size);

// A path that reads back exactly data[0..size): a memfd's /proc/self/fd
// entry, reused from one input to the next. Aborts if it cannot be made.
const char *s2s_fuzz_file(const uint8_t *data, size_t size);

// The shipped vocabularies, vocab/zh.txt and vocab/en.txt. Aborts if they
// cannot be read.
void s2s_fuzz_shipped_vocabs(s2s_vocab **zh, s2s_vocab **en);

#endif
