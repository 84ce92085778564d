// `s2s plot`: reading training logs (JSON lines, src/train/train_log.c)
// into series, by run (plot.h).
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/plot.h"

#define CMD "plot"

// ---- series and runs ----

static bool series_add(s2s_plot_series *s, double x, double y) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        double *nx = realloc(s->x, (size_t)cap * sizeof *nx);
        if (!nx) return false;
        s->x = nx;
        double *ny = realloc(s->y, (size_t)cap * sizeof *ny);
        if (!ny) return false;
        s->y = ny;
        s->cap = cap;
    }
    s->x[s->n] = x;
    s->y[s->n] = y;
    s->n++;
    return true;
}

static void series_free(s2s_plot_series *s) {
    free(s->x);
    free(s->y);
}

static void run_free(s2s_plot_run *r) {
    free(r->label);
    for (int q = 0; q < S2S_PLOT_COUNT; q++) series_free(&r->q[q]);
    for (int i = 0; i < r->n_norms; i++) {
        free(r->norms[i].key);
        series_free(&r->norms[i].s);
    }
    free(r->norms);
}

void s2s_plot_free(s2s_plot *p) {
    for (int i = 0; i < p->n_runs; i++) run_free(&p->runs[i]);
    free(p->runs);
    *p = (s2s_plot){0};
}

static s2s_plot_run *run_new(s2s_plot *p, const char *label) {
    if (p->n_runs == p->cap_runs) {
        int cap = p->cap_runs ? 2 * p->cap_runs : 4;
        s2s_plot_run *r = realloc(p->runs, (size_t)cap * sizeof *r);
        if (!r) return NULL;
        p->runs = r;
        p->cap_runs = cap;
    }
    s2s_plot_run *r = &p->runs[p->n_runs];
    *r = (s2s_plot_run){.label = strdup(label)};
    if (!r->label) return NULL;
    p->n_runs++;
    return r;
}

// The series of key in r, made when new (hint: where it was on the last
// line, as lines list the keys in one order). NULL when out of memory.
static s2s_plot_series *norm_series(s2s_plot_run *r, const char *key, int hint) {
    if (hint < r->n_norms && !strcmp(r->norms[hint].key, key)) return &r->norms[hint].s;
    for (int i = 0; i < r->n_norms; i++)
        if (!strcmp(r->norms[i].key, key)) return &r->norms[i].s;
    if (r->n_norms == r->cap_norms) {
        int cap = r->cap_norms ? 2 * r->cap_norms : 32;
        s2s_plot_norm *n = realloc(r->norms, (size_t)cap * sizeof *n);
        if (!n) return NULL;
        r->norms = n;
        r->cap_norms = cap;
    }
    s2s_plot_norm *n = &r->norms[r->n_norms];
    *n = (s2s_plot_norm){.key = strdup(key)};
    if (!n->key) return NULL;
    r->n_norms++;
    return &n->s;
}

// ---- one line ----

// A number field: its value, NAN for null (a non-finite value) or absent
// (*has false). False when it is something else.
static bool number_field(json_t *o, const char *key, double *v, bool *has) {
    json_t *x = json_object_get(o, key);
    *has = x != NULL;
    *v = json_is_number(x) ? json_number_value(x) : NAN;
    return !x || json_is_number(x) || json_is_null(x);
}

// Why line o is not a log line, into why; NULL when it is one.
static const char *line_problem(json_t *o, char *why, size_t n) {
    if (!json_is_object(o)) return "not a JSON object";
    json_t *step = json_object_get(o, "step");
    if (!json_is_integer(step) || json_integer_value(step) < 1 ||
        json_integer_value(step) > INT_MAX)
        return "no \"step\" (a positive integer)";
    static const char *const fields[] = {"loss", "lr", "grad_norm"};
    double v;
    bool has;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (!number_field(o, fields[i], &v, &has)) {
            snprintf(why, n, "\"%s\" is not a number", fields[i]);
            return why;
        }
    json_t *valid = json_object_get(o, "valid");
    if (valid && (!json_is_object(valid) || !number_field(valid, "loss", &v, &has) ||
                  !number_field(valid, "bleu", &v, &has)))
        return "\"valid\" is not an object with a numeric \"loss\" and \"bleu\"";
    json_t *norms = json_object_get(o, "grad_norms"), *x;
    const char *key;
    if (norms && !json_is_object(norms)) return "\"grad_norms\" is not an object";
    json_object_foreach(norms, key, x) {
        if (!json_is_number(x) && !json_is_null(x)) {
            snprintf(why, n, "\"grad_norms\": \"%.80s\" is not a number", key);
            return why;
        }
    }
    return NULL;
}

// Adds line o (checked by line_problem) to run r. False when out of memory.
static bool add_line(s2s_plot_run *r, json_t *o) {
    double x = (double)json_integer_value(json_object_get(o, "step")), v;
    bool has, ok = true;
    static const struct {
        s2s_plot_quantity q;
        const char *key;
        bool in_valid;
    } fields[] = {{S2S_PLOT_LOSS, "loss", false},     {S2S_PLOT_DEV_LOSS, "loss", true},
                  {S2S_PLOT_BLEU, "bleu", true},      {S2S_PLOT_LR, "lr", false},
                  {S2S_PLOT_GRAD_NORM, "grad_norm", false}};
    json_t *valid = json_object_get(o, "valid");
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        json_t *from = fields[i].in_valid ? valid : o;
        if (from && number_field(from, fields[i].key, &v, &has) && has)
            ok = ok && series_add(&r->q[fields[i].q], x, v);
    }
    json_t *norms = json_object_get(o, "grad_norms"), *y;
    const char *key;
    int k = 0;
    json_object_foreach(norms, key, y) {
        s2s_plot_series *s = ok ? norm_series(r, key, k++) : NULL;
        ok = s && series_add(s, x, json_is_number(y) ? json_number_value(y) : NAN);
    }
    r->last_step = (int)x;
    return ok;
}

// ---- a log ----

// The runs first.. of p, a log's: relabelled "label (run K)" when several,
// or cut to the last when last_only. False when out of memory.
static bool name_runs(s2s_plot *p, int first, const char *label, bool last_only) {
    int n = p->n_runs - first;
    if (n < 2) return true;
    if (last_only) {
        for (int i = first; i < p->n_runs - 1; i++) run_free(&p->runs[i]);
        p->runs[first] = p->runs[p->n_runs - 1];
        p->n_runs = first + 1;
        return true;
    }
    for (int i = 0; i < n; i++) {
        size_t len = strlen(label) + 32;
        char *name = malloc(len);
        if (!name) return false;
        snprintf(name, len, "%s (run %d)", label, i + 1);
        free(p->runs[first + i].label);
        p->runs[first + i].label = name;
    }
    return true;
}

int s2s_plot_read(s2s_plot *p, const char *path, const char *label, bool last_only) {
    s2s_lines in;
    int rc = s2s_lines_open(&in, CMD, path);
    if (rc != S2S_EXIT_OK) return rc;
    int first = p->n_runs, lines = 0;
    s2s_plot_run *run = NULL;
    while (rc == S2S_EXIT_OK && s2s_lines_next(&in)) {
        if (!s2s_lines_check(&in)) continue;
        json_error_t err;
        json_t *o = json_loadb(in.text, in.len, 0, &err);
        char why[200];
        const char *problem = line_problem(o, why, sizeof why);
        if (!o) {
            snprintf(why, sizeof why, "not JSON: %s (column %d)", err.text, err.column);
            problem = why;
        }
        if (problem) {
            s2s_lines_skip(&in, in.line, problem);
        } else {
            // A step not above the last one starts a new run (train_log.c).
            if (!run || json_integer_value(json_object_get(o, "step")) <= run->last_step)
                run = run_new(p, label);
            if (!run || !add_line(run, o)) rc = S2S_EXIT_FAILURE;
            lines++;
        }
        json_decref(o);
    }
    if (rc == S2S_EXIT_OK && !name_runs(p, first, label, last_only)) rc = S2S_EXIT_FAILURE;
    if (rc == S2S_EXIT_FAILURE) fprintf(stderr, "s2s %s: %s: out of memory\n", CMD, path);
    rc = s2s_lines_exit(&in, rc);
    if (rc != S2S_EXIT_FAILURE && !in.failed && lines == 0)
        rc = s2s_cli_usage_error(CMD, "%s: no log lines in it (%s)", path,
                                 in.line ? "every line skipped" : "the file is empty");
    s2s_lines_close(&in);
    return rc;
}
