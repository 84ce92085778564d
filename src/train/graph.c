// Training graph: the forward pass keeping activations, the label-smoothed
// cross-entropy, and the backward pass into a parameter-shaped gradient
// block.
//
// Dimension letters: N sentences, S source rows, T target rows, D model
// width, F FFN width, H heads, V target vocabulary; Rs = N*S, Rt = N*T.
//
// The forward pass is the inference one (src/layers, src/decoding) with
// the whole target at once (causal mask from position 0) plus dropout:
//   x0 = drop(E[id] * sqrt(D) + PE[pos])
//   pre:  x = x + drop(Sub(LN(x)))      post: x = LN(x + drop(Sub(x)))
//   attention weights: drop(softmax(mask(Q K^T / sqrt(Dh))))
//   logits = h · W^T + b,  W = generator.weight or tgt_embed.weight (tied)
// Shared with decoding, from src/layers: the fused weight [W_q; W_k; W_v]
// and its cross-attention K/V slice, the pre/post-norm choice
// (layers/recipe.h) and the two attention halves (layers/attention.h).
// Training's own: keeping the activations, dropout, the loss and the
// backward pass, and where Q, K and V sit: each in a (R, D) block of its
// own (qkv_blocks), where decoding keeps rows of one fused projection.
// Guided alignment (optional) adds a cross-entropy between gold alignment
// rows and one cross-attention head's weights before dropout; its gradient
// joins that head's softmax backward (s2s_attention_backward_head). Guided
// coreference does the same for one encoder self-attention head and the
// gold antecedents of the source pronouns.
// Every sublayer writes a fresh residual stream buffer, so the backward
// pass finds the input of each LayerNorm and product it needs.
//
// Gradients of pad rows: a padded source row is masked out as a key and
// feeds no real row; a padded target row gets no loss and, being after
// every real row, is seen by none through the causal mask. Their
// gradients are therefore exactly 0, and the embedding rows of <pad> get
// no gradient from padding. A <pad> id inside a sentence would be treated
// like any other id (PyTorch's nn.Embedding without padding_idx does the
// same). The positional table is a constant.
#include "train/graph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "layers/attention.h"
#include "layers/recipe.h"
#include "layers/transformer.h"
#include "ops/matmul.h"
#include "ops/ops.h"
#include "train/attention_chunked.h"
#include "train/backward_ops.h"

// ---- activations ----

// What one sublayer (self-attention, cross-attention or FFN) keeps.
typedef struct sub_acts {
    const float *in;  // (R, D) residual stream entering (the previous out)
    float *h;         // (R, D) sublayer input: LN(in) for pre-norm, in for post-norm
    float *xhat;      // (R, D) normalised LN input: in (pre) or in + drop(sub) (post)
    float *rstd;      // (R)
    uint8_t *keep;    // (R, D) dropout mask of the sublayer output
    float *out;       // (R, D) residual stream leaving
    // attention
    float *q;         // self (R, 3D) fused Q|K|V; cross (R, D) queries
    float *kv;        // cross (Rs, 2D) keys|values of the encoder output
    float *probs;     // (N, H, Tq, Tk) softmax
    float *pdrop;     // (N, H, Tq, Tk) after attention dropout (when allocated)
    uint8_t *akeep;   // (N, H, Tq, Tk)
    float *norms;     // (N, H, Tq) linear heads' row norms (s2s_attn_shape)
    float *lse;       // (N, H, Tq) attention_chunk: each row's log-sum-exp
    uint64_t akey;    // attention_chunk: the key of its dropout mask
    float *ctx;       // (R, D) heads concatenated, before out_proj
    // FFN
    float *a1;        // (R, F) fc1 output before the activation
    float *act;       // (R, F) after it
    // bf16 only: the products' inputs h, ctx and act rounded to bf16 once,
    // as the forward pass makes them, for its product and the backward's
    // dW; q, kv and the weights V is multiplied by (probs or pdrop, when
    // kept) likewise for the attention's products (in the byte block)
    uint16_t *h16, *ctx16, *act16, *q16, *kv16, *w16;
} sub_acts;

typedef struct final_norm {
    float *y, *xhat, *rstd;  // (R, D), (R, D), (R)
} final_norm;

// What checkpoint_layers keeps of a stack instead of its sublayers'
// activations: the stream leaving each layer (the next one's input) and
// the dropout generator entering it, from which the backward pass runs
// the layer again, drawing the same masks.
typedef struct stack_kept {
    float **out;   // (layers) each (R, D)
    s2s_rng *rng;  // (layers)
} stack_kept;


struct s2s_graph {
    const s2s_model *m;
    s2s_graph_opts o;
    size_t nf, nb;                // floats and bytes the blocks hold
    int64_t cap_n, cap_s, cap_t;  // batch shape the blocks were laid out for
    bool cap_adrop;               // pdrop/akeep allocated
    float *block;
    uint8_t *bytes;

    float *src_x, *tgt_x;         // (Rs, D), (Rt, D) embedding outputs
    uint8_t *src_keep, *tgt_keep; // their dropout masks
    sub_acts *enc;                // (encoder layers, their sublayers): see acts_at
    sub_acts *dec;                // (decoder layers, their sublayers)
                                  // checkpoint_layers: one layer's each, reused by every layer
    stack_kept enc_kept, dec_kept;  // checkpoint_layers only
    final_norm enc_norm, dec_norm;  // pre-norm only
    const float *memory;          // (Rs, D) encoder output
    const float *hfin;            // (Rt, D) decoder output
    float *logits;                // (Rt, V); d loss / d logits after the loss
    // bf16 only: memory, hfin and d loss / d logits rounded to bf16 once
    uint16_t *memory16, *hfin16, *dlogits16;

    // backward scratch, shared by all layers
    float *tmp;     // (Rmax, D) sublayer output before dropout / its gradient
    float *dh;      // (Rmax, D) gradient of a pre-norm sublayer input
    float *dq;      // (Rmax, 3D)
    float *dctx;    // (Rmax, D)
    float *dprobs;  // (N, H, max(S,T), max(S,T))
    float *dff;     // (Rmax, F)
    float *dkv;     // (Rs, 2D)
    float *dsrc;    // (Rs, D) gradient of the encoder stream (and output)
    float *dtgt;    // (Rt, D) gradient of the decoder stream
    float *dguide[S2S_HEAD_ROLE_COUNT];  // (N, R, C) d guided loss / d weights of head r
    // attention_chunk: the blocks' scratch, and the guided heads' weights
    s2s_chunk_scratch chunk;
    float *gprobs[S2S_HEAD_ROLE_COUNT];  // (N, R, C) guided head r's
    // bf16: the parameters rounded to bf16 (laid out like m->params), made
    // at the start of every pass, so once per optimizer step; the products
    // read the weights there instead of rounding them at every product.
    uint16_t *w16;
};

// ---- memory plan ----

// Two bump allocators walked twice: counting (NULL bases), then handing
// out pointers into one float block and one byte block.
typedef struct arena {
    float *f;
    size_t nf;
    uint8_t *b;
    size_t nb;
    s2s_graph_part part;                 // what take() counts into
    size_t pf[S2S_GRAPH_PART_COUNT];     // floats by part
    size_t pb[S2S_GRAPH_PART_COUNT];     // bytes by part
} arena;

static size_t round64(int64_t n) { return ((size_t)n + 63) & ~(size_t)63; }

static float *take(arena *a, int64_t n) {
    float *p = a->f ? a->f + a->nf : NULL;
    a->nf += round64(n);  // 256-byte aligned buffers
    a->pf[a->part] += round64(n);
    return p;
}

static uint8_t *take_bytes(arena *a, int64_t n) {
    uint8_t *p = a->b ? a->b + a->nb : NULL;
    a->nb += round64(n);
    a->pb[a->part] += round64(n);
    return p;
}

// n bf16 values in the byte block.
static uint16_t *take16(arena *a, int64_t n) {
    return (uint16_t *)(void *)take_bytes(a, n * (int64_t)sizeof(uint16_t));
}

// own_out false: the stream leaving goes elsewhere (stack_kept), set per layer.
// full: the attention keeps its weights (not attention_chunk, or linear
// heads); lse: it keeps a log-sum-exp per row (attention_chunk).
typedef struct attn_keeps {
    bool full, lse;
} attn_keeps;

static void plan_sub(arena *a, sub_acts *s, s2s_sub_kind kind, bool pre, bool adrop, int64_t R,
                     int64_t Rs, int64_t n_probs, int64_t n_norms, int64_t d, int64_t f,
                     bool own_out, attn_keeps ak, bool bf16) {
    *s = (sub_acts){0};
    a->part = S2S_GRAPH_ACTIVATIONS;
    if (bf16) {
        s->h16 = take16(a, R * d);
        if (kind == S2S_SUB_FFN) s->act16 = take16(a, R * f);
        else s->ctx16 = take16(a, R * d);
    }
    if (pre) s->h = take(a, R * d);
    s->xhat = take(a, R * d);
    s->rstd = take(a, R);
    s->keep = take_bytes(a, R * d);
    if (own_out) s->out = take(a, R * d);
    if (kind == S2S_SUB_FFN) {
        s->a1 = take(a, R * f);
        s->act = take(a, R * f);
        return;
    }
    s->q = take(a, R * (kind == S2S_SUB_SELF_ATTN ? 3 * d : d));  // qkv_blocks
    if (kind == S2S_SUB_CROSS_ATTN) s->kv = take(a, Rs * 2 * d);
    if (bf16) {
        s->q16 = take16(a, R * (kind == S2S_SUB_SELF_ATTN ? 3 * d : d));
        if (kind == S2S_SUB_CROSS_ATTN) s->kv16 = take16(a, Rs * 2 * d);
    }
    a->part = S2S_GRAPH_ATTENTION;
    if (bf16 && ak.full) s->w16 = take16(a, n_probs);
    if (ak.lse) s->lse = take(a, n_norms);
    if (ak.full) {
        s->probs = take(a, n_probs);
        s->norms = take(a, n_norms);
    }
    if (ak.full && adrop) {
        s->pdrop = take(a, n_probs);
        s->akeep = take_bytes(a, n_probs);
    }
    a->part = S2S_GRAPH_ACTIVATIONS;
    s->ctx = take(a, R * d);
}

// The sublayers' activations of layer l of stack st: its own, or with
// checkpoint_layers the one set every layer runs in.
static sub_acts *layer_acts(const s2s_graph *g, sub_acts *acts, const s2s_stack *st, int l) {
    return acts + (g->o.checkpoint_layers ? 0 : (int64_t)l * st->n_subs);
}

// What attention sublayer i of layer l keeps; with checkpoint_layers (one
// set for every layer) what any layer's needs.
static attn_keeps keeps_of(const s2s_graph *g, const s2s_stack *st, int l, int i) {
    bool chunk = g->o.attention_chunk > 0, full = !chunk;
    bool ckpt = g->o.checkpoint_layers;
    for (int k = ckpt ? 0 : l; k < (ckpt ? st->layers : l + 1); k++) {
        s2s_attn_pattern pt = s2s_sub_pattern(&st->subs[i], k);
        full |= s2s_pattern_linear(&pt);
    }
    return (attn_keeps){.full = full, .lse = chunk};
}

// Whether some attention of the model keeps its weights (and needs their
// gradient's scratch).
static bool any_full(const s2s_graph *g) {
    const s2s_stack *sts[2] = {&g->m->arch.enc, &g->m->arch.dec};
    for (int k = 0; k < 2; k++)
        for (int l = 0; l < sts[k]->layers; l++)
            for (int i = 0; i < sts[k]->n_subs; i++)
                if (sts[k]->subs[i].kind != S2S_SUB_FFN && keeps_of(g, sts[k], l, i).full)
                    return true;
    return false;
}

// The sublayers of stack st (every layer's, or one layer's set with
// checkpoint_layers), over T rows per sentence (of N; S source rows).
static void plan_stack(arena *a, sub_acts *acts, const s2s_stack *st, const s2s_graph *g,
                       int64_t T) {
    const s2s_model_config *c = &g->m->cfg.model;
    int64_t N = g->cap_n, S = g->cap_s, H = c->heads;
    bool pre = s2s_recipe_pre_norm(c), ckpt = g->o.checkpoint_layers;
    for (int l = 0; l < (ckpt ? 1 : st->layers); l++)
        for (int i = 0; i < st->n_subs; i++) {
            s2s_sub_kind kind = st->subs[i].kind;
            int64_t keys = kind == S2S_SUB_CROSS_ATTN ? S : kind == S2S_SUB_SELF_ATTN ? T : 0;
            plan_sub(a, &acts[(int64_t)l * st->n_subs + i], kind, pre, g->cap_adrop, N * T,
                     N * S, N * H * T * keys, N * H * T, c->d_model, c->ffn_dim,
                     !ckpt || i < st->n_subs - 1,
                     kind == S2S_SUB_FFN ? (attn_keeps){0} : keeps_of(g, st, l, i), g->o.bf16);
        }
}

// checkpoint_layers: the stream leaving each layer of stack st.
static void plan_kept(arena *a, stack_kept *k, const s2s_stack *st, int64_t R, int64_t d) {
    a->part = S2S_GRAPH_ACTIVATIONS;
    for (int l = 0; l < st->layers; l++) k->out[l] = take(a, R * d);
}

// checkpoint_layers: the encoder's and the decoder's layer sets in one
// place, as the two never run at the same time (the encoder's output is
// kept apart). The place is the larger of the two, in floats and in bytes,
// counted by the parts of the larger one.
static void plan_work(arena *a, s2s_graph *g) {
    size_t f0 = a->nf, b0 = a->nb, pf0[S2S_GRAPH_PART_COUNT], pb0[S2S_GRAPH_PART_COUNT];
    memcpy(pf0, a->pf, sizeof pf0);
    memcpy(pb0, a->pb, sizeof pb0);
    plan_stack(a, g->enc, &g->m->arch.enc, g, g->cap_s);
    arena e = *a;
    a->nf = f0;
    a->nb = b0;
    memcpy(a->pf, pf0, sizeof pf0);
    memcpy(a->pb, pb0, sizeof pb0);
    plan_stack(a, g->dec, &g->m->arch.dec, g, g->cap_t);
    if (e.nf > a->nf) {
        a->nf = e.nf;
        memcpy(a->pf, e.pf, sizeof e.pf);
    }
    if (e.nb > a->nb) {
        a->nb = e.nb;
        memcpy(a->pb, e.pb, sizeof e.pb);
    }
}

// The query rows R and key rows C per sentence of attention map `map` over
// S source and T target rows.
static void map_rows(s2s_attn_map map, int64_t S, int64_t T, int64_t *R, int64_t *C) {
    *R = map == S2S_ATTN_MAP_ENC ? S : T;
    *C = map == S2S_ATTN_MAP_SELF ? T : S;
}

// (N, R, C) weights of each guided head the graph serves, or NULL.
static void plan_guides(arena *a, const s2s_graph *g, float **out) {
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) {
        int64_t R, C;
        map_rows(s2s_roles[r].stack, g->cap_s, g->cap_t, &R, &C);
        out[r] = g->o.no_guided[r] ? NULL : take(a, g->cap_n * R * C);
    }
}

// attention_chunk: the blocks' scratch for `rows` (N, H, max(S, T)) query
// rows, and the guided heads' weights.
static void plan_chunk(arena *a, s2s_graph *g, int64_t rows) {
    int64_t C = g->o.attention_chunk;
    g->chunk = (s2s_chunk_scratch){.chunk = C};
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) g->gprobs[r] = NULL;
    if (C <= 0) return;
    g->chunk.s = take(a, rows * C);
    g->chunk.dp = take(a, rows * C);
    if (g->cap_adrop) g->chunk.pd = take(a, rows * C);
    g->chunk.rows = take(a, rows);
    plan_guides(a, g, g->gprobs);
}

static void plan(s2s_graph *g, arena *a) {
    const s2s_model_config *c = &g->m->cfg.model;
    int64_t N = g->cap_n, S = g->cap_s, T = g->cap_t;
    int64_t d = c->d_model, f = c->ffn_dim, H = c->heads;
    int64_t V = s2s_vocab_size(g->m->tgt_vocab);
    int64_t Rs = N * S, Rt = N * T, Rm = Rs > Rt ? Rs : Rt, tm = S > T ? S : T;
    bool pre = s2s_recipe_pre_norm(c);

    bool ckpt = g->o.checkpoint_layers;

    a->part = S2S_GRAPH_ACTIVATIONS;
    g->src_x = take(a, Rs * d);
    g->src_keep = take_bytes(a, Rs * d);
    if (ckpt)
        plan_kept(a, &g->enc_kept, &g->m->arch.enc, Rs, d);
    else
        plan_stack(a, g->enc, &g->m->arch.enc, g, S);
    a->part = S2S_GRAPH_ACTIVATIONS;
    if (pre) g->enc_norm = (final_norm){take(a, Rs * d), take(a, Rs * d), take(a, Rs)};
    g->tgt_x = take(a, Rt * d);
    g->tgt_keep = take_bytes(a, Rt * d);
    if (ckpt)
        plan_kept(a, &g->dec_kept, &g->m->arch.dec, Rt, d);
    else
        plan_stack(a, g->dec, &g->m->arch.dec, g, T);
    a->part = S2S_GRAPH_ACTIVATIONS;
    if (pre) g->dec_norm = (final_norm){take(a, Rt * d), take(a, Rt * d), take(a, Rt)};
    g->logits = take(a, Rt * V);
    g->memory16 = g->hfin16 = g->dlogits16 = NULL;
    if (g->o.bf16) {
        g->memory16 = take16(a, Rs * d);
        g->hfin16 = take16(a, Rt * d);
        g->dlogits16 = take16(a, Rt * V);
    }
    if (ckpt) plan_work(a, g);

    a->part = S2S_GRAPH_SCRATCH;
    g->tmp = take(a, Rm * d);
    g->dh = take(a, Rm * d);
    g->dq = take(a, Rm * 3 * d);
    g->dctx = take(a, Rm * d);
    a->part = S2S_GRAPH_ATTENTION;
    g->dprobs = any_full(g) ? take(a, N * H * tm * tm) : NULL;
    plan_chunk(a, g, N * H * tm);
    a->part = S2S_GRAPH_SCRATCH;
    g->dff = take(a, Rm * f);
    g->dkv = take(a, Rs * 2 * d);
    g->dsrc = take(a, Rs * d);
    g->dtgt = take(a, Rt * d);
    plan_guides(a, g, g->dguide);
}

// Makes the blocks big enough for an (N, S, T) batch; they only grow.
static s2s_status reserve(s2s_graph *g, int64_t N, int64_t S, int64_t T, bool adrop) {
    if (N <= g->cap_n && S <= g->cap_s && T <= g->cap_t && (!adrop || g->cap_adrop))
        return S2S_OK;
    g->cap_n = N > g->cap_n ? N : g->cap_n;
    g->cap_s = S > g->cap_s ? S : g->cap_s;
    g->cap_t = T > g->cap_t ? T : g->cap_t;
    g->cap_adrop = g->cap_adrop || adrop;
    arena a = {0};
    plan(g, &a);
    float *block = malloc(a.nf * sizeof(float));
    uint8_t *bytes = malloc(a.nb ? a.nb : 1);
    if (!block || !bytes) {
        // The counting pass has cleared the old layout: drop it all, so the
        // next call lays everything out again.
        free(block);
        free(bytes);
        free(g->block);
        free(g->bytes);
        g->block = NULL;
        g->bytes = NULL;
        g->nf = g->nb = 0;
        g->cap_n = g->cap_s = g->cap_t = 0;
        g->cap_adrop = false;
        return s2s_fail(S2S_ERR_NOMEM,
                        "out of memory for the training activations of a batch of %lld "
                        "sentences (%lld source, %lld target rows)",
                        (long long)N, (long long)S, (long long)T);
    }
    free(g->block);
    free(g->bytes);
    g->block = block;
    g->bytes = bytes;
    g->nf = a.nf;
    g->nb = a.nb;
    a = (arena){.f = block, .b = bytes};
    plan(g, &a);
    return S2S_OK;
}

s2s_graph_opts s2s_graph_default_opts(void) { return (s2s_graph_opts){0}; }

static bool kept_new(stack_kept *k, int layers) {
    k->out = s2s_calloc((size_t)layers, sizeof *k->out);
    k->rng = s2s_calloc((size_t)layers, sizeof *k->rng);
    return k->out && k->rng;
}

static void kept_free(stack_kept *k) {
    free(k->out);
    free(k->rng);
}

s2s_status s2s_graph_new_opts(s2s_graph **out, const s2s_model *m, const s2s_graph_opts *o) {
    *out = NULL;
    if (o->attention_chunk < 0)
        return s2s_fail(S2S_ERR_INVALID, "attention_chunk must be >= 0, not %d",
                        o->attention_chunk);
    s2s_graph *g = s2s_calloc(1, sizeof *g);
    if (!g) return S2S_ERR_NOMEM;
    g->m = m;
    g->o = *o;
    const s2s_stack *enc = &m->arch.enc, *dec = &m->arch.dec;
    g->enc = s2s_calloc((size_t)enc->layers * (size_t)enc->n_subs, sizeof(sub_acts));
    g->dec = s2s_calloc((size_t)dec->layers * (size_t)dec->n_subs, sizeof(sub_acts));
    if (o->bf16) g->w16 = s2s_calloc(m->n_params, sizeof(uint16_t));
    if (!g->enc || !g->dec || !kept_new(&g->enc_kept, enc->layers) ||
        !kept_new(&g->dec_kept, dec->layers) || (o->bf16 && !g->w16)) {
        s2s_graph_free(g);
        return S2S_ERR_NOMEM;
    }
    *out = g;
    return S2S_OK;
}

s2s_status s2s_graph_new(s2s_graph **out, const s2s_model *m) {
    s2s_graph_opts o = s2s_graph_default_opts();
    return s2s_graph_new_opts(out, m, &o);
}

void s2s_graph_free(s2s_graph *g) {
    if (!g) return;
    free(g->block);
    free(g->bytes);
    free(g->enc);
    free(g->dec);
    kept_free(&g->enc_kept);
    kept_free(&g->dec_kept);
    free(g->w16);
    free(g);
}

size_t s2s_graph_bytes(const s2s_graph *g) { return g->nf * sizeof(float) + g->nb; }

s2s_status s2s_graph_reserve(s2s_graph *g, int64_t n, int64_t S, int64_t T,
                             bool attention_dropout) {
    return reserve(g, n, S, T, attention_dropout);
}

s2s_status s2s_graph_plan(s2s_graph_plan_bytes *out, const s2s_model *m,
                          const s2s_graph_opts *o, int64_t n, int64_t S, int64_t T,
                          bool attention_dropout) {
    *out = (s2s_graph_plan_bytes){.n = n, .S = S, .T = T};
    s2s_graph *g;
    S2S_TRY(s2s_graph_new_opts(&g, m, o));
    g->cap_n = n;
    g->cap_s = S;
    g->cap_t = T;
    g->cap_adrop = attention_dropout;
    arena a = {0};
    plan(g, &a);
    s2s_graph_free(g);
    for (int k = 0; k < S2S_GRAPH_PART_COUNT; k++) {
        out->bytes[k] = a.pf[k] * sizeof(float) + a.pb[k];
        out->total += out->bytes[k];
    }
    return S2S_OK;
}

// ---- one pass ----

typedef struct pass {
    s2s_graph *g;
    const s2s_model *m;
    const s2s_batch *b;
    int64_t N, S, T, d, f, H, V;
    bool pre;
    float eps;
    float drop, adrop;
    s2s_rng *rng;
    bool bf16;     // every product on bf16 copies of its operands (s2s_graph_opts)
    float *grads;  // backward only
    // The guided heads, by s2s_head_role: each on when w > 0 and the batch
    // has its guided rows. Each reads the weights of head `head` of
    // attention sublayer `sub` of layer `layer` of stack `st` right after
    // that layer's forward pass (with checkpoint_layers the next layer
    // overwrites them), and sends their gradient (g->dguide[r]) back into it.
    struct guide {
        float w;            // the loss's weight; 0: off
        const s2s_stack *st;
        int layer, sub, head;
        float *dhead;
        float *probs;       // attention_chunk: the head's weights (N, R, C)
        const float *A;     // the batch's guide (N, R, C)
        int64_t R, C;
        int rows;           // what the term is averaged over
        double loss;        // set by the forward pass
    } guide[S2S_HEAD_ROLE_COUNT];
    // What the loss and the guided terms are averaged over (s2s_train_opts'
    // norm_*, else the batch's own counts).
    int norm_tokens, norm_guided[S2S_HEAD_ROLE_COUNT];
} pass;

// The gradient of activation view v (into base) in dbase, laid out like base.
static s2s_rows grad_of(float *dbase, const float *base, s2s_view v) {
    return (s2s_rows){.p = dbase + (v.p - base), .bs = v.bs, .rs = v.rs};
}

// The gradient of weight w: the same offset in the gradient block.
static float *G(const pass *p, const float *w) { return p->grads + (w - p->m->params); }

// Weight w's bf16 copy (the same offset in g->w16), or NULL in fp32.
static const uint16_t *W16(const pass *p, const float *w) {
    S2S_ASSERT(w >= p->m->params && w < p->m->params + p->m->n_params);
    return p->bf16 ? p->g->w16 + (w - p->m->params) : NULL;
}

// What check_guide says of role r's guide, and whether its columns take
// the key </s> (an unaligned target word is guided to it).
static const struct guide_names {
    const char *weight, *plural, *count, *row, *col;
    bool eos_col;
} guide_names[S2S_HEAD_ROLE_COUNT] = {
    [S2S_HEAD_ALIGN] = {"alignment", "alignments", "n_guided[S2S_HEAD_ALIGN]", "target",
                        "source", true},
    [S2S_HEAD_COREF] = {"coreference", "coreference rows", "n_guided[S2S_HEAD_COREF]",
                        "pronoun", "antecedent", false},
};

// A guide (N, R, C) of the batch (alignments, coreference): NULL with
// n_rows 0, or weights in [0, 1], non-zero only at row r < row_len[i] + dr
// and column c < col_len[i] + dc (so the loss never reads a masked
// weight), n_rows rows not all zero.
static s2s_status check_guide(const s2s_batch *b, const float *A, int R, int C,
                              const int *row_len, int dr, const int *col_len, int dc,
                              int n_rows, const struct guide_names *nm) {
    if (!A) {
        if (n_rows != 0)
            return s2s_fail(S2S_ERR_INVALID, "training batch: %d guided rows but no %s", n_rows,
                            nm->plural);
        return S2S_OK;
    }
    long long rows = 0;
    for (int i = 0; i < b->n; i++)
        for (int r = 0; r < R; r++) {
            const float *a = A + ((int64_t)i * R + r) * C;
            bool any = false;
            for (int c = 0; c < C; c++) {
                bool inside = r < row_len[i] + dr && c < col_len[i] + dc;
                if (!(a[c] >= 0.0f && a[c] <= 1.0f) || (a[c] != 0.0f && !inside))
                    return s2s_fail(S2S_ERR_INVALID, "training batch: sentence %d: %s weight "
                                    "%g at %s %d, %s %d", i + 1, nm->weight, (double)a[c],
                                    nm->row, r, nm->col, c);
                any |= a[c] != 0.0f;
            }
            rows += any;
        }
    if (rows != n_rows)
        return s2s_fail(S2S_ERR_INVALID, "training batch: %s is %d, the %s have %lld guided "
                        "rows", nm->count, n_rows, nm->plural, rows);
    return S2S_OK;
}

static s2s_status check_batch(const s2s_model *m, const s2s_batch *b) {
    int vs = s2s_vocab_size(m->src_vocab), vt = s2s_vocab_size(m->tgt_vocab);
    int max_len = m->cfg.model.max_len;
    if (b->n < 1 || b->S < 1 || b->T < 1)
        return s2s_fail(S2S_ERR_INVALID, "training batch: empty (%d sentences, %d x %d rows)",
                        b->n, b->S, b->T);
    if (b->S > max_len || b->T > max_len)
        return s2s_fail(S2S_ERR_INVALID,
                        "training batch: %d source / %d target rows; the model takes at most %d",
                        b->S, b->T, max_len);
    long long n_tokens = 0;
    for (int i = 0; i < b->n; i++) {
        if (b->src_len[i] < 1 || b->src_len[i] > b->S || b->tgt_len[i] < 1 ||
            b->tgt_len[i] > b->T)
            return s2s_fail(S2S_ERR_INVALID,
                            "training batch: sentence %d has lengths %d/%d in a %d x %d batch",
                            i + 1, b->src_len[i], b->tgt_len[i], b->S, b->T);
        n_tokens += b->tgt_len[i];
        for (int j = 0; j < b->S; j++) {
            int id = b->src[(int64_t)i * b->S + j];
            if (id < 0 || id >= vs)
                return s2s_fail(S2S_ERR_INVALID, "training batch: sentence %d: source id %d "
                                "out of range", i + 1, id);
        }
        for (int j = 0; j < b->T; j++) {
            int in = b->tgt_in[(int64_t)i * b->T + j], out = b->tgt_out[(int64_t)i * b->T + j];
            if (in < 0 || in >= vt || (j < b->tgt_len[i] && (out < 0 || out >= vt)))
                return s2s_fail(S2S_ERR_INVALID, "training batch: sentence %d: target id "
                                "out of range", i + 1);
        }
    }
    if (n_tokens != b->n_tokens)
        return s2s_fail(S2S_ERR_INVALID, "training batch: n_tokens is %d, the lengths add up "
                        "to %lld", b->n_tokens, n_tokens);
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) {
        const struct guide_names *nm = &guide_names[r];
        s2s_attn_map map = s2s_roles[r].stack;
        int64_t R, C;
        map_rows(map, b->S, b->T, &R, &C);
        const int *q_len = map == S2S_ATTN_MAP_ENC ? b->src_len : b->tgt_len;
        const int *k_len = map == S2S_ATTN_MAP_SELF ? b->tgt_len : b->src_len;
        S2S_TRY(check_guide(b, b->guide[r], (int)R, (int)C, q_len, -1, k_len,
                            nm->eos_col ? 0 : -1, b->n_guided[r], nm));
    }
    return S2S_OK;
}

static s2s_status begin(pass *p, s2s_graph *g, const s2s_batch *b, float drop, float adrop,
                        s2s_rng *rng) {
    const s2s_model *m = g->m;
    const s2s_model_config *c = &m->cfg.model;
    S2S_TRY(check_batch(m, b));
    *p = (pass){
        .g = g, .m = m, .b = b,
        .N = b->n, .S = b->S, .T = b->T,
        .d = c->d_model, .f = c->ffn_dim, .H = c->heads,
        .V = s2s_vocab_size(m->tgt_vocab),
        .pre = s2s_recipe_pre_norm(c), .eps = c->layer_norm_eps,
        .drop = drop, .adrop = adrop, .rng = rng, .bf16 = g->o.bf16,
        .norm_tokens = b->n_tokens,
    };
    memcpy(p->norm_guided, b->n_guided, sizeof p->norm_guided);
    if (g->o.bf16) s2s_to_bf16(g->w16, m->params, m->n_params);
    return reserve(g, p->N, p->S, p->T, adrop > 0.0f);
}

// ---- forward ----

static double guide_loss(float *dA, const float *A, const float *probs, int64_t N, int64_t H,
                         int64_t head, int64_t R, int64_t C, double w, int rows);
static struct guide *guide_of(pass *p, const s2s_stack *st, int l, int i);

// x (n) rounded to bf16 into x16 now, which is returned; NULL in fp32.
static const uint16_t *round16(const pass *p, uint16_t *x16, const float *x, int64_t n) {
    if (!p->bf16) return NULL;
    s2s_to_bf16(x16, x, (size_t)n);
    return x16;
}

// y (R, N) = x (R, K) · W^T + b, W (N, K): s2s_linear, in bf16 when the
// graph says so, on W's copy and x16 (x rounded: round16).
static s2s_status linear(const pass *p, float *y, const float *x, const uint16_t *x16,
                         const float *w, const float *bias, int64_t rows, int64_t k, int64_t n) {
    S2S_ASSERT(!p->bf16 || x16);
    s2s_mm_args a = {
        .b0 = 1, .b1 = 1, .m = rows, .k = k, .n = n,
        .sa = {0, 0, k, 1}, .sb = {0, 0, 1, k}, .sc = {0, 0, n, 1},
        .alpha = 1.0f, .bias = bias,
        .bf16 = p->bf16, .a_is_bf16 = p->bf16, .b_is_bf16 = p->bf16,
    };
    if (!p->bf16) return s2s_mm(y, x, w, &a);
    return s2s_mm(y, (const float *)(const void *)x16, (const float *)(const void *)W16(p, w), &a);
}

// What s2s_linear_backward reads in bf16 (W's copy, x16 kept from the
// forward pass) in o, or NULL in fp32.
static const s2s_bf16_operands *ops16(const pass *p, s2s_bf16_operands *o, const float *w,
                                      const uint16_t *x16) {
    if (!p->bf16) return NULL;
    *o = (s2s_bf16_operands){.w = W16(p, w), .x = x16};
    return o;
}

// x (N*len, D) = drop(E[ids] * sqrt(D) + PE[pos])
static void embed_fwd(pass *p, float *x, uint8_t *keep, const float *table, const int *ids,
                      int64_t len) {
    int64_t d = p->d;
    float scale = sqrtf((float)d);
    for (int64_t b = 0; b < p->N; b++)
        for (int64_t i = 0; i < len; i++)
            s2s_embed_row(x + (b * len + i) * d, table, ids[b * len + i], scale,
                          p->m->pe + i * d, d);
    s2s_dropout(x, keep, p->N * len * p->d, p->drop, p->rng);
}

// The sublayer's input: LN(in) for pre-norm, in itself for post-norm.
static void sub_in(pass *p, sub_acts *a, const s2s_norm_weights *n, int64_t R) {
    if (p->pre)
        s2s_layernorm_fwd(a->h, a->xhat, a->rstd, a->in, n->w, n->b, R, p->d, p->eps);
    else
        a->h = (float *)a->in;
}

// out = in + drop(sub); post-norm normalises the sum.
static void sub_out(pass *p, sub_acts *a, const s2s_norm_weights *n, float *sub, int64_t R) {
    s2s_dropout(sub, a->keep, R * p->d, p->drop, p->rng);
    s2s_add(a->out, a->in, sub, R * p->d);
    if (!p->pre) s2s_layernorm_fwd(a->out, a->xhat, a->rstd, a->out, n->w, n->b, R, p->d, p->eps);
}

static float *used_probs(const pass *p, const sub_acts *a) {
    return p->adrop > 0.0f ? a->pdrop : a->probs;
}

// Whether an attention of pattern pt (or shape sh) runs in blocks of keys.
static bool chunks(const pass *p, const s2s_attn_pattern *pt) {
    return p->g->o.attention_chunk > 0 && !s2s_pattern_linear(pt);
}
static bool chunked(const pass *p, const s2s_attn_shape *sh) {
    return chunks(p, &sh->mask.pattern) && s2s_chunked_fits(sh);
}

// attention_chunk's forward pass, drawing its dropout key as
// s2s_attention_train does (one draw), and the weights of the guided head
// gd reads (or NULL) into gd->probs.
static s2s_status chunked_fwd(pass *p, sub_acts *a, s2s_qkv v, const s2s_attn_shape *sh,
                              const struct guide *gd) {
    a->akey = p->adrop > 0.0f ? s2s_rng_next(p->rng) : 0;
    S2S_TRY(s2s_chunked_attention_fwd(a->ctx, a->lse, v.q, v.k, v.v, sh, p->adrop, a->akey,
                                      &p->g->chunk));
    if (!gd) return S2S_OK;
    return s2s_chunked_attention_head(gd->probs, a->lse, v.q, v.k, sh, gd->head);
}

// Attention over q, k, v, then the output projection and the residual:
// the part self- and cross-attention share. gd: the guided term reading
// its weights, or NULL.
static s2s_status attn_tail(pass *p, sub_acts *a, const s2s_attn_weights *w,
                            const s2s_norm_weights *n, s2s_qkv v, const s2s_attn_shape *sh,
                            int64_t R, const struct guide *gd) {
    int64_t d = p->d;
    s2s_attn_shape with_norms = *sh;
    with_norms.norms = a->norms;
    with_norms.w16 = a->w16;
    if (chunked(p, sh))
        S2S_TRY(chunked_fwd(p, a, v, sh, gd));
    else
        S2S_TRY(s2s_attention_train(a->ctx, a->probs, used_probs(p, a), a->akeep, v.q, v.k,
                                    v.v, &with_norms, p->adrop, p->rng));
    S2S_TRY(linear(p, p->g->tmp, a->ctx, round16(p, a->ctx16, a->ctx, R * d), w->w_out,
                   w->b_out, R, d, d));
    sub_out(p, a, n, p->g->tmp, R);
    return S2S_OK;
}

// The shape of an attention of Tq query rows over Tk keys per sentence.
static s2s_attn_shape shape_of(const pass *p, int64_t tq, int64_t tk, s2s_attn_mask mask) {
    return (s2s_attn_shape){.batch = p->N, .heads = p->H, .head_dim = p->d / p->H, .tq = tq,
                            .tk = tk, .mask = mask, .bf16 = p->bf16, .fixed = true,
                            .q_scaled = true};
}

// The queries' scale 1/sqrt(Dh) (s2s_attn_shape.q_scaled) on the (N*Tq,
// D) block q of a layer without linear heads: in the forward pass on Q,
// in the backward pass on dQ.
static void scale_queries(const pass *p, float *q, const s2s_attn_shape *sh) {
    if (s2s_pattern_linear(&sh->mask.pattern)) return;  // s2s_attention_features's
    float scale = 1.0f / sqrtf((float)sh->head_dim);
    for (int64_t i = 0; i < p->N * sh->tq * p->d; i++) q[i] *= scale;
}

// Linear heads' features (s2s_attention_features), in place on the
// queries of v in base, and on its keys when they are there too
// (self-attention; cross-attention's in cross_attn_fwd); else the
// queries' scale.
static void features_fwd(const pass *p, float *base, s2s_qkv v, const s2s_attn_shape *sh,
                         bool keys) {
    const s2s_attn_pattern *pt = &sh->mask.pattern;
    int64_t dh = p->d / p->H;
    scale_queries(p, grad_of(base, base, v.q).p, sh);
    s2s_attention_features(grad_of(base, base, v.q), p->N, sh->tq, pt, p->H, dh, true);
    if (keys) s2s_attention_features(grad_of(base, base, v.k), p->N, sh->tk, pt, p->H, dh, false);
}

// Q, K and V as training keeps them: Q (of R = N*Tq rows) a (R, D) block
// at q, K and V (of Rk = N*Tk rows) the (Rk, D) blocks at kv and kv +
// Rk*D (self-attention: kv = q + R*D), not rows of one fused projection
// as decoding has them (layers/recipe.h). So every head's
// operand is a permutation of a dense tensor, the per-head products run on
// oneDNN's fixed-shape brgemm kernels (s2s_attn_shape.fixed: two to three
// times as fast as its run-time-shape gemm at these sizes,
// build/bench_train_products), and each block's projection is a product
// of its own D rows of the fused weight (project_blocks). The gradients
// (g->dq, g->dkv) take the same layout.
static s2s_qkv qkv_blocks(const float *q, int64_t tq, const float *kv, int64_t tk, int64_t N,
                          int64_t d) {
    return (s2s_qkv){.q = {.p = q, .bs = tq * d, .rs = d},
                     .k = {.p = kv, .bs = tk * d, .rs = d},
                     .v = {.p = kv + N * tk * d, .bs = tk * d, .rs = d}};
}

// y's `parts` (R, D) blocks = x (R, D) · W_j^T + b_j for the D-row slices
// W_j of w and b_j of bias (Q|K|V, or K|V).
static s2s_status project_blocks(const pass *p, float *y, const float *x, const uint16_t *x16,
                                 const float *w, const float *bias, int parts, int64_t R) {
    int64_t d = p->d;
    for (int j = 0; j < parts; j++)
        S2S_TRY(linear(p, y + j * R * d, x, x16, w + j * d * d, bias + j * d, R, d, d));
    return S2S_OK;
}

// Its backward: dx (R, D) (+)= sum_j dy_j · W_j, and each slice's weight
// and bias gradients.
static s2s_status project_blocks_bwd(const pass *p, float *dx, const float *dy, const float *x,
                                     const uint16_t *x16, const float *w, const float *bias,
                                     int parts, int64_t R, bool accumulate) {
    int64_t d = p->d;
    for (int j = 0; j < parts; j++) {
        const float *wj = w + j * d * d;
        S2S_TRY(s2s_linear_backward(dx, G(p, wj), G(p, bias + j * d), dy + j * R * d, x, wj,
                                    ops16(p, &(s2s_bf16_operands){0}, wj, x16), R, d, d,
                                    accumulate || j > 0));
    }
    return S2S_OK;
}

// v with the bf16 copies of its rows: the queries' in q16 (a copy of the
// block qb), the keys' and values' in kv16 (of kvb); unchanged in fp32.
static s2s_qkv qkv16(s2s_qkv v, const float *qb, const uint16_t *q16, const float *kvb,
                     const uint16_t *kv16) {
    if (q16) v.q.p16 = q16 + (v.q.p - qb);
    if (kv16) {
        v.k.p16 = kv16 + (v.k.p - kvb);
        v.v.p16 = kv16 + (v.v.p - kvb);
    }
    return v;
}

// Self-attention over T rows per sentence.
static s2s_status self_attn_fwd(pass *p, sub_acts *a, const s2s_sub_weights *sw, int64_t T,
                                s2s_attn_mask mask, const struct guide *gd) {
    const s2s_attn_weights *w = &sw->attn;
    const s2s_norm_weights *n = &sw->norm;
    int64_t d = p->d, R = p->N * T;
    sub_in(p, a, n, R);
    S2S_TRY(project_blocks(p, a->q, a->h, round16(p, a->h16, a->h, R * d), w->w_qkv, w->b_qkv,
                           3, R));
    s2s_attn_shape sh = shape_of(p, T, T, mask);
    s2s_qkv v = qkv_blocks(a->q, T, a->q + R * d, T, p->N, d);
    features_fwd(p, a->q, v, &sh, true);
    round16(p, a->q16, a->q, R * 3 * d);  // Q|K|V once for both passes' products
    return attn_tail(p, a, w, n, qkv16(v, a->q, a->q16, a->q, a->q16), &sh, R, gd);
}

// Cross-attention of the T target rows over the S source rows.
static s2s_status cross_attn_fwd(pass *p, sub_acts *a, const s2s_sub_weights *sw,
                                 s2s_attn_mask mask, const struct guide *gd) {
    const s2s_attn_weights *w = &sw->attn;
    int64_t d = p->d, T = p->T, S = p->S, R = p->N * T;
    sub_in(p, a, &sw->norm, R);
    S2S_TRY(linear(p, a->q, a->h, round16(p, a->h16, a->h, R * d), w->w_qkv, w->b_qkv, R, d,
                   d));
    s2s_attn_shape sh = shape_of(p, T, S, mask);
    // the keys and values of the encoder output (decoding's s2s_cross_kv,
    // as blocks), then the keys' features
    S2S_TRY(project_blocks(p, a->kv, p->g->memory, p->g->memory16,
                           s2s_recipe_kv_weight(w->w_qkv, d), s2s_recipe_kv_bias(w->b_qkv, d), 2,
                           p->N * S));
    s2s_attention_features((s2s_rows){.p = a->kv, .rs = d}, 1, p->N * S, &mask.pattern, p->H,
                           d / p->H, false);
    s2s_qkv v = qkv_blocks(a->q, T, a->kv, S, p->N, d);
    features_fwd(p, a->q, v, &sh, false);
    round16(p, a->q16, a->q, R * d);
    round16(p, a->kv16, a->kv, p->N * S * 2 * d);
    return attn_tail(p, a, w, &sw->norm, qkv16(v, a->q, a->q16, a->kv, a->kv16), &sh, R, gd);
}

// The activation stays out of fc1's product: the backward pass needs the
// pre-activation.
static s2s_status ffn_fwd(pass *p, sub_acts *a, const s2s_ffn_weights *w,
                          const s2s_norm_weights *n, int64_t R) {
    int64_t d = p->d, f = p->f;
    sub_in(p, a, n, R);
    S2S_TRY(linear(p, a->a1, a->h, round16(p, a->h16, a->h, R * d), w->w1, w->b1, R, d, f));
    if (p->m->cfg.model.activation == S2S_ACT_GELU)
        s2s_gelu(a->act, a->a1, R * f);
    else
        s2s_relu(a->act, a->a1, R * f);
    S2S_TRY(linear(p, p->g->tmp, a->act, round16(p, a->act16, a->act, R * f), w->w2, w->b2, R,
                   f, d));
    sub_out(p, a, n, p->g->tmp, R);
    return S2S_OK;
}

// The mask of attention sublayer sub in layer l: its pattern, and keys
// padded to k_len (NULL: none) for self-attention, to the source's for
// cross-attention.
static s2s_attn_mask mask_of(const pass *p, const s2s_sublayer *sub, int l, const int *k_len) {
    return (s2s_attn_mask){
        .pattern = s2s_sub_pattern(sub, l),
        .k_len = sub->kind == S2S_SUB_CROSS_ATTN ? p->b->src_len : k_len,
    };
}

// Layer l of stack st over x (N*T rows) into its activations la (the
// last one's out: the stream leaving); k_len: self-attention's key
// padding (mask_of).
static s2s_status layer_fwd(pass *p, const s2s_stack *st, sub_acts *la,
                            const s2s_layer_weights *w, int l, const float *x, int64_t T,
                            const int *k_len) {
    for (int i = 0; i < st->n_subs; i++) {
        const s2s_sublayer *sub = &st->subs[i];
        sub_acts *a = &la[i];
        a->in = x;
        const struct guide *gd = guide_of(p, st, l, i);
        if (sub->kind == S2S_SUB_SELF_ATTN)
            S2S_TRY(self_attn_fwd(p, a, &w[l].sub[i], T, mask_of(p, sub, l, k_len), gd));
        else if (sub->kind == S2S_SUB_CROSS_ATTN)
            S2S_TRY(cross_attn_fwd(p, a, &w[l].sub[i], mask_of(p, sub, l, k_len), gd));
        else
            S2S_TRY(ffn_fwd(p, a, &w[l].sub[i].ffn, &w[l].sub[i].norm, p->N * T));
        x = a->out;
    }
    return S2S_OK;
}

// The guided terms reading layer l of stack st, from its activations la
// (the head's own weights in gd->probs when it ran chunked: la[sub].lse set).
static void guides_fwd(pass *p, const s2s_stack *st, int l, const sub_acts *la) {
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) {
        struct guide *gd = &p->guide[r];
        if (!(gd->w > 0.0f && gd->st == st && gd->layer == l)) continue;
        s2s_attn_pattern pt = s2s_sub_pattern(&st->subs[gd->sub], l);
        bool ch = chunks(p, &pt);
        gd->loss = guide_loss(gd->dhead, gd->A, ch ? gd->probs : la[gd->sub].probs, p->N,
                              ch ? 1 : p->H, ch ? 0 : gd->head, gd->R, gd->C, gd->w, gd->rows);
    }
}

// The layers of stack st over x (N*T rows), leaving the stream in *out.
// With checkpoint_layers every layer runs in one set of activations and
// leaves its stream in k->out[l], having noted the dropout generator in
// k->rng[l] (stack_bwd runs it again from there).
static s2s_status stack_fwd(pass *p, const s2s_stack *st, sub_acts *acts, stack_kept *k,
                            const s2s_layer_weights *w, const float *x, int64_t T,
                            const int *k_len, const float **out) {
    bool ckpt = p->g->o.checkpoint_layers;
    for (int l = 0; l < st->layers; l++) {
        sub_acts *la = layer_acts(p->g, acts, st, l);
        if (ckpt) {
            if (p->rng) k->rng[l] = *p->rng;
            la[st->n_subs - 1].out = k->out[l];
        }
        S2S_TRY(layer_fwd(p, st, la, w, l, x, T, k_len));
        guides_fwd(p, st, l, la);
        x = la[st->n_subs - 1].out;
    }
    *out = x;
    return S2S_OK;
}

static s2s_status forward(pass *p) {
    s2s_graph *g = p->g;
    const s2s_model *m = p->m;
    const s2s_batch *b = p->b;
    int64_t d = p->d, Rs = p->N * p->S, Rt = p->N * p->T;

    embed_fwd(p, g->src_x, g->src_keep, m->src_embed, b->src, p->S);
    const float *x;
    S2S_TRY(stack_fwd(p, &m->arch.enc, g->enc, &g->enc_kept, m->enc, g->src_x, p->S, b->src_len,
                      &x));
    g->memory = x;
    if (p->pre) {
        final_norm *fn = &g->enc_norm;
        s2s_layernorm_fwd(fn->y, fn->xhat, fn->rstd, x, m->enc_norm.w, m->enc_norm.b, Rs, d,
                          p->eps);
        g->memory = fn->y;
    }
    round16(p, g->memory16, g->memory, Rs * d);  // read by every cross-attention

    embed_fwd(p, g->tgt_x, g->tgt_keep, m->tgt_embed, b->tgt_in, p->T);
    // the target's padding is after every real row: the causal cut hides it
    S2S_TRY(stack_fwd(p, &m->arch.dec, g->dec, &g->dec_kept, m->dec, g->tgt_x, p->T, NULL, &x));
    g->hfin = x;
    if (p->pre) {
        final_norm *fn = &g->dec_norm;
        s2s_layernorm_fwd(fn->y, fn->xhat, fn->rstd, x, m->dec_norm.w, m->dec_norm.b, Rt, d,
                          p->eps);
        g->hfin = fn->y;
    }
    return linear(p, g->logits, g->hfin, round16(p, g->hfin16, g->hfin, Rt * d), m->gen_w,
                  m->gen_b, Rt, d, p->V);
}

// ---- loss ----

// Label-smoothed cross-entropy over the real target rows:
//   (1-eps) (lse - x[gold]) + eps (lse - mean_v x[v]),  lse = log sum exp x,
// each row's exp in float, vectorised and once per logit (s2s_exp_shift_row;
// the row's terms summed in float lanes), the rows' terms summed in double.
// With want_grad, logits become d(mean loss)/d logits =
// (softmax - (1-eps) onehot - eps/V) / n_tokens, and 0 on pad rows;
// n_tokens is p->norm_tokens (the global batch's, for a share of one).
// Without want_grad the logits are left holding exp(x - max x).
static void loss(pass *p, float eps, bool want_grad, s2s_loss_stats *st) {
    const s2s_batch *b = p->b;
    int64_t V = p->V;
    double sum = 0.0, nll_sum = 0.0, inv_n = 1.0 / (double)p->norm_tokens;
    float off = (float)(eps / (double)V * inv_n), gold_off = (float)((1.0 - eps) * inv_n);
    int correct = 0;
    for (int64_t s = 0; s < p->N; s++) {
        for (int64_t i = 0; i < p->T; i++) {
            float *x = p->g->logits + (s * p->T + i) * V;
            // bf16: the gradient's row rounded while in cache, for its products
            uint16_t *x16 = want_grad && p->bf16 ? p->g->dlogits16 + (s * p->T + i) * V : NULL;
            if (i >= b->tgt_len[s]) {
                if (want_grad) memset(x, 0, (size_t)V * sizeof *x);
                if (x16) memset(x16, 0, (size_t)V * sizeof *x16);
                continue;
            }
            int gold = b->tgt_out[s * p->T + i];
            float mx = s2s_max_row(x, V), xg = x[gold];
            int64_t best = 0;  // the first largest, as a strict > scan finds
            while (best < V - 1 && !(x[best] >= mx)) best++;
            double sx = s2s_sum_row(x, V);
            float se = s2s_exp_shift_row(x, V, mx);  // x[v] = exp(x[v] - mx)
            double lse = mx + log((double)se);
            double nll = lse - xg;
            sum += (1.0 - eps) * nll + eps * (lse - sx / (double)V);
            nll_sum += nll;
            correct += best == gold;
            if (want_grad) {
                float scale = (float)(inv_n / se);
                for (int64_t v = 0; v < V; v++) x[v] = x[v] * scale - off;
                x[gold] -= gold_off;
                if (x16) s2s_to_bf16(x16, x, (size_t)V);
            }
        }
    }
    *st = (s2s_loss_stats){
        .loss = sum * inv_n, .nll = nll_sum * inv_n,
        .n_tokens = b->n_tokens, .n_correct = correct,
    };
}

// ---- guided heads ----

// w * sum -A log(P + 1e-6) / rows, in double, over head `head` of the
// attention weights probs (N, H, R, C) against the guide A (N, R, C), and
// dA (N, R, C) = d / d P = -w A / (P + 1e-6) / rows.
static double guide_loss(float *dA, const float *A, const float *probs, int64_t N, int64_t H,
                         int64_t head, int64_t R, int64_t C, double w, int rows) {
    double inv = 1.0 / (double)rows, sum = 0.0;
    for (int64_t i = 0; i < N; i++)
        for (int64_t r = 0; r < R; r++) {
            const float *a = A + (i * R + r) * C;
            const float *pr = probs + ((i * H + head) * R + r) * C;
            float *da = dA + (i * R + r) * C;
            for (int64_t c = 0; c < C; c++) {
                double pc = (double)pr[c] + 1e-6;
                if (a[c] != 0.0f) sum -= (double)a[c] * log(pc);
                da[c] = a[c] != 0.0f ? (float)(-w * a[c] / pc * inv) : 0.0f;
            }
        }
    return w * sum * inv;
}

// The guided terms that are on (computed by the forward pass), into st.
static void guided_losses(pass *p, s2s_loss_stats *st) {
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++)
        if (p->guide[r].w > 0.0f) {
            st->guided[r] = p->guide[r].loss;
            st->n_guided[r] = p->b->n_guided[r];
        }
}

// ---- backward ----
//
// dx, the gradient of the residual stream, is updated in place from the
// last sublayer to the first: on entry to a sublayer's backward it is
// d loss / d out, on return d loss / d in.

// Opens a sublayer's backward: returns the gradient of its output before
// dropout (in g->tmp), and where its input gradient goes: g->dh
// (overwritten) for pre-norm, dx itself (accumulated) for post-norm.
static float *sub_bwd_begin(pass *p, sub_acts *a, const s2s_norm_weights *n, float *dx,
                            int64_t R, float **din, bool *acc) {
    if (!p->pre)
        s2s_layernorm_backward(dx, G(p, n->w), G(p, n->b), dx, a->xhat, a->rstd, n->w, R, p->d,
                               false);
    s2s_dropout_backward(p->g->tmp, dx, a->keep, R * p->d, p->drop);
    *din = p->pre ? p->g->dh : dx;
    *acc = !p->pre;
    return p->g->tmp;
}

// Closes it: pre-norm adds the LayerNorm's input gradient to the residual.
static void sub_bwd_end(pass *p, sub_acts *a, const s2s_norm_weights *n, float *dx, int64_t R) {
    if (p->pre)
        s2s_layernorm_backward(dx, G(p, n->w), G(p, n->b), p->g->dh, a->xhat, a->rstd, n->w, R,
                               p->d, /*accumulate=*/true);
}

// The guided term that reads the weights of sublayer i of layer l of
// stack st, or NULL.
static struct guide *guide_of(pass *p, const s2s_stack *st, int l, int i) {
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) {
        struct guide *gd = &p->guide[r];
        if (gd->w > 0.0f && gd->st == st && gd->layer == l && gd->sub == i) return gd;
    }
    return NULL;
}

// The attention backward between the output projection and the Q/K/V
// projections: dctx in g->dctx, dq and dkv (rows of K|V) the gradients of
// its queries' and keys' views, through linear heads' features.
static s2s_status heads_bwd(pass *p, sub_acts *a, s2s_qkv v, s2s_rows dq, s2s_rows dk,
                            s2s_rows dv, const s2s_attn_shape *sh, const struct guide *gd) {
    if (chunked(p, sh)) {
        s2s_chunk_saved c = {.q = v.q, .k = v.k, .v = v.v, .ctx = a->ctx, .lse = a->lse,
                             .p = p->adrop, .key = a->akey, .dhead = gd ? gd->dhead : NULL,
                             .phead = gd ? gd->probs : NULL, .head = gd ? gd->head : 0};
        S2S_TRY(s2s_chunked_attention_bwd(dq, dk, dv, p->g->dctx, &c, sh, &p->g->chunk));
    } else {
        s2s_attn_saved f = {.q = v.q, .k = v.k, .v = v.v, .probs = a->probs,
                            .pdrop = used_probs(p, a), .keep = a->akeep, .p = p->adrop,
                            .norms = a->norms};
        s2s_attn_shape with16 = *sh;
        with16.w16 = a->w16;
        S2S_TRY(s2s_attention_backward(dq, dk, dv, p->g->dprobs, p->g->dctx, &f, &with16,
                                       gd ? gd->dhead : NULL, gd ? gd->head : 0));
    }
    const s2s_attn_pattern *pt = &sh->mask.pattern;
    int64_t dh = p->d / p->H;
    s2s_attention_features_backward(dq, v.q, p->N, sh->tq, pt, p->H, dh, true);
    s2s_attention_features_backward(dk, v.k, p->N, sh->tk, pt, p->H, dh, false);
    scale_queries(p, dq.p, sh);
    return S2S_OK;
}

static s2s_status self_attn_bwd(pass *p, sub_acts *a, const s2s_sub_weights *sw, float *dx,
                                int64_t T, s2s_attn_mask mask, const struct guide *gd) {
    const s2s_attn_weights *w = &sw->attn;
    s2s_graph *g = p->g;
    int64_t d = p->d, R = p->N * T;
    float *din;
    bool acc;
    float *dsub = sub_bwd_begin(p, a, &sw->norm, dx, R, &din, &acc);
    S2S_TRY(s2s_linear_backward(g->dctx, G(p, w->w_out), G(p, w->b_out), dsub, a->ctx,
                                w->w_out, ops16(p, &(s2s_bf16_operands){0}, w->w_out, a->ctx16), R,
                                d, d, false));
    s2s_attn_shape sh = shape_of(p, T, T, mask);
    s2s_qkv v = qkv16(qkv_blocks(a->q, T, a->q + R * d, T, p->N, d), a->q, a->q16, a->q,
                      a->q16);
    S2S_TRY(heads_bwd(p, a, v, grad_of(g->dq, a->q, v.q), grad_of(g->dq, a->q, v.k),
                      grad_of(g->dq, a->q, v.v), &sh, gd));
    S2S_TRY(project_blocks_bwd(p, din, g->dq, a->h, a->h16, w->w_qkv, w->b_qkv, 3, R, acc));
    sub_bwd_end(p, a, &sw->norm, dx, R);
    return S2S_OK;
}

// Also adds the encoder output's gradient into g->dsrc.
static s2s_status cross_attn_bwd(pass *p, sub_acts *a, const s2s_sub_weights *sw, float *dx,
                                 s2s_attn_mask mask, const struct guide *gd) {
    const s2s_attn_weights *w = &sw->attn;
    s2s_graph *g = p->g;
    int64_t d = p->d, T = p->T, S = p->S, R = p->N * T;
    float *din;
    bool acc;
    float *dsub = sub_bwd_begin(p, a, &sw->norm, dx, R, &din, &acc);
    S2S_TRY(s2s_linear_backward(g->dctx, G(p, w->w_out), G(p, w->b_out), dsub, a->ctx,
                                w->w_out, ops16(p, &(s2s_bf16_operands){0}, w->w_out, a->ctx16), R,
                                d, d, false));
    s2s_attn_shape sh = shape_of(p, T, S, mask);
    s2s_qkv v = qkv16(qkv_blocks(a->q, T, a->kv, S, p->N, d), a->q, a->q16, a->kv, a->kv16);
    S2S_TRY(heads_bwd(p, a, v, grad_of(g->dq, a->q, v.q), grad_of(g->dkv, a->kv, v.k),
                      grad_of(g->dkv, a->kv, v.v), &sh, gd));
    S2S_TRY(s2s_linear_backward(din, G(p, w->w_qkv), G(p, w->b_qkv), g->dq, a->h, w->w_qkv,
                                ops16(p, &(s2s_bf16_operands){0}, w->w_qkv, a->h16), R, d, d, acc));
    S2S_TRY(project_blocks_bwd(p, g->dsrc, g->dkv, g->memory, g->memory16,
                               s2s_recipe_kv_weight(w->w_qkv, d), s2s_recipe_kv_bias(w->b_qkv, d),
                               2, p->N * S, /*accumulate=*/true));
    sub_bwd_end(p, a, &sw->norm, dx, R);
    return S2S_OK;
}

static s2s_status ffn_bwd(pass *p, sub_acts *a, const s2s_ffn_weights *w,
                          const s2s_norm_weights *n, float *dx, int64_t R) {
    s2s_graph *g = p->g;
    int64_t d = p->d, f = p->f;
    float *din;
    bool acc;
    float *dsub = sub_bwd_begin(p, a, n, dx, R, &din, &acc);
    S2S_TRY(s2s_linear_backward(g->dff, G(p, w->w2), G(p, w->b2), dsub, a->act, w->w2,
                                ops16(p, &(s2s_bf16_operands){0}, w->w2, a->act16), R, f, d,
                                false));
    if (p->m->cfg.model.activation == S2S_ACT_GELU)
        s2s_gelu_backward(g->dff, g->dff, a->a1, R * f);
    else
        s2s_relu_backward(g->dff, g->dff, a->a1, R * f);
    S2S_TRY(s2s_linear_backward(din, G(p, w->w1), G(p, w->b1), g->dff, a->h, w->w1,
                                ops16(p, &(s2s_bf16_operands){0}, w->w1, a->h16), R, d, f, acc));
    sub_bwd_end(p, a, n, dx, R);
    return S2S_OK;
}

static void embed_bwd(pass *p, float *demb, float *dx, const uint8_t *keep, const int *ids,
                      int64_t R) {
    s2s_dropout_backward(dx, dx, keep, R * p->d, p->drop);
    s2s_embedding_backward(demb, dx, ids, R, p->d, sqrtf((float)p->d));
}

// The layers of stack st backward, last sublayer first, with dx (N*T, D)
// the gradient of the stream leaving them (stack_fwd's arguments; x0 the
// stream entering the first layer). With checkpoint_layers each layer
// first runs forward again from its input, with the dropout generator as
// it was: the same masks, so the same activations bit for bit.
static s2s_status stack_bwd(pass *p, const s2s_stack *st, sub_acts *acts, stack_kept *k,
                            const s2s_layer_weights *w, float *dx, const float *x0, int64_t T,
                            const int *k_len) {
    bool ckpt = p->g->o.checkpoint_layers;
    for (int l = st->layers - 1; l >= 0; l--) {
        sub_acts *la = layer_acts(p->g, acts, st, l);
        if (ckpt) {
            s2s_rng *rng = p->rng, again;
            if (rng) {
                again = k->rng[l];
                p->rng = &again;
            }
            la[st->n_subs - 1].out = k->out[l];
            s2s_status s = layer_fwd(p, st, la, w, l, l ? k->out[l - 1] : x0, T, k_len);
            p->rng = rng;
            S2S_TRY(s);
        }
        for (int i = st->n_subs - 1; i >= 0; i--) {
            const s2s_sublayer *sub = &st->subs[i];
            sub_acts *a = &la[i];
            const struct guide *gd = guide_of(p, st, l, i);
            if (sub->kind == S2S_SUB_SELF_ATTN)
                S2S_TRY(self_attn_bwd(p, a, &w[l].sub[i], dx, T, mask_of(p, sub, l, k_len),
                                      gd));
            else if (sub->kind == S2S_SUB_CROSS_ATTN)
                S2S_TRY(cross_attn_bwd(p, a, &w[l].sub[i], dx, mask_of(p, sub, l, k_len), gd));
            else
                S2S_TRY(ffn_bwd(p, a, &w[l].sub[i].ffn, &w[l].sub[i].norm, dx, p->N * T));
        }
    }
    return S2S_OK;
}

// Expects g->logits to hold d loss / d logits.
static s2s_status backward(pass *p) {
    s2s_graph *g = p->g;
    const s2s_model *m = p->m;
    int64_t d = p->d, Rs = p->N * p->S, Rt = p->N * p->T;
    memset(p->grads, 0, m->n_params * sizeof(float));

    // logits = hfin · W^T + b; a tied W is tgt_embed, whose gradient block
    // then collects this and the embedding's contribution.
    float *dh = p->pre ? g->dh : g->dtgt;
    s2s_bf16_operands o16;
    const s2s_bf16_operands *b16 = ops16(p, &o16, m->gen_w, g->hfin16);
    if (b16) o16.dy = g->dlogits16;  // rounded by the loss
    S2S_TRY(s2s_linear_backward(dh, G(p, m->gen_w), G(p, m->gen_b), g->logits, g->hfin,
                                m->gen_w, b16, Rt, d, p->V, false));
    if (p->pre)
        s2s_layernorm_backward(g->dtgt, G(p, m->dec_norm.w), G(p, m->dec_norm.b), g->dh,
                               g->dec_norm.xhat, g->dec_norm.rstd, m->dec_norm.w, Rt, d, false);

    memset(g->dsrc, 0, (size_t)(Rs * d) * sizeof(float));
    S2S_TRY(stack_bwd(p, &m->arch.dec, g->dec, &g->dec_kept, m->dec, g->dtgt, g->tgt_x, p->T,
                      NULL));
    embed_bwd(p, G(p, m->tgt_embed), g->dtgt, g->tgt_keep, p->b->tgt_in, Rt);

    if (p->pre)
        s2s_layernorm_backward(g->dsrc, G(p, m->enc_norm.w), G(p, m->enc_norm.b), g->dsrc,
                               g->enc_norm.xhat, g->enc_norm.rstd, m->enc_norm.w, Rs, d, false);
    S2S_TRY(stack_bwd(p, &m->arch.enc, g->enc, &g->enc_kept, m->enc, g->dsrc, g->src_x, p->S,
                      p->b->src_len));
    embed_bwd(p, G(p, m->src_embed), g->dsrc, g->src_keep, p->b->src, Rs);
    return S2S_OK;
}

// ---- entry points ----

static s2s_status check_rate(float x, const char *name, bool one_ok) {
    if (!(x >= 0.0f && (one_ok ? x <= 1.0f : x < 1.0f)))
        return s2s_fail(S2S_ERR_INVALID, "%s must be in [0, 1%c, not %g", name,
                        one_ok ? ']' : ')', (double)x);
    return S2S_OK;
}

// The guided heads of o: weights >= 0, and each one on in its role's
// attention, inside the model, and served by the graph.
static s2s_status check_guided(const s2s_graph *g, const s2s_train_opts *o) {
    const s2s_model_config *c = &g->m->cfg.model;
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) {
        const s2s_guided_head *gh = &o->guided[r];
        const char *name = s2s_roles[r].name;
        if (!(gh->weight >= 0.0f && isfinite(gh->weight)))
            return s2s_fail(S2S_ERR_INVALID, "guided %s weight must be >= 0, not %g", name,
                            (double)gh->weight);
        if (gh->weight == 0.0f) continue;
        if (gh->stack != s2s_roles[r].stack)
            return s2s_fail(S2S_ERR_INVALID, "guided %s: stack %d; the %s head is in attention "
                            "%d", name, (int)gh->stack, name, (int)s2s_roles[r].stack);
        int sub;
        const s2s_stack *st = s2s_arch_map_stack(&g->m->arch, gh->stack, &sub);
        if (gh->layer < 0 || gh->layer >= st->layers || gh->head < 0 || gh->head >= c->heads)
            return s2s_fail(S2S_ERR_INVALID, "guided %s: layer %d, head %d; the model has %d "
                            "%s layers of %d heads", name, gh->layer, gh->head, st->layers,
                            st->name, c->heads);
        if (g->o.no_guided[r])
            return s2s_fail(S2S_ERR_INVALID, "guided %s is on, but the training graph was made "
                            "without it", name);
    }
    return S2S_OK;
}

// Guided head r of p from gh, when it is on and the batch has its rows.
static void set_guide(pass *p, int r, const s2s_guided_head *gh) {
    const s2s_batch *b = p->b;
    if (!(gh->weight > 0.0f && b->guide[r] && b->n_guided[r] > 0)) return;
    int sub;
    const s2s_stack *st = s2s_arch_map_stack(&p->m->arch, gh->stack, &sub);
    struct guide *gd = &p->guide[r];
    *gd = (struct guide){
        .w = gh->weight, .st = st, .layer = gh->layer, .sub = sub, .head = gh->head,
        .dhead = p->g->dguide[r], .probs = p->g->gprobs[r], .A = b->guide[r],
        .rows = p->norm_guided[r],
    };
    map_rows(gh->stack, p->S, p->T, &gd->R, &gd->C);
}

s2s_status s2s_forward_backward(s2s_graph *g, const s2s_batch *b, const s2s_train_opts *o,
                                s2s_rng *rng, float *grads, s2s_loss_stats *stats) {
    S2S_TRY(check_rate(o->dropout, "dropout", false));
    S2S_TRY(check_rate(o->attention_dropout, "attention_dropout", false));
    S2S_TRY(check_rate(o->label_smoothing, "label_smoothing", true));
    if (!rng && (o->dropout > 0.0f || o->attention_dropout > 0.0f))
        return s2s_fail(S2S_ERR_INVALID, "dropout needs a random number generator");
    S2S_TRY(check_guided(g, o));
    pass p;
    S2S_TRY(begin(&p, g, b, o->dropout, o->attention_dropout, rng));
    p.grads = grads;
    if (o->norm_tokens > 0) p.norm_tokens = o->norm_tokens;
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) {
        if (o->norm_guided[r] > 0) p.norm_guided[r] = o->norm_guided[r];
        set_guide(&p, r, &o->guided[r]);
    }
    S2S_TRY(forward(&p));
    loss(&p, o->label_smoothing, true, stats);
    guided_losses(&p, stats);
    return backward(&p);
}

s2s_status s2s_forward_loss(s2s_graph *g, const s2s_batch *b, float label_smoothing,
                            s2s_loss_stats *stats) {
    S2S_TRY(check_rate(label_smoothing, "label_smoothing", true));
    pass p;
    S2S_TRY(begin(&p, g, b, 0.0f, 0.0f, NULL));
    S2S_TRY(forward(&p));
    loss(&p, label_smoothing, false, stats);
    return S2S_OK;
}
