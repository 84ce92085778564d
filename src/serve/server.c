// s2s_server: the JSON API of `s2s serve` (docs/serve.md) over the worker
// pool. A request is parsed, checked and tokenized on the caller's thread;
// the pool decodes it (batched with others); the reply is built here too.
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/map_json.h"
#include "tools/viewer.h"
#include "core/error.h"
#include "core/strbuf.h"
#include "s2s/s2s.h"
#include "serve/server.h"
#include "serve/pool.h"
#include "align/align.h"
#include "config/command.h"


typedef struct served_model {
    s2s_model *m;
    char *name;  // the file's stem
    char *path;
} served_model;

struct s2s_server {
    s2s_server_params p;
    served_model *models;
    const s2s_model **model_ptrs;
    int n_models;
    s2s_pool *pool;
    char *page;  // GET /
};

s2s_server_params s2s_server_default_params(void) {
    return (s2s_server_params){.workers = 2, .queue = 256, .max_batch = 32, .max_texts = 64,
                               .timeout = 30.0};
}

const char *s2s_server_page(const s2s_server *s) { return s->page; }

// "models/zh-en.safetensors" -> "zh-en"; NULL on out of memory.
static char *stem(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    char *s = malloc(n + 1);
    if (s) memcpy(s, base, n), s[n] = '\0';
    return s;
}

s2s_status s2s_server_new(s2s_server **out, const char *const *model_paths, int n_models,
                          const s2s_server_params *p) {
    *out = NULL;
    if (n_models < 1 || p->workers < 1 || p->queue < 1 || p->max_batch < 1 || p->max_texts < 1 ||
        !(p->timeout > 0))
        return s2s_fail(S2S_ERR_INVALID, "server: at least one model, and workers, queue, "
                                         "max_batch, max_texts and timeout above 0");
    s2s_server *s = calloc(1, sizeof *s);
    if (!s || !(s->models = calloc((size_t)n_models, sizeof *s->models)) ||
        !(s->model_ptrs = calloc((size_t)n_models, sizeof *s->model_ptrs))) {
        s2s_server_free(s);
        return s2s_fail(S2S_ERR_NOMEM, "out of memory for the server");
    }
    s->p = *p;
    s2s_status st = S2S_OK;
    for (; s->n_models < n_models && st == S2S_OK; s->n_models++) {
        served_model *sm = &s->models[s->n_models];
        sm->name = stem(model_paths[s->n_models]);
        sm->path = strdup(model_paths[s->n_models]);
        if (!sm->name || !sm->path) st = s2s_fail(S2S_ERR_NOMEM, "out of memory for the server");
        if (st == S2S_OK) st = s2s_model_load(&sm->m, sm->path);
        for (int k = 0; k < s->n_models && st == S2S_OK; k++)
            if (!strcmp(s->models[k].name, sm->name))
                st = s2s_fail(S2S_ERR_INVALID, "%s and %s: two models named '%s'", s->models[k].path,
                              sm->path, sm->name);
        s->model_ptrs[s->n_models] = sm->m;
    }
    if (st == S2S_OK && !(s->page = s2s_align_live_page()))
        st = s2s_fail(S2S_ERR_NOMEM, "out of memory for the server");
    if (st == S2S_OK)
        st = s2s_pool_new(&s->pool, s->model_ptrs, s->n_models, p->workers, p->queue, p->max_batch);
    if (st != S2S_OK) {
        s2s_server_free(s);
        return st;
    }
    *out = s;
    return S2S_OK;
}

void s2s_server_free(s2s_server *s) {
    if (!s) return;
    s2s_pool_free(s->pool);
    for (int k = 0; s->models && k < s->n_models; k++) {
        s2s_model_free(s->models[k].m);
        free(s->models[k].name);
        free(s->models[k].path);
    }
    free(s->models);
    free(s->model_ptrs);
    free(s->page);
    free(s);
}

// ---- replies ----

void s2s_server_reply_free(s2s_server_reply *r) {
    free(r->body);
    r->body = NULL;
}

// Sets r to status and the JSON of o (released).
static void reply_json(s2s_server_reply *r, int status, json_t *o) {
    r->status = status;
    r->body = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(7)) : NULL;
    json_decref(o);
    if (!r->body) {  // out of memory: a reply that needs none
        r->status = 500;
        r->body = strdup("{\"error\":\"internal\",\"message\":\"out of memory\"}");
    }
}

void s2s_server_error_reply(s2s_server_reply *r, int status, const char *code,
                            const char *message) {
    *r = (s2s_server_reply){0};
    json_t *o = json_object();
    json_object_set_new(o, "error", json_string(code));
    // A message that quotes the request (jansson's parse errors do, cut at
    // a byte count, maybe inside a character) is made valid UTF-8 first:
    // JSON strings must be, and the reply always has its message.
    json_t *m = json_string(message);
    if (!m) {
        char q[2048];
        m = json_string(s2s_quote(q, sizeof q, message, strlen(message)));
    }
    json_object_set_new(o, "message", m);
    reply_json(r, status, o);
    if (status == 503) r->retry_after = 1;
}

static void bad_request(s2s_server_reply *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void bad_request(s2s_server_reply *r, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    s2s_server_error_reply(r, 400, "bad_request", msg);
}

// {"layer": .., "head": ..}: a calibrated plane of a model.
static json_t *json_head(int layer, int head) {
    json_t *c = json_object();
    json_object_set_new(c, "layer", s2s_json_sel(layer));
    json_object_set_new(c, "head", s2s_json_sel(head));
    return c;
}

// ---- GET /healthz and /v1/models ----

static void healthz(s2s_server *s, s2s_server_reply *r) {
    s2s_pool_stats st = s2s_pool_get_stats(s->pool);
    json_t *o = json_object();
    json_object_set_new(o, "status", json_string("ok"));
    json_object_set_new(o, "models", json_integer(s->n_models));
    json_object_set_new(o, "queued", json_integer(st.queued));
    json_object_set_new(o, "requests_decoded", json_integer(st.jobs));
    json_object_set_new(o, "batches", json_integer(st.batches));
    json_object_set_new(o, "sentences", json_integer(st.sentences));
    reply_json(r, 200, o);
}

// The `key: value` lines of a YAML section as a JSON object (scalars as
// JSON where they read as JSON, else strings), a nested table (`key:`
// alone, its keys two spaces further in) as a nested object: the config as
// the model file stores it, whatever keys the schema has.
static json_t *yaml_section(const char *yaml, const char *section) {
    json_t *o = json_object(), *nested = NULL;
    size_t sl = strlen(section);
    bool in = false;
    for (const char *line = yaml; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (n && line[0] != ' ') {
            in = n == sl + 1 && !strncmp(line, section, sl) && line[sl] == ':';
        } else if (in && n > 2 && line[0] == ' ') {
            char buf[512];
            snprintf(buf, sizeof buf, "%.*s", (int)n, line);
            char *hash = strstr(buf, "  #");
            if (hash) *hash = '\0';
            char *k = buf;
            while (*k == ' ') k++;
            bool inner = k - buf > 2;
            size_t kl = strlen(k);
            if (!inner && kl > 1 && k[kl - 1] == ':') {  // a table's name
                k[kl - 1] = '\0';
                nested = json_object();
                json_object_set_new(o, k, nested);
            }
            char *colon = strstr(k, ": ");
            if (colon && (!inner || nested)) {
                *colon = '\0';
                json_t *v = json_loads(colon + 2, JSON_DECODE_ANY, NULL);
                json_object_set_new(inner ? nested : o, k, v ? v : json_string(colon + 2));
            }
            if (!inner && colon) nested = NULL;
        }
        line = end ? end + 1 : NULL;
    }
    return o;
}

static void models(s2s_server *s, s2s_server_reply *r) {
    json_t *list = json_array();
    for (int k = 0; k < s->n_models; k++) {
        const served_model *sm = &s->models[k];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(sm->name));
        const s2s_vocab *sv = s2s_model_src_vocab(sm->m), *tv = s2s_model_tgt_vocab(sm->m);
        json_object_set_new(o, "source_language", json_string(s2s_lang_name(s2s_vocab_lang(sv))));
        json_object_set_new(o, "target_language", json_string(s2s_lang_name(s2s_vocab_lang(tv))));
        json_object_set_new(o, "source_vocab_size", json_integer(s2s_vocab_size(sv)));
        json_object_set_new(o, "target_vocab_size", json_integer(s2s_vocab_size(tv)));
        int l, h;
        bool set = s2s_model_head(sm->m, S2S_HEAD_ALIGN, &l, &h);
        json_object_set_new(o, "alignment_head", set ? json_head(l, h) : json_null());
        json_object_set_new(o, "alignment_share", json_real(s2s_model_alignment_share(sm->m)));
        set = s2s_model_head(sm->m, S2S_HEAD_COREF, &l, &h);
        json_object_set_new(o, "coreference_head", set ? json_head(l, h) : json_null());
        char *yaml = s2s_config_model_to_yaml(s2s_model_get_config(sm->m));
        json_t *cfg = json_object();
        json_object_set_new(cfg, "model", yaml_section(yaml ? yaml : "", "model"));
        json_object_set_new(cfg, "decode", yaml_section(yaml ? yaml : "", "decode"));
        json_object_set_new(o, "config", cfg);
        free(yaml);
        json_array_append_new(list, o);
    }
    json_t *o = json_object();
    json_object_set_new(o, "models", list);
    reply_json(r, 200, o);
}

// ---- reading a request ----

// Keys of a request body that are not decoding options.
static const char *const TRANSLATE_KEYS[] = {"model", "text", "texts", "attention", NULL};
static const char *const ALIGN_KEYS[] = {"model", "source", "target", "gold", "attention", NULL};

static bool in_list(const char *const *list, const char *k) {
    for (; *list; list++)
        if (!strcmp(*list, k)) return true;
    return false;
}

// The parsed body; false after a 400.
static json_t *parse_body(const char *body, size_t len, s2s_server_reply *r) {
    json_error_t e;
    json_t *o = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &e);
    if (!o) {
        bad_request(r, "malformed JSON at line %d, column %d: %s", e.line, e.column, e.text);
        return NULL;
    }
    if (!json_is_object(o)) {
        json_decref(o);
        bad_request(r, "the body must be a JSON object");
        return NULL;
    }
    return o;
}

// The model the request names ("model"; may be left out when one is
// served). -1 after a 400 or 404.
static int find_model(s2s_server *s, json_t *o, s2s_server_reply *r) {
    json_t *v = json_object_get(o, "model");
    if (!v && s->n_models == 1) return 0;
    if (!json_is_string(v)) {
        bad_request(r, "\"model\" must be a string naming a served model");
        return -1;
    }
    for (int k = 0; k < s->n_models; k++)
        if (!strcmp(s->models[k].name, json_string_value(v))) return k;
    s2s_buf b = {0};
    s2s_buf_printf(&b, "no model named '%s'; served:", json_string_value(v));
    for (int k = 0; k < s->n_models; k++) s2s_buf_printf(&b, " %s", s->models[k].name);
    s2s_server_error_reply(r, 404, "unknown_model", b.s ? b.s : "no such model");
    free(b.s);
    return -1;
}

// The decoding options: every key not in `own` is a `decode:` key of the
// config schema, set over the model's decode section and checked as a
// config file's would be. Sets *key to the options as canonical JSON (the
// batching key). false after a 400.
static bool decode_options(const s2s_model *m, json_t *o, const char *const *own,
                           s2s_decode_params *p, char **key, s2s_server_reply *r) {
    s2s_config cfg = *s2s_model_get_config(m);
    json_t *opts = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        if (in_list(own, k)) continue;
        char val[128];
        if (json_is_integer(v)) snprintf(val, sizeof val, "%lld", (long long)json_integer_value(v));
        else if (json_is_real(v)) snprintf(val, sizeof val, "%.9g", json_real_value(v));
        else if (json_is_boolean(v)) snprintf(val, sizeof val, "%s", json_is_true(v) ? "true" : "false");
        else if (json_is_string(v) && json_string_length(v) < sizeof val &&
                 !strpbrk(json_string_value(v), "\n\r\t"))
            snprintf(val, sizeof val, "%s", json_string_value(v));
        else {
            bad_request(r, "\"%s\": a decoding option takes a number, a boolean or a short string", k);
            json_decref(opts);
            return false;
        }
        char assign[512];
        snprintf(assign, sizeof assign, "decode.%s=%s", k, val);
        if (strlen(k) > 200 || s2s_config_set(&cfg, assign) != S2S_OK) {
            // The schema names the override as "--set decode.k=v: ..."; say the key.
            const char *msg = strlen(k) > 200 ? "option name too long" : s2s_last_error();
            const char *colon = strncmp(msg, "--set ", 6) == 0 ? strstr(msg, ": ") : NULL;
            bad_request(r, "\"%s\": %s", strlen(k) > 200 ? "?" : k, colon ? colon + 2 : msg);
            json_decref(opts);
            return false;
        }
        json_object_set(opts, k, v);
    }
    if (s2s_config_validate(&cfg, "the request") != S2S_OK) {
        bad_request(r, "%s", s2s_last_error());
        json_decref(opts);
        return false;
    }
    *p = s2s_decode_params_from_config(&cfg);
    // The key holds every option that changes a result: the maps asked
    // for too, else a request with them would get those of its batch's
    // first request (issue 27).
    bool maps = json_is_true(json_object_get(o, "attention"));
    json_object_set_new(opts, "attention", json_boolean(maps));
    *key = json_dumps(opts, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(opts);
    return true;
}

// Tokenizes text into t; false after a 400 (too many tokens).
static bool tokenize(const s2s_model *m, const s2s_vocab *v, const char *what, const char *text,
                     s2s_tokens *t, s2s_server_reply *r) {
    s2s_status st = s2s_tokenize(v, text, t);
    if (st != S2S_OK) {
        bad_request(r, "%s: %s", what, s2s_last_error());
        return false;
    }
    int max = s2s_model_get_config(m)->model.max_len - 1;
    if (t->n > max) {
        bad_request(r, "%s: %d tokens; the model takes at most %d", what, t->n, max);
        return false;
    }
    return true;
}

// Runs j through the pool. false after a 503 or 500 (j is gone then).
static bool run_job(s2s_server *s, s2s_job *j, s2s_server_reply *r) {
    s2s_pool_result res = s2s_pool_run(s->pool, j, s->p.timeout);
    if (res == S2S_POOL_FULL) {
        s2s_job_free(j);
        s2s_server_error_reply(r, 503, "overloaded", "the queue is full; try again shortly");
        return false;
    }
    if (res == S2S_POOL_TIMEOUT) {
        char msg[96];
        snprintf(msg, sizeof msg, "not answered within %g s", s->p.timeout);
        s2s_server_error_reply(r, 503, "timeout", msg);
        return false;
    }
    if (j->status == S2S_ERR_NOMEM) {
        // The pool decodes a job that fails in a batch again alone: this
        // request's own size is what did not fit, so the client hears which
        // of its options to lower (issue 27), not a 500.
        char msg[320];
        snprintf(msg, sizeof msg, "this request needs more memory than the server has "
                 "(%d text%s, beam_size %d, n_best %d, max_len %d, max_len_ratio %g); "
                 "ask for fewer texts or a smaller beam_size, n_best or max_len",
                 j->n, j->n == 1 ? "" : "s", j->p.decode.beam_size, j->p.decode.n_best,
                 j->p.decode.max_len, (double)j->p.decode.max_len_ratio);
        s2s_server_error_reply(r, 413, "too_large", msg);
        s2s_job_free(j);
        return false;
    }
    if (j->status != S2S_OK) {
        s2s_server_error_reply(r, j->status == S2S_ERR_INVALID ? 400 : 500,
                               j->status == S2S_ERR_INVALID ? "bad_request" : "internal", j->error);
        s2s_job_free(j);
        return false;
    }
    return true;
}

// ---- attention maps, in the JSON of `s2s align --format json` ----

static void add_maps(json_t *maps, const s2s_model *model, s2s_attn_map map, const char *type,
                     const float *w, int layers, int heads, int rows, int cols,
                     const char *const *rl, const char *const *cl) {
    for (int l = 0; l < layers; l++)
        for (int h = 0; h < heads; h++) {
            json_t *m = s2s_map_json(type, l, h, rl, rows, cl, cols,
                                     w + ((size_t)l * heads + h) * rows * cols);
            s2s_head_pattern p = s2s_model_head_pattern(model, map, l, h);
            json_object_set_new(m, "pattern", s2s_pattern_json(&p));
            json_array_append_new(maps, m);
        }
}

// Labels of h's axes: source tokens and </s>; targets (pieces, or spelled
// by tv) and </s> when produced; decoder inputs <s> and targets shifted.
typedef struct labels {
    const char **src, **tgt, **dec_in;
} labels;

static bool make_labels(labels *lb, const s2s_tokens *src, const s2s_tokens *tgt,
                        const s2s_vocab *tv, const s2s_hypothesis *h) {
    lb->src = malloc(((size_t)src->n + 1) * sizeof *lb->src);
    lb->tgt = malloc(((size_t)h->n_out + 1) * sizeof *lb->tgt);
    lb->dec_in = malloc(((size_t)h->n_out + 1) * sizeof *lb->dec_in);
    if (!lb->src || !lb->tgt || !lb->dec_in) return false;
    for (int i = 0; i < src->n; i++) lb->src[i] = src->pieces[i];
    lb->src[src->n] = s2s_special_token(S2S_EOS);
    for (int i = 0; i < h->n_out; i++) {
        lb->tgt[i] = i >= h->n ? s2s_special_token(S2S_EOS)
                     : tgt ? tgt->pieces[i] : s2s_vocab_token(tv, h->ids[i]);
        lb->dec_in[i] = i == 0 ? s2s_special_token(S2S_BOS) : lb->tgt[i - 1];
    }
    return true;
}

static void free_labels(labels *lb) {
    free(lb->src);
    free(lb->tgt);
    free(lb->dec_in);
}

// Fields of one decoded sentence: tokens, alignment at the model's
// calibrated plane, score, and with `maps` every attention map.
static void sentence_fields(json_t *o, const s2s_model *m, const s2s_tokens *src,
                            const s2s_tokens *tgt, const s2s_hypothesis *h, bool maps,
                            s2s_alignment *align) {
    const s2s_vocab *tv = s2s_model_tgt_vocab(m);
    int al = S2S_ALIGN_AVG, ah = S2S_ALIGN_AVG;
    s2s_model_head(m, S2S_HEAD_ALIGN, &al, &ah);
    labels lb = {0};
    bool ok = make_labels(&lb, src, tgt, tv, h);
    json_object_set_new(o, "source_tokens", s2s_json_strings(lb.src, ok ? src->n : 0));
    json_object_set_new(o, "target_tokens", s2s_json_strings(lb.tgt, ok ? h->n : 0));
    if (h->cross_attn &&
        s2s_hard_align(align, h, al, ah, s2s_model_alignment_share(m), /*no_eos=*/false) == S2S_OK) {
        json_object_set_new(o, "alignment", s2s_json_links(align));
        json_object_set_new(o, "alignment_layer", s2s_json_sel(al));
        json_object_set_new(o, "alignment_head", s2s_json_sel(ah));
    }
    json_object_set_new(o, "score", json_real(h->score));
    json_object_set_new(o, "logprob", json_real(h->logprob));
    if (maps && ok) {
        json_t *ms = json_array();
        if (h->cross_attn)
            add_maps(ms, m, S2S_ATTN_MAP_CROSS, "cross", h->cross_attn, h->layers, h->heads,
                     h->n_out, h->n_src, lb.tgt, lb.src);
        if (h->self_attn)
            add_maps(ms, m, S2S_ATTN_MAP_SELF, "self", h->self_attn, h->layers, h->heads,
                     h->n_out, h->n_out, lb.dec_in, lb.dec_in);
        if (h->enc_attn)
            add_maps(ms, m, S2S_ATTN_MAP_ENC, "enc", h->enc_attn, h->enc_layers, h->heads,
                     h->n_src, h->n_src, lb.src, lb.src);
        json_object_set_new(o, "maps", ms);
    }
    free_labels(&lb);
}

// A job of n texts for model mi with the request's decoding options p
// (and their batching key, owned by the job from now on); NULL after a 500
// reply when memory runs out.
static s2s_job *new_job(int mi, int n, bool forced, s2s_decode_params p, char *key,
                        s2s_server_reply *r) {
    s2s_job *j = s2s_job_new(n, forced);
    if (!j) {
        free(key);
        s2s_server_error_reply(r, 500, "internal", "out of memory");
        return NULL;
    }
    j->p = p;
    j->key = key;
    j->model = mi;
    j->sentences = n;
    return j;
}

// ---- POST /v1/translate ----

// Splits and tokenizes one text into l (s2s_line_prepare, as `s2s
// translate` does) and adds its sentences to *sentences; false after a
// 400 (a sentence longer than the model takes).
static bool prepare_line(const s2s_model *m, const char *what, const char *text, s2s_line *l,
                         int *sentences, s2s_server_reply *r) {
    if (s2s_line_prepare(m, text, /*split=*/true, l) != S2S_OK) {
        bad_request(r, "%s: %s", what, s2s_last_error());
        return false;
    }
    int max = s2s_model_get_config(m)->model.max_len - 1;
    for (int i = 0; i < l->n_sentences; i++) {
        int n = l->sentences[i].src.n;
        if (n > max && l->n_sentences == 1) {
            bad_request(r, "%s: %d tokens; the model takes at most %d", what, n, max);
            return false;
        }
        if (n > max) {
            bad_request(r, "%s, sentence %d of %d: %d tokens; the model takes at most %d", what,
                        i + 1, l->n_sentences, n, max);
            return false;
        }
        *sentences += n > 0;
    }
    return true;
}

// Pharaoh text of hypothesis j of line l over the line's tokens: each
// sentence's links at the model's calibrated plane, shifted past the
// sentences before it. a is scratch.
static json_t *line_links(const s2s_model *m, const s2s_line *l, int j, s2s_alignment *a) {
    int al = S2S_ALIGN_AVG, ah = S2S_ALIGN_AVG, ds = 0, dt = 0;
    s2s_model_head(m, S2S_HEAD_ALIGN, &al, &ah);
    s2s_buf b = {0};
    s2s_buf_puts(&b, "");
    for (int i = 0; i < l->n_sentences; i++) {
        const s2s_line_sentence *s = &l->sentences[i];
        if (s->n_hyps == 0) continue;
        if (s->hyps[j].cross_attn &&
            s2s_hard_align(a, &s->hyps[j], al, ah, s2s_model_alignment_share(m), false) == S2S_OK)
            for (int k = 0; k < a->n; k++)
                s2s_buf_printf(&b, "%s%d-%d", b.len ? " " : "", a->links[k].src + ds, a->links[k].tgt + dt);
        ds += s->src.n;
        dt += s->hyps[j].n;
    }
    json_t *t = json_string(b.s ? b.s : "");
    free(b.s);
    return t;
}

static json_t *translation_tokens(const s2s_translation *t) {
    return s2s_json_strings((const char *const *)t->tokens, t->n);
}

// Hypothesis j of line l: its sentences' j-th joined, the alignment over
// the line's tokens, the sums of their scores.
static json_t *line_hypothesis(const s2s_model *m, const s2s_line *l, int j, s2s_alignment *a) {
    const s2s_translation *t = &l->out[j];
    int al = S2S_ALIGN_AVG, ah = S2S_ALIGN_AVG;
    s2s_model_head(m, S2S_HEAD_ALIGN, &al, &ah);
    json_t *o = json_object();
    json_object_set_new(o, "translation", json_string(t->text));
    json_object_set_new(o, "target_tokens", translation_tokens(t));
    json_object_set_new(o, "alignment", line_links(m, l, j, a));
    json_object_set_new(o, "alignment_layer", s2s_json_sel(al));
    json_object_set_new(o, "alignment_head", s2s_json_sel(ah));
    json_object_set_new(o, "score", json_real(t->score));
    json_object_set_new(o, "logprob", json_real(t->logprob));
    return o;
}

// One sentence of a line: its source as sent, tokens, best translation
// with its alignment, score and (with maps) attention maps, and its own
// n-best list.
static json_t *sentence_json(const s2s_model *m, const char *text, const s2s_line_sentence *s,
                             bool maps, s2s_alignment *a) {
    json_t *o = json_object(), *hyps = json_array();
    json_object_set_new(o, "source", json_stringn(text + s->span.start, s->span.end - s->span.start));
    for (int k = 0; k < s->n_hyps; k++) {
        json_t *hj = json_object();
        json_object_set_new(hj, "translation", json_string(s->out[k].text));
        sentence_fields(hj, m, &s->src, NULL, &s->hyps[k], k == 0 && maps, a);
        // each replaced <unk> as the source word it came from
        json_object_set_new(hj, "target_tokens", translation_tokens(&s->out[k]));
        json_object_del(hj, "source_tokens");
        if (k == 0) {  // the best one's fields on the sentence itself
            json_object_update(o, hj);
            json_object_del(hj, "maps");
        }
        json_array_append_new(hyps, hj);
    }
    if (s->n_hyps == 0) {  // nothing to translate
        json_object_set_new(o, "translation", json_string(""));
        json_object_set_new(o, "target_tokens", json_array());
        json_object_set_new(o, "alignment", json_string(""));
    }
    json_object_set_new(o, "source_tokens", s2s_json_strings((const char *const *)s->src.pieces, s->src.n));
    json_object_set_new(o, "hypotheses", hyps);
    return o;
}

// The result of one text: the line's translation (its sentences' joined),
// tokens, alignment and scores, its n-best list (the j-th joins the
// sentences' j-th, as `s2s translate --n-best` does), its sentences, and
// the library's language warning (null when the text looks like the
// model's source language).
static json_t *line_json(const s2s_model *m, json_t *text, const s2s_line *l, bool maps,
                         s2s_alignment *a) {
    json_t *res = json_object(), *hyps = json_array(), *sents = json_array(), *src = json_array();
    json_object_set_new(res, "source", json_copy(text));
    for (int j = 0; j < l->n_hyps; j++) json_array_append_new(hyps, line_hypothesis(m, l, j, a));
    if (l->n_hyps > 0) {
        json_object_update(res, json_array_get(hyps, 0));
    } else {  // nothing to translate
        json_object_set_new(res, "translation", json_string(""));
        json_object_set_new(res, "target_tokens", json_array());
        json_object_set_new(res, "alignment", json_string(""));
    }
    for (int i = 0; i < l->n_sentences; i++) {
        const s2s_tokens *t = &l->sentences[i].src;
        for (int x = 0; x < t->n; x++) json_array_append_new(src, json_string(t->pieces[x]));
        json_array_append_new(sents, sentence_json(m, json_string_value(text), &l->sentences[i], maps, a));
    }
    json_object_set_new(res, "source_tokens", src);
    json_object_set_new(res, "hypotheses", hyps);
    json_object_set_new(res, "sentences", sents);
    // input in the model's other language: said once, as `s2s translate` says it
    json_object_set_new(res, "language_warning",
                        l->language_warning ? json_string(l->language_warning) : json_null());
    return res;
}

static void translate(s2s_server *s, json_t *o, s2s_server_reply *r) {
    int mi = find_model(s, o, r);
    if (mi < 0) return;
    const s2s_model *m = s->models[mi].m;
    json_t *text = json_object_get(o, "text"), *texts = json_object_get(o, "texts");
    json_t *att = json_object_get(o, "attention");
    if (!!text == !!texts) return bad_request(r, "give \"text\" (a string) or \"texts\" (an array of strings)");
    if (att && !json_is_boolean(att)) return bad_request(r, "\"attention\" must be true or false");
    if (text && !json_is_string(text)) return bad_request(r, "\"text\" must be a string");
    if (texts && (!json_is_array(texts) || json_array_size(texts) < 1 ||
                  json_array_size(texts) > (size_t)s->p.max_texts))
        return bad_request(r, "\"texts\" must be an array of 1 to %d strings", s->p.max_texts);
    int n = texts ? (int)json_array_size(texts) : 1;
    for (int i = 0; i < n; i++)
        if (!json_is_string(texts ? json_array_get(texts, (size_t)i) : text))
            return bad_request(r, "\"texts\"[%d] must be a string", i);
    s2s_decode_params p;
    char *key = NULL;
    if (!decode_options(m, o, TRANSLATE_KEYS, &p, &key, r)) return;
    p.want_attention = true;  // the alignment comes from it
    p.want_self_attention = json_is_true(att);
    s2s_job *j = new_job(mi, n, /*forced=*/false, p, key, r);
    if (!j) return;
    j->sentences = 0;
    for (int i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, texts ? "texts[%d]" : "text", i);
        if (!prepare_line(m, what, json_string_value(texts ? json_array_get(texts, (size_t)i) : text),
                          &j->lines[i], &j->sentences, r)) {
            s2s_job_free(j);
            return;
        }
    }
    if (!run_job(s, j, r)) return;
    json_t *results = json_array();
    s2s_alignment a = {0};
    for (int i = 0; i < n; i++)
        json_array_append_new(results, line_json(m, texts ? json_array_get(texts, (size_t)i) : text,
                                                 &j->lines[i], p.want_self_attention, &a));
    s2s_alignment_free(&a);
    json_t *out = json_object();
    json_object_set_new(out, "model", json_string(s->models[mi].name));
    json_object_set_new(out, "results", results);
    s2s_job_free(j);
    reply_json(r, 200, out);
}

// ---- POST /v1/align ----

static void align(s2s_server *s, json_t *o, s2s_server_reply *r) {
    int mi = find_model(s, o, r);
    if (mi < 0) return;
    const s2s_model *m = s->models[mi].m;
    json_t *src = json_object_get(o, "source"), *tgt = json_object_get(o, "target");
    json_t *gold = json_object_get(o, "gold"), *att = json_object_get(o, "attention");
    if (!json_is_string(src) || !json_is_string(tgt) || !json_string_length(src) ||
        !json_string_length(tgt))
        return bad_request(r, "\"source\" and \"target\" must be non-empty strings");
    if (gold && !json_is_string(gold) && !json_is_null(gold))
        return bad_request(r, "\"gold\" must be Pharaoh text such as \"0-0 1p2\"");
    if (att && !json_is_boolean(att)) return bad_request(r, "\"attention\" must be true or false");
    s2s_decode_params p;
    char *key = NULL;
    if (!decode_options(m, o, ALIGN_KEYS, &p, &key, r)) return;
    p.decode.n_best = p.decode.beam_size = 1;  // scoring: one hypothesis per sentence
    p.want_attention = true;
    p.want_self_attention = json_is_true(att);
    s2s_job *j = new_job(mi, 1, /*forced=*/true, p, key, r);
    if (!j) return;
    s2s_alignment g = {0}, a = {0};
    bool has_gold = json_is_string(gold) && json_string_length(gold) > 0;
    if (!tokenize(m, s2s_model_src_vocab(m), "source", json_string_value(src), &j->src[0], r) ||
        !tokenize(m, s2s_model_tgt_vocab(m), "target", json_string_value(tgt), &j->tgt[0], r)) {
        s2s_job_free(j);
        return;
    }
    if (has_gold && (s2s_alignment_parse(&g, json_string_value(gold), "gold") != S2S_OK ||
                     s2s_alignment_check(&g, j->src[0].n, j->tgt[0].n, "gold") != S2S_OK)) {
        bad_request(r, "%s", s2s_last_error());
        s2s_alignment_free(&g);
        s2s_job_free(j);
        return;
    }
    if (!run_job(s, j, r)) {
        s2s_alignment_free(&g);
        return;
    }
    json_t *out = json_object();
    json_object_set_new(out, "model", json_string(s->models[mi].name));
    json_object_set_new(out, "source", json_copy(src));
    json_object_set_new(out, "target", json_copy(tgt));
    sentence_fields(out, m, &j->src[0], &j->tgt[0], &j->out[0], p.want_self_attention, &a);
    if (has_gold) {
        s2s_aer_counts c = {0};
        s2s_aer_add(&c, &a, &g);
        json_object_set_new(out, "gold", s2s_json_links(&g));
        json_object_set_new(out, "aer", json_real(s2s_aer(&c)));
        json_object_set_new(out, "precision", json_real(s2s_aer_precision(&c)));
        json_object_set_new(out, "recall", json_real(s2s_aer_recall(&c)));
    }
    s2s_alignment_free(&g);
    s2s_alignment_free(&a);
    s2s_job_free(j);
    reply_json(r, 200, out);
}

// ---- routing ----

void s2s_server_handle(s2s_server *s, const char *method, const char *path, const char *body,
                       size_t len, s2s_server_reply *r) {
    *r = (s2s_server_reply){0};
    static const struct {
        const char *path, *method;
    } routes[] = {{"/healthz", "GET"}, {"/v1/models", "GET"}, {"/v1/translate", "POST"},
                  {"/v1/align", "POST"}};
    int k = 0, n = (int)(sizeof routes / sizeof *routes);
    while (k < n && strcmp(routes[k].path, path)) k++;
    if (k == n) return s2s_server_error_reply(r, 404, "not_found", "no such path");
    if (strcmp(routes[k].method, method) && !(k < 2 && !strcmp(method, "HEAD"))) {
        char msg[64];
        snprintf(msg, sizeof msg, "%s takes %s", path, routes[k].method);
        s2s_server_error_reply(r, 405, "method_not_allowed", msg);
        r->allow = routes[k].method;
        return;
    }
    if (k == 0) return healthz(s, r);
    if (k == 1) return models(s, r);
    json_t *o = parse_body(body, len, r);
    if (!o) return;
    if (k == 2) translate(s, o, r);
    else align(s, o, r);
    json_decref(o);
}
