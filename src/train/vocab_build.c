// `s2s vocab build`: a vocab file from one column of a TSV corpus.
//
// Tokens are counted in a string hash table (open addressing), then sorted
// by count descending and byte order, so the file is the same whatever the
// line order of equally frequent tokens.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/safe_write.h"
#include "core/strbuf.h"
#include "core/util.h"
#include "core/io.h"
#include "s2s/train.h"
#include "train/data.h"
#include "tokenizer/tsv.h"

typedef struct entry {
    char *tok;  // NULL: empty slot
    long long count;
} entry;

typedef struct table {
    entry *e;
    size_t cap, n;
} table;

static uint64_t hash_str(const char *s) { return s2s_fnv1a(S2S_FNV1A_INIT, s, strlen(s)); }

static bool table_grow(table *t) {
    size_t cap = t->cap ? t->cap * 2 : 1024;
    entry *e = calloc(cap, sizeof *e);
    if (!e) return false;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->e[i].tok) continue;
        size_t j = hash_str(t->e[i].tok) & (cap - 1);
        while (e[j].tok) j = (j + 1) & (cap - 1);
        e[j] = t->e[i];
    }
    free(t->e);
    t->e = e;
    t->cap = cap;
    return true;
}

static bool table_add(table *t, const char *tok) {
    if ((t->n + 1) * 2 > t->cap && !table_grow(t)) return false;
    size_t j = hash_str(tok) & (t->cap - 1);
    while (t->e[j].tok && strcmp(t->e[j].tok, tok) != 0) j = (j + 1) & (t->cap - 1);
    if (!t->e[j].tok) {
        size_t n = strlen(tok) + 1;
        t->e[j].tok = malloc(n);
        if (!t->e[j].tok) return false;
        memcpy(t->e[j].tok, tok, n);
        t->n++;
    }
    t->e[j].count++;
    return true;
}

static void table_free(table *t) {
    for (size_t i = 0; i < t->cap; i++) free(t->e[i].tok);
    free(t->e);
}

static int by_count(const void *a, const void *b) {
    const entry *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->tok, y->tok);
}

static bool is_special(const char *tok) {
    for (int i = 0; i < S2S_NUM_SPECIALS; i++)
        if (strcmp(tok, s2s_special_token(i)) == 0) return true;
    return false;
}

// A vocab of the specials alone: tokenizing against it splits text as
// s2s_tokenize does, every piece unknown.
static s2s_status specials_vocab(s2s_vocab **out) {
    s2s_buf b = {0};
    for (int i = 0; i < S2S_NUM_SPECIALS; i++) s2s_buf_printf(&b, "%s\n", s2s_special_token(i));
    char *text = s2s_buf_take(&b);
    if (!text) return s2s_fail(S2S_ERR_NOMEM, "vocab build: out of memory");
    s2s_status st = s2s_vocab_from_string(out, text, "specials");
    free(text);
    return st;
}

static s2s_status count_file(table *t, FILE *f, const char *path, int column,
                             const s2s_vocab *empty) {
    char *buf = NULL;
    size_t cap = 0;
    size_t got;
    bool too_long = false;
    int line = 0, r;
    s2s_tokens tok = {0};
    s2s_status st = S2S_OK;
    while (st == S2S_OK &&
           (r = s2s_read_line(f, &buf, &cap, S2S_LINE_MAX_BYTES, &got, &too_long)) > 0) {
        char *tgt, *third;
        if (too_long) {
            st = s2s_fail(S2S_ERR_FORMAT, "%s:%d: line longer than %d bytes", path, ++line,
                          S2S_LINE_MAX_BYTES);
            break;
        }
        st = s2s_tsv_split(buf, got, path, ++line, &tgt, &third);
        if (st != S2S_OK) break;
        char *text = column == 0 ? buf : tgt;
        if (s2s_tokenize(empty, text, &tok) != S2S_OK) {
            st = s2s_fail(S2S_ERR_FORMAT, "%s:%d: %s", path, line, s2s_last_error());
            break;
        }
        for (int i = 0; i < tok.n && st == S2S_OK; i++)
            if (!is_special(tok.pieces[i]) && !table_add(t, tok.pieces[i]))
                st = s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    }
    if (st == S2S_OK && r < 0) st = s2s_read_line_fail(path, line, r);
    free(buf);
    s2s_tokens_free(&tok);
    return st;
}

static bool put_line(s2s_safe_file *f, const char *s) {
    return s2s_safe_write(f, s, strlen(s)) && s2s_safe_write(f, "\n", 1);
}

// Through the safe-write module: a reader never sees half a file. A write
// error stops nothing here; commit reports it.
static s2s_status write_vocab(const char *out, const entry *e, size_t n) {
    s2s_safe_file f;
    S2S_TRY(s2s_safe_open(&f, out));
    for (int i = 0; i < S2S_NUM_SPECIALS; i++) put_line(&f, s2s_special_token(i));
    for (size_t i = 0; i < n; i++) put_line(&f, e[i].tok);
    return s2s_safe_commit(&f);
}

s2s_status s2s_vocab_build(const char *tsv_path, const s2s_vocab_build_params *p,
                           const char *out_path, int *n_tokens) {
    if (p->column < 0 || p->column > 1 || p->min_count < 1 || p->max_size < 0 ||
        (p->max_size > 0 && p->max_size < S2S_NUM_SPECIALS))
        return s2s_fail(S2S_ERR_INVALID,
                        "vocab build: column 0 or 1, min count >= 1, max size 0 or >= %d",
                        S2S_NUM_SPECIALS);
    s2s_vocab *empty;
    S2S_TRY(specials_vocab(&empty));
    const char *why;  // not fopen: a FIFO with no writer would block it for good
    FILE *f = s2s_open_read(tsv_path, /*regular_only=*/false, &why);
    if (!f) {
        s2s_vocab_free(empty);
        return s2s_fail(S2S_ERR_IO, "%s: cannot open: %s", tsv_path,
                        why ? why : strerror(errno));
    }
    table t = {0};
    s2s_status st = count_file(&t, f, tsv_path, p->column, empty);
    fclose(f);
    s2s_vocab_free(empty);
    entry *list = NULL;
    size_t n = 0;
    if (st == S2S_OK) {
        list = s2s_calloc(t.n + 1, sizeof *list);
        if (!list) st = S2S_ERR_NOMEM;
        for (size_t i = 0; list && i < t.cap; i++)
            if (t.e[i].tok && t.e[i].count >= p->min_count) list[n++] = t.e[i];
    }
    if (st == S2S_OK) {
        qsort(list, n, sizeof *list, by_count);
        if (p->max_size > 0 && n > (size_t)(p->max_size - S2S_NUM_SPECIALS))
            n = (size_t)(p->max_size - S2S_NUM_SPECIALS);
        st = write_vocab(out_path, list, n);
    }
    if (st == S2S_OK && n_tokens) *n_tokens = (int)n + S2S_NUM_SPECIALS;
    free(list);
    table_free(&t);
    return st;
}
