// A growable string (internal), for messages, YAML, JSON, HTML, token
// pieces and text written by the library. It never overflows; after a
// failed allocation every append is a no-op and `oom` stays set, so callers
// check once at the end (s2s_buf_take returns NULL then).
#ifndef S2S_CORE_STRBUF_H
#define S2S_CORE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct s2s_buf {
    char *s;     // NUL-terminated once anything was appended
    size_t len;
    size_t cap;
    bool oom;
} s2s_buf;

// Room for `extra` more bytes (and the NUL) without another allocation;
// false, with `oom` set, when memory ran out. A buffer {.s = block} (len
// and cap 0) reuses a malloc'd block of unknown size: it is resized.
bool s2s_buf_reserve(s2s_buf *b, size_t extra);
void s2s_buf_append(s2s_buf *b, const char *s, size_t n);
void s2s_buf_puts(s2s_buf *b, const char *s);
void s2s_buf_putc(s2s_buf *b, char c);
void s2s_buf_repeat(s2s_buf *b, const char *s, int times);
void s2s_buf_printf(s2s_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Hands over the string ("" if empty); NULL (and frees) if memory ran out.
char *s2s_buf_take(s2s_buf *b);
void s2s_buf_free(s2s_buf *b);

#endif
