// Probes of attention (s2s/probe.h): the scale of the scores with and
// without 1/√d_k, each head's pattern and its label, and the encoder's
// permutation equivariance with and without positions.
//
// Dimension letters: n query and key rows (random scores), R rows and C
// columns of a plane, S source rows and </s>, D model width.
#include "s2s/probe.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "decoding/state.h"
#include "align/align.h"

// ---- one softmax row, both ways ----

// Sums over rows of the figures of s2s_scale_stats: [0] unscaled, [1] scaled.
typedef struct scale_sums {
    long long rows, underflow;
    double var[2], max_w[2], entropy[2];
} scale_sums;

// The largest softmax weight and the entropy of the row x (n), in double.
static void softmax_figures(const double *x, int n, double *max_w, double *entropy) {
    double mx = x[0], z = 0.0, ez = 0.0;
    for (int j = 1; j < n; j++) mx = x[j] > mx ? x[j] : mx;
    for (int j = 0; j < n; j++) {
        double e = exp(x[j] - mx);
        z += e;
        ez += e * (x[j] - mx);
    }
    // H = log z - E[x - mx]: no log of a weight that underflowed
    *max_w = 1.0 / z;
    *entropy = log(z) - ez / z;
}

// Adds a row of scaled scores s (n >= 2, scratch: n more doubles in tmp);
// the unscaled row is sqrt_dk * s.
static void scale_row(scale_sums *acc, const double *s, int n, double sqrt_dk, double *tmp) {
    double mean = 0.0, ss = 0.0;
    for (int j = 0; j < n; j++) mean += s[j];
    mean /= n;
    for (int j = 0; j < n; j++) ss += (s[j] - mean) * (s[j] - mean);
    double var = ss / (n - 1);
    acc->var[1] += var;
    acc->var[0] += var * sqrt_dk * sqrt_dk;
    for (int j = 0; j < n; j++) tmp[j] = s[j] * sqrt_dk;
    double mw, h;
    softmax_figures(tmp, n, &mw, &h);
    acc->max_w[0] += mw, acc->entropy[0] += h;
    softmax_figures(s, n, &mw, &h);
    acc->max_w[1] += mw, acc->entropy[1] += h;
    acc->rows++;
}

static s2s_scale_stats scale_result(const scale_sums *a, int d_k) {
    s2s_scale_stats r = {.d_k = d_k, .rows = a->rows, .underflow_rows = a->underflow};
    if (!a->rows) return r;
    double n = (double)a->rows;
    r.std_unscaled = sqrt(a->var[0] / n), r.std_scaled = sqrt(a->var[1] / n);
    r.max_weight_unscaled = a->max_w[0] / n, r.max_weight_scaled = a->max_w[1] / n;
    r.entropy_unscaled = a->entropy[0] / n, r.entropy_scaled = a->entropy[1] / n;
    return r;
}

// ---- random scores ----

// A standard normal draw (Box-Muller; u1 in (0, 1]).
static double normal(s2s_rng *r) {
    double u1 = 1.0 - s2s_rng_uniform(r), u2 = s2s_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

s2s_status s2s_scale_random(s2s_scale_stats *out, int d_k, int n, uint64_t seed) {
    memset(out, 0, sizeof *out);
    if (d_k < 2 || n < 2)
        return s2s_fail(S2S_ERR_INVALID, "scale probe: d_k %d and rows %d must be at least 2", d_k, n);
    double *q = malloc((size_t)n * d_k * sizeof *q), *k = malloc((size_t)n * d_k * sizeof *k);
    double *s = malloc((size_t)n * 2 * sizeof *s);  // (n) a row, (n) scratch
    if (!q || !k || !s) {
        free(q), free(k), free(s);
        return s2s_fail(S2S_ERR_NOMEM, "out of memory for the scale probe");
    }
    s2s_rng r;
    s2s_rng_seed(&r, seed);
    for (size_t i = 0; i < (size_t)n * d_k; i++) q[i] = normal(&r);
    for (size_t i = 0; i < (size_t)n * d_k; i++) k[i] = normal(&r);
    scale_sums acc = {0};
    double sqrt_dk = sqrt((double)d_k);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            double dot = 0.0;
            for (int c = 0; c < d_k; c++) dot += q[(size_t)i * d_k + c] * k[(size_t)j * d_k + c];
            s[j] = dot / sqrt_dk;
        }
        scale_row(&acc, s, n, sqrt_dk, s + n);
    }
    *out = scale_result(&acc, d_k);
    free(q), free(k), free(s);
    return S2S_OK;
}

// ---- head labels ----

static const char *const LABELS[S2S_HEAD_LABEL_COUNT] = {"</s>", "previous", "next", "local",
                                                         "content"};

const char *s2s_head_label_name(s2s_head_label l) {
    return l >= 0 && l < S2S_HEAD_LABEL_COUNT ? LABELS[l] : NULL;
}

// The thresholds docs/attention-lab.md gives (s2s_head_label).
#define SPECIAL_MIN 0.5
#define NEIGHBOUR_MIN 0.5
#define LOCAL_MIN 0.6
#define LOCAL_OVER_UNIFORM 2.0

s2s_head_label s2s_head_label_of(const s2s_head_stats *h) {
    if (h->special >= SPECIAL_MIN) return S2S_HEAD_SPECIAL;
    if (h->previous >= NEIGHBOUR_MIN) return S2S_HEAD_PREVIOUS;
    if (h->next >= NEIGHBOUR_MIN) return S2S_HEAD_NEXT;
    if (h->local >= LOCAL_MIN && h->local >= LOCAL_OVER_UNIFORM * h->local_uniform)
        return S2S_HEAD_LOCAL;
    return S2S_HEAD_CONTENT;
}

// ---- the table ----

// Sums over rows of one plane's figures; previous and next over the rows
// that see that key (n_prev, n_next).
typedef struct head_sums {
    long long rows, n_prev, n_next;
    double distance, entropy, special, width95, previous, next, local, local_uniform;
} head_sums;

typedef struct plane_cell {
    head_sums heads;
    scale_sums scale;
} plane_cell;

struct s2s_attn_probe {
    const s2s_model *m;
    int layers[S2S_ATTN_MAP_COUNT], heads, d_k;
    bool has[S2S_ATTN_MAP_COUNT];
    plane_cell *cells[S2S_ATTN_MAP_COUNT];  // (layers, heads) each
    // scratch for one row: (C) doubles twice, (C) floats, (C) seen
    double *row;
    float *sorted;
    bool *seen;
    int cap;
};

s2s_status s2s_attn_probe_new(s2s_attn_probe **out, const s2s_model *m) {
    *out = NULL;
    const s2s_model_config *mc = &s2s_model_get_config(m)->model;
    s2s_attn_probe *p = calloc(1, sizeof *p);
    if (!p) return s2s_fail(S2S_ERR_NOMEM, "out of memory for the attention probe");
    p->m = m;
    p->heads = mc->heads;
    p->d_k = mc->d_model / mc->heads;
    p->layers[S2S_ATTN_MAP_CROSS] = p->layers[S2S_ATTN_MAP_SELF] = mc->decoder_layers;
    p->layers[S2S_ATTN_MAP_ENC] = mc->encoder_layers;
    for (int k = 0; k < S2S_ATTN_MAP_COUNT; k++) {
        p->cells[k] = calloc((size_t)p->layers[k] * p->heads + 1, sizeof(plane_cell));
        if (!p->cells[k]) {
            s2s_attn_probe_free(p);
            return s2s_fail(S2S_ERR_NOMEM, "out of memory for the attention probe");
        }
    }
    *out = p;
    return S2S_OK;
}

void s2s_attn_probe_free(s2s_attn_probe *p) {
    if (!p) return;
    for (int k = 0; k < S2S_ATTN_MAP_COUNT; k++) free(p->cells[k]);
    free(p->row);
    free(p->sorted);
    free(p->seen);
    free(p);
}

static bool in_range(const s2s_attn_probe *p, s2s_attn_map map, int layer, int head) {
    return map >= 0 && map < S2S_ATTN_MAP_COUNT && layer >= 0 && layer < p->layers[map] &&
           head >= 0 && head < p->heads;
}

static plane_cell *cell(const s2s_attn_probe *p, s2s_attn_map map, int layer, int head) {
    return &p->cells[map][(size_t)layer * p->heads + head];
}

static bool reserve(s2s_attn_probe *p, int cols) {
    if (cols <= p->cap) return true;
    double *row = realloc(p->row, (size_t)cols * 2 * sizeof *row);
    if (row) p->row = row;
    float *sorted = realloc(p->sorted, (size_t)cols * sizeof *sorted);
    if (sorted) p->sorted = sorted;
    bool *seen = realloc(p->seen, (size_t)cols * sizeof *seen);
    if (seen) p->seen = seen;
    if (!row || !sorted || !seen) return false;
    p->cap = cols;
    return true;
}

static int desc(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

// The fewest of the n weights v holding 95% of their sum (sorts v).
static int width95(float *v, int n) {
    double total = 0.0, run = 0.0;
    for (int j = 0; j < n; j++) total += v[j];
    qsort(v, (size_t)n, sizeof *v, desc);
    int k = 0;
    while (k < n && run < 0.95 * total) run += v[k++];
    return k;
}

// Adds row i (its weights w over cols keys, seen[j] which it sees; keys
// >= 2) to a head's sums; `special` is the special token's column.
static void head_row(head_sums *a, const float *w, const bool *seen, int cols, int i, int special,
                     float *sorted) {
    int n = 0, in_window = 0;
    for (int j = 0; j < cols; j++) {
        if (!seen[j]) continue;
        double x = w[j];
        sorted[n++] = w[j];
        a->distance += x * abs(i - j);
        a->entropy -= x > 0 ? x * log(x) : 0.0;
        if (abs(i - j) <= 1) a->local += x, in_window++;
    }
    a->local_uniform += (double)in_window / n;
    a->special += seen[special] ? w[special] : 0.0;
    a->width95 += width95(sorted, n);
    if (i >= 1 && i - 1 < cols && seen[i - 1]) a->previous += w[i - 1], a->n_prev++;
    if (i + 1 < cols && seen[i + 1]) a->next += w[i + 1], a->n_next++;
    a->rows++;
}

// Adds row i to a head's scale sums: its scaled scores are its
// log-weights (less a constant); a weight of 0 leaves the row out.
static void scale_weights_row(scale_sums *a, const float *w, const bool *seen, int cols,
                              double sqrt_dk, double *row) {
    int n = 0;
    for (int j = 0; j < cols; j++) {
        if (!seen[j]) continue;
        if (!(w[j] > 0.0f)) {
            a->underflow++;
            return;
        }
        row[n++] = log((double)w[j]);
    }
    scale_row(a, row, n, sqrt_dk, row + n);
}

s2s_status s2s_attn_probe_add_plane(s2s_attn_probe *p, s2s_attn_map map, int layer, int head,
                                    const float *w, int rows, int cols) {
    if (!in_range(p, map, layer, head) || rows < 0 || cols < 1)
        return s2s_fail(S2S_ERR_INVALID, "attention probe: no plane (map %d, layer %d, head %d)",
                        (int)map, layer, head);
    if (!reserve(p, cols)) return s2s_fail(S2S_ERR_NOMEM, "out of memory for the attention probe");
    s2s_head_pattern pat = s2s_model_head_pattern(p->m, map, layer, head);
    bool softmax = pat.type != S2S_ATTN_LINEAR;
    int special = map == S2S_ATTN_MAP_SELF ? 0 : cols - 1;
    plane_cell *c = cell(p, map, layer, head);
    double sqrt_dk = sqrt((double)p->d_k);
    for (int i = 0; i < rows; i++) {
        int keys = 0;
        for (int j = 0; j < cols; j++)
            keys += p->seen[j] = map == S2S_ATTN_MAP_CROSS || s2s_head_pattern_sees(&pat, i, j);
        if (keys < 2) continue;
        const float *wr = w + (size_t)i * cols;
        head_row(&c->heads, wr, p->seen, cols, i, special, p->sorted);
        if (softmax) scale_weights_row(&c->scale, wr, p->seen, cols, sqrt_dk, p->row);
    }
    p->has[map] = true;
    return S2S_OK;
}

// Adds every plane of maps (layers, heads, rows, cols).
static s2s_status add_map(s2s_attn_probe *p, s2s_attn_map map, const float *maps, int rows,
                          int cols) {
    size_t plane = (size_t)rows * cols;
    for (int l = 0; l < p->layers[map]; l++)
        for (int h = 0; h < p->heads; h++)
            S2S_TRY(s2s_attn_probe_add_plane(p, map, l, h,
                                             maps + ((size_t)l * p->heads + h) * plane, rows, cols));
    return S2S_OK;
}

s2s_status s2s_attn_probe_add(s2s_attn_probe *p, const s2s_hypothesis *h) {
    if (!h->cross_attn && !h->self_attn && !h->enc_attn)
        return s2s_fail(S2S_ERR_INVALID, "attention probe: the hypothesis holds no attention map "
                                         "(decode with want_attention, want_self_attention)");
    if (h->heads != p->heads || h->layers != p->layers[S2S_ATTN_MAP_CROSS] ||
        h->enc_layers != p->layers[S2S_ATTN_MAP_ENC])
        return s2s_fail(S2S_ERR_INVALID,
                        "attention probe of %d + %d layers x %d heads given a hypothesis of "
                        "%d + %d x %d", p->layers[S2S_ATTN_MAP_ENC], p->layers[S2S_ATTN_MAP_CROSS],
                        p->heads, h->enc_layers, h->layers, h->heads);
    if (h->cross_attn) S2S_TRY(add_map(p, S2S_ATTN_MAP_CROSS, h->cross_attn, h->n_out, h->n_src));
    if (h->self_attn) S2S_TRY(add_map(p, S2S_ATTN_MAP_SELF, h->self_attn, h->n_out, h->n_out));
    if (h->enc_attn) S2S_TRY(add_map(p, S2S_ATTN_MAP_ENC, h->enc_attn, h->n_src, h->n_src));
    return S2S_OK;
}

bool s2s_attn_probe_has(const s2s_attn_probe *p, s2s_attn_map map) {
    return map >= 0 && map < S2S_ATTN_MAP_COUNT && p->has[map];
}

static double mean(double sum, long long n) { return n ? sum / (double)n : 0.0; }

bool s2s_attn_probe_head(const s2s_attn_probe *p, s2s_attn_map map, int layer, int head,
                         s2s_head_stats *out) {
    memset(out, 0, sizeof *out);
    if (!in_range(p, map, layer, head)) return false;
    const head_sums *a = &cell(p, map, layer, head)->heads;
    *out = (s2s_head_stats){
        .rows = a->rows,
        .distance = mean(a->distance, a->rows),
        .entropy = mean(a->entropy, a->rows),
        .special = mean(a->special, a->rows),
        .width95 = mean(a->width95, a->rows),
        .previous = a->n_prev ? a->previous / (double)a->n_prev : NAN,
        .next = a->n_next ? a->next / (double)a->n_next : NAN,
        .local = mean(a->local, a->rows),
        .local_uniform = mean(a->local_uniform, a->rows),
    };
    out->label = s2s_head_label_of(out);
    return true;
}

bool s2s_attn_probe_scale(const s2s_attn_probe *p, s2s_attn_map map, int layer, int head,
                          s2s_scale_stats *out) {
    memset(out, 0, sizeof *out);
    if (!in_range(p, map, layer, head) ||
        s2s_model_head_pattern(p->m, map, layer, head).type == S2S_ATTN_LINEAR)
        return false;
    *out = scale_result(&cell(p, map, layer, head)->scale, p->d_k);
    return true;
}

// ---- permutation equivariance ----

// The encoder's output (S, D) of ids (S, the last </s>) into out, with or
// without the positional encoding.
static s2s_status encode_one(s2s_state *st, const int *ids, int64_t S, bool positions,
                             float *out) {
    int64_t d = s2s_model_get_config(st->m)->model.d_model;
    S2S_TRY(s2s_state_reserve(st, 1, 1, S, 1, 1, false));
    memcpy(st->ids, ids, (size_t)S * sizeof *ids);
    st->src_len[0] = (int)S;
    st->no_positions = !positions;
    s2s_status rc = s2s_encode(st, 1, S, false);
    st->no_positions = false;
    if (rc == S2S_OK) memcpy(out, st->memory, (size_t)(S * d) * sizeof *out);
    return rc;
}

// max |f(P x) - P f(x)| for one setting of positions; *largest = max |f(x)|.
static s2s_status equivariance_gap(s2s_state *st, const int *ids, const int *pids,
                                   const int *perm, int64_t S, bool positions, float *fx,
                                   float *fpx, double *gap, double *largest) {
    int64_t d = s2s_model_get_config(st->m)->model.d_model;
    S2S_TRY(encode_one(st, ids, S, positions, fx));
    S2S_TRY(encode_one(st, pids, S, positions, fpx));
    *gap = *largest = 0.0;
    for (int64_t i = 0; i < S; i++)
        for (int64_t c = 0; c < d; c++) {
            double a = fpx[i * d + c], b = fx[(int64_t)perm[i] * d + c];
            *gap = fmax(*gap, fabs(a - b));
            *largest = fmax(*largest, fabs(b));
        }
    return S2S_OK;
}

// S2S_ERR_INVALID unless every encoder head of m attends by content alone.
static s2s_status check_equivariant(const s2s_model *m) {
    const s2s_model_config *mc = &s2s_model_get_config(m)->model;
    for (int l = 0; l < mc->encoder_layers; l++)
        for (int h = 0; h < mc->heads; h++) {
            s2s_head_pattern p = s2s_model_head_pattern(m, S2S_ATTN_MAP_ENC, l, h);
            if (p.type == S2S_ATTN_FULL || p.type == S2S_ATTN_LINEAR) continue;
            char name[48];
            return s2s_fail(S2S_ERR_INVALID,
                            "encoder layer %d, head %d is %s: it sees keys by "
                            "position, so no permutation commutes with it", l, h,
                            s2s_head_pattern_text(&p, name, sizeof name));
        }
    return S2S_OK;
}

s2s_status s2s_probe_equivariance(s2s_state *st, const int *ids, int n, uint64_t seed,
                                  int *perm, s2s_equivariance *out) {
    memset(out, 0, sizeof *out);
    const s2s_model_config *mc = &s2s_model_get_config(st->m)->model;
    S2S_TRY(check_equivariant(st->m));
    if (n < 1 || n + 1 > mc->max_len)
        return s2s_fail(S2S_ERR_INVALID, "equivariance: %d source tokens (the model takes 1 to %d)",
                        n, mc->max_len - 1);
    int64_t S = n + 1, d = mc->d_model;
    int *x = malloc((size_t)S * 3 * sizeof *x);  // ids, P ids, perm
    float *fx = malloc((size_t)(S * d) * sizeof *fx), *fpx = malloc((size_t)(S * d) * sizeof *fpx);
    s2s_status rc = x && fx && fpx ? S2S_OK
                                   : s2s_fail(S2S_ERR_NOMEM, "out of memory for the equivariance probe");
    if (rc == S2S_OK) {
        int *px = x + S, *pm = x + 2 * S;
        memcpy(x, ids, (size_t)n * sizeof *x);
        x[n] = S2S_EOS;
        s2s_rng r;
        s2s_rng_seed(&r, seed);
        for (int64_t i = 0; i < S; i++) pm[i] = (int)i;
        for (int64_t i = S - 1; i > 0; i--) {  // Fisher-Yates
            int64_t j = (int64_t)(s2s_rng_next(&r) % (uint64_t)(i + 1));
            int t = pm[i];
            pm[i] = pm[j], pm[j] = t;
        }
        for (int64_t i = 0; i < S; i++) px[i] = x[pm[i]];
        double big = 0.0;
        rc = equivariance_gap(st, x, px, pm, S, false, fx, fpx, &out->without_positions,
                              &out->largest);
        if (rc == S2S_OK)
            rc = equivariance_gap(st, x, px, pm, S, true, fx, fpx, &out->with_positions, &big);
        out->n = (int)S;
        if (perm) memcpy(perm, pm, (size_t)S * sizeof *perm);
    }
    free(x), free(fx), free(fpx);
    return rc;
}
