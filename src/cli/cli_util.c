// Helpers shared by the commands: errors, option values, line reading.
#include <errno.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

// errno of the first failed stdout write seen; stdio itself keeps only the
// error flag, so it is caught at each flush.
static int stdout_errno;

bool s2s_cli_flush_stdout(void) {
    if (fflush(stdout) != 0 && !stdout_errno) stdout_errno = errno;
    return !ferror(stdout);
}

int s2s_cli_stdout_errno(void) { return stdout_errno; }

// ---- error messages: one prefix, "s2s CMD: " (README "Exit codes and errors") ----

static const char *command;  // set by main before the command runs

void s2s_cli_set_command(const char *name) { command = name; }

// A line of only blanks and one '^': the caret under a quoted source line.
static bool caret_line(const char *l, size_t n) {
    size_t i = 0;
    while (i < n && (l[i] == ' ' || l[i] == '\t')) i++;
    return i + 1 == n && l[i] == '^';
}

void s2s_cli_error(const char *msg) {
    const char *line[3];
    size_t len[3];
    const char *p = msg;
    // Each problem line gets the prefix; a quoted source line and its caret
    // (the two lines after a problem, as config errors have them) stay as
    // they are, so that the caret still points.
    while (*p) {
        int n = 0;
        for (const char *q = p; n < 3 && *q; n++) {
            const char *nl = strchr(q, '\n');
            line[n] = q;
            len[n] = nl ? (size_t)(nl - q) : strlen(q);
            q = nl ? nl + 1 : q + len[n];
        }
        int take = n == 3 && caret_line(line[2], len[2]) ? 3 : 1;
        fprintf(stderr, "s2s%s%s: %.*s\n", command ? " " : "", command ? command : "",
                (int)len[0], line[0]);
        for (int k = 1; k < take; k++) fprintf(stderr, "%.*s\n", (int)len[k], line[k]);
        p = line[take - 1] + len[take - 1];
        if (*p == '\n') p++;
    }
}

int s2s_cli_fail(s2s_status st) {
    const char *msg = s2s_last_error();  // empty when the failure was not the library's
    s2s_cli_error(*msg ? msg : s2s_status_str(st));
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

bool s2s_cli_int(const char *cmd, const char *opt, const char *text, int min, int max,
                 int *out) {
    char *end;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || !*text || *end || errno == ERANGE || v < min || v > max) {
        s2s_cli_usage_error(cmd, "%s needs an integer from %d to %d, got '%s'", opt, min, max,
                            text ? text : "");
        return false;
    }
    *out = (int)v;
    return true;
}

int s2s_cli_stdout_width(void) {
    const char *env = getenv("COLUMNS");
    char *end;
    long n = env ? strtol(env, &end, 10) : 0;
    if (env && end != env && !*end && n >= 20 && n <= 100000) return (int)n;
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
        return ws.ws_col;
    return 80;
}

int s2s_cli_print_json(json_t *o, int precision) {
    char *out = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(precision));
    json_decref(o);
    if (!out) return S2S_EXIT_FAILURE;
    puts(out);
    free(out);
    return S2S_EXIT_OK;
}

int s2s_cli_check_output(const char *path) {
    if (s2s_check_writable(path) == S2S_OK) return S2S_EXIT_OK;
    s2s_cli_error(s2s_last_error());
    return S2S_EXIT_FAILURE;
}

// ---- input lines ----

int s2s_lines_open(s2s_lines *r, const char *cmd, const char *path) {
    *r = (s2s_lines){.cmd = cmd, .name = "<stdin>", .f = stdin};
    if (!path || !strcmp(path, "-")) return S2S_EXIT_OK;
    r->name = path;
    r->f = fopen(path, "rb");
    if (!r->f) return s2s_cli_usage_error(cmd, "%s: cannot open: %s", path, strerror(errno));
    return S2S_EXIT_OK;
}

bool s2s_lines_next(s2s_lines *r) {
    if (r->failed) return false;
    int got = s2s_read_line(r->f, &r->text, &r->cap, S2S_LINE_MAX_BYTES, &r->len, &r->too_long);
    if (got == -2) {  // a line with no end: bad input, which stops the command
        fprintf(stderr, "s2s %s: %s:%d: %s\n", r->cmd, r->name, r->line + 1, s2s_last_error());
        r->failed = S2S_EXIT_USAGE;
    } else if (got < 0) {
        fprintf(stderr, "s2s %s: %s: after line %d: %s\n", r->cmd, r->name, r->line, s2s_last_error());
        r->failed = S2S_EXIT_FAILURE;
    }
    if (got <= 0) return false;
    r->line++;
    return true;
}

bool s2s_lines_skip(s2s_lines *r, int line, const char *reason) {
    fprintf(stderr, "s2s %s: %s:%d: skipped: %s\n", r->cmd, r->name, line, reason);
    r->warnings++;
    return false;
}

bool s2s_lines_check(s2s_lines *r) {
    if (r->too_long) {
        char why[64];
        snprintf(why, sizeof why, "line longer than %d bytes", S2S_LINE_MAX_BYTES);
        return s2s_lines_skip(r, r->line, why);
    }
    return strlen(r->text) == r->len || s2s_lines_skip(r, r->line, "NUL byte in the line");
}

bool s2s_lines_split_tsv(s2s_lines *r, char **target) {
    char *third;  // a third column (alignments) is ignored
    if (r->too_long) return s2s_lines_check(r);
    return s2s_tsv_split(r->text, r->len, NULL, 0, target, &third) == S2S_OK ||
           s2s_lines_skip(r, r->line, s2s_last_error());
}

int s2s_lines_tokenize(s2s_lines *r, int line, const s2s_vocab *v, const char *text,
                       int max_tokens, s2s_tokens *t, bool *cut) {
    s2s_status st = s2s_tokenize(v, text, t);
    if (st == S2S_ERR_INVALID) {  // invalid UTF-8: the tokenizer says where
        s2s_lines_skip(r, line, s2s_last_error());
        return S2S_EXIT_WARNINGS;
    }
    if (st != S2S_OK) return s2s_cli_fail(st);
    if (t->n > max_tokens) {
        t->n = max_tokens;
        if (!*cut) {
            fprintf(stderr, "s2s %s: %s:%d: cut to %d tokens (the model takes at most %d)\n",
                    r->cmd, r->name, line, max_tokens, max_tokens);
            r->warnings++;
        }
        *cut = true;
    }
    return S2S_EXIT_OK;
}

int s2s_lines_exit(const s2s_lines *r, int rc) {
    if (r->failed) return r->failed;
    return rc == S2S_EXIT_OK && r->warnings > 0 ? S2S_EXIT_WARNINGS : rc;
}

void s2s_lines_close(s2s_lines *r) {
    if (r->f && r->f != stdin) fclose(r->f);
    free(r->text);
    *r = (s2s_lines){0};
}

int s2s_cli_max_tokens(const s2s_model *m) { return s2s_model_get_config(m)->model.max_len - 1; }

// ---- decoding options ----

s2s_decode_opts s2s_cli_decode_opts(void) { return (s2s_decode_opts){0}; }

// The decoding options: the model and machine options, then each decoding
// flag with the schema key it overrides (--help shows the key and its
// default; s2s_cli_decode_arg sets it).
#define FLAG(name, value, key) {name, NULL, value, NULL, NULL, key, false}
const s2s_opt s2s_cli_decode_table[] = {
    {"--model", "-m", "MODEL", "the model file (required)", NULL, NULL, false},
    {"--config", NULL, "FILE", "decode options from a YAML config (its model: must match)",
     NULL, NULL, false},
    {"--set", NULL, "KEY=VALUE", "override one decode key (repeatable; in order)", NULL, NULL,
     false},
    {"--threads", NULL, "N", "matrix-product threads", "all cores", NULL, false},
    {"--batch", NULL, "N", "sentences decoded together", "32", NULL, false},
    FLAG("--beam", "N", "decode.beam_size"),
    FLAG("--n-best", "N", "decode.n_best"),
    FLAG("--max-len", "N", "decode.max_len"),
    FLAG("--min-len", "N", "decode.min_len"),
    FLAG("--max-len-ratio", "X", "decode.max_len_ratio"),
    FLAG("--length-penalty", "X", "decode.length_penalty"),
    FLAG("--sampling-topk", "K", "decode.sampling_topk"),
    FLAG("--sampling-topp", "P", "decode.sampling_topp"),
    FLAG("--temperature", "X", "decode.temperature"),
    FLAG("--seed", "N", "decode.seed"),
    FLAG("--repetition-penalty", "X", "decode.repetition_penalty"),
    FLAG("--no-repeat-ngram-size", "N", "decode.no_repeat_ngram_size"),
    FLAG("--replace-unknowns", NULL, "decode.replace_unknowns"),
    FLAG("--compute-type", "TYPE", "decode.compute_type"),
    {0},
};
#undef FLAG

// "key=value" of an override, or NULL on out of memory. Caller frees.
static char *assignment(const s2s_decode_override *d) {
    if (!d->key) return strdup(d->text);
    size_t n = strlen(d->key) + strlen(d->text) + 2;
    char *a = malloc(n);
    if (a) snprintf(a, n, "%s=%s", d->key, d->text);
    return a;
}

// Prints the schema's message for an override, naming the flag it came
// from: "s2s translate: --beam 0 (decode.beam_size): 0 is out of range; ...".
static void override_error(const char *cmd, const s2s_decode_override *d) {
    const char *msg = s2s_last_error();
    if (!d->key) {
        fprintf(stderr, "s2s %s: %s\n", cmd, msg);
        return;
    }
    // The config names the override as "--set key=value: "; say the flag.
    const char *colon = strncmp(msg, "--set ", 6) == 0 ? strstr(msg, ": ") : NULL;
    fprintf(stderr, "s2s %s: %s %s (%s): %s\n", cmd, d->flag, d->text, d->key,
            colon ? colon + 2 : msg);
}

int s2s_cli_decode_arg(const char *cmd, s2s_decode_opts *o, const s2s_arg *x) {
    const char *a = x->opt->name, *val = x->value;
    const s2s_opt *d = s2s_cli_decode_table;
    while (d->name && d != x->opt) d++;
    if (!d->name) return 0;  // another table's option
    if (!strcmp(a, "--model")) {
        o->model = val;
        return 1;
    }
    if (!strcmp(a, "--threads") || !strcmp(a, "--batch"))
        return (a[2] == 't' ? s2s_cli_int(cmd, a, val, 1, S2S_CLI_MAX_THREADS, &o->threads)
                            : s2s_cli_int(cmd, a, val, 1, S2S_MAX_BATCH, &o->batch)) ? 1 : -1;
    if (!strcmp(a, "--config")) {
        o->config = val;
        return 1;
    }
    // a switch (--replace-unknowns) sets its key to true
    s2s_decode_override set = {.flag = a, .text = val ? val : "true", .key = d->key};
    if (o->n_sets == 64) return s2s_cli_usage_error(cmd, "too many decoding options"), -1;
    if (set.key) {  // a flag's value is checked now, before any model is read
        s2s_config scratch;
        s2s_config_default(&scratch);
        char *text = assignment(&set);
        s2s_status st = text ? s2s_config_set(&scratch, text) : S2S_ERR_NOMEM;
        free(text);
        if (st == S2S_ERR_NOMEM) return s2s_cli_usage_error(cmd, "out of memory"), -1;
        if (st != S2S_OK) return override_error(cmd, &set), -1;
    }
    o->sets[o->n_sets++] = set;
    return 1;
}

const char *s2s_cli_decode_value(const s2s_decode_opts *o, const char *key) {
    for (int k = o->n_sets - 1; k >= 0; k--)
        if (o->sets[k].key && !strcmp(o->sets[k].key, key)) return o->sets[k].text;
    return NULL;
}

// The model's config with o's --config and overrides applied, checked as a
// whole and against the model's architecture. Returns an exit code.
static int decode_config(const char *cmd, const s2s_decode_opts *o, const s2s_model *m,
                         s2s_config *cfg) {
    *cfg = *s2s_model_get_config(m);
    if (!o->config && !o->n_sets) return S2S_EXIT_OK;
    char *sets[64];
    int n = 0, rc = S2S_EXIT_OK;
    for (; n < o->n_sets; n++)
        if (!(sets[n] = assignment(&o->sets[n]))) break;
    s2s_status s = n < o->n_sets ? S2S_ERR_NOMEM : S2S_OK;
    // The YAML goes over the model's own config: keys it leaves out keep
    // the model's values, and a model: section must match the weights.
    if (s == S2S_OK && o->config)
        s = s2s_config_load_file_set(cfg, o->config, (const char *const *)sets, n);
    for (int k = 0; k < n && !o->config && s == S2S_OK; k++) {
        s = s2s_config_set(cfg, sets[k]);
        if (s != S2S_OK) rc = (override_error(cmd, &o->sets[k]), S2S_EXIT_USAGE);
    }
    const char *name = o->config ? o->config : "the options";
    if (s == S2S_OK) s = s2s_config_validate(cfg, name);
    if (s == S2S_OK) s = s2s_config_check_arch(s2s_model_get_config(m), o->model, cfg, name);
    for (int k = 0; k < n; k++) free(sets[k]);
    if (s != S2S_OK && rc == S2S_EXIT_OK) rc = s2s_cli_fail(s);
    return rc;
}

int s2s_cli_open(const char *cmd, const s2s_decode_opts *o, s2s_model **m, s2s_state **st,
                 s2s_decode_params *p) {
    *m = NULL;
    *st = NULL;
    if (!o->model) return s2s_cli_usage_error(cmd, "no model given (use -m MODEL)");
    s2s_set_threads(o->threads);
    s2s_status s = s2s_model_load(m, o->model);
    if (s == S2S_OK) s = s2s_state_new(st, *m);
    s2s_config cfg;
    int rc = s == S2S_OK ? decode_config(cmd, o, *m, &cfg) : s2s_cli_fail(s);
    if (rc != S2S_EXIT_OK) {
        s2s_state_free(*st);
        s2s_model_free(*m);
        *m = NULL, *st = NULL;
        return rc;
    }
    s = s2s_model_set_compute_type(*m, cfg.decode.compute_type);
    if (s != S2S_OK) {
        s2s_state_free(*st);
        s2s_model_free(*m);
        *m = NULL, *st = NULL;
        return s2s_cli_fail(s);
    }
    // n_best above beam_size raises the beam (s2s_decode_params_from_config).
    *p = s2s_decode_params_from_config(&cfg);
    if (o->batch > 0) p->max_batch = o->batch;
    return S2S_EXIT_OK;
}
