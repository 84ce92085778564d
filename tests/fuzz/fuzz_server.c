// The JSON API of `s2s serve` without HTTP (s2s_server_handle): the input
// is "METHOD PATH\nBODY" (anything else is a POST to /v1/translate with
// the input as its body), answered by a server of the shipped zh-en model.
// Every reply must be JSON with a status the API documents, and after
// each input a plain request must get the same translation as at the
// start: no request may leave the server changed (issue 27).
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "serve/server.h"

static s2s_server *srv;
static char *baseline;  // the plain request's translation on a fresh server

static const char PLAIN[] = "{\"text\": \"我爱吃苹果\"}";

// The reply's translation of the plain request; aborts when it is not one.
static char *plain_translation(void) {
    s2s_server_reply r;
    s2s_server_handle(srv, "POST", "/v1/translate", PLAIN, sizeof PLAIN - 1, &r);
    json_t *j = r.status == 200 ? json_loads(r.body, 0, NULL) : NULL;
    json_t *res = json_array_get(json_object_get(j, "results"), 0);
    const char *t = json_string_value(json_object_get(res, "translation"));
    if (!t) abort();
    char *out = strdup(t);
    json_decref(j);
    s2s_server_reply_free(&r);
    return out;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    const char *models[] = {S2S_SOURCE_DIR "/models/zh-en.safetensors"};
    s2s_server_params p = s2s_server_default_params();
    // One worker, small batches and few texts: each input stays quick.
    p.workers = 1, p.max_batch = 8, p.max_texts = 4, p.queue = 4, p.timeout = 60;
    if (s2s_server_new(&srv, models, 1, &p) != S2S_OK) abort();
    baseline = plain_translation();
    return 0;
}

static bool documented(int status) {
    static const int codes[] = {200, 400, 404, 405, 413, 503};
    for (size_t i = 0; i < sizeof codes / sizeof *codes; i++)
        if (status == codes[i]) return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *in = s2s_fuzz_string(data, size);
    const char *method = "POST", *path = "/v1/translate", *body = in;
    size_t len = size;
    char *sp = memchr(in, ' ', size), *nl = memchr(in, '\n', size);
    if (sp && nl && sp < nl) {
        *sp = *nl = '\0';
        method = in, path = sp + 1, body = nl + 1;
        len = size - (size_t)(nl + 1 - in);
    }
    s2s_server_reply r;
    s2s_server_handle(srv, method, path, body, len, &r);
    json_t *j = json_loads(r.body ? r.body : "", 0, NULL);
    if (!j || !documented(r.status)) abort();
    if (r.status != 200 && !json_is_string(json_object_get(j, "message"))) abort();
    json_decref(j);
    s2s_server_reply_free(&r);
    free(in);
    char *again = plain_translation();
    if (strcmp(again, baseline)) abort();
    free(again);
    return 0;
}
