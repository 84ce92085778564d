// serve/server.h (internal; the s2s_tools library) — a translation service without the HTTP: a fixed pool of
// decoding workers behind a bounded queue, and the JSON API of `s2s serve`
// (docs/serve.md) as a function from (method, path, body) to a reply. Any
// HTTP server can sit in front of it; the CLI's uses libmicrohttpd.
//
//     const char *models[] = {"models/zh-en.safetensors"};
//     s2s_server_params p = s2s_server_default_params();
//     s2s_server *srv;  s2s_server_new(&srv, models, 1, &p);
//     s2s_server_reply r;
//     s2s_server_handle(srv, "POST", "/v1/translate",
//                       "{\"model\":\"zh-en\",\"text\":\"我爱吃苹果\"}", len, &r);
//     ... r.status (200), r.body (JSON) ...
//     s2s_server_reply_free(&r);
//     s2s_server_free(srv);  // finishes what is queued, then stops
//
// Every worker owns one s2s_state per model and decodes on one thread.
// Translation requests waiting in the queue with the same model and the
// same decoding options are decoded together in one batch (dynamic
// batching), up to max_batch sentences. A request that cannot be queued
// (the queue is full) is answered 503 with retry_after at once; one not
// answered within `timeout` seconds gets 503 "timeout".
#ifndef S2S_SERVE_H
#define S2S_SERVE_H

#include <stdbool.h>
#include <stddef.h>

#include "s2s/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct s2s_server s2s_server;

typedef struct s2s_server_params {
    int workers;     // decoding threads (>= 1)
    int queue;       // requests waiting at most (>= 1)
    int max_batch;   // sentences decoded together, across requests (>= 1)
    int max_texts;   // texts in one request (>= 1)
    double timeout;  // seconds a request may take, queue included (> 0)
} s2s_server_params;

// 2 workers, a queue of 256, batches of 32, 64 texts, 30 s.
s2s_server_params s2s_server_default_params(void);

// Loads the models (each named by its file's stem: "zh-en" for
// models/zh-en.safetensors) and starts the workers. S2S_ERR_INVALID for bad
// params or two models of one name; a model's load error otherwise.
s2s_status s2s_server_new(s2s_server **out, const char *const *model_paths, int n_models,
                          const s2s_server_params *p);
// Lets the queued requests finish, stops the workers, frees everything.
// No s2s_server_handle call may be running or start.
void s2s_server_free(s2s_server *s);

typedef struct s2s_server_reply {
    int status;           // HTTP status: 200, 400, 404, 405, 413 or 503
    char *body;           // JSON text (caller frees, s2s_server_reply_free)
    int retry_after;      // seconds; > 0 with 503
    const char *allow;    // with 405: the methods the path takes ("POST")
} s2s_server_reply;

// Answers one API request, blocking until it is done:
//   GET /healthz, GET /v1/models, POST /v1/translate, POST /v1/align.
// body (len bytes, not NUL-terminated) is the request's JSON; it is read
// for POST only. An unknown path gets 404 "not_found", a known one with
// another method 405. Safe to call from many threads at once.
void s2s_server_handle(s2s_server *s, const char *method, const char *path, const char *body,
                       size_t len, s2s_server_reply *r);

// An error reply {"error": code, "message": message} (for the HTTP layer's
// own errors, such as 413 for a body over its limit).
void s2s_server_error_reply(s2s_server_reply *r, int status, const char *code,
                            const char *message);
void s2s_server_reply_free(s2s_server_reply *r);

// The page served at `/`: the live translation demo, the same viewer as
// s2s_align_html_write's report (inline CSS and JS, no network). Owned by
// s; never NULL.
const char *s2s_server_page(const s2s_server *s);

#ifdef __cplusplus
}
#endif
#endif
