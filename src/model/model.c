// Model weights: layout, random init, safetensors load and save.
#include "model/model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/error.h"
#include "core/util.h"
#include "model/safetensors.h"
#include "ops/ops.h"
#include "config/command.h"

// ---- layout ----

// Walks every tensor in file order. The first pass (m->params == NULL)
// counts tensors and floats, in checked arithmetic and within the limits
// of s2s/model.h; in a load it also finds each tensor in the file with the
// shape the config gives it, so a stored config that the file's data does
// not back fails (at its first missing tensor) before anything is
// allocated for it. The second pass hands out pointers into the block.
typedef struct layout {
    s2s_model *m;
    size_t off;  // floats so far
    int n;       // tensors so far
    const s2s_st_file *file;  // a load: every tensor must be in it
    const char *where;        // the file, or "config", for messages
    s2s_status st;            // the first failure; the walk stops there
} layout;

static void shape_text(char *buf, size_t size, int ndim, const int64_t *shape) {
    size_t len = 0;
    for (int k = 0; k < ndim && len < size; k++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", k ? ", " : "[",
                                (long long)shape[k]);
    if (len < size) snprintf(buf + len, size - len, "]");
}

// The first pass of a load: the file has the tensor, with this shape.
static s2s_status check_in_file(const layout *L, const char *name, int ndim, int64_t rows,
                                int64_t cols) {
    const s2s_st_tensor *t = s2s_st_find(L->file, name);
    if (!t) return s2s_fail(S2S_ERR_FORMAT, "%s: missing tensor '%s'", L->where, name);
    if (t->ndim == ndim && t->shape[0] == rows && (ndim == 1 || t->shape[1] == cols))
        return S2S_OK;
    char want[48], got[96];
    shape_text(want, sizeof want, ndim, (int64_t[]){rows, cols});
    shape_text(got, sizeof got, t->ndim, t->shape);
    return s2s_fail(S2S_ERR_FORMAT, "%s: tensor '%s' has shape %s, the config needs %s",
                    L->where, name, got, want);
}

// Values in a tensor (within S2S_MAX_WEIGHTS once the layout is built).
static size_t numel(const s2s_param *p) {
    return (size_t)p->shape[0] * (size_t)(p->ndim == 2 ? p->shape[1] : 1);
}

static s2s_status too_big(const layout *L) {
    const s2s_model_config *c = &L->m->cfg.model;
    bool floats = L->off > S2S_MAX_WEIGHTS;
    return s2s_fail(L->file ? S2S_ERR_FORMAT : S2S_ERR_CONFIG,
                    "%s: model.d_model %d, model.ffn_dim %d, %d + %d layers and vocabularies of "
                    "%d and %d tokens make more than %zu %s; s2s takes at most that many",
                    L->where, c->d_model, c->ffn_dim, c->encoder_layers, c->decoder_layers,
                    s2s_vocab_size(L->m->src_vocab), s2s_vocab_size(L->m->tgt_vocab),
                    floats ? S2S_MAX_WEIGHTS : (size_t)S2S_MAX_TENSORS,
                    floats ? "weights" : "tensors");
}

static float *param(layout *L, s2s_param_kind kind, int64_t rows, int64_t cols,
                    const char *fmt, int i, const char *suffix) {
    if (L->st != S2S_OK) return NULL;
    s2s_model *m = L->m;
    int ndim = cols ? 2 : 1;
    char name[sizeof m->tensors[0].name] = "", base[48];
    if (m->params || L->file) {
        snprintf(base, sizeof base, fmt, i);
        snprintf(name, sizeof name, "%s%s", base, suffix);
    }
    float *p = NULL;
    if (m->params) {
        s2s_param *t = &m->tensors[L->n];
        memcpy(t->name, name, sizeof name);
        t->ndim = ndim;
        t->shape[0] = rows;
        t->shape[1] = cols;
        t->kind = kind;
        t->data = p = m->params + L->off;
    } else if (L->file) {
        L->st = check_in_file(L, name, ndim, rows, cols);
    }
    L->off = s2s_size_add(L->off, S2S_SIZE(rows, cols ? cols : 1));
    L->n++;
    if (L->st == S2S_OK && (L->off > S2S_MAX_WEIGHTS || L->n > S2S_MAX_TENSORS))
        L->st = too_big(L);
    return p;
}

static s2s_norm_weights norm(layout *L, const char *fmt, int i, int64_t d) {
    s2s_norm_weights n;
    n.w = param(L, S2S_PARAM_NORM_W, d, 0, fmt, i, ".weight");
    n.b = param(L, S2S_PARAM_BIAS, d, 0, fmt, i, ".bias");
    return n;
}

// The weights of a sublayer of kind k, as s2s_sub_weight_list lists them
// (matrices Glorot-uniform, vectors zeros): p[j] gets the j-th.
static void sub_weights(layout *L, s2s_sub_kind k, const char *fmt, int i, float **p) {
    const s2s_model_config *c = &L->m->cfg.model;
    const int64_t size[] = {[S2S_DIM_NONE] = 0, [S2S_DIM_D] = c->d_model, [S2S_DIM_F] = c->ffn_dim};
    int n;
    const s2s_sub_weight *w = s2s_sub_weight_list(k, &n);
    for (int j = 0; j < n; j++) {
        int64_t rows = size[w[j].rows], cols = size[w[j].cols];
        p[j] = param(L, cols ? S2S_PARAM_MATRIX : S2S_PARAM_BIAS, rows, cols, fmt, i, w[j].suffix);
    }
}

// "<prefix>.{q,k,v,out}_proj.{weight,bias}": the stacked (3D, D) matrix and
// (3D) bias start at Q's.
static s2s_attn_weights attention(layout *L, s2s_sub_kind k, const char *fmt, int i) {
    float *p[S2S_SUB_MAX_WEIGHTS];
    sub_weights(L, k, fmt, i, p);
    // (out, in): transposed false
    return (s2s_attn_weights){.w_qkv = p[0], .b_qkv = p[3], .w_out = p[6], .b_out = p[7]};
}

static s2s_ffn_weights ffn(layout *L, const char *fmt, int i) {
    float *p[S2S_SUB_MAX_WEIGHTS];
    sub_weights(L, S2S_SUB_FFN, fmt, i, p);
    return (s2s_ffn_weights){.w1 = p[0], .b1 = p[1], .w2 = p[2], .b2 = p[3]};
}

// One layer of stack st: its attentions in order, then its LayerNorms in
// order, then its feed-forward block (the file order of every s2s model).
static void layer(layout *L, const s2s_stack *st, int l, s2s_layer_weights *w) {
    int64_t d = L->m->cfg.model.d_model;
    char fmt[64];
    for (int i = 0; i < st->n_subs; i++)
        if (s2s_sub_is_attention(st->subs[i].kind)) {
            snprintf(fmt, sizeof fmt, "%s.layers.%%d.%s", st->name, st->subs[i].name);
            w->sub[i].attn = attention(L, st->subs[i].kind, fmt, l);
        }
    for (int i = 0; i < st->n_subs; i++) {
        snprintf(fmt, sizeof fmt, "%s.layers.%%d.%s", st->name, st->subs[i].norm);
        w->sub[i].norm = norm(L, fmt, l, d);
    }
    for (int i = 0; i < st->n_subs; i++)
        if (st->subs[i].kind == S2S_SUB_FFN) {
            snprintf(fmt, sizeof fmt, "%s.layers.%%d", st->name);
            w->sub[i].ffn = ffn(L, fmt, l);
        }
}

// The layers of stack st into w (NULL in the counting pass), then its
// final LayerNorm (pre-norm).
static void stack(layout *L, const s2s_stack *st, s2s_layer_weights *w, s2s_norm_weights *fin) {
    for (int l = 0; l < st->layers && L->st == S2S_OK; l++)
        layer(L, st, l, w ? &w[l] : &(s2s_layer_weights){0});
    char name[32];
    snprintf(name, sizeof name, "%s.norm", st->name);
    if (L->m->cfg.model.norm == S2S_NORM_PRE) *fin = norm(L, name, 0, L->m->cfg.model.d_model);
}

static void walk(layout *L) {
    s2s_model *m = L->m;
    const s2s_model_config *c = &m->cfg.model;
    int64_t d = c->d_model;
    int64_t vs = s2s_vocab_size(m->src_vocab), vt = s2s_vocab_size(m->tgt_vocab);

    m->src_embed = param(L, S2S_PARAM_MATRIX, vs, d, "src_embed", 0, ".weight");
    m->tgt_embed = param(L, S2S_PARAM_MATRIX, vt, d, "tgt_embed", 0, ".weight");
    m->gen_w = c->tie_output ? m->tgt_embed
                             : param(L, S2S_PARAM_MATRIX, vt, d, "generator", 0, ".weight");
    m->gen_b = param(L, S2S_PARAM_BIAS, vt, 0, "generator", 0, ".bias");
    stack(L, &m->arch.enc, m->params ? m->enc : NULL, &m->enc_norm);
    stack(L, &m->arch.dec, m->params ? m->dec : NULL, &m->dec_norm);
}

// Allocates the parameter block for cfg and the vocabularies already in m,
// after checking the layout (against `file` in a load: see layout).
static s2s_status build(s2s_model *m, const s2s_st_file *file, const char *where) {
    const s2s_model_config *c = &m->cfg.model;
    S2S_TRY(s2s_config_validate(&m->cfg, "model"));
    m->arch = s2s_arch_make(c);
    layout L = {.m = m, .file = file, .where = where};
    walk(&L);
    S2S_TRY(L.st);
    m->n_params = L.off;
    m->n_tensors = L.n;
    size_t positions = S2S_SIZE(c->max_len, c->d_model);
    size_t most = m->n_params > S2S_POSITION_TABLE_MIN ? m->n_params : S2S_POSITION_TABLE_MIN;
    if (positions > most)
        return s2s_fail(file ? S2S_ERR_FORMAT : S2S_ERR_CONFIG,
                        "%s: model.max_len %d needs a position table of %d x %d floats; s2s "
                        "allows one as large as the weights (%zu) or 2^20 floats: max_len up "
                        "to %zu here",
                        where, c->max_len, c->max_len, c->d_model, m->n_params,
                        most / (size_t)c->d_model);
    m->params = s2s_big_alloc(m->n_params, sizeof(float));
    m->tensors = s2s_calloc((size_t)L.n, sizeof(s2s_param));
    m->enc = s2s_calloc((size_t)c->encoder_layers, sizeof(s2s_layer_weights));
    m->dec = s2s_calloc((size_t)c->decoder_layers, sizeof(s2s_layer_weights));
    m->pe = s2s_calloc(positions, sizeof(float));
    if (!m->params || !m->tensors || !m->enc || !m->dec || !m->pe) return S2S_ERR_NOMEM;
    L = (layout){.m = m, .where = where};
    walk(&L);
    s2s_positional_table(m->pe, c->max_len, c->d_model);
    m->compute = s2s_compute_type_resolve(m->cfg.decode.compute_type);
    return S2S_OK;
}

static s2s_model *model_new(void) {
    s2s_model *m = s2s_calloc(1, sizeof *m);
    if (m && pthread_rwlock_init(&m->use, NULL) != 0) {
        free(m);
        s2s_fail(S2S_ERR_NOMEM, "out of memory (a lock)");
        return NULL;
    }
    if (m) m->align_share = 1.0f;
    return m;
}

void s2s_model_free(s2s_model *m) {
    if (!m) return;
    s2s_vocab_free(m->src_vocab);
    s2s_vocab_free(m->tgt_vocab);
    s2s_big_free(m->params, m->n_params, sizeof(float));
    free(m->tensors);
    free(m->enc);
    free(m->dec);
    free(m->pe);
    s2s_decode_weights_free(m->decode);
    pthread_rwlock_destroy(&m->use);
    free(m);
}

// ---- init ----

s2s_status s2s_model_init(s2s_model **out, const s2s_config *cfg, uint64_t seed) {
    *out = NULL;
    char unset[64];
    int n_unset = s2s_config_unset_keys(cfg, S2S_CONFIG_FOR_INIT, unset, sizeof unset);
    if (n_unset > 0)
        return s2s_fail(S2S_ERR_CONFIG, "config: %s must be set (a new model reads its "
                        "vocabularies)", unset);
    s2s_model *m = model_new();
    if (!m) return S2S_ERR_NOMEM;
    m->cfg = *cfg;
    s2s_status st = s2s_vocab_load(&m->src_vocab, cfg->vocab.src);
    if (st == S2S_OK) st = s2s_vocab_load(&m->tgt_vocab, cfg->vocab.tgt);
    if (st == S2S_OK) st = build(m, NULL, "config");
    if (st != S2S_OK) {
        s2s_model_free(m);
        return st;
    }
    s2s_rng rng;
    s2s_rng_seed(&rng, seed);
    for (int i = 0; i < m->n_tensors; i++) {
        s2s_param *t = &m->tensors[i];
        size_t n = numel(t);
        if (t->kind == S2S_PARAM_MATRIX) {
            double limit = sqrt(6.0 / (double)(t->shape[0] + t->shape[1]));
            for (size_t j = 0; j < n; j++)
                t->data[j] = (float)((2.0 * s2s_rng_uniform(&rng) - 1.0) * limit);
        } else {
            float v = t->kind == S2S_PARAM_NORM_W ? 1.0f : 0.0f;
            for (size_t j = 0; j < n; j++) t->data[j] = v;
        }
    }
    *out = m;
    return S2S_OK;
}

// ---- save ----

// The metadata key of role's plane: PREFIX_layer or PREFIX_head
// ("s2s.alignment_layer").
static void head_key(char *out, size_t size, s2s_head_role role, const char *what) {
    snprintf(out, size, "%s_%s", s2s_roles[role].meta, what);
}

// The calibrated heads' metadata, in role order: PREFIX_layer and
// PREFIX_head of each set one, the alignment's share after its head; the
// texts live in *ht. Returns how many entries it wrote to meta.
typedef struct head_texts {
    char key[S2S_HEAD_ROLE_COUNT][2][32];
    char val[S2S_HEAD_ROLE_COUNT][2][16];
    char share[16];
} head_texts;

static int head_meta(const s2s_model *m, head_texts *ht, s2s_st_meta *meta) {
    int n = 0;
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) {
        const struct s2s_role_head *h = &m->heads[r];
        if (!h->set) continue;
        const int v[2] = {h->layer, h->head};
        for (int k = 0; k < 2; k++) {
            head_key(ht->key[r][k], sizeof ht->key[r][k], r, k ? "head" : "layer");
            snprintf(ht->val[r][k], sizeof ht->val[r][k], "%d", v[k]);
            meta[n++] = (s2s_st_meta){ht->key[r][k], ht->val[r][k]};
        }
        if (r == S2S_HEAD_ALIGN) {
            snprintf(ht->share, sizeof ht->share, "%g", (double)m->align_share);
            meta[n++] = (s2s_st_meta){"s2s.alignment_share", ht->share};
        }
    }
    return n;
}

s2s_status s2s_model_save(const s2s_model *m, const char *path) {
    return s2s_model_save_extra(m, path, NULL, 0, NULL, 0);
}

s2s_status s2s_model_save_extra(const s2s_model *m, const char *path, const s2s_st_tensor *extra,
                                int n_extra, const s2s_st_meta *extra_meta, int n_extra_meta) {
    return s2s_model_save_as(m, path, NULL, extra, n_extra, extra_meta, n_extra_meta);
}

s2s_status s2s_model_save_as(const s2s_model *m, const char *path, const s2s_st_tensor *own,
                             const s2s_st_tensor *extra, int n_extra,
                             const s2s_st_meta *extra_meta, int n_extra_meta) {
    // model: and decode: only; the vocabularies travel inside the file.
    char *yaml = s2s_config_model_to_yaml(&m->cfg);
    char *sv = s2s_vocab_to_string(m->src_vocab);
    char *tv = s2s_vocab_to_string(m->tgt_vocab);
    s2s_st_tensor *ts = calloc((size_t)(m->n_tensors + n_extra), sizeof *ts);
    enum { OWN_META = 9 };  // format, config, 2 vocabs, 3 alignment, 2 coreference keys
    s2s_st_meta *meta = calloc((size_t)(OWN_META + n_extra_meta), sizeof *meta);
    s2s_status st;
    if (!yaml || !sv || !tv || !ts || !meta) {
        st = s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    for (int i = 0; i < m->n_tensors; i++) {
        const s2s_param *p = &m->tensors[i];
        ts[i] = own ? own[i] : (s2s_st_tensor){.name = p->name, .ndim = p->ndim, .data = p->data};
        ts[i].shape[0] = p->shape[0];
        ts[i].shape[1] = p->shape[1];
    }
    for (int i = 0; i < n_extra; i++) ts[m->n_tensors + i] = extra[i];
    int n_meta = 0;
    meta[n_meta++] = (s2s_st_meta){"s2s.format_version", S2S_FORMAT_VERSION};
    meta[n_meta++] = (s2s_st_meta){"s2s.config", yaml};
    meta[n_meta++] = (s2s_st_meta){"s2s.src_vocab", sv};
    meta[n_meta++] = (s2s_st_meta){"s2s.tgt_vocab", tv};
    head_texts ht;
    n_meta += head_meta(m, &ht, meta + n_meta);
    S2S_ASSERT(n_meta <= OWN_META);
    for (int i = 0; i < n_extra_meta; i++) meta[n_meta++] = extra_meta[i];
    st = s2s_st_write(path, ts, m->n_tensors + n_extra, meta, n_meta);
done:
    free(meta);
    free(yaml);
    free(sv);
    free(tv);
    free(ts);
    return st;
}

// ---- load ----

// A stored plane, PREFIX_layer / PREFIX_head ("s2s.alignment", "s2s.coref"):
// both or neither, integers the setter takes.
static s2s_status load_head(s2s_model *m, const s2s_st_file *f, const char *path,
                            s2s_head_role role) {
    char lk[32], hk[32];
    head_key(lk, sizeof lk, role, "layer");
    head_key(hk, sizeof hk, role, "head");
    const char *ls = s2s_st_meta_get(f, lk), *hs = s2s_st_meta_get(f, hk);
    if (!ls && !hs) return S2S_OK;
    char *end1 = NULL, *end2 = NULL;
    long l = ls ? strtol(ls, &end1, 10) : -1, h = hs ? strtol(hs, &end2, 10) : -1;
    if (!ls || !hs || *end1 || *end2 || l < -1 || l > 1000000 || h < -1 || h > 1000000 ||
        s2s_model_set_head(m, role, (int)l, (int)h) != S2S_OK)
        return s2s_fail(S2S_ERR_FORMAT, "%s: bad %s/%s metadata", path, lk, hk);
    return S2S_OK;
}

// p's values from t (of the same shape), refusing values that are not
// finite: decoding would turn them into NaN log-probabilities. A quantised
// t (docs/model-format.md) is dequantised: BF16 widened, I8 times the scale
// of its row from NAME_scale in f, which is marked used.
static s2s_status copy_weights(const s2s_param *p, const s2s_st_tensor *t, const s2s_st_file *f,
                               bool *used, const char *path) {
    size_t n = numel(p);
    if (t->dtype == S2S_ST_F32) memcpy(p->data, t->data, n * sizeof(float));
    if (t->dtype == S2S_ST_BF16)
        for (size_t j = 0; j < n; j++) {
            uint16_t h;
            memcpy(&h, (const char *)t->raw + 2 * j, sizeof h);
            s2s_from_bf16(&p->data[j], &h, 1);
        }
    if (t->dtype == S2S_ST_I8) {
        char name[96];
        snprintf(name, sizeof name, "%s_scale", p->name);
        int k = s2s_st_index(f, name);
        const s2s_st_tensor *sc = k >= 0 ? s2s_st_get(f, k) : NULL;
        if (p->ndim != 2)
            return s2s_fail(S2S_ERR_FORMAT, "%s: tensor '%s' is I8; only matrices may be", path,
                            p->name);
        if (!sc)
            return s2s_fail(S2S_ERR_FORMAT, "%s: tensor '%s' is I8 but its scales '%s' are missing",
                            path, p->name, name);
        if (sc->dtype != S2S_ST_F32 || sc->ndim != 1 || sc->shape[0] != p->shape[0])
            return s2s_fail(S2S_ERR_FORMAT, "%s: '%s' must be F32 of shape [%lld], one scale per "
                            "row of '%s'", path, name, (long long)p->shape[0], p->name);
        used[k] = true;
        int64_t cols = p->shape[1];
        for (int64_t r = 0; r < p->shape[0]; r++) {
            float s;
            memcpy(&s, (const char *)sc->raw + 4 * r, sizeof s);
            if (!(isfinite(s) && s > 0))
                return s2s_fail(S2S_ERR_FORMAT, "%s: '%s' holds %g at index %lld; scales must be "
                                "finite and positive", path, name, (double)s, (long long)r);
            const int8_t *q = (const int8_t *)t->raw + r * cols;
            for (int64_t j = 0; j < cols; j++) p->data[r * cols + j] = (float)q[j] * s;
        }
    }
    size_t j = s2s_first_nonfinite(p->data, n);
    if (j < n)
        return s2s_fail(S2S_ERR_FORMAT,
                        "%s: tensor '%s' holds %s at index %zu; weights must be finite", path,
                        p->name, isnan(p->data[j]) ? "NaN" : "an infinity", j);
    return S2S_OK;
}

static s2s_status load_from(s2s_model *m, const s2s_st_file *f, const char *path) {
    char q[S2S_QUOTE_SIZE];
    const char *ver = s2s_st_meta_get(f, "s2s.format_version");
    if (!ver)
        return s2s_fail(S2S_ERR_FORMAT, "%s: not an s2s model (no s2s.format_version in metadata)",
                        path);
    if (strcmp(ver, S2S_FORMAT_VERSION) != 0)
        return s2s_fail(S2S_ERR_FORMAT, "%s: format version '%s'; this s2s reads version %s",
                        path, s2s_quote(q, sizeof q, ver, strlen(ver)), S2S_FORMAT_VERSION);
    const char *keys[3] = {"s2s.config", "s2s.src_vocab", "s2s.tgt_vocab"};
    for (int i = 0; i < 3; i++)
        if (!s2s_st_meta_get(f, keys[i]))
            return s2s_fail(S2S_ERR_FORMAT, "%s: metadata has no %s", path, keys[i]);

    char name[S2S_PATH_MAX + 32];
    snprintf(name, sizeof name, "%s (s2s.config)", path);
    s2s_config_default(&m->cfg);
    // A bad stored config is a corrupt model file, not a user's config error.
    if (s2s_config_load_string(&m->cfg, s2s_st_meta_get(f, "s2s.config"), name, NULL) != S2S_OK)
        return S2S_ERR_FORMAT;
    snprintf(name, sizeof name, "%s (s2s.src_vocab)", path);
    S2S_TRY(s2s_vocab_from_string(&m->src_vocab, s2s_st_meta_get(f, "s2s.src_vocab"), name));
    snprintf(name, sizeof name, "%s (s2s.tgt_vocab)", path);
    S2S_TRY(s2s_vocab_from_string(&m->tgt_vocab, s2s_st_meta_get(f, "s2s.tgt_vocab"), name));
    S2S_TRY(build(m, f, path));  // every tensor is in f, with its shape
    S2S_TRY(load_head(m, f, path, S2S_HEAD_ALIGN));
    const char *share = s2s_st_meta_get(f, "s2s.alignment_share");
    if (share) {  // absent in files calibrated before it existed: argmax alone
        char *end = NULL;
        double v = strtod(share, &end);
        if (!m->heads[S2S_HEAD_ALIGN].set || end == share || *end ||
            s2s_model_set_alignment_share(m, (float)v) != S2S_OK)
            return s2s_fail(S2S_ERR_FORMAT, "%s: bad s2s.alignment_share metadata", path);
    }
    S2S_TRY(load_head(m, f, path, S2S_HEAD_COREF));

    int n_file = s2s_st_count(f);
    bool *used = s2s_calloc((size_t)n_file, sizeof *used);
    if (!used) return S2S_ERR_NOMEM;
    s2s_status st = S2S_OK;
    for (int i = 0; i < m->n_tensors && st == S2S_OK; i++) {
        int k = s2s_st_index(f, m->tensors[i].name);
        used[k] = true;
        st = copy_weights(&m->tensors[i], s2s_st_get(f, k), f, used, path);
    }
    // Names are unique in both: extra tensors in the file are the unused ones,
    // but for train.*, a training checkpoint's optimizer state (s2s_model_save_extra).
    for (int k = 0; k < n_file && st == S2S_OK; k++)
        if (!used[k] && strncmp(s2s_st_get(f, k)->name, "train.", 6) != 0) {
            const char *tn = s2s_st_get(f, k)->name;
            st = s2s_fail(S2S_ERR_FORMAT, "%s: unexpected tensor '%s' for this config", path,
                          s2s_quote(q, sizeof q, tn, strlen(tn)));
        }
    free(used);
    return st;
}

s2s_status s2s_model_load(s2s_model **out, const char *path) {
    *out = NULL;
    s2s_st_file *f;
    S2S_TRY(s2s_st_open(&f, path));
    s2s_model *m = model_new();
    s2s_status st = m ? load_from(m, f, path) : S2S_ERR_NOMEM;
    s2s_st_close(f);
    if (st != S2S_OK) {
        s2s_model_free(m);
        return st;
    }
    *out = m;
    return S2S_OK;
}

// ---- queries ----

const s2s_config *s2s_model_get_config(const s2s_model *m) { return &m->cfg; }
const s2s_vocab *s2s_model_src_vocab(const s2s_model *m) { return m->src_vocab; }
const s2s_vocab *s2s_model_tgt_vocab(const s2s_model *m) { return m->tgt_vocab; }
int s2s_model_tensor_count(const s2s_model *m) { return m->n_tensors; }

bool s2s_model_head(const s2s_model *m, s2s_head_role role, int *layer, int *head) {
    if (role < 0 || role >= S2S_HEAD_ROLE_COUNT) return false;
    *layer = m->heads[role].layer;
    *head = m->heads[role].head;
    return m->heads[role].set;
}

s2s_status s2s_model_set_head(s2s_model *m, s2s_head_role role, int layer, int head) {
    if (role < 0 || role >= S2S_HEAD_ROLE_COUNT)
        return s2s_fail(S2S_ERR_INVALID, "head role %d is not a role", (int)role);
    int sub;
    const s2s_stack *st = s2s_arch_map_stack(&m->arch, s2s_roles[role].stack, &sub);
    if (layer < -1 || layer >= st->layers || head < -1 || head >= m->cfg.model.heads)
        return s2s_fail(S2S_ERR_INVALID, "%s layer %d / head %d out of range (%d %s layers, %d "
                        "heads)", s2s_roles[role].name, layer, head, st->layers, st->name,
                        m->cfg.model.heads);
    m->heads[role] = (struct s2s_role_head){.set = true, .layer = layer, .head = head};
    return S2S_OK;
}

float s2s_model_alignment_share(const s2s_model *m) { return m->align_share; }

s2s_status s2s_model_set_alignment_share(s2s_model *m, float share) {
    if (!(share > 0.0f && share <= 1.0f))
        return s2s_fail(S2S_ERR_INVALID, "alignment share %g is not in (0, 1]", (double)share);
    m->align_share = share;
    return S2S_OK;
}

size_t s2s_model_param_count(const s2s_model *m) { return m->n_params; }

s2s_tensor_info s2s_model_tensor(const s2s_model *m, int i) {
    const s2s_param *p = &m->tensors[i];
    s2s_tensor_info t = {.name = p->name, .ndim = p->ndim, .data = p->data};
    t.shape[0] = p->shape[0];
    t.shape[1] = p->ndim == 2 ? p->shape[1] : 0;
    return t;
}

static int tensor_index(const s2s_model *m, const char *name) {
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return i;
    return -1;
}

s2s_tensor_info s2s_model_find_tensor(const s2s_model *m, const char *name) {
    int i = tensor_index(m, name);
    return i < 0 ? (s2s_tensor_info){0} : s2s_model_tensor(m, i);
}

// ---- writing weights ----

s2s_status s2s_model_set_tensor(s2s_model *m, const char *name, const float *data,
                                size_t count) {
    int i = tensor_index(m, name);
    char q[S2S_QUOTE_SIZE];
    if (i < 0)
        return s2s_fail(S2S_ERR_INVALID, "s2s_model_set_tensor: no tensor '%s'",
                        s2s_quote(q, sizeof q, name, strlen(name)));
    const s2s_param *p = &m->tensors[i];
    size_t n = numel(p);
    if (count != n || (n > 0 && !data))
        return s2s_fail(S2S_ERR_INVALID, "s2s_model_set_tensor: '%s' takes %zu values, not %zu",
                        p->name, n, data ? count : 0);
    if (pthread_rwlock_trywrlock(&m->use) != 0)
        return s2s_fail(S2S_ERR_BUSY,
                        "s2s_model_set_tensor: '%s' not written: the model is being decoded "
                        "(write it once s2s_translate and s2s_score have returned)",
                        p->name);
    memcpy(p->data, data, n * sizeof(float));
    s2s_model_touch(m);
    pthread_rwlock_unlock(&m->use);
    return S2S_OK;
}

// ---- compute type ----

s2s_compute_type s2s_compute_type_resolve(s2s_compute_type t) {
    // bf16 first: on an AVX-512 BF16 + VNNI EPYC it was at least as fast
    // as fp32 at decoding's one-row shapes, where int8 lost (quantising
    // the activations and dequantising the sums cost as much as a one-row
    // product), and level with int8 from 32 rows on (docs/benchmarks.md).
    if (t != S2S_COMPUTE_AUTO) return t;
    if (s2s_cpu_has(S2S_COMPUTE_BF16)) return S2S_COMPUTE_BF16;
    if (s2s_cpu_has(S2S_COMPUTE_INT8)) return S2S_COMPUTE_INT8;
    return S2S_COMPUTE_FP32;
}

s2s_compute_type s2s_model_compute_type(const s2s_model *m) { return m->compute; }

s2s_status s2s_model_set_compute_type(s2s_model *m, s2s_compute_type t) {
    if ((unsigned)t >= S2S_COMPUTE_COUNT)
        return s2s_fail(S2S_ERR_INVALID, "s2s_model_set_compute_type: no compute type %d", (int)t);
    t = s2s_compute_type_resolve(t);
    if (t == m->compute) return S2S_OK;
    if (pthread_rwlock_trywrlock(&m->use) != 0)
        return s2s_fail(S2S_ERR_BUSY, "s2s_model_set_compute_type: the model is being decoded "
                                      "(set it once s2s_translate and s2s_score have returned)");
    m->compute = t;  // the decoding copy is made again on next use
    pthread_rwlock_unlock(&m->use);
    return S2S_OK;
}

s2s_status s2s_model_acquire(const s2s_model *m) {
    // Held under const, as the decoding copy is made under const.
    if (pthread_rwlock_rdlock(&((s2s_model *)m)->use) != 0)
        return s2s_fail(S2S_ERR_BUSY, "too many decodes at once on one model");
    return S2S_OK;
}

void s2s_model_release(const s2s_model *m) { pthread_rwlock_unlock(&((s2s_model *)m)->use); }
