// Every plane of a model against gold links (s2s_plane_table): the grid of
// per-plane counts, filled by the alignment probe (pipeline.c) or the
// coreference probe (coref.c), and its best plane.
#include "align/planes.h"

#include <stdlib.h>

#include "align/align.h"
#include "core/error.h"

struct s2s_plane_table {
    s2s_head_role probe;
    int layers, heads;
    float share;  // S2S_HEAD_ALIGN: the hard alignments' share and no_eos
    bool no_eos;
    long long sentences;
    s2s_plane_counts *cells;  // (layers + 1, heads + 1): s2s_plane_cell
};

static const char *table_name(s2s_head_role probe) {
    return probe == S2S_HEAD_ALIGN ? "AER table" : "coreference table";
}

s2s_status s2s_plane_table_new(s2s_plane_table **out, s2s_head_role probe, int layers, int heads,
                               float share, bool no_eos) {
    *out = NULL;
    if ((unsigned)probe >= S2S_HEAD_ROLE_COUNT)
        return s2s_fail(S2S_ERR_INVALID, "plane table: unknown probe %d", (int)probe);
    const char *what = table_name(probe);
    if (layers < 1 || heads < 1)
        return s2s_fail(S2S_ERR_INVALID, "%s: %d layers and %d heads (need at least 1)", what,
                        layers, heads);
    s2s_plane_table *t = calloc(1, sizeof *t);
    s2s_plane_counts *cells = calloc((size_t)(layers + 1) * (size_t)(heads + 1), sizeof *cells);
    if (!t || !cells) {
        free(t);
        free(cells);
        return s2s_fail(S2S_ERR_NOMEM, "out of memory for the %s", what);
    }
    *t = (s2s_plane_table){.probe = probe, .layers = layers, .heads = heads, .share = share,
                           .no_eos = no_eos, .cells = cells};
    *out = t;
    return S2S_OK;
}

void s2s_plane_table_free(s2s_plane_table *t) {
    if (!t) return;
    free(t->cells);
    free(t);
}

s2s_status s2s_plane_table_add(s2s_plane_table *t, const s2s_hypothesis *h,
                               const s2s_alignment *gold, const char *const *src_tokens,
                               const char *where) {
    S2S_TRY(t->probe == S2S_HEAD_ALIGN
                ? s2s_aer_planes_add(t->cells, t->layers, t->heads, t->share, t->no_eos, h, gold)
                : s2s_coref_planes_add(t->cells, t->layers, t->heads, h, src_tokens, gold, where));
    t->sentences++;
    return S2S_OK;
}

const s2s_plane_counts *s2s_plane_table_counts(const s2s_plane_table *t, int layer, int head) {
    return s2s_plane_in_range(t->layers, t->heads, layer, head)
               ? &t->cells[s2s_plane_cell(t->heads, layer, head)]
               : NULL;
}

long long s2s_plane_table_sentences(const s2s_plane_table *t) { return t->sentences; }
float s2s_plane_table_share(const s2s_plane_table *t) { return t->share; }

// Whether plane (l, h) beats plane (bl, bh): a lower AER, or a higher
// coreference accuracy, ties to the higher mean weight.
static bool better(const s2s_plane_table *t, int l, int h, int bl, int bh) {
    const s2s_plane_counts *c = &t->cells[s2s_plane_cell(t->heads, l, h)];
    const s2s_plane_counts *b = &t->cells[s2s_plane_cell(t->heads, bl, bh)];
    if (t->probe == S2S_HEAD_ALIGN) return s2s_aer(&c->aer) < s2s_aer(&b->aer);
    double ac = s2s_coref_accuracy(&c->coref), ab = s2s_coref_accuracy(&b->coref);
    return ac > ab ||
           (ac == ab && s2s_coref_mean_weight(&c->coref) > s2s_coref_mean_weight(&b->coref));
}

void s2s_plane_table_best(const s2s_plane_table *t, int *layer, int *head) {
    *layer = *head = -1;
    for (int l = -1; l < t->layers; l++)
        for (int h = -1; h < t->heads; h++)
            if ((l != -1 || h != -1) && better(t, l, h, *layer, *head)) {
                *layer = l;
                *head = h;
            }
}
