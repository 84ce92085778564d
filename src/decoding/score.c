// Forced decoding: the log-prob of every target token and of the final
// </s>, all positions in one causal pass.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "decoding/search.h"
#include "ops/ops.h"

s2s_status s2s_score_batch(s2s_state *st, const s2s_decode_params *p, const s2s_order *order,
                           int B, const int *const *src, const int *src_len,
                           const int *const *tgt, const int *tgt_len, s2s_hypothesis *out) {
    const s2s_model *m = st->m;
    int64_t V = s2s_vocab_size(m->tgt_vocab);
    int64_t S = order[0].len + 1, T = 0;
    for (int b = 0; b < B; b++)
        if (tgt_len[order[b].index] + 1 > T) T = tgt_len[order[b].index] + 1;
    unsigned maps = s2s_maps_wanted(p);
    const s2s_model_config *c = &m->cfg.model;
    S2S_TRY(s2s_state_reserve(st, B, 1, S, T, T, maps != 0));
    S2S_TRY(s2s_encode_batch(st, order, B, src, src_len, S, maps & S2S_MAPS_SELF));

    for (int b = 0; b < B; b++) {  // decoder input: <s> + target, padded
        int i = order[b].index;
        int *row = st->ids + (int64_t)b * T;
        row[0] = S2S_BOS;
        if (tgt_len[i] > 0) memcpy(row + 1, tgt[i], (size_t)tgt_len[i] * sizeof(int));
        for (int64_t j = tgt_len[i] + 1; j < T; j++) row[j] = S2S_PAD;
    }
    s2s_dec_pos pos = {.t0 = 0, .tq = T, .t_alloc = T, .beams = 1};
    S2S_TRY(s2s_decode_rows(st, B, S, pos, maps));
    s2s_map_src cross = {st->cross_probs, c->decoder_layers, B, c->heads, T, S};
    s2s_map_src self = {st->self_probs, c->decoder_layers, B, c->heads, T, T};

    for (int b = 0; b < B; b++) {
        int i = order[b].index, n = tgt_len[i];
        s2s_hypothesis *h = &out[i];
        S2S_TRY(s2s_hyp_alloc(h, m, n + 1, src_len[i] + 1, maps));
        if (n > 0) memcpy(h->ids, tgt[i], (size_t)n * sizeof(int));
        h->n = n;
        h->n_out = n + 1;
        for (int t = 0; t <= n; t++) {
            float *row = st->logits + ((int64_t)b * T + t) * V;
            s2s_log_softmax_row(row, V);
            int gold = t < n ? tgt[i][t] : S2S_EOS;
            if (isnan(row[gold])) return s2s_not_finite(i + 1, t);
            h->token_logprobs[t] = row[gold];
            h->logprob += row[gold];
        }
        h->score = h->logprob / powf((float)h->n_out, p->decode.length_penalty);
        if (h->cross_attn) s2s_copy_maps(h->cross_attn, n + 1, h->n_src, 0, cross, b, 0, n + 1);
        if (h->self_attn) {
            s2s_copy_maps(h->self_attn, n + 1, n + 1, 0, self, b, 0, n + 1);
            s2s_copy_encoder_maps(h, st, b, B, S);
        }
    }
    return S2S_OK;
}
