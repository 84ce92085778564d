// Attention masks: key padding and the causal cut, as key ranges.
#include "layers/mask.h"

s2s_key_range s2s_attn_mask_keys(const s2s_attn_mask *m, int64_t tk, int64_t b, int64_t i) {
    s2s_key_range r = {0, m->k_len ? m->k_len[b] : tk};
    if (m->pattern.causal && m->q_pos0 + i + 1 < r.hi) r.hi = m->q_pos0 + i + 1;
    return r;
}

bool s2s_attn_mask_sees(const s2s_attn_mask *m, int64_t tk, int64_t b, int64_t i, int64_t j) {
    bool padded = m->k_len ? j >= m->k_len[b] : j >= tk;
    bool future = m->pattern.causal && j > m->q_pos0 + i;
    return !padded && !future;
}
