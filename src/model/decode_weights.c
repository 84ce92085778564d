// The decoding copy of a model's weights (model_internal.h): the matrices
// of the self-attention, feed-forward and generator products transposed.
#include <pthread.h>
#include <stdlib.h>

#include "core/checked.h"
#include "core/error.h"
#include "core/util.h"
#include "model/model_internal.h"
#include "ops/ops.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

// The matrices are laid out one after another in a block of the compute
// type's elements (and, for int8, a block of column scales).
typedef struct cursor {
    s2s_compute_type type;
    char *dst;      // next matrix
    float *scales;  // next column scales (int8)
    int32_t *comps; // next column compensations (int8)
    float *tmp;     // (K, N) fp32, the largest matrix: the transpose before conversion
} cursor;

static size_t elem_size(s2s_compute_type t) {
    return t == S2S_COMPUTE_INT8 ? 1 : t == S2S_COMPUTE_BF16 ? 2 : sizeof(float);
}

// W^T (K, N) from src (N, K) in the cursor's type, advancing it.
static s2s_wmat copy_transposed(cursor *c, const float *src, int64_t n, int64_t k) {
    float *t = c->type == S2S_COMPUTE_FP32 ? (float *)c->dst : c->tmp;
    enum { TILE = 16 };  // in tiles, so that neither side strides through memory
    for (int64_t i0 = 0; i0 < n; i0 += TILE)
        for (int64_t j0 = 0; j0 < k; j0 += TILE)
            for (int64_t i = i0; i < i0 + TILE && i < n; i++)
                for (int64_t j = j0; j < j0 + TILE && j < k; j++) t[j * n + i] = src[i * k + j];
    s2s_wmat w = {.type = c->type, .w = c->dst};
    if (c->type == S2S_COMPUTE_INT8) {
        s2s_quantize_cols_int8((int8_t *)c->dst, c->scales, t, k, n);
        s2s_int8_compensation(c->comps, (const int8_t *)c->dst, k, n);
        w.scale = c->scales, w.comp = c->comps;
        c->scales += n, c->comps += n;
    } else if (c->type == S2S_COMPUTE_BF16) {
        s2s_to_bf16((uint16_t *)c->dst, t, (size_t)(n * k));
    }
    c->dst += (size_t)(n * k) * elem_size(c->type);
    return w;
}

// The fp32 pointers of a copy stay the model's own (N, K) matrices unless
// the copy is fp32, whose transposed matrices they then are.
static void attn_transpose(s2s_attn_weights *a, cursor *c, int64_t d) {
    a->qkv = copy_transposed(c, a->w_qkv, 3 * d, d);
    a->out = copy_transposed(c, a->w_out, d, d);
    if (c->type != S2S_COMPUTE_FP32) return;
    a->w_qkv = (float *)a->qkv.w;
    a->w_out = (float *)a->out.w;
    a->transposed = true;
}

// Cross-attention's matrices in bf16: W_q^T, W_kv^T and W_out^T.
static void cross_bf16(s2s_attn_weights *a, cursor *c, int64_t d) {
    a->qkv = copy_transposed(c, a->w_qkv, d, d);
    a->kv = copy_transposed(c, a->w_qkv + d * d, 2 * d, d);
    a->out = copy_transposed(c, a->w_out, d, d);
}

static void ffn_transpose(s2s_ffn_weights *w, cursor *c, int64_t d, int64_t f) {
    w->m1 = copy_transposed(c, w->w1, f, d);
    w->m2 = copy_transposed(c, w->w2, d, f);
    if (c->type != S2S_COMPUTE_FP32) return;
    w->w1 = (float *)w->m1.w;
    w->w2 = (float *)w->m2.w;
    w->transposed = true;
}

void s2s_decode_weights_free(s2s_decode_weights *w) {
    if (!w) return;
    free(w->enc);
    free(w->dec);
    s2s_big_free(w->block, w->block_n, elem_size(w->compute));
    free(w->scales);
    free(w->comps);
    free(w);
}

// The sublayers of a stack's layer that the copy holds (the transposed
// self-attention and feed-forward matrices; cross-attention's in bf16
// only), into its elements and int8 column scales; with w, copied from
// the model's layer `from` into the copy's `to`. Cross-attention goes
// last in the block.
static void copy_layer(const s2s_stack *st, bool bf16, cursor *c, int64_t d, int64_t f,
                       size_t *elems, size_t *cols, const s2s_layer_weights *from,
                       s2s_layer_weights *to) {
    if (to) *to = *from;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < st->n_subs; i++) {
            s2s_sub_kind kind = st->subs[i].kind;
            if ((kind == S2S_SUB_CROSS_ATTN) != (pass == 1)) continue;
            if (kind == S2S_SUB_SELF_ATTN) {
                *elems = s2s_size_add(*elems, S2S_SIZE(4, d, d));
                *cols = s2s_size_add(*cols, (size_t)(4 * d));
                if (to) attn_transpose(&to->sub[i].attn, c, d);
            } else if (kind == S2S_SUB_FFN) {
                *elems = s2s_size_add(*elems, S2S_SIZE(2, d, f));
                *cols = s2s_size_add(*cols, (size_t)(d + f));
                if (to) ffn_transpose(&to->sub[i].ffn, c, d, f);
            } else if (bf16) {
                *elems = s2s_size_add(*elems, S2S_SIZE(4, d, d));
                if (to) cross_bf16(&to->sub[i].attn, c, d);
            }
        }
}

// Both stacks' layers: counted (w NULL), or copied into w.
static void copy_stacks(const s2s_model *m, s2s_decode_weights *w, cursor *c, size_t *elems,
                        size_t *cols) {
    const s2s_model_config *cfg = &m->cfg.model;
    bool bf16 = m->compute == S2S_COMPUTE_BF16;
    for (int l = 0; l < m->arch.enc.layers; l++)
        copy_layer(&m->arch.enc, bf16, c, cfg->d_model, cfg->ffn_dim, elems, cols, &m->enc[l],
                   w ? &w->enc[l] : NULL);
    for (int l = 0; l < m->arch.dec.layers; l++)
        copy_layer(&m->arch.dec, bf16, c, cfg->d_model, cfg->ffn_dim, elems, cols, &m->dec[l],
                   w ? &w->dec[l] : NULL);
}

static s2s_status make(s2s_decode_weights **out, const s2s_model *m) {
    const s2s_model_config *c = &m->cfg.model;
    int64_t d = c->d_model, f = c->ffn_dim, V = s2s_vocab_size(m->tgt_vocab);
    s2s_compute_type type = m->compute;
    bool lp = type != S2S_COMPUTE_FP32;
    // Fewer elements than the weights (within S2S_MAX_WEIGHTS), in checked
    // arithmetic all the same: the sizes come from the config.
    size_t elems = S2S_SIZE(d, V), cols = (size_t)V;
    copy_stacks(m, NULL, NULL, &elems, &cols);
    int64_t widest = 3 * d > f ? 3 * d : f;
    size_t largest = S2S_SIZE(d, widest > V ? widest : V);
    s2s_decode_weights *w = s2s_calloc(1, sizeof *w);
    float *tmp = NULL;
    if (w) {
        w->enc = s2s_calloc((size_t)c->encoder_layers, sizeof *w->enc);
        w->dec = s2s_calloc((size_t)c->decoder_layers, sizeof *w->dec);
        w->block_n = elems, w->compute = type;  // the block's element type, for freeing it
        w->block = s2s_big_alloc(elems, elem_size(type));
        w->scales = type == S2S_COMPUTE_INT8 ? s2s_calloc(cols, sizeof(float)) : NULL;
        w->comps = type == S2S_COMPUTE_INT8 ? s2s_calloc(cols, sizeof(int32_t)) : NULL;
        tmp = lp ? s2s_calloc(largest, sizeof(float)) : NULL;
    }
    if (!w || !w->enc || !w->dec || !w->block || (type == S2S_COMPUTE_INT8 && (!w->scales || !w->comps)) ||
        (lp && !tmp)) {
        s2s_decode_weights_free(w);
        free(tmp);
        return s2s_fail(S2S_ERR_NOMEM, "out of memory for the decoding copy of the weights");
    }
    cursor cur = {.type = type, .dst = w->block, .scales = w->scales, .comps = w->comps,
                  .tmp = tmp};
    size_t unused = 0;
    copy_stacks(m, w, &cur, &unused, &unused);
    w->gen = copy_transposed(&cur, m->gen_w, V, d);
    w->gen_w = lp ? NULL : w->gen.w;
    free(tmp);
    w->generation = m->generation;
    *out = w;
    return S2S_OK;
}

s2s_status s2s_model_decode_weights(const s2s_model *m, const s2s_decode_weights **out) {
    s2s_status st = S2S_OK;
    pthread_mutex_lock(&lock);
    s2s_model *mm = (s2s_model *)m;  // the copy is a cache: const to callers
    if (!mm->decode || mm->decode->generation != mm->generation ||
        mm->decode->compute != mm->compute) {
        s2s_decode_weights *w = NULL;
        st = make(&w, m);
        if (st == S2S_OK) {
            s2s_decode_weights_free(mm->decode);
            mm->decode = w;
        }
    }
    *out = mm->decode;
    pthread_mutex_unlock(&lock);
    return st;
}

void s2s_model_touch(const s2s_model *m) {
    pthread_mutex_lock(&lock);
    ((s2s_model *)m)->generation++;
    pthread_mutex_unlock(&lock);
}
