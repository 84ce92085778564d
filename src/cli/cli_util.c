// Helpers shared by the commands: errors, option values, line reading.
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
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

int s2s_cli_print_json(json_t *o, int precision) {
    char *out = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(precision));
    json_decref(o);
    if (!out) return S2S_EXIT_FAILURE;
    puts(out);
    free(out);
    return S2S_EXIT_OK;
}

bool s2s_cli_getline(char **buf, size_t *cap, FILE *f) {
    ssize_t n = getline(buf, cap, f);
    if (n < 0) return false;
    while (n > 0 && ((*buf)[n - 1] == '\n' || (*buf)[n - 1] == '\r')) (*buf)[--n] = '\0';
    return true;
}

s2s_decode_opts s2s_cli_decode_opts(void) {
    return (s2s_decode_opts){
        .threads = -1, .batch = -1, .max_len = -1, .beam = -1, .n_best = -1, .min_len = -1,
        .topk = -1, .length_penalty = NAN, .max_len_ratio = NAN, .topp = NAN,
        .temperature = NAN, .seed = -1,
    };
}

static bool cli_float(const char *cmd, const char *opt, const char *text, double *out) {
    char *end;
    double v = text ? strtod(text, &end) : 0;
    if (!text || !*text || *end || !isfinite(v)) {
        s2s_cli_usage_error(cmd, "%s needs a number, got '%s'", opt, text ? text : "");
        return false;
    }
    *out = v;
    return true;
}

int s2s_cli_decode_opt(const char *cmd, s2s_decode_opts *o, int argc, char **argv, int *i) {
    static const struct {
        const char *name;
        size_t offset;
        int min;  // -1: a float option
    } opts[] = {
        {"--threads", offsetof(s2s_decode_opts, threads), 1},
        {"--batch", offsetof(s2s_decode_opts, batch), 1},
        {"--max-len", offsetof(s2s_decode_opts, max_len), 1},
        {"--beam", offsetof(s2s_decode_opts, beam), 1},
        {"--n-best", offsetof(s2s_decode_opts, n_best), 1},
        {"--min-len", offsetof(s2s_decode_opts, min_len), 0},
        {"--sampling-topk", offsetof(s2s_decode_opts, topk), 0},
        {"--length-penalty", offsetof(s2s_decode_opts, length_penalty), -1},
        {"--max-len-ratio", offsetof(s2s_decode_opts, max_len_ratio), -1},
        {"--sampling-topp", offsetof(s2s_decode_opts, topp), -1},
        {"--temperature", offsetof(s2s_decode_opts, temperature), -1},
    };
    const char *a = argv[*i];
    const char *val = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
        if (!val) return s2s_cli_usage_error(cmd, "%s needs a model file", a), -1;
        o->model = val;
        (*i)++;
        return 1;
    }
    if (!strcmp(a, "--config") || !strcmp(a, "--set")) {
        if (!val) return s2s_cli_usage_error(cmd, "%s needs a value", a), -1;
        if (a[2] == 'c') {
            o->config = val;
        } else {
            if (o->n_sets == 64) return s2s_cli_usage_error(cmd, "too many --set options"), -1;
            o->sets[o->n_sets++] = val;
        }
        (*i)++;
        return 1;
    }
    if (!strcmp(a, "--seed")) {
        int seed;
        if (!s2s_cli_int(cmd, a, val, 0, &seed)) return -1;
        o->seed = seed;
        (*i)++;
        return 1;
    }
    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
        if (strcmp(a, opts[k].name)) continue;
        char *field = (char *)o + opts[k].offset;
        bool ok = opts[k].min >= 0 ? s2s_cli_int(cmd, a, val, opts[k].min, (int *)field)
                                   : cli_float(cmd, a, val, (double *)field);
        if (!ok) return -1;
        (*i)++;
        return 1;
    }
    return 0;
}

int s2s_cli_open(const char *cmd, const s2s_decode_opts *o, s2s_model **m, s2s_state **st,
                 s2s_decode_params *p) {
    *m = NULL;
    *st = NULL;
    if (!o->model) return s2s_cli_usage_error(cmd, "no model given (use -m MODEL)");
    s2s_set_threads(o->threads > 0 ? o->threads : 0);
    s2s_status s = s2s_model_load(m, o->model);
    if (s == S2S_OK) s = s2s_state_new(st, *m);
    if (s != S2S_OK) {
        s2s_model_free(*m);
        *m = NULL;
        return s2s_cli_fail(s);
    }
    *p = s2s_decode_default_params(*m);
    if (o->config || o->n_sets) {
        // The YAML goes over the model's own config: keys it leaves out keep
        // the model's values, and a model: section must match the weights.
        s2s_config cfg = *s2s_model_get_config(*m);
        const char *name = o->config ? o->config : "--set";
        s = o->config ? s2s_config_load_file_set(&cfg, o->config, o->sets, o->n_sets) : S2S_OK;
        for (int k = 0; k < o->n_sets && !o->config && s == S2S_OK; k++)
            s = s2s_config_set(&cfg, o->sets[k]);
        if (s == S2S_OK) s = s2s_config_validate(&cfg, name);
        if (s == S2S_OK) s = s2s_config_check_arch(s2s_model_get_config(*m), o->model, &cfg, name);
        if (s != S2S_OK) {
            s2s_state_free(*st);
            s2s_model_free(*m);
            *m = NULL, *st = NULL;
            return s2s_cli_fail(s);
        }
        *p = s2s_decode_params_from_config(&cfg);
    }
    if (o->batch > 0) p->max_batch = o->batch;
    if (o->max_len > 0) p->max_len = o->max_len;
    if (o->beam > 0) p->beam_size = o->beam;
    if (o->n_best > 0) p->n_best = o->n_best;
    if (o->min_len >= 0) p->min_len = o->min_len;
    if (o->topk >= 0) p->sampling_topk = o->topk;
    if (!isnan(o->length_penalty)) p->length_penalty = (float)o->length_penalty;
    if (!isnan(o->max_len_ratio)) p->max_len_ratio = (float)o->max_len_ratio;
    if (!isnan(o->topp)) p->sampling_topp = (float)o->topp;
    if (!isnan(o->temperature)) p->temperature = (float)o->temperature;
    if (o->seed >= 0) p->seed = (unsigned long long)o->seed;
    if (p->n_best > p->beam_size && o->beam <= 0) p->beam_size = p->n_best;
    return S2S_EXIT_OK;
}
