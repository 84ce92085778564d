// s2s_model_save_quantized: a model file whose decoding matrices are
// stored as I8 (with per-row scales) or BF16 (docs/model-format.md).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/error.h"
#include "core/util.h"
#include "model/model_internal.h"
#include "ops/ops.h"

// Whether p lies in a matrix that decoding multiplies in the compute type
// (decode_weights.c): self-attention Q/K/V and output, the feed-forward
// blocks, and an untied generator. Cross-attention and the embeddings
// (with a tied generator, the target embedding) stay F32.
static bool within(const float *p, const float *w, int64_t n) { return p >= w && p < w + n; }

static bool in_stack(const s2s_model *m, const s2s_stack *st, const s2s_layer_weights *w,
                     const float *p) {
    int64_t d = m->cfg.model.d_model, f = m->cfg.model.ffn_dim;
    for (int l = 0; l < st->layers; l++)
        for (int i = 0; i < st->n_subs; i++) {
            const s2s_attn_weights *a = &w[l].sub[i].attn;
            const s2s_ffn_weights *n = &w[l].sub[i].ffn;
            s2s_sub_kind kind = st->subs[i].kind;
            if (kind == S2S_SUB_SELF_ATTN &&
                (within(p, a->w_qkv, 3 * d * d) || within(p, a->w_out, d * d)))
                return true;
            if (kind == S2S_SUB_FFN && (within(p, n->w1, f * d) || within(p, n->w2, d * f)))
                return true;
        }
    return false;
}

static bool decoding_matrix(const s2s_model *m, const float *p) {
    const s2s_model_config *c = &m->cfg.model;
    int64_t d = c->d_model;
    if (in_stack(m, &m->arch.enc, m->enc, p) || in_stack(m, &m->arch.dec, m->dec, p)) return true;
    return !c->tie_output && within(p, m->gen_w, (int64_t)s2s_vocab_size(m->tgt_vocab) * d);
}

s2s_status s2s_model_save_quantized(const s2s_model *m, const char *path, s2s_compute_type type) {
    if (type != S2S_COMPUTE_INT8 && type != S2S_COMPUTE_BF16)
        return s2s_fail(S2S_ERR_INVALID, "s2s_model_save_quantized: the type is int8 or bf16");
    int n = m->n_tensors, n_scales = 0;
    s2s_st_tensor *ts = s2s_calloc((size_t)n, sizeof *ts);
    s2s_st_tensor *scales = s2s_calloc((size_t)n, sizeof *scales);
    char (*names)[96] = s2s_calloc((size_t)n, sizeof *names);
    void **blocks = s2s_calloc((size_t)n * 2, sizeof *blocks);
    s2s_status st = ts && scales && names && blocks ? S2S_OK : S2S_ERR_NOMEM;
    for (int i = 0; i < n && st == S2S_OK; i++) {
        const s2s_param *p = &m->tensors[i];
        ts[i] = (s2s_st_tensor){.name = p->name, .ndim = p->ndim, .data = p->data};
        if (p->ndim != 2 || !decoding_matrix(m, p->data)) continue;
        int64_t rows = p->shape[0], cols = p->shape[1];
        size_t elems = S2S_SIZE(rows, cols);
        if (type == S2S_COMPUTE_BF16) {
            uint16_t *h = blocks[2 * i] = s2s_calloc(elems, sizeof *h);
            if (!h) st = S2S_ERR_NOMEM;
            else s2s_to_bf16(h, p->data, elems);
            ts[i].raw = h, ts[i].dtype = S2S_ST_BF16;
            continue;
        }
        // one scale per row of the (out, in) matrix: per output channel, as
        // decoding's per-column scales of the transposed copy
        int8_t *q = blocks[2 * i] = s2s_calloc(elems, 1);
        float *s = blocks[2 * i + 1] = s2s_calloc((size_t)rows, sizeof *s);
        if (!q || !s) {
            st = S2S_ERR_NOMEM;
            break;
        }
        for (int64_t r = 0; r < rows; r++)
            s[r] = s2s_quantize_row_int8(q + r * cols, p->data + r * cols, cols);
        ts[i].raw = q, ts[i].dtype = S2S_ST_I8;
        snprintf(names[i], sizeof names[i], "%s_scale", p->name);
        scales[n_scales++] = (s2s_st_tensor){.name = names[i], .ndim = 1, .shape = {rows}, .data = s};
    }
    if (st == S2S_ERR_NOMEM) st = s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    if (st == S2S_OK) st = s2s_model_save_as(m, path, ts, scales, n_scales, NULL, 0);
    for (int i = 0; blocks && i < 2 * n; i++) free(blocks[i]);
    free(blocks), free(names), free(scales), free(ts);
    return st;
}
