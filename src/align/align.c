// Hard alignments from attention, symmetrisation, Pharaoh text and AER.
//
// Dimension letters: L decoder layers, H heads, T rows (target tokens), S
// columns (source tokens and specials).
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "s2s/align.h"
#include "align/align.h"

// ---- link sets ----

void s2s_alignment_free(s2s_alignment *a) {
    free(a->links);
    *a = (s2s_alignment){0};
}

s2s_status s2s_alignment_add(s2s_alignment *a, int src, int tgt, bool possible) {
    if (src < 0 || tgt < 0)
        return s2s_fail(S2S_ERR_INVALID, "alignment link %d-%d has a negative index", src, tgt);
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 16;
        if (cap < a->cap) return s2s_fail(S2S_ERR_NOMEM, "alignment too large");
        s2s_link *l = realloc(a->links, (size_t)cap * sizeof *l);
        if (!l) return s2s_fail(S2S_ERR_NOMEM, "out of memory for an alignment");
        a->links = l;
        a->cap = cap;
    }
    a->links[a->n++] = (s2s_link){src, tgt, possible};
    return S2S_OK;
}

static int link_cmp(const void *x, const void *y) {
    const s2s_link *a = x, *b = y;
    if (a->src != b->src) return a->src < b->src ? -1 : 1;
    if (a->tgt != b->tgt) return a->tgt < b->tgt ? -1 : 1;
    return (int)a->possible - (int)b->possible;  // sure first, so it survives the merge
}

void s2s_alignment_normalize(s2s_alignment *a) {
    if (a->n == 0) return;
    qsort(a->links, (size_t)a->n, sizeof *a->links, link_cmp);
    int w = 1;
    for (int r = 1; r < a->n; r++) {
        s2s_link *last = &a->links[w - 1];
        if (a->links[r].src == last->src && a->links[r].tgt == last->tgt) continue;
        a->links[w++] = a->links[r];
    }
    a->n = w;
}

// The index of (src, tgt) in a normalized a, or -1.
static int find_link(const s2s_alignment *a, int src, int tgt) {
    int lo = 0, hi = a->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const s2s_link *l = &a->links[mid];
        int c = l->src != src ? (l->src < src ? -1 : 1) : l->tgt != tgt ? (l->tgt < tgt ? -1 : 1) : 0;
        if (c == 0) return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

bool s2s_alignment_has(const s2s_alignment *a, int src, int tgt) {
    return find_link(a, src, tgt) >= 0;
}

void s2s_alignment_transpose(s2s_alignment *a) {
    for (int k = 0; k < a->n; k++) {
        int t = a->links[k].src;
        a->links[k].src = a->links[k].tgt;
        a->links[k].tgt = t;
    }
    s2s_alignment_normalize(a);
}

// ---- Pharaoh text ----

// Reads a non-negative decimal index at *p; false when there is none or it
// overflows an int.
static bool read_index(const char **p, int *out) {
    const char *s = *p;
    if (!isdigit((unsigned char)*s)) return false;
    long long v = 0;
    while (isdigit((unsigned char)*s)) {
        v = v * 10 + (*s - '0');
        if (v > INT_MAX) return false;
        s++;
    }
    *out = (int)v;
    *p = s;
    return true;
}

s2s_status s2s_alignment_parse(s2s_alignment *out, const char *text, const char *where) {
    out->n = 0;
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
        if (!*p) break;
        const char *start = p;
        int i, j;
        bool possible = false, ok = read_index(&p, &i);
        if (ok && (*p == '-' || *p == 'p' || *p == '?')) {
            possible = *p != '-';
            p++;
            ok = read_index(&p, &j);
        } else {
            ok = false;
        }
        if (ok && *p == 'p' && !possible) {  // "i-jp": a possible link marked by a suffix
            possible = true;
            p++;
        }
        if (!ok || (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')) {
            const char *end = start;
            while (*end && *end != ' ' && *end != '\t' && *end != '\r' && *end != '\n') end++;
            char q[44];
            return s2s_fail(S2S_ERR_FORMAT,
                            "%s: bad alignment link '%s' (expected i-j, or ipj for possible)",
                            where, s2s_quote(q, sizeof q, start, (size_t)(end - start)));
        }
        S2S_TRY(s2s_alignment_add(out, i, j, possible));
    }
    s2s_alignment_normalize(out);
    return S2S_OK;
}

s2s_status s2s_coref_parse(s2s_alignment *src, s2s_alignment *tgt, const char *text,
                           const char *where) {
    src->n = tgt->n = 0;
    if (!text || !*text) return S2S_OK;
    const char *bar = strchr(text, '|');
    if (!bar || strchr(bar + 1, '|')) {
        char q[44];
        return s2s_fail(S2S_ERR_FORMAT, "%s: bad coreference column '%s' (expected SRC|TGT)",
                        where, s2s_quote(q, sizeof q, text, strlen(text)));
    }
    char *left = strndup(text, (size_t)(bar - text));
    if (!left) return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", where);
    s2s_status st = s2s_alignment_parse(src, left, where);
    free(left);
    if (st == S2S_OK) st = s2s_alignment_parse(tgt, bar + 1, where);
    return st;
}

char *s2s_alignment_format(const s2s_alignment *a) {
    // Two ints of at most 10 digits, a separator and a space per link.
    size_t cap = (size_t)a->n * 24 + 1, len = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    s[0] = '\0';
    for (int k = 0; k < a->n; k++) {
        len += (size_t)snprintf(s + len, cap - len, "%s%d%c%d", k ? " " : "", a->links[k].src,
                                a->links[k].possible ? 'p' : '-', a->links[k].tgt);
    }
    return s;
}

s2s_status s2s_alignment_check(const s2s_alignment *a, int n_src, int n_tgt, const char *where) {
    for (int k = 0; k < a->n; k++) {
        const s2s_link *l = &a->links[k];
        if (l->src >= n_src || l->tgt >= n_tgt)
            return s2s_fail(S2S_ERR_FORMAT,
                            "%s: alignment link %d%c%d out of range (%d source, %d target tokens)",
                            where, l->src, l->possible ? 'p' : '-', l->tgt, n_src, n_tgt);
    }
    return S2S_OK;
}

// ---- attention planes ----

s2s_status s2s_attn_select(float *out, const float *maps, int layers, int heads, int rows,
                           int cols, int layer, int head) {
    if (layer != S2S_ALIGN_AVG && (layer < 0 || layer >= layers))
        return s2s_fail(S2S_ERR_INVALID, "layer %d out of range (the model has %d layers: 0-%d)",
                        layer, layers, layers - 1);
    if (head != S2S_ALIGN_AVG && (head < 0 || head >= heads))
        return s2s_fail(S2S_ERR_INVALID, "head %d out of range (the model has %d heads: 0-%d)",
                        head, heads, heads - 1);
    int l0 = layer == S2S_ALIGN_AVG ? 0 : layer, l1 = layer == S2S_ALIGN_AVG ? layers : layer + 1;
    int h0 = head == S2S_ALIGN_AVG ? 0 : head, h1 = head == S2S_ALIGN_AVG ? heads : head + 1;
    size_t plane = (size_t)rows * cols;
    double inv = 1.0 / ((double)(l1 - l0) * (h1 - h0));
    for (size_t e = 0; e < plane; e++) {
        double acc = 0;
        for (int l = l0; l < l1; l++)
            for (int h = h0; h < h1; h++) acc += maps[((size_t)l * heads + h) * plane + e];
        out[e] = (float)(acc * inv);
    }
    return S2S_OK;
}

int s2s_attn_drop_columns(float *out, const float *in, int rows, int cols, const bool *keep) {
    int n_keep = 0;
    for (int c = 0; c < cols; c++) n_keep += keep[c];
    for (int r = 0; r < rows; r++) {
        const float *x = in + (size_t)r * cols;
        float *y = out + (size_t)r * n_keep;
        double sum = 0;
        for (int c = 0; c < cols; c++)
            if (keep[c]) sum += x[c];
        int k = 0;
        for (int c = 0; c < cols; c++)
            if (keep[c]) y[k++] = sum > 0 ? (float)(x[c] / sum) : 0.0f;
    }
    return n_keep;
}

s2s_status s2s_align_share(s2s_alignment *out, const float *attn, int rows, int cols,
                           int n_src_tokens, float share) {
    out->n = 0;
    for (int t = 0; t < rows; t++) {
        const float *x = attn + (size_t)t * cols;
        int best = -1;
        for (int c = 0; c < cols; c++)
            if (x[c] == x[c] && (best < 0 || x[c] > x[best])) best = c;  // skips NaN
        if (best < 0 || best >= n_src_tokens) continue;
        S2S_TRY(s2s_alignment_add(out, best, t, false));
        for (int c = 0; share < 1.0f && c < n_src_tokens && c < cols; c++)
            if (c != best && x[c] >= share * x[best]) S2S_TRY(s2s_alignment_add(out, c, t, false));
    }
    s2s_alignment_normalize(out);
    return S2S_OK;
}

s2s_status s2s_align_argmax(s2s_alignment *out, const float *attn, int rows, int cols,
                            int n_src_tokens) {
    return s2s_align_share(out, attn, rows, cols, n_src_tokens, 1.0f);
}

// ---- symmetrisation ----

static const char *const SYM_NAMES[S2S_SYM_COUNT] = {
    "intersection", "union", "grow-diag", "grow-diag-final", "grow-diag-final-and",
};

const char *s2s_symmetrize_name(s2s_symmetrize m) {
    return (unsigned)m < S2S_SYM_COUNT ? SYM_NAMES[m] : NULL;
}

bool s2s_symmetrize_parse(const char *name, s2s_symmetrize *out) {
    for (int m = 0; m < S2S_SYM_COUNT; m++)
        if (!strcmp(name, SYM_NAMES[m])) {
            *out = (s2s_symmetrize)m;
            return true;
        }
    return false;
}

// A dense link matrix (n_src, n_tgt) with per-word link counts, so
// "word unaligned" is one lookup.
typedef struct grid {
    int n_src, n_tgt;
    unsigned char *on;  // (n_src, n_tgt)
    int *src_links, *tgt_links;  // (n_src), (n_tgt)
} grid;

static void grid_set(grid *g, int i, int j) {
    unsigned char *c = &g->on[(size_t)i * g->n_tgt + j];
    if (*c) return;
    *c = 1;
    g->src_links[i]++;
    g->tgt_links[j]++;
}

static bool grid_get(const grid *g, int i, int j) { return g->on[(size_t)i * g->n_tgt + j]; }

static s2s_status fill(unsigned char *m, const s2s_alignment *a, int n_src, int n_tgt,
                       const char *which) {
    for (int k = 0; k < a->n; k++) {
        const s2s_link *l = &a->links[k];
        if (l->src < 0 || l->src >= n_src || l->tgt < 0 || l->tgt >= n_tgt)
            return s2s_fail(S2S_ERR_INVALID,
                            "symmetrize: %s link %d-%d out of range (%d source, %d target tokens)",
                            which, l->src, l->tgt, n_src, n_tgt);
        m[(size_t)l->src * n_tgt + l->tgt] = 1;
    }
    return S2S_OK;
}

// Koehn's FINAL(a): links of a whose source or target word (final-and:
// both) is still unaligned.
static void final_step(grid *g, const unsigned char *a, bool and_) {
    for (int i = 0; i < g->n_src; i++)
        for (int j = 0; j < g->n_tgt; j++) {
            if (!a[(size_t)i * g->n_tgt + j] || grid_get(g, i, j)) continue;
            bool free_i = g->src_links[i] == 0, free_j = g->tgt_links[j] == 0;
            if (and_ ? (free_i && free_j) : (free_i || free_j)) grid_set(g, i, j);
        }
}

s2s_status s2s_align_symmetrize(s2s_alignment *out, const s2s_alignment *fwd,
                                const s2s_alignment *rev, int n_src, int n_tgt,
                                s2s_symmetrize method) {
    out->n = 0;
    if ((unsigned)method >= S2S_SYM_COUNT)
        return s2s_fail(S2S_ERR_INVALID, "symmetrize: unknown method %d", (int)method);
    if (n_src < 0 || n_tgt < 0) return s2s_fail(S2S_ERR_INVALID, "symmetrize: negative size");
    size_t cells = (size_t)n_src * (size_t)n_tgt;
    unsigned char *f = calloc(cells ? cells : 1, 1), *r = calloc(cells ? cells : 1, 1);
    grid g = {n_src, n_tgt, calloc(cells ? cells : 1, 1), calloc((size_t)n_src + 1, sizeof(int)),
              calloc((size_t)n_tgt + 1, sizeof(int))};
    s2s_status st = S2S_OK;
    if (!f || !r || !g.on || !g.src_links || !g.tgt_links)
        st = s2s_fail(S2S_ERR_NOMEM, "symmetrize: out of memory");
    if (st == S2S_OK) st = fill(f, fwd, n_src, n_tgt, "forward");
    if (st == S2S_OK) st = fill(r, rev, n_src, n_tgt, "reverse");
    if (st == S2S_OK) {
        for (size_t e = 0; e < cells; e++) {
            bool on = method == S2S_SYM_UNION ? (f[e] || r[e]) : (f[e] && r[e]);
            if (on) grid_set(&g, (int)(e / (size_t)n_tgt), (int)(e % (size_t)n_tgt));
        }
        if (method >= S2S_SYM_GROW_DIAG) {
            static const int NB[8][2] = {{-1, 0}, {0, -1}, {1, 0}, {0, 1},
                                         {-1, -1}, {-1, 1}, {1, -1}, {1, 1}};
            for (bool added = true; added;) {
                added = false;
                for (int i = 0; i < n_src; i++)
                    for (int j = 0; j < n_tgt; j++) {
                        if (!grid_get(&g, i, j)) continue;
                        for (int k = 0; k < 8; k++) {
                            int ni = i + NB[k][0], nj = j + NB[k][1];
                            if (ni < 0 || nj < 0 || ni >= n_src || nj >= n_tgt) continue;
                            size_t e = (size_t)ni * n_tgt + nj;
                            if (g.on[e] || !(f[e] || r[e])) continue;
                            if (g.src_links[ni] == 0 || g.tgt_links[nj] == 0) {
                                grid_set(&g, ni, nj);
                                added = true;
                            }
                        }
                    }
            }
        }
        if (method == S2S_SYM_GROW_DIAG_FINAL || method == S2S_SYM_GROW_DIAG_FINAL_AND) {
            bool and_ = method == S2S_SYM_GROW_DIAG_FINAL_AND;
            final_step(&g, f, and_);
            final_step(&g, r, and_);
        }
        for (size_t e = 0; e < cells && st == S2S_OK; e++)
            if (g.on[e])
                st = s2s_alignment_add(out, (int)(e / (size_t)n_tgt), (int)(e % (size_t)n_tgt), false);
    }
    free(f);
    free(r);
    free(g.on);
    free(g.src_links);
    free(g.tgt_links);
    return st;
}

// ---- alignment error rate ----

void s2s_aer_add(s2s_aer_counts *c, const s2s_alignment *hyp, const s2s_alignment *gold) {
    c->a += hyp->n;
    for (int k = 0; k < gold->n; k++) c->s += !gold->links[k].possible;
    for (int k = 0; k < hyp->n; k++) {
        int g = find_link(gold, hyp->links[k].src, hyp->links[k].tgt);
        if (g < 0) continue;
        c->a_p++;  // P includes S
        if (!gold->links[g].possible) c->a_s++;
    }
}

double s2s_aer(const s2s_aer_counts *c) {
    if (c->a + c->s == 0) return 0.0;
    return 1.0 - (double)(c->a_s + c->a_p) / (double)(c->a + c->s);
}

double s2s_aer_precision(const s2s_aer_counts *c) {
    return c->a ? (double)c->a_p / (double)c->a : 1.0;
}

double s2s_aer_recall(const s2s_aer_counts *c) {
    return c->s ? (double)c->a_s / (double)c->s : 1.0;
}
