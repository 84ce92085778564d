// s2s serve -m MODEL [-m MODEL ...] [--host H] [--port P] [--threads N] ...
//
// The translation demo and JSON API over HTTP (docs/serve.md). The first
// line on stdout is "listening on http://HOST:PORT"; SIGTERM or SIGINT
// stops accepting, lets the requests in progress finish, and exits 0.
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/http.h"
#include "serve/server.h"

static const s2s_opt serve_opts[] = {
    {.name = "--model", .alias = "-m", .value = "MODEL",
     .help = "a model file to serve, named by its stem (zh-en); repeat for more"},
    {.name = "--host", .value = "ADDR", .help = "the address to listen on: numeric, or a name of loopback (localhost)",
     .def = "127.0.0.1"},
    {.name = "--port", .value = "PORT", .help = "the port; 0 picks a free one", .def = "8080"},
    {.name = "--threads", .value = "N", .help = "decoding workers, one decoding state each",
     .def = "2"},
    {.name = "--max-batch", .value = "N",
     .help = "sentences decoded together, across requests that arrive together", .def = "32"},
    {.name = "--queue", .value = "N", .help = "requests waiting at most; more get 503",
     .def = "256"},
    {.name = "--timeout", .value = "SECONDS", .help = "a request not answered by then gets 503",
     .def = "30"},
    {.name = "--max-body", .value = "BYTES", .help = "a larger request body gets 413",
     .def = "1048576"},
    {.name = "--max-connections", .value = "N",
     .help = "connections at once; then the slowest sender gives way, or more are refused",
     .def = "256"},
    {.name = "--max-per-address", .value = "N",
     .help = "connections at once from one address (loopback: no limit)", .def = "32"},
    {.name = "--idle-timeout", .value = "SECONDS",
     .help = "a connection silent this long is closed", .def = "10"},
    {.name = "--request-timeout", .value = "SECONDS",
     .help = "a client that has not sent its whole request by then is closed (slow clients)",
     .def = "10"},
    {0},
};

static const s2s_cmd_spec serve_spec = {
    "serve", "s2s serve -m MODEL [-m MODEL ...] [OPTIONS]",
    "Serves the translation demo at / and the JSON API at /v1/translate, /v1/align,\n"
    "/v1/models and /healthz (docs/serve.md). Prints 'listening on http://HOST:PORT'\n"
    "first; SIGTERM finishes the requests in progress and exits 0.",
    serve_opts, /*decode=*/false};

int s2s_cmd_serve(int argc, char **argv) {
    s2s_server_params p = s2s_server_default_params();
    s2s_http_opts ho = {.host = "127.0.0.1", .port = 8080, .max_body = 1 << 20,
                        .max_connections = 256, .max_per_address = 32, .idle_timeout = 10,
                        .request_timeout = 10};
    const char **models = NULL;
    int n_models = 0, max_body = (int)ho.max_body, timeout = 30;
    s2s_args a;
    int rc = s2s_args_parse(&serve_spec, argc, argv, &a);
    if (rc == S2S_EXIT_OK && !a.help && !(models = calloc((size_t)a.n_opts + 1, sizeof *models)))
        rc = S2S_EXIT_FAILURE;
    for (int k = 0; k < a.n_opts && rc == S2S_EXIT_OK && !a.help; k++) {
        const s2s_arg *x = &a.opts[k];
        const char *v = x->value;
        bool ok = true;
        if (s2s_arg_is(x, "--model")) models[n_models++] = v;
        else if (s2s_arg_is(x, "--host")) ho.host = v;
        else if (s2s_arg_is(x, "--port"))
            ok = s2s_cli_int("serve", x->opt->name, v, 0, 65535, &ho.port);
        else if (s2s_arg_is(x, "--threads"))
            ok = s2s_cli_int("serve", x->opt->name, v, 1, S2S_CLI_MAX_THREADS, &p.workers);
        else if (s2s_arg_is(x, "--max-batch"))
            ok = s2s_cli_int("serve", x->opt->name, v, 1, S2S_MAX_BATCH, &p.max_batch);
        else {
            int *dest = s2s_arg_is(x, "--queue")             ? &p.queue
                        : s2s_arg_is(x, "--timeout")         ? &timeout
                        : s2s_arg_is(x, "--max-body")        ? &max_body
                        : s2s_arg_is(x, "--max-connections") ? &ho.max_connections
                        : s2s_arg_is(x, "--max-per-address") ? &ho.max_per_address
                        : s2s_arg_is(x, "--idle-timeout")    ? &ho.idle_timeout
                        : s2s_arg_is(x, "--request-timeout") ? &ho.request_timeout
                                                             : NULL;
            if (dest) ok = s2s_cli_int("serve", x->opt->name, v, 1, S2S_CLI_INT_MAX, dest);
        }
        if (!ok) rc = S2S_EXIT_USAGE;
    }
    if (rc == S2S_EXIT_OK && !a.help && a.n_pos > 0)
        rc = s2s_cli_usage_error("serve", "unexpected argument '%s' (models are given with -m)",
                                 a.pos[0]);
    if (rc == S2S_EXIT_OK && !a.help && n_models == 0)
        rc = s2s_cli_usage_error("serve", "no model given (use -m MODEL)");
    if (rc != S2S_EXIT_OK || a.help) {
        free(models);
        s2s_args_free(&a);
        return rc;
    }
    p.timeout = timeout;
    ho.max_body = (size_t)max_body;

    // Every thread started from here on inherits the blocked signals, so
    // only sigwait below sees SIGTERM and SIGINT.
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    // glibc gives a thread that allocates while the heap is busy an arena
    // of its own (up to 8 per core), and with a thread per connection each
    // keeps its own free memory; 2 arenas measured 6 MiB less RSS under
    // load (docs/serve.md, "Memory").
    if (!getenv("MALLOC_ARENA_MAX")) mallopt(M_ARENA_MAX, 2);

    s2s_server *srv = NULL;
    s2s_status st = s2s_server_new(&srv, models, n_models, &p);
    s2s_http *h = NULL;
    if (st != S2S_OK) rc = s2s_cli_fail(st);
    else if (!(h = s2s_http_start(srv, &ho))) rc = S2S_EXIT_USAGE;
    if (rc == S2S_EXIT_OK) {
        printf("listening on http://%s%s%s:%d\n", strchr(ho.host, ':') ? "[" : "", ho.host,
               strchr(ho.host, ':') ? "]" : "", s2s_http_port(h));
        if (!s2s_cli_flush_stdout()) rc = S2S_EXIT_FAILURE;
        fprintf(stderr, "s2s serve: %d model%s, %d workers; SIGTERM or Ctrl-C stops\n", n_models,
                n_models == 1 ? "" : "s", p.workers);
        int sig = 0;
        // Every 5 s until a signal, glibc hands free heap memory back
        // (docs/serve.md, "Memory").
        struct timespec every = {5, 0};
        while (rc == S2S_EXIT_OK && sig <= 0) {
            sig = sigtimedwait(&stop, NULL, &every);
            if (sig < 0) malloc_trim(0);
        }
        if (sig > 0)
            fprintf(stderr, "s2s serve: %s: finishing the requests in progress\n",
                    sig == SIGINT ? "interrupted" : "terminated");
        s2s_http_stop(h, p.timeout + 1);
    }
    s2s_server_free(srv);
    free(models);
    s2s_args_free(&a);
    return rc;
}
