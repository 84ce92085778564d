// Status strings and the per-thread error message.
#include "core/error.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

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
        [S2S_ERR_BUSY] = "busy",
    };
    if ((unsigned)st >= S2S_STATUS_COUNT) return "unknown status";
    return names[st];
}

const char *s2s_last_error(void) { return last_error; }

s2s_status s2s_fail(s2s_status st, const char *fmt, ...) {
    // Formatted aside first: callers wrap the last message in a new one
    // (s2s_fail(st, "%s: %s", path, s2s_last_error())), and vsnprintf may
    // not read from the buffer it writes.
    char msg[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(last_error, msg, strlen(msg) + 1);
    return st;
}

// ---- quoting untrusted text ----

// Bytes in the UTF-8 character at s[0..n) (n > 0), or 0 when s[0] starts
// none: a stray continuation byte, a bad lead byte, a missing continuation.
static size_t utf8_char_len(const unsigned char *s, size_t n) {
    size_t len = s[0] < 0x80 ? 1 : s[0] >= 0xC2 && s[0] <= 0xDF ? 2
               : s[0] >= 0xE0 && s[0] <= 0xEF ? 3 : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
    if (len == 0 || len > n) return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return len;
}

// How s[0..n) is shown: *raw bytes copied as they are, or (raw == 0) one
// byte as \xNN. Returns the bytes of input it covers.
static size_t quote_unit(const unsigned char *s, size_t n, size_t *raw) {
    size_t len = utf8_char_len(s, n);
    bool control = len == 1 ? s[0] < 0x20 || s[0] == 0x7F
                            : len == 2 && s[0] == 0xC2 && s[1] < 0xA0;  // C1: U+0080..U+009F
    *raw = len == 0 || control ? 0 : len;
    return *raw ? len : 1;
}

const char *s2s_quote(char *out, size_t size, const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    // The whole text fits, or it is cut so that "..." fits after it.
    size_t full = 0, raw;
    for (size_t i = 0; i < n && full < size;) {
        i += quote_unit(u + i, n - i, &raw);
        full += raw ? raw : 4;
    }
    size_t room = full < size ? size - 1 : size - 4, len = 0;
    for (size_t i = 0; i < n;) {
        size_t used = quote_unit(u + i, n - i, &raw), shown = raw ? raw : 4;
        if (len + shown > room) break;
        if (raw)
            memcpy(out + len, s + i, raw);
        else
            snprintf(out + len, 5, "\\x%02x", u[i]);
        len += shown;
        i += used;
    }
    if (full >= size) {
        memcpy(out + len, "...", 3);
        len += 3;
    }
    out[len] = '\0';
    return out;
}
