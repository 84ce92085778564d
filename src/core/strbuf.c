// The growable string (strbuf.h).
#include "core/strbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool s2s_buf_reserve(s2s_buf *b, size_t extra) {
    if (b->oom) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            b->oom = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(b->s, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->s = p;
    b->cap = cap;
    return true;
}

void s2s_buf_append(s2s_buf *b, const char *s, size_t n) {
    if (!s2s_buf_reserve(b, n)) return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void s2s_buf_puts(s2s_buf *b, const char *s) { s2s_buf_append(b, s, strlen(s)); }

void s2s_buf_putc(s2s_buf *b, char c) { s2s_buf_append(b, &c, 1); }

void s2s_buf_repeat(s2s_buf *b, const char *s, int times) {
    for (int i = 0; i < times; i++) s2s_buf_puts(b, s);
}

void s2s_buf_printf(s2s_buf *b, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        s2s_buf_append(b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    s2s_buf_append(b, big, (size_t)n);
    free(big);
}

char *s2s_buf_take(s2s_buf *b) {
    if (!b->oom && !b->s) s2s_buf_append(b, "", 0);
    if (b->oom) {
        s2s_buf_free(b);
        return NULL;
    }
    char *s = b->s;
    *b = (s2s_buf){0};
    return s;
}

void s2s_buf_free(s2s_buf *b) {
    free(b->s);
    *b = (s2s_buf){0};
}
