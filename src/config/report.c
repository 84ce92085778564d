// Collecting config problems: "file:line:col: message" with the source line
// and a caret under the column, every problem of a file (and its bases and
// overrides) gathered in the top context before the load fails.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/load.h"
#include "core/error.h"

// At most this many problems are listed; the rest are counted.
#define MAX_ERRORS 20
// s2s_last_error() keeps about 2 KiB (src/core/status.c); stop listing
// problems before the message would be cut in the middle of a line.
#define MSG_BUDGET 1900
// Source lines longer than this are shown as a window around the caret.
#define LINE_WINDOW 160

s2s_cfg_ctx *s2s_cfg_top(s2s_cfg_ctx *c) { return c->root ? c->root : c; }

bool s2s_cfg_keep(s2s_cfg_ctx *c, char *p) {
    s2s_cfg_ctx *t = s2s_cfg_top(c);
    if (!p) {
        t->oom = true;
        return false;
    }
    if (t->n_kept == t->cap_kept) {
        size_t cap = t->cap_kept ? 2 * t->cap_kept : 8;
        char **k = realloc(t->kept, cap * sizeof *k);
        if (!k) {
            free(p);
            t->oom = true;
            return false;
        }
        t->kept = k;
        t->cap_kept = cap;
    }
    t->kept[t->n_kept++] = p;
    return true;
}

static bool is_break(const char *t, size_t len, size_t i, size_t *width) {
    unsigned char c = (unsigned char)t[i];
    if (c == '\n') { *width = 1; return true; }
    if (c == '\r') { *width = (i + 1 < len && t[i + 1] == '\n') ? 2 : 1; return true; }
    // libyaml also breaks lines at NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR.
    if (c == 0xC2 && i + 1 < len && (unsigned char)t[i + 1] == 0x85) { *width = 2; return true; }
    if (c == 0xE2 && i + 2 < len && (unsigned char)t[i + 1] == 0x80 &&
        ((unsigned char)t[i + 2] == 0xA8 || (unsigned char)t[i + 2] == 0xA9)) {
        *width = 3;
        return true;
    }
    return false;
}

static bool is_utf8_cont(char c) { return ((unsigned char)c & 0xC0) == 0x80; }

yaml_mark_t s2s_cfg_offset_to_mark(const char *t, size_t len, size_t at) {
    yaml_mark_t mark = {0};
    size_t w;
    for (size_t i = 0; i < at && i < len;) {
        if (is_break(t, len, i, &w)) {
            mark.line++;
            mark.column = 0;
            i += w;
        } else {
            if (!is_utf8_cont(t[i])) mark.column++;
            i++;
        }
    }
    return mark;
}

// Appends "\n<source line>\n<caret line>" for 0-based line and column (in
// characters, as libyaml counts them). Nothing when the line is not there.
static void quote_source(s2s_buf *b, const char *t, size_t len, size_t line, size_t col) {
    if (!t) return;
    size_t i = 0, w;
    for (size_t l = 0; l < line; l++) {
        while (i < len && !is_break(t, len, i, &w)) i++;
        if (i >= len) return;
        i += w;
    }
    size_t start = i, end = i;
    while (end < len && !is_break(t, len, end, &w)) end++;
    size_t caret = start;
    for (size_t c = 0; c < col && caret < end;) {
        caret++;
        if (caret >= end || !is_utf8_cont(t[caret])) c++;
    }
    size_t from = start, to = end;
    if (end - start > LINE_WINDOW) {
        from = caret > start + LINE_WINDOW / 2 ? caret - LINE_WINDOW / 2 : start;
        while (from > start && is_utf8_cont(t[from])) from--;
        to = from + LINE_WINDOW < end ? from + LINE_WINDOW : end;
        while (to < end && is_utf8_cont(t[to])) to++;
    }
    s2s_buf_puts(b, "\n");
    if (from > start) s2s_buf_puts(b, "...");
    for (size_t j = from; j < to; j++) {
        unsigned char c = (unsigned char)t[j];
        char ch = ((c < 0x20 && c != '\t') || c == 0x7f) ? '?' : (char)c;
        s2s_buf_append(b, &ch, 1);
    }
    if (to < end) s2s_buf_puts(b, "...");
    s2s_buf_puts(b, "\n");
    if (from > start) s2s_buf_puts(b, "   ");
    for (size_t j = from; j < caret; j++) {
        if (t[j] == '\t') s2s_buf_puts(b, "\t");
        else if (!is_utf8_cont(t[j])) s2s_buf_puts(b, " ");
    }
    s2s_buf_puts(b, "^");
}

void s2s_cfg_report_in(s2s_cfg_ctx *ctx, const char *name, const char *text, size_t len,
                       const yaml_mark_t *mark, const char *what) {
    s2s_cfg_ctx *c = s2s_cfg_top(ctx);
    c->n_errors++;
    if (c->n_errors > MAX_ERRORS || (c->msg.len > 0 && c->msg.len >= MSG_BUDGET)) {
        c->n_omitted++;
        return;
    }
    s2s_buf one = {0};
    if (mark && name) {
        s2s_buf_printf(&one, "%s:%zu:%zu: %s", name, mark->line + 1, mark->column + 1, what);
        quote_source(&one, text, len, mark->line, mark->column);
    } else if (name) {
        s2s_buf_printf(&one, "%s: %s", name, what);
    } else {
        s2s_buf_puts(&one, what);
    }
    if (one.oom) {
        c->oom = true;
    } else if (c->msg.len > 0 && c->msg.len + 1 + one.len > MSG_BUDGET) {
        c->n_omitted++;
    } else {
        if (c->msg.len > 0) s2s_buf_puts(&c->msg, "\n");
        s2s_buf_append(&c->msg, one.s, one.len);
    }
    s2s_buf_free(&one);
}

void s2s_cfg_report(s2s_cfg_ctx *c, const yaml_mark_t *mark, const char *what) {
    s2s_cfg_report_in(c, c->name, c->text, c->len, mark, what);
}

void s2s_cfg_reportf(s2s_cfg_ctx *c, const yaml_mark_t *mark, const char *fmt, ...) {
    char small[512];  // cut at 511 bytes
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    s2s_cfg_report(c, mark, small);
}

void s2s_cfg_report_buf(s2s_cfg_ctx *c, const yaml_mark_t *mark, s2s_buf *b) {
    if (b->oom) s2s_cfg_top(c)->oom = true;
    else s2s_cfg_report(c, mark, b->s ? b->s : "");
    s2s_buf_free(b);
}

s2s_status s2s_cfg_finish(s2s_cfg_ctx *c) {
    s2s_status st = S2S_OK;
    if (c->oom || c->msg.oom) {
        st = s2s_fail(S2S_ERR_NOMEM, "%s: out of memory while reading the config", c->name);
    } else if (c->n_errors > 0) {
        if (c->n_omitted > 0)
            s2s_buf_printf(&c->msg, "\n(%d more problem%s not shown)", c->n_omitted,
                           c->n_omitted == 1 ? "" : "s");
        st = c->msg.oom ? s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", c->name)
                        : s2s_fail(S2S_ERR_CONFIG, "%s", c->msg.s);
    }
    s2s_buf_free(&c->msg);
    for (size_t i = 0; i < c->n_kept; i++) free(c->kept[i]);
    free(c->kept);
    free(c->origin);
    return st;
}
