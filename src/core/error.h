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
