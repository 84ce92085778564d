// s2s_server without HTTP: routing and status codes, translations against
// s2s_translate called directly, the same answers under concurrent
// callers, and the checks of s2s_server_new.
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/strbuf.h"
#include "decoding/state.h"
#include "s2s/s2s.h"
#include "serve/server.h"

#define ZH_EN S2S_SOURCE_DIR "/models/zh-en.safetensors"

static s2s_server *srv;

static void setup(void) {
    const char *models[] = {ZH_EN};
    s2s_server_params p = s2s_server_default_params();
    p.workers = 1;
    cr_assert_eq(s2s_server_new(&srv, models, 1, &p), S2S_OK, "%s", s2s_last_error());
}

static void teardown(void) { s2s_server_free(srv); }

TestSuite(serve, .init = setup, .fini = teardown);

// POSTs body to path; returns the parsed reply (caller decrefs) and its status.
static json_t *post(const char *path, const char *body, int *status) {
    s2s_server_reply r;
    s2s_server_handle(srv, "POST", path, body, strlen(body), &r);
    *status = r.status;
    json_t *j = json_loads(r.body, 0, NULL);
    cr_assert(j, "reply is JSON: %s", r.body);
    s2s_server_reply_free(&r);
    return j;
}

Test(serve, routes_and_methods) {
    s2s_server_reply r;
    s2s_server_handle(srv, "GET", "/healthz", NULL, 0, &r);
    cr_expect_eq(r.status, 200);
    s2s_server_reply_free(&r);
    s2s_server_handle(srv, "GET", "/v1/translate", NULL, 0, &r);
    cr_expect_eq(r.status, 405);
    cr_expect_str_eq(r.allow, "POST");
    s2s_server_reply_free(&r);
    s2s_server_handle(srv, "GET", "/nope", NULL, 0, &r);
    cr_expect_eq(r.status, 404);
    s2s_server_reply_free(&r);
    int st;
    json_decref(post("/v1/translate", "{\"model\": \"en-zh\", \"text\": \"x\"}", &st));
    cr_expect_eq(st, 404);
    json_decref(post("/v1/translate", "{\"text\": \"x\", \"beam_size\": -1}", &st));
    cr_expect_eq(st, 400);
    json_decref(post("/v1/translate", "{\"text\": ", &st));
    cr_expect_eq(st, 400);
    cr_expect_not_null(strstr(s2s_server_page(srv), "<!DOCTYPE html>"));
}

// The translation of text by s2s_translate itself, detokenized.
static char *direct(const char *text, int beam) {
    s2s_model *m;
    s2s_state *st;
    cr_assert_eq(s2s_model_load(&m, ZH_EN), S2S_OK);
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    s2s_tokens t = {0};
    cr_assert_eq(s2s_tokenize(s2s_model_src_vocab(m), text, &t), S2S_OK);
    s2s_decode_params p = s2s_decode_default_params(m);
    p.decode.beam_size = beam;
    s2s_hypothesis h;
    const int *src[1] = {t.ids};
    cr_assert_eq(s2s_translate(st, &p, src, &t.n, 1, &h), S2S_OK);
    char *out = s2s_detokenize(s2s_model_tgt_vocab(m), h.ids, h.n);
    s2s_hypothesis_free(&h);
    s2s_tokens_free(&t);
    s2s_state_free(st);
    s2s_model_free(m);
    return out;
}

Test(serve, translate_as_the_library) {
    int st;
    json_t *j = post("/v1/translate", "{\"text\": \"我们明天跳舞，因为我们卖马。\", \"beam_size\": 3}", &st);
    cr_assert_eq(st, 200);
    char *want = direct("我们明天跳舞，因为我们卖马。", 3);
    json_t *res = json_array_get(json_object_get(j, "results"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(res, "translation")), want);
    free(want);
    json_decref(j);
}

// ---- concurrent callers ----

static const char *const SENTENCES[] = {"我爱吃苹果", "它的猫昨天脏，它不聪明。", "玛丽哭，所以她是朋友。",
                                        "安静的牛今天追那只鸟。"};

typedef struct caller {
    int k;
    char *got;
} caller;

static void *call(void *arg) {
    caller *c = arg;
    char body[256];
    snprintf(body, sizeof body, "{\"text\": \"%s\"}", SENTENCES[c->k % 4]);
    s2s_server_reply r;
    s2s_server_handle(srv, "POST", "/v1/translate", body, strlen(body), &r);
    json_t *j = r.status == 200 ? json_loads(r.body, 0, NULL) : NULL;
    json_t *res = json_array_get(json_object_get(j, "results"), 0);
    c->got = strdup(res ? json_string_value(json_object_get(res, "translation")) : "(failed)");
    json_decref(j);
    s2s_server_reply_free(&r);
    return NULL;
}

Test(serve, concurrent_callers_get_their_own_translations) {
    enum { N = 16 };
    pthread_t t[N];
    caller c[N];
    for (int k = 0; k < N; k++) {
        c[k] = (caller){.k = k};
        cr_assert_eq(pthread_create(&t[k], NULL, call, &c[k]), 0);
    }
    for (int k = 0; k < N; k++) pthread_join(t[k], NULL);
    for (int k = 0; k < N; k++) {
        char *want = direct(SENTENCES[k % 4], 1);
        cr_expect_str_eq(c[k].got, want, "caller %d", k);
        free(want);
        free(c[k].got);
    }
}

Test(serve_new, refuses_bad_params_and_twin_names) {
    s2s_server *s = NULL;
    const char *two[] = {ZH_EN, ZH_EN};
    s2s_server_params p = s2s_server_default_params();
    cr_expect_eq(s2s_server_new(&s, two, 2, &p), S2S_ERR_INVALID);
    cr_expect_not_null(strstr(s2s_last_error(), "two models named 'zh-en'"));
    cr_expect_null(s);
    p.workers = 0;
    cr_expect_eq(s2s_server_new(&s, two, 1, &p), S2S_ERR_INVALID);
    p = s2s_server_default_params();
    const char *missing[] = {"/nonexistent/x.safetensors"};
    cr_expect_neq(s2s_server_new(&s, missing, 1, &p), S2S_OK);
    cr_expect_null(s);
}

// ---- batches: what a request gets does not depend on its batch ----

// POSTs body from a thread; the reply kept.
typedef struct poster {
    const char *body;
    int status;
    json_t *reply;
    pthread_t t;
} poster;

static void *post_thread(void *arg) {
    poster *q = arg;
    q->reply = post("/v1/translate", q->body, &q->status);
    return NULL;
}

static int queued(void) {
    s2s_server_reply r;
    s2s_server_handle(srv, "GET", "/healthz", NULL, 0, &r);
    json_t *j = json_loads(r.body, 0, NULL);
    int n = (int)json_integer_value(json_object_get(j, "queued"));
    json_decref(j);
    s2s_server_reply_free(&r);
    return n;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, ms % 1000 * 1000000};
    nanosleep(&t, NULL);
}

// With the one worker busy on a long request, the requests q[0..n) wait
// in the queue in that order and are taken together when their keys
// allow (a scheduling aid, not an assertion: on a machine that finishes
// the long request first, each is decoded alone). Returns once all are
// answered.
static void behind_a_long_request(poster *q, int n) {
    poster busy = {.body = "{\"texts\": [\"它的猫昨天脏，它不聪明。\", \"玛丽哭，所以她是朋友。\", "
                           "\"安静的牛今天追那只鸟。\", \"我爱吃苹果\"], \"beam_size\": 16, "
                           "\"min_len\": 100, \"max_len\": 120}"};
    cr_assert_eq(pthread_create(&busy.t, NULL, post_thread, &busy), 0);
    sleep_ms(50);  // it is queued, and the worker takes it
    for (int k = 0; k < n; k++) {
        cr_assert_eq(pthread_create(&q[k].t, NULL, post_thread, &q[k]), 0);
        for (int w = 0; w < 2000 && queued() < k + 1; w++) sleep_ms(1);
    }
    pthread_join(busy.t, NULL);
    cr_assert_eq(busy.status, 200);
    for (int k = 0; k < n; k++) pthread_join(q[k].t, NULL);
    json_decref(busy.reply);
}

// Issue 27: the batching key lacked "attention", so a request asking for
// the maps that was batched behind one without got cross-attention only.
Test(serve, attention_maps_whatever_the_batch) {
    poster q[3] = {{.body = "{\"text\": \"我爱吃苹果\"}"},
                   {.body = "{\"text\": \"我爱吃苹果\", \"attention\": true}"},
                   {.body = "{\"text\": \"它的猫昨天脏，它不聪明。\", \"attention\": false}"}};
    behind_a_long_request(q, 3);
    for (int k = 0; k < 3; k++) cr_assert_eq(q[k].status, 200, "request %d", k);
    // The maps are each sentence's (issue 32).
    json_t *res = json_array_get(json_object_get(q[1].reply, "results"), 0);
    json_t *maps = json_object_get(json_array_get(json_object_get(res, "sentences"), 0), "maps");
    int kinds[3] = {0};  // cross, self, enc
    for (size_t i = 0; i < json_array_size(maps); i++) {
        const char *t = json_string_value(json_object_get(json_array_get(maps, i), "type"));
        kinds[!strcmp(t, "self") ? 1 : !strcmp(t, "enc") ? 2 : 0]++;
    }
    cr_expect(kinds[0] > 0 && kinds[1] == kinds[0] && kinds[2] > 0,
              "cross %d, self %d, enc %d maps", kinds[0], kinds[1], kinds[2]);
    for (int k = 0; k < 3; k += 2) {
        json_t *r = json_array_get(json_object_get(q[k].reply, "results"), 0);
        json_t *sents = json_object_get(r, "sentences");
        cr_expect_gt(json_array_size(sents), 0, "request %d", k);
        cr_expect_null(json_object_get(r, "maps"), "request %d", k);
        for (size_t i = 0; i < json_array_size(sents); i++)
            cr_expect_null(json_object_get(json_array_get(sents, i), "maps"), "request %d", k);
    }
    for (int k = 0; k < 3; k++) json_decref(q[k].reply);
}

// A beam request with "attention": true is refused alone (beam search
// keeps cross-attention only); batched behind one without, it was answered.
Test(serve, a_refused_request_is_refused_in_a_batch_too) {
    poster q[2] = {{.body = "{\"text\": \"我爱吃苹果\", \"beam_size\": 2}"},
                   {.body = "{\"text\": \"我爱吃苹果\", \"beam_size\": 2, \"attention\": true}"}};
    int alone;
    json_decref(post("/v1/translate", q[1].body, &alone));
    cr_assert_eq(alone, 400);
    behind_a_long_request(q, 2);
    cr_expect_eq(q[0].status, 200);
    cr_expect_eq(q[1].status, 400);
    for (int k = 0; k < 2; k++) json_decref(q[k].reply);
}

// ---- the decoding state after an outsized request (issue 27) ----

// A beam of 64 on one sentence, then 32 sentences greedily: the state
// holds room for 64 and for 32 sequences, not for 32 x 64 (it once kept
// its largest batch and its largest beam apart and multiplied them).
Test(serve_state, room_follows_the_work_not_a_product_of_maxima) {
    s2s_model *m;
    cr_assert_eq(s2s_model_load(&m, ZH_EN), S2S_OK);
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    enum { S = 12, T = 40 };
    size_t beam = s2s_state_bytes_for(m, 1, 64, S, T, 1, false);
    size_t batch = s2s_state_bytes_for(m, 32, 1, S, T, 1, false);
    size_t product = s2s_state_bytes_for(m, 32, 64, S, T, 1, false);
    cr_assert_eq(s2s_state_reserve(st, 1, 64, S, T, 1, false), S2S_OK);
    cr_assert_eq(s2s_state_reserve(st, 32, 1, S, T, 1, false), S2S_OK);
    size_t held = st->block_n * sizeof(float);
    cr_expect(held <= beam + batch && held < product / 8, "%zu bytes held; %zu + %zu needed",
              held, beam, batch);
    // Room that fits is kept as it is.
    float *block = st->block;
    cr_assert_eq(s2s_state_reserve(st, 16, 2, S, T, 1, false), S2S_OK);
    cr_expect_eq(st->block, block);
    // Trimmed above a bound, it holds nothing; and reserves again.
    cr_expect_not(s2s_state_trim(st, s2s_state_bytes(st)));
    cr_expect(s2s_state_trim(st, batch));
    cr_expect_eq(s2s_state_bytes(st), 0);
    cr_assert_eq(s2s_state_reserve(st, 2, 1, S, T, 1, false), S2S_OK);
    cr_expect(s2s_state_bytes(st) > 0 && s2s_state_bytes(st) <= batch);
    s2s_state_free(st);
    s2s_model_free(m);
}

// The plain requests' replies, as text (caller frees each).
static void plain_replies(char **out) {
    static const char *const bodies[] = {
        "{\"texts\": [\"我爱吃苹果\", \"它的猫昨天脏，它不聪明。\", \"玛丽哭，所以她是朋友。\"]}",
        "{\"text\": \"安静的牛今天追那只鸟。\", \"beam_size\": 4, \"n_best\": 2}",
        "{\"text\": \"我爱吃苹果\", \"attention\": true}"};
    for (int k = 0; k < 3; k++) {
        s2s_server_reply r;
        s2s_server_handle(srv, "POST", "/v1/translate", bodies[k], strlen(bodies[k]), &r);
        cr_assert_eq(r.status, 200, "%s", r.body);
        out[k] = r.body;
    }
}

// After the largest request the schema allows (64 texts at beam 64, 64
// hypotheses each), plain requests get the replies of a fresh server,
// byte for byte.
Test(serve, after_an_outsized_request_replies_as_a_fresh_server) {
    char *fresh[3], *after[3];
    plain_replies(fresh);
    s2s_buf b = {0};
    s2s_buf_printf(&b, "{\"texts\": [");
    for (int k = 0; k < 64; k++)
        s2s_buf_printf(&b, "%s\"%s\"", k ? ", " : "", SENTENCES[k % 4]);
    s2s_buf_printf(&b, "], \"beam_size\": %d, \"n_best\": %d}", S2S_MAX_BEAM, S2S_MAX_BEAM);
    int st;
    json_t *j = post("/v1/translate", b.s, &st);
    cr_expect_eq(st, 200, "%s", json_string_value(json_object_get(j, "message")));
    json_decref(j);
    free(b.s);
    plain_replies(after);
    for (int k = 0; k < 3; k++) {
        cr_expect_str_eq(after[k], fresh[k], "request %d", k);
        free(fresh[k]);
        free(after[k]);
    }
}
