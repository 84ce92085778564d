// Internal error helpers shared by every module.
#ifndef S2S_CORE_ERROR_H
#define S2S_CORE_ERROR_H

#include <stdio.h>
#include <stdlib.h>

#include "s2s/status.h"

// Records a message for s2s_last_error() and returns st, so a failing path
// reads `return s2s_fail(S2S_ERR_IO, "%s: cannot open", path);`.
s2s_status s2s_fail(s2s_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// Text from a file (a token, a tensor name, a metadata value), made safe to
// quote in a message: a control character (C0, DEL, C1) or a byte that is not
// part of a UTF-8 character becomes \xNN, so an ESC shows as "\x1b" instead
// of driving the terminal, and a newline cannot start a second line. Text
// that does not fit in size bytes is cut at a character and ends in "...".
// Writes out (size >= 8) and returns it.
#define S2S_QUOTE_SIZE 96
const char *s2s_quote(char *out, size_t size, const char *s, size_t n);

// Internal invariants only; bad input gets a status, never an abort.
#define S2S_ASSERT(x)                                                        \
    do {                                                                     \
        if (!(x)) {                                                          \
            fprintf(stderr, "%s:%d: internal error: %s\n", __FILE__,         \
                    __LINE__, #x);                                           \
            abort();                                                         \
        }                                                                    \
    } while (0)

// Propagate a non-OK status.
#define S2S_TRY(call)                                                        \
    do {                                                                     \
        s2s_status st_ = (call);                                             \
        if (st_ != S2S_OK) return st_;                                       \
    } while (0)

#endif
