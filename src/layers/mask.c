// Attention masks: key padding, the causal cut and each head's pattern,
// as key ranges.
#include "layers/mask.h"

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

s2s_key_range s2s_attn_mask_keys(const s2s_attn_mask *m, int64_t tk, int64_t b, int64_t h,
                                 int64_t i) {
    int64_t pos = m->q_pos0 + i, span = m->pattern.span;
    s2s_key_range r = {0, m->k_len ? m->k_len[b] : tk};
    if (m->pattern.causal) r.hi = min64(r.hi, pos + 1);
    switch (s2s_pattern_head(&m->pattern, h)) {
    case S2S_ATTN_LOCAL:
        r.lo = max64(r.lo, pos - span);
        r.hi = min64(r.hi, pos + span + 1);
        break;
    case S2S_ATTN_BLOCK:
        r.lo = max64(r.lo, pos / span * span);
        r.hi = min64(r.hi, pos / span * span + span);
        break;
    default:  // full, linear: every key; strided: hidden in the range (mask.h)
        break;
    }
    return r;
}

bool s2s_attn_mask_exact(const s2s_attn_mask *m, int64_t h) {
    return s2s_pattern_head(&m->pattern, h) != S2S_ATTN_STRIDED;
}

bool s2s_attn_mask_sees(const s2s_attn_mask *m, int64_t tk, int64_t b, int64_t h, int64_t i,
                        int64_t j) {
    int64_t pos = m->q_pos0 + i, span = m->pattern.span, d = pos - j;
    if (m->k_len ? j >= m->k_len[b] : j >= tk) return false;  // padding
    if (m->pattern.causal && j > pos) return false;
    switch (s2s_pattern_head(&m->pattern, h)) {
    case S2S_ATTN_LOCAL: return d <= span && -d <= span;
    case S2S_ATTN_BLOCK: return pos / span == j / span;
    case S2S_ATTN_STRIDED: return (d < span && -d < span) || d % span == 0;
    default: return true;  // full, linear
    }
}
