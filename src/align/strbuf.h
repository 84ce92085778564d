// A growable string for the align module's text and HTML writers
// (internal). Appends after a failed allocation are no-ops; check `failed`
// once at the end.
#ifndef S2S_ALIGN_STRBUF_H
#define S2S_ALIGN_STRBUF_H

#include <stdarg.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct s2s_strbuf {
    char *s;
    size_t len, cap;
    bool failed;
} s2s_strbuf;

static inline bool s2s_sb_reserve(s2s_strbuf *b, size_t extra) {
    if (b->failed) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            b->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *s = realloc(b->s, cap);
    if (!s) {
        b->failed = true;
        return false;
    }
    b->s = s;
    b->cap = cap;
    return true;
}

static inline void s2s_sb_putn(s2s_strbuf *b, const char *s, size_t n) {
    if (!s2s_sb_reserve(b, n)) return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static inline void s2s_sb_puts(s2s_strbuf *b, const char *s) { s2s_sb_putn(b, s, strlen(s)); }

static inline void s2s_sb_putc(s2s_strbuf *b, char c) { s2s_sb_putn(b, &c, 1); }

static inline void s2s_sb_repeat(s2s_strbuf *b, const char *s, int times) {
    for (int i = 0; i < times; i++) s2s_sb_puts(b, s);
}

__attribute__((format(printf, 2, 3))) static inline void s2s_sb_printf(s2s_strbuf *b,
                                                                       const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char small[128];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        s2s_sb_putn(b, small, (size_t)n);
        return;
    }
    if (!s2s_sb_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

#endif
