// `s2s serve` over libmicrohttpd, one thread per connection: a request's
// body is gathered (up to max_body bytes, else 413), then answered by
// s2s_server_handle on the connection's thread, which waits for the
// decoding pool. libmicrohttpd does the HTTP/1.1 parsing, keep-alive and
// idle timeouts. What it cannot bound, this file does with a table of the
// open connections and a watchdog thread (issue 27): the time a client
// may take to send a whole request (a slow client that sends a byte now
// and then is never idle), connections per address, and which connection
// gives way when all are taken; on SIGTERM it closes the connections that
// are not being answered and answers the others with Connection: close.
//
// libmicrohttpd is opened when `s2s serve` starts (dlopen), not linked:
// with the ten libraries it pulls in (gnutls and its own), loading it
// cost every other command about 1.5 ms of start-up, a tenth of the time
// to translate one short sentence (docs/benchmarks.md).
#include "cli/http.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
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
    MHD_FN(get_connection_values);
    MHD_FN(get_connection_info);
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
        SYM(lookup_connection_value), SYM(get_connection_values), SYM(get_connection_info),
        SYM(create_response_from_buffer), SYM(add_response_header),
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

// One open connection, as the watchdog and the accept policy see it.
typedef struct conn {
    int fd;
    struct sockaddr_storage addr;
    bool loopback;    // 127.0.0.0/8 or ::1: not held to the per-address limit
    double since;     // when its current request began (or it opened, or was answered)
    double deadline;  // it is closed at this time unless a whole request is in by then
    bool busy;        // a whole request is in: it is being answered
    bool cut;         // shut down here; libmicrohttpd closes it
    struct conn *next;
} conn;

struct s2s_http {
    struct MHD_Daemon *d;
    s2s_server *srv;
    size_t max_body;
    int port;
    atomic_int in_flight;  // requests begun and not yet answered
    atomic_bool stopping;  // SIGTERM: no new work, Connection: close on every reply
    double request_timeout, idle_timeout;
    int max_connections, max_per_address;
    pthread_mutex_t mu;  // conns, n_conns and each conn's fields
    conn *conns;
    int n_conns;         // in conns, cut ones included
    pthread_cond_t wake;  // the watchdog's sleep: stopping
    pthread_t watchdog;
    bool watching, quit;  // quit: under mu
};

// One request's state across the handler's calls.
typedef struct request {
    char *body;
    size_t len, cap;
    bool too_big;
} request;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static enum MHD_Result send_reply(struct MHD_Connection *c, int status, const char *type,
                                  const char *body, size_t len, bool copy,
                                  const s2s_server_reply *r, bool close) {
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
    // libmicrohttpd ends the connection after a reply that says so
    if (close) mhd.add_response_header(res, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ok = mhd.queue_response(c, (unsigned)status, res);
    mhd.destroy_response(res);
    return ok;
}

static enum MHD_Result send_server_reply(struct MHD_Connection *c, s2s_server_reply *r,
                                         bool close) {
    enum MHD_Result ok = send_reply(c, r->status, "application/json; charset=utf-8", r->body,
                                    r->body ? strlen(r->body) : 0, /*copy=*/true, r, close);
    s2s_server_reply_free(r);
    return ok;
}

static enum MHD_Result too_large(struct MHD_Connection *c, const s2s_http *h) {
    char msg[96];
    snprintf(msg, sizeof msg, "the body is over the limit of %zu bytes (--max-body)", h->max_body);
    s2s_server_reply r;
    s2s_server_error_reply(&r, 413, "too_large", msg);
    return send_server_reply(c, &r, /*close=*/true);
}

// Connections over --max-connections that libmicrohttpd may hold while
// the ones cut to make way for them close.
#define S2S_HTTP_CUT_SLACK 32

// ---- the table of connections ----

static conn *conn_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *i =
        mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

static bool is_loopback(const struct sockaddr *a) {
    if (a->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
    if (a->sa_family != AF_INET6) return false;
    const struct in6_addr *x = &((const struct sockaddr_in6 *)a)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(x) || (IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127);
}

static bool same_address(const struct sockaddr *a, const struct sockaddr *b) {
    if (a->sa_family != b->sa_family) return false;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    return a->sa_family == AF_INET6 &&
           !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                   &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
}

// Ends x's connection: libmicrohttpd's thread for it sees the socket
// closed and closes it (and only then tells conn_notify, under mu, so the
// descriptor is still x's here). Under mu.
static void cut(conn *x) {
    if (x->cut) return;
    shutdown(x->fd, SHUT_RDWR);
    x->cut = true;
}

// A connection has until x->deadline to send its request: the idle time
// before a request counts (as --idle-timeout says) and then the request
// itself, line, headers and body, within --request-timeout. Under mu.
static void request_begins(const s2s_http *h, conn *x, double t, bool line_in) {
    x->since = t;
    double wait = line_in ? h->request_timeout
                          : h->request_timeout > h->idle_timeout ? h->request_timeout
                                                                 : h->idle_timeout;
    x->deadline = t + wait;
}

static void conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode code) {
    s2s_http *h = cls;
    pthread_mutex_lock(&h->mu);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        conn *x = calloc(1, sizeof *x);
        const union MHD_ConnectionInfo *fd =
            mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *a =
            mhd.get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (x && fd && a) {
            x->fd = fd->connect_fd;
            size_t n = a->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                             : sizeof(struct sockaddr_in);
            memcpy(&x->addr, a->client_addr, n);
            x->loopback = is_loopback(a->client_addr);
            request_begins(h, x, now_s(), false);
            x->next = h->conns;
            h->conns = x;
            h->n_conns++;
            *socket_context = x;
            if (atomic_load(&h->stopping)) cut(x);
        } else {  // untracked, it would escape every bound: refused
            free(x);
            *socket_context = NULL;
            if (fd) shutdown(fd->connect_fd, SHUT_RDWR);
        }
    } else if (*socket_context) {
        conn *x = *socket_context;
        for (conn **l = &h->conns; *l; l = &(*l)->next)
            if (*l == x) {
                *l = x->next;
                h->n_conns--;
                break;
            }
        free(x);
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&h->mu);
}

// The request line is in: from now on, the request's own deadline.
static void *request_line(void *cls, const char *uri, struct MHD_Connection *c) {
    (void)uri;
    s2s_http *h = cls;
    pthread_mutex_lock(&h->mu);
    conn *x = conn_of(c);
    if (x) request_begins(h, x, now_s(), true);
    pthread_mutex_unlock(&h->mu);
    return NULL;  // the handler's *con_cls starts NULL
}

// Whether to take a new connection from addr. When all --max-connections
// are taken, the one that has been sending its request (or waiting to)
// the longest gives way, if that is a second or more: a client that sends
// its requests at once always gets in, and slow ones cannot hold every
// connection between them. A non-loopback address holds at most
// --max-per-address connections.
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr, socklen_t len) {
    (void)len;
    s2s_http *h = cls;
    if (atomic_load(&h->stopping)) return MHD_NO;
    enum MHD_Result ok = MHD_YES;
    pthread_mutex_lock(&h->mu);
    int live = 0, same = 0;
    conn *slowest = NULL;
    double t = now_s();
    for (conn *x = h->conns; x; x = x->next) {
        if (x->cut) continue;
        live++;
        same += same_address((const struct sockaddr *)&x->addr, addr);
        if (!x->busy && t - x->since >= 1.0 && (!slowest || x->since < slowest->since))
            slowest = x;
    }
    if (!is_loopback(addr) && same >= h->max_per_address) ok = MHD_NO;
    else if (h->n_conns >= h->max_connections + S2S_HTTP_CUT_SLACK) ok = MHD_NO;
    else if (live >= h->max_connections) {
        if (slowest) cut(slowest);
        else ok = MHD_NO;
    }
    pthread_mutex_unlock(&h->mu);
    return ok;
}

// Every 100 ms: cuts the connections past their deadline; once stopping,
// every connection not being answered.
static void *watchdog(void *arg) {
    s2s_http *h = arg;
    pthread_mutex_lock(&h->mu);
    while (!h->quit) {
        double t = now_s();
        bool stopping = atomic_load(&h->stopping);
        for (conn *x = h->conns; x; x = x->next)
            if (!x->busy && (stopping || t > x->deadline)) cut(x);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += 100 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&h->wake, &h->mu, &until);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

// The header the request names more than once with different values
// ("Content-Length: 5" and "Content-Length: 50": which one a proxy in
// front believed is anyone's guess, the classic request smuggling).
typedef struct header_count {
    const char *value;
    bool differ;
} header_count;

static enum MHD_Result count_length(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value) {
    (void)kind;
    header_count *n = cls;
    if (!key || strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) return MHD_YES;
    if (n->value && strcmp(n->value, value ? value : "")) n->differ = true;
    if (!n->value) n->value = value ? value : "";
    return MHD_YES;
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
        header_count lengths = {0};
        mhd.get_connection_values(c, MHD_HEADER_KIND, count_length, &lengths);
        if (lengths.differ) {
            rq->too_big = true;  // its body is not read
            s2s_server_reply r;
            s2s_server_error_reply(&r, 400, "bad_request",
                                   "two different Content-Length headers");
            return send_server_reply(c, &r, /*close=*/true);
        }
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
    // The whole request is in: from here on it is answered, deadline or not.
    pthread_mutex_lock(&h->mu);
    conn *x = conn_of(c);
    if (x) x->busy = true;
    pthread_mutex_unlock(&h->mu);
    bool close = atomic_load(&h->stopping);
    if (rq->too_big) return too_large(c, h);
    if (!strcmp(url, "/") && (!strcmp(method, "GET") || !strcmp(method, "HEAD"))) {
        const char *page = s2s_server_page(h->srv);
        return send_reply(c, 200, "text/html; charset=utf-8", page, strlen(page), false, NULL,
                          close);
    }
    s2s_server_reply r;
    if (close) {  // SIGTERM came before this request was whole: not taken
        s2s_server_error_reply(&r, 503, "shutting_down", "the server is stopping");
    } else if (!strcmp(url, "/")) {
        s2s_server_error_reply(&r, 405, "method_not_allowed", "/ takes GET");
        r.allow = "GET";
    } else {
        s2s_server_handle(h->srv, method, url, rq->body, rq->len, &r);
    }
    // SIGTERM while it was decoding: answered, and the connection closed after
    return send_server_reply(c, &r, atomic_load(&h->stopping));
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why) {
    (void)why;
    s2s_http *h = cls;
    request *rq = *con_cls;
    pthread_mutex_lock(&h->mu);
    conn *x = conn_of(c);
    if (x) {  // the next request on it starts now
        x->busy = false;
        request_begins(h, x, now_s(), false);
    }
    pthread_mutex_unlock(&h->mu);
    if (!rq) return;
    free(rq->body);
    free(rq);
    *con_cls = NULL;
    atomic_fetch_sub(&h->in_flight, 1);
}

static void stop_watchdog(s2s_http *h) {
    if (!h->watching) return;
    pthread_mutex_lock(&h->mu);
    h->quit = true;
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->watchdog, NULL);
    h->watching = false;
}

// A host name (not a numeric address) for --host: taken when it resolves to
// a loopback address (localhost), the first such (IPv4 before IPv6), so that
// a name never opens the server to other machines; a numeric address is
// how to listen anywhere else. False after a message.
static bool loopback_name(const char *host, struct sockaddr_in *a4, struct sockaddr_in6 *a6,
                          bool *v6) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int e = getaddrinfo(host, NULL, &hints, &res);
    if (e) {
        fprintf(stderr, "s2s serve: --host %s: %s (a numeric IPv4 or IPv6 address, or a name "
                "of this machine's loopback such as localhost)\n", host, gai_strerror(e));
        return false;
    }
    const struct addrinfo *four = NULL, *six = NULL;
    for (const struct addrinfo *r = res; r; r = r->ai_next) {
        if (r->ai_family == AF_INET && !four &&
            (ntohl(((const struct sockaddr_in *)r->ai_addr)->sin_addr.s_addr) >> 24) == 127)
            four = r;
        if (r->ai_family == AF_INET6 && !six &&
            IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)r->ai_addr)->sin6_addr))
            six = r;
    }
    if (four) a4->sin_addr = ((const struct sockaddr_in *)four->ai_addr)->sin_addr;
    else if (six) a6->sin6_addr = ((const struct sockaddr_in6 *)six->ai_addr)->sin6_addr;
    *v6 = !four && six;
    if (!four && !six) {
        char first[INET6_ADDRSTRLEN] = "?";
        const void *at = res->ai_family == AF_INET
                             ? (const void *)&((const struct sockaddr_in *)res->ai_addr)->sin_addr
                             : (const void *)&((const struct sockaddr_in6 *)res->ai_addr)->sin6_addr;
        inet_ntop(res->ai_family, at, first, sizeof first);
        fprintf(stderr, "s2s serve: --host %s: resolves to %s, not a loopback address; a name "
                "is taken only for loopback (give the numeric address to listen there)\n",
                host, first);
    }
    freeaddrinfo(res);
    return four || six;
}

s2s_http *s2s_http_start(s2s_server *srv, const s2s_http_opts *o) {
    if (!mhd.start_daemon && !mhd_open()) return NULL;
    s2s_http *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->srv = srv;
    h->max_body = o->max_body;
    h->request_timeout = o->request_timeout;
    h->idle_timeout = o->idle_timeout;
    h->max_connections = o->max_connections;
    h->max_per_address = o->max_per_address;
    pthread_mutex_init(&h->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->wake, &ca);
    pthread_condattr_destroy(&ca);
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)o->port)};
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC;
    const struct sockaddr *addr = (const struct sockaddr *)&a4;
    bool v6 = false;
    if (inet_pton(AF_INET, o->host, &a4.sin_addr) != 1) {
        v6 = inet_pton(AF_INET6, o->host, &a6.sin6_addr) == 1;
        if (!v6 && !loopback_name(o->host, &a4, &a6, &v6)) {
            free(h);
            return NULL;
        }
    }
    if (v6) {
        addr = (const struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    }
    int e = pthread_create(&h->watchdog, NULL, watchdog, h);
    if (e) {
        fprintf(stderr, "s2s serve: cannot start a thread: %s\n", strerror(e));
        free(h);
        return NULL;
    }
    h->watching = true;
    // libmicrohttpd's own limit leaves room for the connections cut to make
    // way (accept_policy) until their threads have closed them.
    h->d = mhd.start_daemon(flags, (uint16_t)o->port, accept_policy, h, on_request, h,
                            MHD_OPTION_SOCK_ADDR, addr,
                            MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)(o->max_connections + S2S_HTTP_CUT_SLACK),
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->idle_timeout,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_NOTIFY_CONNECTION, conn_notify, h,
                            MHD_OPTION_URI_LOG_CALLBACK, request_line, h,
                            MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 * 1024),
                            MHD_OPTION_END);
    if (!h->d) {
        fprintf(stderr, "s2s serve: cannot listen on %s port %d (in use, or not an address of "
                        "this machine)\n", o->host, o->port);
        stop_watchdog(h);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *info = mhd.get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : o->port;
    return h;
}

int s2s_http_port(const s2s_http *h) { return h->port; }

void s2s_http_stop(s2s_http *h, double grace) {
    // No new connections, no new requests: the watchdog closes every
    // connection not being answered (idle keep-alive ones included), and
    // those being answered get Connection: close with their reply.
    atomic_store(&h->stopping, true);
    MHD_socket fd = mhd.quiesce_daemon(h->d);
    if (fd != MHD_INVALID_SOCKET) close(fd);
    pthread_mutex_lock(&h->mu);
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->mu);
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (double waited = 0; atomic_load(&h->in_flight) > 0 && waited < grace; waited += 0.01)
        nanosleep(&tick, NULL);
    mhd.stop_daemon(h->d);
    stop_watchdog(h);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->wake);
    free(h);
}
