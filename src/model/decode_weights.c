// The decoding copy of a model's weights (model_internal.h): the matrices
// of the self-attention, feed-forward and generator products transposed.
#include <pthread.h>
#include <stdlib.h>

#include "core/checked.h"
#include "core/error.h"
#include "core/util.h"
#include "model/model_internal.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

// dst (K, N) = src (N, K)^T, advancing *dst past it.
static float *transposed(float **dst, const float *src, int64_t n, int64_t k) {
    float *t = *dst;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < k; j++) t[j * n + i] = src[i * k + j];
    *dst += n * k;
    return t;
}

static void attn_in_out(s2s_attn_weights *a, float **dst, int64_t d) {
    a->w_qkv = transposed(dst, a->w_qkv, 3 * d, d);
    a->w_out = transposed(dst, a->w_out, d, d);
    a->in_out = true;
}

static void ffn_in_out(s2s_ffn_weights *w, float **dst, int64_t d, int64_t f) {
    w->w1 = transposed(dst, w->w1, f, d);
    w->w2 = transposed(dst, w->w2, d, f);
    w->in_out = true;
}

void s2s_decode_weights_free(s2s_decode_weights *w) {
    if (!w) return;
    free(w->enc);
    free(w->dec);
    free(w->block);
    free(w);
}

static s2s_status make(s2s_decode_weights **out, const s2s_model *m) {
    const s2s_model_config *c = &m->cfg.model;
    int64_t d = c->d_model, f = c->ffn_dim, V = s2s_vocab_size(m->tgt_vocab);
    // Fewer floats than the weights (within S2S_MAX_WEIGHTS), in checked
    // arithmetic all the same: the sizes come from the config.
    size_t per_layer = s2s_size_add(S2S_SIZE(4, d, d), S2S_SIZE(2, d, f));
    size_t floats = s2s_size_add(
        s2s_size_mul((size_t)c->encoder_layers + (size_t)c->decoder_layers, per_layer),
        S2S_SIZE(d, V));
    s2s_decode_weights *w = s2s_calloc(1, sizeof *w);
    if (w) {
        w->enc = s2s_calloc((size_t)c->encoder_layers, sizeof *w->enc);
        w->dec = s2s_calloc((size_t)c->decoder_layers, sizeof *w->dec);
        w->block = s2s_calloc(floats, sizeof(float));
    }
    if (!w || !w->enc || !w->dec || !w->block) {
        s2s_decode_weights_free(w);
        return s2s_fail(S2S_ERR_NOMEM, "out of memory for the decoding copy of the weights");
    }
    float *dst = w->block;
    for (int l = 0; l < c->encoder_layers; l++) {
        w->enc[l] = m->enc[l];
        attn_in_out(&w->enc[l].self_attn, &dst, d);
        ffn_in_out(&w->enc[l].ffn, &dst, d, f);
    }
    for (int l = 0; l < c->decoder_layers; l++) {
        w->dec[l] = m->dec[l];
        attn_in_out(&w->dec[l].self_attn, &dst, d);
        ffn_in_out(&w->dec[l].ffn, &dst, d, f);
    }
    w->gen_w = transposed(&dst, m->gen_w, V, d);
    w->generation = m->generation;
    *out = w;
    return S2S_OK;
}

s2s_status s2s_model_decode_weights(const s2s_model *m, const s2s_decode_weights **out) {
    s2s_status st = S2S_OK;
    pthread_mutex_lock(&lock);
    s2s_model *mm = (s2s_model *)m;  // the copy is a cache: const to callers
    if (!mm->decode || mm->decode->generation != mm->generation) {
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
