// Coreference in encoder self-attention: how often each plane's pronoun
// row peaks at the gold antecedent, and the weight it gives it.
//
// Dimension letters: L encoder layers, H heads, S source tokens and </s>.
#include <stdlib.h>
#include <string.h>

#include "align/planes.h"
#include "core/error.h"
#include "align/align.h"
#include "tokenizer/utf8.h"

double s2s_coref_accuracy(const s2s_coref_counts *c) {
    return c->links ? (double)c->hits / (double)c->links : 0.0;
}

double s2s_coref_mean_weight(const s2s_coref_counts *c) {
    return c->links ? c->weight / (double)c->links : 0.0;
}

bool s2s_token_is_punct(const char *token) {
    uint32_t cp = 0;
    size_t n = token ? strlen(token) : 0;
    return n && s2s_utf8_decode(token, n, &cp) > 0 && s2s_is_punct(cp);
}

int s2s_coref_row(float *out, const float *w, int n_src, const char *const *tokens, int pronoun) {
    int best = -1;
    for (int c = 0; c < n_src; c++) {
        bool cand = c != pronoun && c < n_src - 1 && !s2s_token_is_punct(tokens[c]);
        out[c] = cand ? w[(size_t)pronoun * n_src + c] : -1.0f;
        if (cand && (best < 0 || out[c] > out[best])) best = c;
    }
    return best;
}

s2s_status s2s_coref_check(const s2s_alignment *links, const char *const *tokens, int n,
                           const char *where) {
    for (int i = 0; i < links->n; i++) {
        int p = links->links[i].src, a = links->links[i].tgt;
        const char *why = p >= n || a >= n ? "is outside the sentence"
                          : p == a        ? "links a token to itself"
                          : s2s_token_is_punct(tokens[a]) ? "has punctuation as antecedent"
                                                          : NULL;
        if (why)
            return s2s_fail(S2S_ERR_INVALID, "%s%scoreference link %d-%d %s (%d source tokens)",
                            where ? where : "", where ? ": " : "", p, a, why, n);
    }
    return S2S_OK;
}

s2s_status s2s_coref_planes_add(s2s_plane_counts *cells, int layers, int heads,
                                const s2s_hypothesis *h, const char *const *tokens,
                                const s2s_alignment *links, const char *where) {
    if (!h->enc_attn)
        return s2s_fail(S2S_ERR_INVALID, "coreference table: the hypothesis has no encoder "
                                         "self-attention (decode with want_self_attention)");
    if (h->enc_layers != layers || h->heads != heads || h->n_src < 1)
        return s2s_fail(S2S_ERR_INVALID,
                        "coreference table of %d layers x %d heads given a hypothesis of %d x %d",
                        layers, heads, h->enc_layers, h->heads);
    int S = h->n_src;
    S2S_TRY(s2s_coref_check(links, tokens, S - 1, where));
    float *w = malloc((size_t)S * S * sizeof *w);  // (S, S)
    float *row = malloc((size_t)S * sizeof *row);  // (S)
    if (!w || !row) {
        free(w);
        free(row);
        return s2s_fail(S2S_ERR_NOMEM, "out of memory for the coreference table");
    }
    for (int l = S2S_ALIGN_AVG; l < layers; l++)
        for (int hd = S2S_ALIGN_AVG; hd < heads; hd++) {
            s2s_attn_select(w, h->enc_attn, h->enc_layers, h->heads, S, S, l, hd);  // in range
            s2s_coref_counts *c = &cells[s2s_plane_cell(heads, l, hd)].coref;
            for (int i = 0; i < links->n; i++) {
                int p = links->links[i].src, a = links->links[i].tgt;
                s2s_coref_row(row, w, S, tokens, p);
                bool hit = true;  // strictly above every other candidate
                for (int k = 0; k < S && hit; k++) hit = k == a || row[k] < row[a];
                c->links++;
                c->hits += hit;
                c->weight += row[a];
            }
        }
    free(w);
    free(row);
    return S2S_OK;
}
