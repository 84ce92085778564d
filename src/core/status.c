// Status strings and the per-thread error message.
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[16384];

const char *s2s_status_str(s2s_status st) {
    static const char *names[S2S_STATUS_COUNT] = {
        [S2S_OK] = "ok",
        [S2S_ERR_IO] = "i/o error",
        [S2S_ERR_FORMAT] = "bad file format",
        [S2S_ERR_CONFIG] = "bad config",
        [S2S_ERR_INVALID] = "invalid argument",
        [S2S_ERR_NOMEM] = "out of memory",
        [S2S_ERR_BACKEND] = "oneDNN error",
    };
    if ((unsigned)st >= S2S_STATUS_COUNT) return "unknown status";
    return names[st];
}

const char *s2s_last_error(void) { return last_error; }

s2s_status s2s_fail(s2s_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return st;
}
