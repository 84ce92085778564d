// Helpers shared by the commands: errors, option values, line reading.
#include <stdarg.h>
#include <sys/types.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int s2s_cli_fail(s2s_status st) {
    fprintf(stderr, "s2s: %s\n", s2s_last_error());
    return st == S2S_ERR_NOMEM || st == S2S_ERR_BACKEND ? S2S_EXIT_FAILURE : S2S_EXIT_USAGE;
}

int s2s_cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "s2s %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return S2S_EXIT_USAGE;
}

bool s2s_cli_int(const char *cmd, const char *opt, const char *text, int min, int *out) {
    char *end;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || !*text || *end || v < min || v > 1000000000) {
        s2s_cli_usage_error(cmd, "%s needs an integer >= %d, got '%s'", opt, min,
                            text ? text : "");
        return false;
    }
    *out = (int)v;
    return true;
}

bool s2s_cli_getline(char **buf, size_t *cap, FILE *f) {
    ssize_t n = getline(buf, cap, f);
    if (n < 0) return false;
    while (n > 0 && ((*buf)[n - 1] == '\n' || (*buf)[n - 1] == '\r')) (*buf)[--n] = '\0';
    return true;
}

int s2s_cli_decode_opt(const char *cmd, s2s_decode_opts *o, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char *val = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
        if (!val) return s2s_cli_usage_error(cmd, "%s needs a model file", a), -1;
        o->model = val;
    } else if (!strcmp(a, "--threads")) {
        if (!s2s_cli_int(cmd, a, val, 1, &o->threads)) return -1;
    } else if (!strcmp(a, "--batch")) {
        if (!s2s_cli_int(cmd, a, val, 1, &o->batch)) return -1;
    } else if (!strcmp(a, "--max-len")) {
        if (!s2s_cli_int(cmd, a, val, 1, &o->max_len)) return -1;
    } else {
        return 0;
    }
    (*i)++;
    return 1;
}

int s2s_cli_open(const char *cmd, const s2s_decode_opts *o, s2s_model **m, s2s_state **st,
                 s2s_decode_params *p) {
    *m = NULL;
    *st = NULL;
    if (!o->model) return s2s_cli_usage_error(cmd, "no model given (use -m MODEL)");
    s2s_set_threads(o->threads);
    s2s_status s = s2s_model_load(m, o->model);
    if (s == S2S_OK) s = s2s_state_new(st, *m);
    if (s != S2S_OK) {
        s2s_model_free(*m);
        *m = NULL;
        return s2s_cli_fail(s);
    }
    *p = s2s_decode_default_params(*m);
    if (o->batch) p->max_batch = o->batch;
    if (o->max_len) p->max_len = o->max_len;
    return S2S_EXIT_OK;
}
