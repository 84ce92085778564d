// The HTTP side of `s2s serve` (libmicrohttpd): reads requests, bounds
// their bodies, and hands them to s2s_server_handle; serves the page at /.
#ifndef S2S_CLI_HTTP_H
#define S2S_CLI_HTTP_H

#include <stddef.h>

#include "serve/server.h"

typedef struct s2s_http_opts {
    const char *host;     // a numeric IPv4 or IPv6 address
    int port;             // 0: any free port
    size_t max_body;      // bytes; a longer body gets 413
    int max_connections;  // at once; then the slowest sender gives way, or more are refused
    int max_per_address;  // connections at once from one address but loopback
    int idle_timeout;     // seconds a connection may stay silent
    int request_timeout;  // seconds a client may take to send a whole request
} s2s_http_opts;

typedef struct s2s_http s2s_http;

// Starts listening. NULL after a message on stderr.
s2s_http *s2s_http_start(s2s_server *srv, const s2s_http_opts *o);
// The port it listens on.
int s2s_http_port(const s2s_http *h);
// Stops accepting, closes the connections not being answered, lets the
// requests in progress finish (at most `grace` seconds) with Connection:
// close, closes every connection and frees h.
void s2s_http_stop(s2s_http *h, double grace);

#endif
