// s2s_server without HTTP: routing and status codes, translations against
// s2s_translate called directly, the same answers under concurrent
// callers, and the checks of s2s_server_new.
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "s2s/s2s.h"

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
    p.beam_size = beam;
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
