// `s2s serve` over libmicrohttpd, one thread per connection: a request's
// body is gathered (up to max_body bytes, else 413), then answered by
// s2s_server_handle on the connection's thread, which waits for the
// decoding pool. libmicrohttpd does the HTTP/1.1 parsing, keep-alive,
// idle timeouts and the connection limit.
//
// libmicrohttpd is opened when `s2s serve` starts (dlopen), not linked:
// with the ten libraries it pulls in (gnutls and its own), loading it
// cost every other command about 1.5 ms of start-up, a tenth of the time
// to translate one short sentence (docs/benchmarks.md).
#include "cli/http.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// The libmicrohttpd functions used, typed from its header.
#define MHD_FN(name) __typeof__(&MHD_##name) name
static struct mhd_api {
    MHD_FN(start_daemon);
    MHD_FN(get_daemon_info);
    MHD_FN(quiesce_daemon);
    MHD_FN(stop_daemon);
    MHD_FN(lookup_connection_value);
    MHD_FN(create_response_from_buffer);
    MHD_FN(add_response_header);
    MHD_FN(queue_response);
    MHD_FN(destroy_response);
} mhd;
#undef MHD_FN

// Fills mhd; false after a message on stderr.
static bool mhd_open(void) {
    static const char *const names[] = {"libmicrohttpd.so.12", "libmicrohttpd.so"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "s2s serve: cannot load libmicrohttpd (apt-get install libmicrohttpd12): %s\n",
                dlerror());
        return false;
    }
    struct { void **fn; const char *name; } syms[] = {
#define SYM(name) {(void **)&mhd.name, "MHD_" #name}
        SYM(start_daemon), SYM(get_daemon_info), SYM(quiesce_daemon), SYM(stop_daemon),
        SYM(lookup_connection_value), SYM(create_response_from_buffer), SYM(add_response_header),
        SYM(queue_response), SYM(destroy_response),
#undef SYM
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        if (!(*syms[i].fn = dlsym(lib, syms[i].name))) {
            fprintf(stderr, "s2s serve: libmicrohttpd has no %s: %s\n", syms[i].name, dlerror());
            return false;
        }
    }
    return true;
}

struct s2s_http {
    struct MHD_Daemon *d;
    s2s_server *srv;
    size_t max_body;
    int port;
    atomic_int in_flight;  // requests begun and not yet answered
};

// One request's state across the handler's calls.
typedef struct request {
    char *body;
    size_t len, cap;
    bool too_big;
} request;

static enum MHD_Result send_reply(struct MHD_Connection *c, int status, const char *type,
                                  const char *body, size_t len, bool copy,
                                  const s2s_server_reply *r) {
    struct MHD_Response *res = mhd.create_response_from_buffer(
        len, (void *)body, copy ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_PERSISTENT);
    if (!res) return MHD_NO;
    mhd.add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    mhd.add_response_header(res, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (r && r->retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", r->retry_after);
        mhd.add_response_header(res, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    if (r && r->allow) mhd.add_response_header(res, MHD_HTTP_HEADER_ALLOW, r->allow);
    enum MHD_Result ok = mhd.queue_response(c, (unsigned)status, res);
    mhd.destroy_response(res);
    return ok;
}

static enum MHD_Result send_server_reply(struct MHD_Connection *c, s2s_server_reply *r) {
    enum MHD_Result ok = send_reply(c, r->status, "application/json; charset=utf-8", r->body,
                                    r->body ? strlen(r->body) : 0, /*copy=*/true, r);
    s2s_server_reply_free(r);
    return ok;
}

static enum MHD_Result too_large(struct MHD_Connection *c, const s2s_http *h) {
    char msg[96];
    snprintf(msg, sizeof msg, "the body is over the limit of %zu bytes (--max-body)", h->max_body);
    s2s_server_reply r;
    s2s_server_error_reply(&r, 413, "too_large", msg);
    return send_server_reply(c, &r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
    (void)version;
    s2s_http *h = cls;
    request *rq = *con_cls;
    if (!rq) {  // the headers are in: refuse a declared oversize body before reading it
        if (!(rq = calloc(1, sizeof *rq))) return MHD_NO;
        *con_cls = rq;
        atomic_fetch_add(&h->in_flight, 1);
        const char *cl = mhd.lookup_connection_value(c, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > h->max_body) {
            rq->too_big = true;
            return too_large(c, h);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (!rq->too_big && rq->len + *upload_size > h->max_body) {
            rq->too_big = true;
            free(rq->body);
            rq->body = NULL;
        }
        if (!rq->too_big) {
            if (rq->len + *upload_size > rq->cap) {
                size_t cap = (rq->len + *upload_size) * 2;
                char *b = realloc(rq->body, cap);
                if (!b) return MHD_NO;
                rq->body = b;
                rq->cap = cap;
            }
            memcpy(rq->body + rq->len, upload, *upload_size);
            rq->len += *upload_size;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (rq->too_big) return too_large(c, h);
    if (!strcmp(url, "/") && (!strcmp(method, "GET") || !strcmp(method, "HEAD"))) {
        const char *page = s2s_server_page(h->srv);
        return send_reply(c, 200, "text/html; charset=utf-8", page, strlen(page), false, NULL);
    }
    s2s_server_reply r;
    if (!strcmp(url, "/")) {
        s2s_server_error_reply(&r, 405, "method_not_allowed", "/ takes GET");
        r.allow = "GET";
    } else {
        s2s_server_handle(h->srv, method, url, rq->body, rq->len, &r);
    }
    return send_server_reply(c, &r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why) {
    (void)c, (void)why;
    s2s_http *h = cls;
    request *rq = *con_cls;
    if (!rq) return;
    free(rq->body);
    free(rq);
    *con_cls = NULL;
    atomic_fetch_sub(&h->in_flight, 1);
}

s2s_http *s2s_http_start(s2s_server *srv, const s2s_http_opts *o) {
    if (!mhd.start_daemon && !mhd_open()) return NULL;
    s2s_http *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->srv = srv;
    h->max_body = o->max_body;
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)o->port)};
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC;
    const struct sockaddr *addr = (const struct sockaddr *)&a4;
    if (inet_pton(AF_INET, o->host, &a4.sin_addr) != 1) {
        if (inet_pton(AF_INET6, o->host, &a6.sin6_addr) != 1) {
            fprintf(stderr, "s2s serve: --host %s: not a numeric IPv4 or IPv6 address\n", o->host);
            free(h);
            return NULL;
        }
        addr = (const struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    }
    h->d = mhd.start_daemon(flags, (uint16_t)o->port, NULL, NULL, on_request, h,
                            MHD_OPTION_SOCK_ADDR, addr,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->idle_timeout,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 * 1024),
                            MHD_OPTION_END);
    if (!h->d) {
        fprintf(stderr, "s2s serve: cannot listen on %s port %d (in use, or not an address of "
                        "this machine)\n", o->host, o->port);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *info = mhd.get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : o->port;
    return h;
}

int s2s_http_port(const s2s_http *h) { return h->port; }

void s2s_http_stop(s2s_http *h, double grace) {
    MHD_socket fd = mhd.quiesce_daemon(h->d);  // no new connections
    if (fd != MHD_INVALID_SOCKET) close(fd);
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (double waited = 0; atomic_load(&h->in_flight) > 0 && waited < grace; waited += 0.01)
        nanosleep(&tick, NULL);
    mhd.stop_daemon(h->d);
    free(h);
}
