// Evaluation: the teacher-forced loss and token accuracy, then corpus BLEU
// and exact match of greedy (or any s2s_decode_params) translations.
#include "train/evaluate.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "train/metrics.h"

s2s_status s2s_evaluate_dataset(const s2s_model *m, s2s_graph *g, s2s_state *st_dec,
                                s2s_batch_buf *bb, const s2s_dataset *d, int batch_tokens,
                                float label_smoothing, const s2s_decode_params *p,
                                s2s_valid_result *r) {
    memset(r, 0, sizeof *r);
    r->sentences = d->n;
    s2s_batch_plan plan = {0};
    S2S_TRY(s2s_batch_plan_make(&plan, d, batch_tokens, /*shuffle=*/false, 0, 1));
    double loss = 0, nll = 0;
    long long toks = 0, correct = 0;
    s2s_status st = S2S_OK;
    for (int b = 0; b < plan.n_batches && st == S2S_OK; b++) {
        st = s2s_batch_fill(bb, d, plan.order + plan.start[b],
                            plan.start[b + 1] - plan.start[b]);
        s2s_loss_stats ls = {0};
        if (st == S2S_OK) st = s2s_forward_loss(g, &bb->b, label_smoothing, &ls);
        loss += ls.loss * ls.n_tokens;
        nll += ls.nll * ls.n_tokens;
        toks += ls.n_tokens;
        correct += ls.n_correct;
    }
    s2s_batch_plan_free(&plan);
    if (st != S2S_OK) return st;
    r->loss = toks ? loss / (double)toks : 0;
    r->nll = toks ? nll / (double)toks : 0;
    r->token_accuracy = toks ? (double)correct / (double)toks : 0;

    // Greedy translations, compared as token strings with the references.
    const int **src = s2s_calloc((size_t)d->n, sizeof *src);
    int *len = s2s_calloc((size_t)d->n, sizeof *len);
    s2s_hypothesis *h = s2s_calloc((size_t)d->n, sizeof *h);
    const char **toks_h = NULL;
    size_t cap_h = 0;
    if (!src || !len || !h) st = S2S_ERR_NOMEM;
    for (int i = 0; st == S2S_OK && i < d->n; i++) {
        src[i] = d->ids + d->ex[i].src;
        len[i] = d->ex[i].src_len;
    }
    s2s_decode_params one = *p;
    one.decode.n_best = 1;  // the best hypothesis is the translation
    if (st == S2S_OK) st = s2s_translate(st_dec, &one, src, len, d->n, h);
    bool translated = st == S2S_OK;  // s2s_translate frees its results when it fails
    if (st == S2S_OK) {
        s2s_bleu_stats bs = {0};
        int exact = 0;
        const s2s_vocab *tv = s2s_model_tgt_vocab(m);
        for (int i = 0; i < d->n && st == S2S_OK; i++) {
            if ((size_t)h[i].n + 1 > cap_h) {
                cap_h = (size_t)h[i].n + 1;
                const char **nh = realloc(toks_h, cap_h * sizeof *nh);
                if (!nh) { st = s2s_fail(S2S_ERR_NOMEM, "out of memory"); break; }
                toks_h = nh;
            }
            for (int j = 0; j < h[i].n; j++) toks_h[j] = s2s_vocab_token(tv, h[i].ids[j]);
            const char *const *ref = d->ref_tokens + d->ex[i].ref;
            st = s2s_bleu_add(&bs, toks_h, h[i].n, ref, d->ex[i].tgt_len);
            exact += s2s_tokens_match(toks_h, h[i].n, ref, d->ex[i].tgt_len);
        }
        r->bleu = s2s_bleu_score(&bs);
        r->exact_match = d->n ? (double)exact / d->n : 0;
    }
    if (translated)
        for (int i = 0; i < d->n; i++) s2s_hypothesis_free(&h[i]);
    free(toks_h);
    free(h);
    free(src);
    free(len);
    return st;
}

// Evaluates m on dataset d (if loading it went well) and frees d.
static s2s_status evaluate_owned(const s2s_model *m, s2s_status status, s2s_dataset *d,
                                 const s2s_decode_params *p, s2s_valid_result *out) {
    const s2s_config *cfg = s2s_model_get_config(m);
    s2s_graph *g = NULL;
    s2s_state *st = NULL;
    s2s_batch_buf bb = {0};
    if (status == S2S_OK) status = s2s_graph_new(&g, m);
    if (status == S2S_OK) status = s2s_state_new(&st, m);
    if (status == S2S_OK)
        status = s2s_evaluate_dataset(m, g, st, &bb, d, cfg->train.batch_tokens,
                                      cfg->train.label_smoothing, p, out);
    s2s_batch_buf_free(&bb);
    s2s_state_free(st);
    s2s_graph_free(g);
    s2s_dataset_free(d);
    return status;
}

s2s_status s2s_evaluate(const s2s_model *m, const char *tsv, const s2s_decode_params *p,
                        s2s_valid_result *out) {
    s2s_dataset *d = NULL;
    s2s_status status = s2s_dataset_load(&d, tsv, s2s_model_src_vocab(m), s2s_model_tgt_vocab(m),
                                         s2s_model_get_config(m)->model.max_len,
                                         S2S_DATA_REFS);
    return evaluate_owned(m, status, d, p, out);
}

s2s_status s2s_evaluate_tokens(const s2s_model *m, const s2s_tokens *src, const s2s_tokens *tgt,
                               int n, const s2s_decode_params *p, s2s_valid_result *out) {
    if (n < 1) return s2s_fail(S2S_ERR_INVALID, "s2s_evaluate_tokens: no sentence pairs");
    s2s_dataset *d = NULL;
    s2s_status status = s2s_dataset_from_tokens(&d, src, tgt, n,
                                                s2s_model_get_config(m)->model.max_len,
                                                /*keep_refs=*/true);
    return evaluate_owned(m, status, d, p, out);
}
