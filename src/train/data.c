// TSV loading, tokenization and token-count batching.
#include "train/data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "s2s/align.h"
#include "core/io.h"
#include "align/align.h"
#include "tokenizer/tsv.h"

// ---- growable arrays ----

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 64;
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem) return false;
        c *= 2;
    }
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

// ---- loading ----

typedef struct loader {
    s2s_dataset *d;
    size_t cap_ex, n_ids, cap_ids;
    size_t n_refs, cap_refs;   // ref_offs entries
    size_t *ref_offs;          // offsets into ref_text, turned into pointers at the end
    size_t n_text, cap_text;
    size_t cap_links, cap_coref;  // pairs d->links and d->coref can hold
    s2s_alignment align;        // one line's links, reused
    s2s_alignment coref_tgt;    // one line's target-side coreference, checked, not kept
    s2s_tokens tok;
    const volatile sig_atomic_t *stop;  // s2s_dataset_load_until's; NULL: none
} loader;

// Re-wraps the tokenizer's message as "file:line: message".
static s2s_status at_line(s2s_status st, const char *path, int line, const char *what) {
    return s2s_fail(st, "%s:%d: %s%s", path, line, what, s2s_last_error());
}

// Appends one side's tokens (ids, and their pieces with refs) to the dataset.
static s2s_status add_tokens(loader *L, const s2s_tokens *tok, const char *path, int line,
                             const char *side, int max_len, size_t *off, int *len, bool refs) {
    int n = tok->n;
    if (n + 1 > max_len)
        return s2s_fail(S2S_ERR_FORMAT,
                        "%s:%d: %s has %d tokens; model.max_len %d allows at most %d", path,
                        line, side, n, max_len, max_len - 1);
    if (!grow((void **)&L->d->ids, &L->cap_ids, L->n_ids + (size_t)n, sizeof(int)))
        return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    if (n > 0) memcpy(L->d->ids + L->n_ids, tok->ids, (size_t)n * sizeof(int));
    *off = L->n_ids;
    *len = n;
    L->n_ids += (size_t)n;
    if (refs) {
        if (!grow((void **)&L->ref_offs, &L->cap_refs, L->n_refs + (size_t)n, sizeof(size_t)))
            return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
        for (int i = 0; i < n; i++) {
            size_t k = strlen(tok->pieces[i]) + 1;
            if (!grow((void **)&L->d->ref_text, &L->cap_text, L->n_text + k, 1))
                return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
            memcpy(L->d->ref_text + L->n_text, tok->pieces[i], k);
            L->ref_offs[L->n_refs++] = L->n_text;
            L->n_text += k;
        }
    }
    return S2S_OK;
}

static s2s_status add_side(loader *L, const s2s_vocab *v, const char *text, const char *path,
                           int line, const char *side, int max_len, size_t *off, int *len,
                           bool refs) {
    if (s2s_tokenize(v, text, &L->tok) != S2S_OK) {
        char what[32];
        snprintf(what, sizeof what, "%s: ", side);
        return at_line(S2S_ERR_FORMAT, path, line, what);
    }
    return add_tokens(L, &L->tok, path, line, side, max_len, off, len, refs);
}

// A new example at the end of the dataset, or NULL when out of memory.
static s2s_example *new_example(loader *L, int line) {
    if (!grow((void **)&L->d->ex, &L->cap_ex, (size_t)L->d->n + 1, sizeof(s2s_example)))
        return NULL;
    s2s_example *e = &L->d->ex[L->d->n];
    memset(e, 0, sizeof *e);
    e->line = line;
    e->ref = L->n_refs;
    return e;
}

// Appends a's links as (src, tgt) pairs to *pairs (holding *n of *cap).
static bool append_pairs(int **pairs, size_t *n, size_t *cap, const s2s_alignment *a) {
    size_t k = (size_t)a->n;
    if (!grow((void **)pairs, cap, 2 * (*n + k), sizeof(int))) return false;
    for (size_t i = 0; i < k; i++) {
        (*pairs)[2 * (*n + i)] = a->links[i].src;
        (*pairs)[2 * (*n + i) + 1] = a->links[i].tgt;
    }
    *n += k;
    return true;
}

// "path:line", for the parsers' messages. Caller frees; NULL: out of memory.
static char *where_of(const char *path, int line) {
    size_t wn = strlen(path) + 16;
    char *where = malloc(wn);
    if (where) snprintf(where, wn, "%s:%d", path, line);
    return where;
}

// Parses one line's alignment column into e's links; text NULL: no links.
static s2s_status add_links(loader *L, s2s_example *e, const char *text, const char *path,
                            int line) {
    e->link = L->d->n_links;
    e->n_links = 0;
    if (!text) return S2S_OK;
    char *where = where_of(path, line);
    if (!where) return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    s2s_status st = s2s_alignment_parse(&L->align, text, where);
    if (st == S2S_OK) st = s2s_alignment_check(&L->align, e->src_len, e->tgt_len, where);
    free(where);
    if (st != S2S_OK) return st;
    size_t first = L->d->n_links;
    if (!append_pairs(&L->d->links, &L->d->n_links, &L->cap_links, &L->align))
        return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    e->n_links = (int)(L->d->n_links - first);
    return S2S_OK;
}

// A side's coreference links must name tokens of that side.
static s2s_status check_coref(const s2s_alignment *a, int n, const char *side,
                              const char *where) {
    for (int k = 0; k < a->n; k++)
        if (a->links[k].src >= n || a->links[k].tgt >= n)
            return s2s_fail(S2S_ERR_FORMAT, "%s: coreference link %d-%d out of range (the %s "
                            "has %d tokens)", where, a->links[k].src, a->links[k].tgt, side, n);
    return S2S_OK;
}

// Parses one line's coreference column; keeps its source side as e's
// coref pairs (pronoun, antecedent). text NULL: none.
static s2s_status add_coref(loader *L, s2s_example *e, const char *text, const char *path,
                            int line) {
    e->coref = L->d->n_coref;
    e->n_coref = 0;
    if (!text) return S2S_OK;
    char *where = where_of(path, line);
    if (!where) return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    s2s_status st = s2s_coref_parse(&L->align, &L->coref_tgt, text, where);
    if (st == S2S_OK) st = check_coref(&L->align, e->src_len, "source", where);
    if (st == S2S_OK) st = check_coref(&L->coref_tgt, e->tgt_len, "target", where);
    free(where);
    if (st != S2S_OK) return st;
    size_t first = L->d->n_coref;
    if (!append_pairs(&L->d->coref, &L->d->n_coref, &L->cap_coref, &L->align))
        return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    e->n_coref = (int)(L->d->n_coref - first);
    return S2S_OK;
}

static s2s_status load_lines(loader *L, FILE *f, const char *path, const s2s_vocab *sv,
                             const s2s_vocab *tv, int max_len, int keep) {
    char *buf = NULL;
    size_t cap = 0;
    size_t got;
    bool too_long = false;
    int line = 0, r;
    s2s_status st = S2S_OK;
    while (st == S2S_OK &&
           (r = s2s_read_line(f, &buf, &cap, S2S_LINE_MAX_BYTES, &got, &too_long)) > 0) {
        char *tgt, *third, *fourth;
        // A big file, or a pipe that goes on, takes long: a signal stops it.
        if (L->stop && *L->stop) {
            st = s2s_fail(S2S_ERR_INVALID, "%s: stopped at line %d by a signal", path, line + 1);
            break;
        }
        if (too_long) {
            st = s2s_fail(S2S_ERR_FORMAT, "%s:%d: line longer than %d bytes", path, ++line,
                          S2S_LINE_MAX_BYTES);
            break;
        }
        st = s2s_tsv_split(buf, got, path, ++line, &tgt, &third);
        if (st != S2S_OK) break;
        fourth = s2s_tsv_next(third);  // also ends the third column
        s2s_example *e = new_example(L, line);
        if (!e) {
            st = s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
            break;
        }
        st = add_side(L, sv, buf, path, line, "source", max_len, &e->src, &e->src_len, false);
        if (st == S2S_OK)
            st = add_side(L, tv, tgt, path, line, "target", max_len, &e->tgt, &e->tgt_len,
                          keep & S2S_DATA_REFS);
        if (st == S2S_OK && (keep & S2S_DATA_ALIGN)) st = add_links(L, e, third, path, line);
        if (st == S2S_OK && (keep & S2S_DATA_COREF)) st = add_coref(L, e, fourth, path, line);
        if (st == S2S_OK) L->d->n++;
    }
    if (st == S2S_OK && r < 0) st = s2s_read_line_fail(path, line, r);
    if (st == S2S_OK && L->d->n == 0)
        st = s2s_fail(S2S_ERR_FORMAT, "%s: no sentence pairs in the file", path);
    free(buf);
    return st;
}

// Frees the loader and hands over its dataset, the reference pieces made
// into pointers, or frees it when st is a failure.
static s2s_status finish_load(loader *L, s2s_status st, bool keep_refs, s2s_dataset **out) {
    s2s_tokens_free(&L->tok);
    s2s_alignment_free(&L->align);
    s2s_alignment_free(&L->coref_tgt);
    if (st == S2S_OK && keep_refs) {
        L->d->ref_tokens = s2s_calloc(L->n_refs + 1, sizeof(char *));
        if (!L->d->ref_tokens) st = S2S_ERR_NOMEM;
        for (size_t i = 0; st == S2S_OK && i < L->n_refs; i++)
            L->d->ref_tokens[i] = L->d->ref_text + L->ref_offs[i];
    }
    free(L->ref_offs);
    if (st != S2S_OK) {
        s2s_dataset_free(L->d);
        return st;
    }
    *out = L->d;
    return S2S_OK;
}

s2s_status s2s_dataset_load(s2s_dataset **out, const char *path, const s2s_vocab *src_vocab,
                            const s2s_vocab *tgt_vocab, int max_len, int keep) {
    return s2s_dataset_load_until(out, path, src_vocab, tgt_vocab, max_len, keep, NULL);
}

s2s_status s2s_dataset_load_until(s2s_dataset **out, const char *path,
                                  const s2s_vocab *src_vocab, const s2s_vocab *tgt_vocab,
                                  int max_len, int keep, const volatile sig_atomic_t *stop) {
    *out = NULL;
    const char *why;  // not fopen: a FIFO with no writer would block it for good
    FILE *f = s2s_open_read(path, /*regular_only=*/false, &why);
    if (!f)
        return s2s_fail(S2S_ERR_IO, "%s: cannot open: %s", path, why ? why : strerror(errno));
    loader L = {.stop = stop};
    L.d = s2s_calloc(1, sizeof *L.d);
    s2s_status st = L.d ? load_lines(&L, f, path, src_vocab, tgt_vocab, max_len, keep)
                        : S2S_ERR_NOMEM;
    fclose(f);
    // Even without a single link, so batches say "no link" rather than "no data".
    if (st == S2S_OK && (keep & S2S_DATA_ALIGN) && !L.d->links) {
        L.d->links = s2s_calloc(2, sizeof(int));
        if (!L.d->links) st = s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    }
    if (st == S2S_OK && (keep & S2S_DATA_COREF) && !L.d->coref) {
        L.d->coref = s2s_calloc(2, sizeof(int));
        if (!L.d->coref) st = s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    }
    return finish_load(&L, st, keep & S2S_DATA_REFS, out);
}

s2s_status s2s_dataset_from_tokens(s2s_dataset **out, const s2s_tokens *src,
                                   const s2s_tokens *tgt, int n, int max_len, bool keep_refs) {
    *out = NULL;
    loader L = {0};
    L.d = s2s_calloc(1, sizeof *L.d);
    s2s_status st = L.d ? S2S_OK : S2S_ERR_NOMEM;
    for (int i = 0; i < n && st == S2S_OK; i++) {
        s2s_example *e = new_example(&L, i + 1);
        if (!e) st = s2s_fail(S2S_ERR_NOMEM, "out of memory");
        if (st == S2S_OK)
            st = add_tokens(&L, &src[i], "pair", i + 1, "source", max_len, &e->src, &e->src_len,
                            false);
        if (st == S2S_OK)
            st = add_tokens(&L, &tgt[i], "pair", i + 1, "target", max_len, &e->tgt, &e->tgt_len,
                            keep_refs);
        if (st == S2S_OK) L.d->n++;
    }
    return finish_load(&L, st, keep_refs, out);
}

void s2s_dataset_free(s2s_dataset *d) {
    if (!d) return;
    free(d->ex);
    free(d->ids);
    free(d->ref_tokens);
    free(d->ref_text);
    free(d->links);
    free(d->coref);
    free(d);
}

// ---- batch plans ----

typedef struct sort_item {
    int len, pos, index;
} sort_item;

static int by_len(const void *a, const void *b) {
    const sort_item *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->pos - y->pos;  // the random position breaks ties: a stable, seeded order
}

static uint64_t below(s2s_rng *r, uint64_t k) { return s2s_rng_next(r) % k; }

// Cuts p->order into batches greedily while n * (S + T) stays within
// batch_tokens: p->start and p->n_batches.
static void cut_batches(s2s_batch_plan *p, const s2s_dataset *d, int n, int batch_tokens) {
    int nb = 0, S = 0, T = 0, k = 0;
    p->start[0] = 0;
    for (int i = 0; i < n; i++) {
        const s2s_example *e = &d->ex[p->order[i]];
        int s = e->src_len + 1, t = e->tgt_len + 1;
        int S2 = s > S ? s : S, T2 = t > T ? t : T;
        if (k > 0 && (int64_t)(k + 1) * (S2 + T2) > batch_tokens) {
            p->start[++nb] = i;
            k = 0;
            S2 = s;
            T2 = t;
        }
        S = S2;
        T = T2;
        k++;
    }
    p->start[++nb] = n;
    p->n_batches = nb;
}

// Shuffles whole batches of p (of n sentences) with r: lengths stay
// bucketed, their order does not.
static s2s_status shuffle_batches(s2s_batch_plan *p, s2s_rng *r, int n) {
    int nb = p->n_batches;
    int *ranges = s2s_calloc((size_t)nb, sizeof(int));
    int *order2 = s2s_calloc((size_t)n, sizeof(int));
    int *start2 = s2s_calloc((size_t)nb + 1, sizeof(int));
    if (!ranges || !order2 || !start2) {
        free(ranges);
        free(order2);
        free(start2);
        return S2S_ERR_NOMEM;
    }
    for (int b = 0; b < nb; b++) ranges[b] = b;
    for (int b = nb - 1; b > 0; b--) {
        int j = (int)below(r, (uint64_t)b + 1);
        int t = ranges[b];
        ranges[b] = ranges[j];
        ranges[j] = t;
    }
    int at = 0;
    for (int b = 0; b < nb; b++) {
        int src_b = ranges[b];
        start2[b] = at;
        for (int i = p->start[src_b]; i < p->start[src_b + 1]; i++) order2[at++] = p->order[i];
    }
    start2[nb] = at;
    free(p->order);
    free(p->start);
    free(ranges);
    p->order = order2;
    p->start = start2;
    return S2S_OK;
}

s2s_status s2s_batch_plan_make(s2s_batch_plan *p, const s2s_dataset *d, int batch_tokens,
                               bool shuffle, uint64_t seed, int epoch) {
    s2s_batch_plan_free(p);
    int n = d->n;
    p->order = s2s_calloc((size_t)n, sizeof(int));
    p->start = s2s_calloc((size_t)n + 1, sizeof(int));
    sort_item *items = s2s_calloc((size_t)n, sizeof *items);
    if (!p->order || !p->start || !items) {
        free(items);
        s2s_batch_plan_free(p);
        return S2S_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) p->order[i] = i;
    s2s_rng r;
    // The epoch in the high bits: every (seed, epoch) pair its own stream.
    s2s_rng_seed(&r, seed ^ ((uint64_t)(uint32_t)epoch << 32) ^ 0xba7c4edULL);
    if (shuffle) {
        for (int i = n - 1; i > 0; i--) {
            int j = (int)below(&r, (uint64_t)i + 1);
            int t = p->order[i];
            p->order[i] = p->order[j];
            p->order[j] = t;
        }
        for (int i = 0; i < n; i++) {
            const s2s_example *e = &d->ex[p->order[i]];
            items[i] = (sort_item){.len = e->src_len + e->tgt_len, .pos = i, .index = p->order[i]};
        }
        qsort(items, (size_t)n, sizeof *items, by_len);
        for (int i = 0; i < n; i++) p->order[i] = items[i].index;
    }
    free(items);
    cut_batches(p, d, n, batch_tokens);
    if (shuffle && p->n_batches > 1 && shuffle_batches(p, &r, n) != S2S_OK) {
        s2s_batch_plan_free(p);
        return S2S_ERR_NOMEM;
    }
    return S2S_OK;
}

void s2s_batch_plan_free(s2s_batch_plan *p) {
    free(p->order);
    free(p->start);
    *p = (s2s_batch_plan){0};
}

// ---- batches ----

// *out = *store, grown to n floats and zeroed.
static s2s_status zeroed(float **out, float **store, size_t *cap, size_t n) {
    if (n > *cap) {
        float *a = realloc(*store, n * sizeof(float));
        if (!a) return s2s_fail(S2S_ERR_NOMEM, "batch: out of memory");
        *store = a;
        *cap = n;
    }
    *out = *store;
    memset(*out, 0, n * sizeof(float));
    return S2S_OK;
}

// Coreference rows (S, S) from n sorted (pronoun, antecedent) pairs: row p
// gives each of its k antecedents 1/k. Returns the rows filled.
static int rows_of(float *C, int S, const int *pairs, int n) {
    int rows = 0;
    for (int k = 0; k < n;) {
        int p = pairs[2 * k], cnt = 0;
        while (k + cnt < n && pairs[2 * (k + cnt)] == p) cnt++;
        for (int j = 0; j < cnt; j++) C[(size_t)p * S + pairs[2 * (k + j) + 1]] = 1.0f / (float)cnt;
        k += cnt;
        rows++;
    }
    return rows;
}

// buf's token arrays grown to n rows of max(S, T) cells.
static s2s_status grow_batch(s2s_batch_buf *buf, int n, int S, int T) {
    s2s_batch *b = &buf->b;
    size_t cells = (size_t)n * (size_t)(S > T ? S : T);
    if (cells > buf->cap_cells) {
        int *a = realloc(b->src, cells * sizeof(int));
        if (a) b->src = a;
        int *c = realloc(b->tgt_in, cells * sizeof(int));
        if (c) b->tgt_in = c;
        int *o = realloc(b->tgt_out, cells * sizeof(int));
        if (o) b->tgt_out = o;
        if (!a || !c || !o) return s2s_fail(S2S_ERR_NOMEM, "batch: out of memory");
        buf->cap_cells = cells;
    }
    if ((size_t)n > buf->cap_rows) {
        int *a = realloc(b->src_len, (size_t)n * sizeof(int));
        if (a) b->src_len = a;
        int *c = realloc(b->tgt_len, (size_t)n * sizeof(int));
        if (c) b->tgt_len = c;
        if (!a || !c) return s2s_fail(S2S_ERR_NOMEM, "batch: out of memory");
        buf->cap_rows = (size_t)n;
    }
    return S2S_OK;
}

// The guided-alignment rows (n, T, S) of the batch's gold links.
static s2s_status fill_align(s2s_batch_buf *buf, const s2s_dataset *d, const int *idx, int n) {
    s2s_batch *b = &buf->b;
    int S = b->S, T = b->T;
    float **guide = &b->guide[S2S_HEAD_ALIGN];
    S2S_TRY(zeroed(guide, &buf->guide[S2S_HEAD_ALIGN], &buf->cap_guide[S2S_HEAD_ALIGN],
                   (size_t)n * S * T));
    for (int i = 0; i < n; i++) {
        const s2s_example *e = &d->ex[idx[i]];
        const int *l = d->links + 2 * e->link;
        float *A = *guide + (size_t)i * T * S;
        // Row j: the source tokens linked to target token j, 1/k each. A
        // target token the gold leaves unaligned (articles, "to", measure
        // words) is guided to the source </s>: the head learns to say "no
        // link", which s2s align reads as no alignment.
        for (int k = 0; k < e->n_links; k++) A[(size_t)l[2 * k + 1] * S + l[2 * k]] = 1.0f;
        for (int j = 0; j < e->tgt_len && e->n_links > 0; j++) {
            float *row = A + (size_t)j * S;
            int cnt = 0;
            for (int s = 0; s < e->src_len; s++) cnt += row[s] != 0.0f;
            if (cnt == 0) row[e->src_len] = 1.0f, cnt = 1;
            for (int s = 0; s < e->src_len; s++) row[s] /= (float)cnt;
            b->n_guided[S2S_HEAD_ALIGN]++;
        }
    }
    return S2S_OK;
}

s2s_status s2s_batch_fill(s2s_batch_buf *buf, const s2s_dataset *d, const int *idx, int n) {
    int S = 0, T = 0;
    for (int i = 0; i < n; i++) {
        const s2s_example *e = &d->ex[idx[i]];
        if (e->src_len + 1 > S) S = e->src_len + 1;
        if (e->tgt_len + 1 > T) T = e->tgt_len + 1;
    }
    S2S_TRY(grow_batch(buf, n, S, T));
    s2s_batch *b = &buf->b;
    b->n = n;
    b->S = S;
    b->T = T;
    b->n_tokens = 0;
    b->src_tokens = 0;
    for (int i = 0; i < n; i++) {
        const s2s_example *e = &d->ex[idx[i]];
        int *src = b->src + (size_t)i * S, *ti = b->tgt_in + (size_t)i * T,
            *to = b->tgt_out + (size_t)i * T;
        // d->ids is NULL when no line has a token: no pointer arithmetic on it then.
        const int *sid = e->src_len ? d->ids + e->src : NULL;
        const int *tid = e->tgt_len ? d->ids + e->tgt : NULL;
        for (int j = 0; j < S; j++)
            src[j] = j < e->src_len ? sid[j] : j == e->src_len ? S2S_EOS : S2S_PAD;
        for (int j = 0; j < T; j++) {
            ti[j] = j == 0 ? S2S_BOS : j <= e->tgt_len ? tid[j - 1] : S2S_PAD;
            to[j] = j < e->tgt_len ? tid[j] : j == e->tgt_len ? S2S_EOS : S2S_PAD;
        }
        b->src_len[i] = e->src_len + 1;
        b->tgt_len[i] = e->tgt_len + 1;
        b->n_tokens += e->tgt_len + 1;
        b->src_tokens += e->src_len;
    }
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) {
        b->guide[r] = NULL;
        b->n_guided[r] = 0;
    }
    if (d->coref) {
        const int C = S2S_HEAD_COREF;
        S2S_TRY(zeroed(&b->guide[C], &buf->guide[C], &buf->cap_guide[C], (size_t)n * S * S));
        for (int i = 0; i < n; i++) {
            const s2s_example *e = &d->ex[idx[i]];
            b->n_guided[C] += rows_of(b->guide[C] + (size_t)i * S * S, S,
                                      d->coref + 2 * e->coref, e->n_coref);
        }
    }
    return d->links ? fill_align(buf, d, idx, n) : S2S_OK;
}

void s2s_batch_buf_free(s2s_batch_buf *buf) {
    free(buf->b.src);
    free(buf->b.src_len);
    free(buf->b.tgt_in);
    free(buf->b.tgt_out);
    free(buf->b.tgt_len);
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) free(buf->guide[r]);
    *buf = (s2s_batch_buf){0};
}

// ---- <unk> replacement ----

// Links of (sorted) pairs l[0..n) whose side `side` (0 source, 1 target) is x.
static int degree(const int *l, int n, int side, int x) {
    int c = 0;
    for (int k = 0; k < n; k++) c += l[2 * k + side] == x;
    return c;
}

s2s_status s2s_unk_words(uint8_t **word, const s2s_vocab *v, const s2s_dataset *d, int side) {
    int V = s2s_vocab_size(v);
    *word = s2s_calloc((size_t)V, 1);
    size_t *count = s2s_calloc(2 * (size_t)V, sizeof(size_t)), *one = count + V;
    if (!*word || !count) {
        free(*word);
        free(count);
        *word = NULL;
        return s2s_fail(S2S_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < d->n; i++) {
        const s2s_example *e = &d->ex[i];
        int len = side ? e->tgt_len : e->src_len;
        if (len == 0) continue;  // d->ids may be NULL: no arithmetic on it
        const int *ids = d->ids + (side ? e->tgt : e->src);
        for (int k = 0; k < len; k++) count[ids[k]]++;
        const int *l = d->links ? d->links + 2 * e->link : NULL;
        for (int k = 0; k < e->n_links; k++) {
            int x = l[2 * k + side], y = l[2 * k + 1 - side];
            if (degree(l, e->n_links, side, x) == 1 && degree(l, e->n_links, 1 - side, y) == 1)
                one[ids[x]]++;
        }
    }
    for (int id = S2S_NUM_SPECIALS; id < V; id++)
        (*word)[id] = !s2s_token_is_punct(s2s_vocab_token(v, id)) && one[id] > 0 &&
                      2 * one[id] >= count[id];
    free(count);
    return S2S_OK;
}

// u in [0, 1) for pair (s, t) of a line in an epoch: FNV-1a over the five
// numbers, then a 64-bit finalizer (MurmurHash3's) so every bit of the
// last number reaches the top bits that make u.
static double unk_draw(const s2s_unk_replace *u, int line, int s, int t) {
    uint64_t h = S2S_FNV1A_INIT;
    h = s2s_fnv1a_word(h, u->seed);
    h = s2s_fnv1a_word(h, (uint64_t)(uint32_t)u->epoch);
    h = s2s_fnv1a_word(h, (uint64_t)(uint32_t)line);
    h = s2s_fnv1a_word(h, (uint64_t)(uint32_t)s);
    h = s2s_fnv1a_word(h, (uint64_t)(uint32_t)t);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return (double)(h >> 11) * 0x1.0p-53;
}

int s2s_batch_unk_replace(s2s_batch *b, const s2s_dataset *d, const int *idx,
                          const s2s_unk_replace *u) {
    if (!(u->rate > 0.0f) || !d->links) return 0;
    int replaced = 0;
    for (int i = 0; i < b->n; i++) {
        const s2s_example *e = &d->ex[idx[i]];
        const int *l = d->links + 2 * e->link;
        int *src = b->src + (size_t)i * b->S, *ti = b->tgt_in + (size_t)i * b->T,
            *to = b->tgt_out + (size_t)i * b->T;
        for (int k = 0; k < e->n_links; k++) {
            int s = l[2 * k], t = l[2 * k + 1];
            if (!u->src_word[src[s]] || !u->tgt_word[to[t]] || degree(l, e->n_links, 0, s) != 1 ||
                degree(l, e->n_links, 1, t) != 1 || unk_draw(u, e->line, s, t) >= u->rate)
                continue;
            src[s] = S2S_UNK;
            to[t] = S2S_UNK;
            ti[t + 1] = S2S_UNK;
            replaced++;
        }
    }
    return replaced;
}

static int64_t share_weight(const s2s_dataset *d, int i) {
    return d->ex[i].src_len + d->ex[i].tgt_len + 2;
}

// Sentence i's rank is floor(size * (tokens before i + half its own) /
// total), non-decreasing in i: lo is the first sentence of a rank >= rank,
// hi the first of a rank > rank.
void s2s_batch_share(const s2s_dataset *d, const int *idx, int n, int rank, int size, int *lo,
                     int *hi) {
    int64_t total = 0, before = 0;
    for (int i = 0; i < n; i++) total += share_weight(d, idx[i]);
    *lo = *hi = n;
    for (int i = 0; i < n; i++) {
        int64_t w = share_weight(d, idx[i]);
        int64_t r = (int64_t)size * (2 * before + w) / (2 * total);  // in integers
        if (r >= rank && *lo == n) *lo = i;
        if (r > rank) {
            *hi = i;
            return;
        }
        before += w;
    }
}
