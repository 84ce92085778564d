// From decoded hypotheses to alignments: the hard alignment of a plane,
// the symmetrised alignment of a forward/reverse model pair, and the AER
// counts of every plane against gold (what `s2s align` and `--eval` run).
//
// Dimension letters: L decoder layers, H heads, T rows (h->n_out), S
// columns (h->n_src: the source tokens and </s>).
#include <stdlib.h>
#include <string.h>

#include "align/planes.h"
#include "core/error.h"
#include "align/align.h"

// ---- the hard alignment of one hypothesis ----

s2s_status s2s_hard_align(s2s_alignment *out, const s2s_hypothesis *h, int layer, int head,
                          float share, bool no_eos) {
    out->n = 0;
    if (!h->cross_attn)
        return s2s_fail(S2S_ERR_INVALID, "hard alignment: the hypothesis has no cross-attention "
                                         "(decode with want_attention)");
    size_t plane = (size_t)h->n_out * h->n_src;
    float *w = malloc((plane ? plane : 1) * sizeof *w);             // (T, S)
    float *kept = no_eos ? malloc((plane ? plane : 1) * sizeof *kept) : NULL;  // (T, S - 1)
    bool *keep = malloc(((size_t)h->n_src + 1) * sizeof *keep);                // (S)
    s2s_status st = w && (kept || !no_eos) && keep ? S2S_OK
                                      : s2s_fail(S2S_ERR_NOMEM, "out of memory for an alignment");
    if (st == S2S_OK)
        st = s2s_attn_select(w, h->cross_attn, h->layers, h->heads, h->n_out, h->n_src, layer, head);
    if (st == S2S_OK && no_eos) {
        for (int c = 0; c < h->n_src; c++) keep[c] = c < h->n_src - 1;
        int cols = s2s_attn_drop_columns(kept, w, h->n, h->n_src, keep);
        st = s2s_align_share(out, kept, h->n, cols, cols, share);
    } else if (st == S2S_OK) {
        // The last column is the source </s>: a row whose maximum is there gets no link.
        st = s2s_align_share(out, w, h->n, h->n_src, h->n_src - 1, share);
    }
    free(w);
    free(kept);
    free(keep);
    return st;
}

// ---- a forward/reverse model pair ----

s2s_align_pair s2s_align_pair_default(const s2s_model *fwd, const s2s_model *rev,
                                      s2s_state *rev_state) {
    s2s_align_pair p = {.fwd = fwd, .rev = rev, .rev_state = rev_state,
                        .rev_params = s2s_decode_default_params(rev), .method = S2S_SYM_GROW_DIAG};
    if (!s2s_model_head(fwd, S2S_HEAD_ALIGN, &p.layer, &p.head)) p.layer = p.head = S2S_ALIGN_AVG;
    if (!s2s_model_head(rev, S2S_HEAD_ALIGN, &p.rev_layer, &p.rev_head))
        p.rev_layer = p.rev_head = S2S_ALIGN_AVG;
    p.share = s2s_model_alignment_share(fwd);
    p.rev_share = s2s_model_alignment_share(rev);
    return p;
}

// The ids in vocab `to` of n tokens of vocab `from`, matched by their text:
// the vocab's spelling, or the piece the tokenizer split (pieces may be
// NULL) for a token `from` does not know. Caller frees; NULL on no memory.
static int *map_ids(const s2s_vocab *from, const s2s_vocab *to, const int *ids,
                    char *const *pieces, int n) {
    int *out = malloc(((size_t)n + 1) * sizeof *out);
    if (!out) return NULL;
    for (int i = 0; i < n; i++) {
        const char *t = ids[i] != S2S_UNK ? s2s_vocab_token(from, ids[i]) : NULL;
        out[i] = s2s_vocab_id(to, t ? t : pieces ? pieces[i] : "");
    }
    return out;
}

// The reverse model scores target -> source for every pair: rhyps[k] is
// its forced decoding of src[k] from hyp[k]'s tokens.
static s2s_status score_reverse(const s2s_align_pair *p, int n, const s2s_tokens *src,
                                const s2s_hypothesis *hyp, const s2s_tokens *tgt,
                                s2s_hypothesis *rhyps) {
    const s2s_vocab *sv = s2s_model_src_vocab(p->fwd), *tv = s2s_model_tgt_vocab(p->fwd);
    const s2s_vocab *rsv = s2s_model_src_vocab(p->rev), *rtv = s2s_model_tgt_vocab(p->rev);
    int **rsrc = calloc((size_t)n + 1, sizeof *rsrc), **rtgt = calloc((size_t)n + 1, sizeof *rtgt);
    int *rsl = malloc(((size_t)n + 1) * sizeof *rsl), *rtl = malloc(((size_t)n + 1) * sizeof *rtl);
    s2s_status st = rsrc && rtgt && rsl && rtl ? S2S_OK : S2S_ERR_NOMEM;
    for (int k = 0; k < n && st == S2S_OK; k++) {
        rsrc[k] = map_ids(tv, rsv, hyp[k].ids, tgt ? tgt[k].pieces : NULL, hyp[k].n);
        rtgt[k] = map_ids(sv, rtv, src[k].ids, src[k].pieces, src[k].n);
        rsl[k] = hyp[k].n;
        rtl[k] = src[k].n;
        if (!rsrc[k] || !rtgt[k]) st = S2S_ERR_NOMEM;
    }
    if (st == S2S_ERR_NOMEM) s2s_fail(st, "out of memory for the reverse model's tokens");
    if (st == S2S_OK) {
        s2s_decode_params rp = p->rev_params;
        rp.decode.n_best = 1;
        rp.want_attention = true;
        rp.want_self_attention = false;
        st = s2s_score(p->rev_state, &rp, (const int *const *)rsrc, rsl, (const int *const *)rtgt,
                       rtl, n, rhyps);
        if (st != S2S_OK) s2s_fail(st, "reverse model: %s", s2s_last_error());  // which failed
    }
    for (int k = 0; rsrc && rtgt && k < n; k++) {
        free(rsrc[k]);
        free(rtgt[k]);
    }
    free(rsrc);
    free(rtgt);
    free(rsl);
    free(rtl);
    return st;
}

// Sentence k's forward alignment (into *fwd) and its symmetrisation with
// the reverse hypothesis rh (into *out).
static s2s_status combine(const s2s_align_pair *p, const s2s_hypothesis *h,
                          const s2s_hypothesis *rh, s2s_alignment *fwd, s2s_alignment *out) {
    s2s_alignment rev = {0};
    s2s_status st = s2s_hard_align(fwd, h, p->layer, p->head, p->share, p->no_eos);
    if (st == S2S_OK)
        st = s2s_hard_align(&rev, rh, p->rev_layer, p->rev_head, p->rev_share, p->no_eos);
    if (st == S2S_OK) {
        s2s_alignment_transpose(&rev);  // its (src, tgt) are ours (tgt, src)
        st = s2s_align_symmetrize(out, fwd, &rev, h->n_src - 1, h->n, p->method);
    }
    s2s_alignment_free(&rev);
    return st;
}

s2s_status s2s_align_symmetrize_pair(const s2s_align_pair *p, int n, const s2s_tokens *src,
                                     const s2s_hypothesis *hyp, const s2s_tokens *tgt,
                                     s2s_alignment *fwd_out, s2s_alignment *out) {
    for (int k = 0; k < n; k++) {
        out[k].n = 0;
        if (fwd_out) fwd_out[k].n = 0;
    }
    if (n <= 0) return S2S_OK;
    if (!p->fwd || !p->rev || !p->rev_state)
        return s2s_fail(S2S_ERR_INVALID, "symmetrize: the pair needs both models and a reverse state");
    for (int k = 0; k < n; k++)
        if (hyp[k].n_src != src[k].n + 1)
            return s2s_fail(S2S_ERR_INVALID,
                            "symmetrize: sentence %d has %d source tokens but its hypothesis %d",
                            k, src[k].n, hyp[k].n_src - 1);
    s2s_hypothesis *rhyps = calloc((size_t)n, sizeof *rhyps);
    if (!rhyps) return s2s_fail(S2S_ERR_NOMEM, "out of memory for the reverse model");
    s2s_status st = score_reverse(p, n, src, hyp, tgt, rhyps);
    s2s_alignment scratch = {0};
    for (int k = 0; k < n && st == S2S_OK; k++)
        st = combine(p, &hyp[k], &rhyps[k], fwd_out ? &fwd_out[k] : &scratch, &out[k]);
    s2s_alignment_free(&scratch);
    for (int k = 0; k < n; k++) s2s_hypothesis_free(&rhyps[k]);
    free(rhyps);
    return st;
}

// ---- the AER of every plane ----

s2s_status s2s_aer_planes_add(s2s_plane_counts *cells, int layers, int heads, float share,
                              bool no_eos, const s2s_hypothesis *h, const s2s_alignment *gold) {
    if (!h->cross_attn)
        return s2s_fail(S2S_ERR_INVALID, "AER table: the hypothesis has no cross-attention");
    if (h->layers != layers || h->heads != heads)
        return s2s_fail(S2S_ERR_INVALID,
                        "AER table of %d layers x %d heads given a hypothesis of %d x %d",
                        layers, heads, h->layers, h->heads);
    s2s_alignment hyp = {0};
    s2s_status st = S2S_OK;
    for (int l = S2S_ALIGN_AVG; l < layers && st == S2S_OK; l++)
        for (int hd = S2S_ALIGN_AVG; hd < heads && st == S2S_OK; hd++) {
            st = s2s_hard_align(&hyp, h, l, hd, share, no_eos);
            if (st == S2S_OK) s2s_aer_add(&cells[s2s_plane_cell(heads, l, hd)].aer, &hyp, gold);
        }
    s2s_alignment_free(&hyp);
    return st;
}
