// s2s probe scale | heads | equivariance: the attention lab's measurements
// (docs/attention-lab.md). The library measures (s2s/probe.h); this file
// reads sentences, decodes them with their attention maps and prints.
//
//   probe scale [-m MODEL [FILE]]     the scores' spread and softmax saturation, with and
//                                     without 1/sqrt(d_k): random Q, K or every head of a model
//   probe heads -m MODEL [FILE]       each head's distance, entropy, </s> share, 95% width, label
//   probe equivariance -m MODEL [FILE]  max |f(Px) - P f(x)| of the encoder, without and with
//                                     positions
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define CHUNK 32

// Map order of the tables: encoder, decoder self, cross (the network's).
static const s2s_attn_map MAPS[S2S_ATTN_MAP_COUNT] = {S2S_ATTN_MAP_ENC, S2S_ATTN_MAP_SELF,
                                                      S2S_ATTN_MAP_CROSS};
static const char *const MAP_NAMES[S2S_ATTN_MAP_COUNT] = {"cross", "self", "enc"};

typedef struct lab {
    const char *cmd;
    const s2s_cmd_spec *spec;
    s2s_decode_opts o;
    s2s_model *m;
    s2s_state *st;
    s2s_decode_params p;
    const char *path;  // FILE, or NULL: stdin
    bool json;
    unsigned long long seed;
    int rows;  // probe scale without a model: queries and keys
    s2s_lines in;
    s2s_attn_probe *probe;
} lab;

// ---- options ----

static const s2s_opt scale_opts[] = {
    {.name = "--json", .help = "one JSON object per row"},
    {.name = "--rows", .value = "N", .help = "without a model: queries and keys per d_k",
     .def = "256"},
    {0},
};
static const s2s_opt heads_opts[] = {
    {.name = "--json", .help = "one JSON object per row"},
    {0},
};

static const s2s_cmd_spec scale_spec = {
    "probe scale", "s2s probe scale [-m MODEL [FILE]] [OPTIONS]",
    "Why attention divides its scores by sqrt(d_k). Without a model: for d_k 32, 64, 128\n"
    "and 256, random Q and K of n rows (N(0, 1), --seed S, default 1), the std of the\n"
    "scores QK^T with and without the scale, and the softmax's largest weight and entropy\n"
    "(nats) each way. With a model: the same for every layer and head of each map (enc,\n"
    "self, cross) on the greedy translations of FILE's sentences (stdin without FILE),\n"
    "the scores recovered from the weights (d_k: the head width). docs/attention-lab.md.",
    scale_opts, /*decode=*/true};

static const s2s_cmd_spec heads_spec = {
    "probe heads", "s2s probe heads -m MODEL [FILE] [OPTIONS]",
    "Each head's pattern on the greedy translations of FILE's sentences (stdin without\n"
    "FILE), for every layer of each map (enc, self, cross): the mean distance |i - j|, the\n"
    "entropy (nats), the share on </s> (<s> in self), the keys holding 95% of the weight,\n"
    "the shares on i - 1 and i + 1, and a label, the first rule that holds:\n"
    "  </s>      share on </s> (<s>) >= 0.5\n"
    "  previous  share on key i - 1 >= 0.5\n"
    "  next      share on key i + 1 >= 0.5\n"
    "  local     share on |i - j| <= 1 >= 0.6, and >= twice what uniform weights put there\n"
    "  content   none of these. docs/attention-lab.md.",
    heads_opts, /*decode=*/true};

static const s2s_cmd_spec equi_spec = {
    "probe equivariance", "s2s probe equivariance -m MODEL [FILE] [OPTIONS]",
    "For each sentence of FILE (stdin without FILE): the encoder (every layer and the\n"
    "final norm) on the tokens and </s>, and on them permuted at random (--seed S,\n"
    "default 1), without and with the positional encoding; prints max |f(Px) - P f(x)|\n"
    "each way and max |f(x)|. Without positions self-attention commutes with P (a\n"
    "rounding error); positions break it. A model with local, block or strided encoder\n"
    "heads is refused (exit 2): they see keys by position. docs/attention-lab.md.",
    heads_opts, /*decode=*/true};

static int parse(lab *b, int argc, char **argv, s2s_args *args) {
    int rc = s2s_args_parse(b->spec, argc, argv, args);
    if (rc != S2S_EXIT_OK || args->help) return rc;
    for (int k = 0; k < args->n_opts; k++) {
        const s2s_arg *x = &args->opts[k];
        int r = s2s_cli_decode_arg(b->cmd, &b->o, x);
        if (r < 0) return S2S_EXIT_USAGE;
        if (r) continue;
        if (s2s_arg_is(x, "--json")) b->json = true;
        else if (s2s_arg_is(x, "--rows") &&
                 !s2s_cli_int(b->cmd, "--rows", x->value, 2, 4096, &b->rows))
            return S2S_EXIT_USAGE;
    }
    const char *seed = s2s_cli_decode_value(&b->o, "decode.seed");
    char *end = NULL;
    if (seed) b->seed = strtoull(seed, &end, 10);
    if (seed && (*seed == '-' || end == seed || *end))
        return s2s_cli_usage_error(b->cmd, "--seed '%s': not a number from 0", seed);
    if (args->n_pos > 1)
        return s2s_cli_usage_error(b->cmd, "unexpected argument '%s'", args->pos[1]);
    if (args->n_pos == 1) b->path = args->pos[0];
    if (b->path && !b->o.model)
        return s2s_cli_usage_error(b->cmd, "FILE needs a model (use -m MODEL)");
    return S2S_EXIT_OK;
}

// ---- sentences in, maps out ----

static int open_model(lab *b) {
    int rc = s2s_cli_open(b->cmd, &b->o, &b->m, &b->st, &b->p);
    if (rc != S2S_EXIT_OK) return rc;
    b->p.decode.beam_size = b->p.decode.n_best = 1;
    b->p.decode.sampling_topk = 1;
    b->p.decode.temperature = 0.0f;
    b->p.want_attention = b->p.want_self_attention = true;
    return s2s_lines_open(&b->in, b->cmd, b->path);
}

// Translates n sources greedily and adds their maps to the probe.
static int add_chunk(lab *b, s2s_tokens *src, int n) {
    if (!n) return S2S_EXIT_OK;
    s2s_hypothesis hyps[CHUNK] = {0};
    const int *ids[CHUNK];
    int len[CHUNK];
    static const int none[1] = {0};
    for (int k = 0; k < n; k++) ids[k] = src[k].ids ? src[k].ids : none, len[k] = src[k].n;
    s2s_status st = s2s_translate(b->st, &b->p, ids, len, n, hyps);
    for (int k = 0; k < n && st == S2S_OK; k++) st = s2s_attn_probe_add(b->probe, &hyps[k]);
    for (int k = 0; k < n; k++) {
        s2s_hypothesis_free(&hyps[k]);
        s2s_tokens_free(&src[k]);
    }
    return st == S2S_OK ? S2S_EXIT_OK : s2s_cli_fail(st);
}

// Reads every line of the input into the probe (bad lines skipped, with a
// warning). Returns an exit code.
static int read_maps(lab *b) {
    s2s_status st = s2s_attn_probe_new(&b->probe, b->m);
    if (st != S2S_OK) return s2s_cli_fail(st);
    s2s_tokens src[CHUNK] = {0};
    int n = 0, rc = S2S_EXIT_OK, max_tokens = s2s_cli_max_tokens(b->m);
    while (rc == S2S_EXIT_OK && s2s_lines_next(&b->in)) {
        if (!s2s_lines_check(&b->in)) continue;
        bool cut = false;
        rc = s2s_lines_tokenize(&b->in, b->in.line, s2s_model_src_vocab(b->m), b->in.text,
                                max_tokens, &src[n], &cut);
        if (rc == S2S_EXIT_WARNINGS) {
            s2s_tokens_free(&src[n]);
            rc = S2S_EXIT_OK;
            continue;
        }
        if (rc == S2S_EXIT_OK && ++n == CHUNK) rc = add_chunk(b, src, n), n = 0;
    }
    if (rc == S2S_EXIT_OK) rc = add_chunk(b, src, n);
    for (int k = 0; k < CHUNK; k++) s2s_tokens_free(&src[k]);
    if (rc == S2S_EXIT_OK && b->in.failed) rc = b->in.failed;
    if (rc == S2S_EXIT_OK && !s2s_attn_probe_has(b->probe, S2S_ATTN_MAP_CROSS))
        rc = s2s_cli_usage_error(b->cmd, "%s: no sentence to measure", b->in.name);
    return rc;
}

// Calls row(b, map, layer, head) for every plane, in the tables' order.
static int each_plane(lab *b, int (*row)(lab *, s2s_attn_map, int, int)) {
    const s2s_model_config *mc = &s2s_model_get_config(b->m)->model;
    int rc = S2S_EXIT_OK;
    for (int k = 0; k < S2S_ATTN_MAP_COUNT && rc == S2S_EXIT_OK; k++) {
        int L = MAPS[k] == S2S_ATTN_MAP_ENC ? mc->encoder_layers : mc->decoder_layers;
        for (int l = 0; l < L && rc == S2S_EXIT_OK; l++)
            for (int h = 0; h < mc->heads && rc == S2S_EXIT_OK; h++) rc = row(b, MAPS[k], l, h);
    }
    return rc;
}

static json_t *json_plane(s2s_attn_map map, int layer, int head) {
    json_t *o = json_object();
    json_object_set_new(o, "map", json_string(MAP_NAMES[map]));
    json_object_set_new(o, "layer", json_integer(layer));
    json_object_set_new(o, "head", json_integer(head));
    return o;
}

// ---- probe scale ----

// The six figures of r into o (JSON) or as text.
static void scale_figures(json_t *o, const s2s_scale_stats *r) {
    if (!o) {
        printf("%5d  %8.3f %7.4f %8.4f   %8.3f %7.4f %8.4f", r->d_k, r->std_unscaled,
               r->max_weight_unscaled, r->entropy_unscaled, r->std_scaled, r->max_weight_scaled,
               r->entropy_scaled);
        return;
    }
    json_object_set_new(o, "d_k", json_integer(r->d_k));
    json_object_set_new(o, "std_unscaled", json_real(r->std_unscaled));
    json_object_set_new(o, "std_scaled", json_real(r->std_scaled));
    json_object_set_new(o, "max_weight_unscaled", json_real(r->max_weight_unscaled));
    json_object_set_new(o, "max_weight_scaled", json_real(r->max_weight_scaled));
    json_object_set_new(o, "entropy_unscaled", json_real(r->entropy_unscaled));
    json_object_set_new(o, "entropy_scaled", json_real(r->entropy_scaled));
    json_object_set_new(o, "rows", json_integer(r->rows));
}

// Over the columns of scale_figures: unscaled, then scaled.
static const char SCALE_HEAD[] = "    Q.K^T                       Q.K^T / sqrt(d_k)";
static const char SCALE_COLS[] = "  d_k       std   max w  entropy        std   max w  entropy";

static int scale_random(lab *b) {
    static const int DK[] = {32, 64, 128, 256};
    if (!b->json)
        printf("# random Q, K: %d queries x %d keys, N(0, 1), seed %llu; uniform entropy ln %d = "
               "%.4f\n       %s\n%s\n", b->rows, b->rows, b->seed, b->rows, log((double)b->rows),
               SCALE_HEAD, SCALE_COLS);
    for (size_t k = 0; k < sizeof DK / sizeof *DK; k++) {
        s2s_scale_stats r;
        s2s_status st = s2s_scale_random(&r, DK[k], b->rows, b->seed);
        if (st != S2S_OK) return s2s_cli_fail(st);
        json_t *o = b->json ? json_object() : NULL;
        scale_figures(o, &r);
        if (o && s2s_cli_print_json(o, 6) != S2S_EXIT_OK) return S2S_EXIT_FAILURE;
        if (!o) putchar('\n');
    }
    return S2S_EXIT_OK;
}

static int scale_row(lab *b, s2s_attn_map map, int layer, int head) {
    s2s_scale_stats r;
    if (!s2s_attn_probe_has(b->probe, map)) return S2S_EXIT_OK;
    bool softmax = s2s_attn_probe_scale(b->probe, map, layer, head, &r);
    if (b->json) {
        json_t *o = json_plane(map, layer, head);
        if (softmax) scale_figures(o, &r);
        json_object_set_new(o, "underflow_rows", json_integer(r.underflow_rows));
        json_object_set_new(o, "softmax", json_boolean(softmax));
        return s2s_cli_print_json(o, 6);
    }
    printf("%-5s %5d %4d", MAP_NAMES[map], layer, head);
    if (!softmax) printf("  (linear: no softmax)\n");
    else {
        scale_figures(NULL, &r);
        printf("  %7lld %9lld\n", r.rows, r.underflow_rows);
    }
    return S2S_EXIT_OK;
}

static int scale_model(lab *b) {
    int rc = read_maps(b);
    if (rc != S2S_EXIT_OK) return rc;
    if (!b->json)
        printf("# scores of every head on the greedy translations of %s (recovered from the "
               "weights: log w = QK^T/sqrt(d_k) - const)\n                 %s\nmap   layer "
               "head%s     rows underflow\n", b->in.name, SCALE_HEAD, SCALE_COLS);
    return each_plane(b, scale_row);
}

// ---- probe heads ----

static int heads_row(lab *b, s2s_attn_map map, int layer, int head) {
    s2s_head_stats h;
    if (!s2s_attn_probe_has(b->probe, map)) return S2S_EXIT_OK;
    s2s_attn_probe_head(b->probe, map, layer, head, &h);
    s2s_head_pattern pat = s2s_model_head_pattern(b->m, map, layer, head);
    char pname[48];
    s2s_head_pattern_text(&pat, pname, sizeof pname);
    if (!b->json) {
        char prev[16] = "     -", next[16] = "     -";  // no row sees that key
        if (!isnan(h.previous)) snprintf(prev, sizeof prev, "%6.3f", h.previous);
        if (!isnan(h.next)) snprintf(next, sizeof next, "%6.3f", h.next);
        printf("%-5s %5d %4d  %8.3f %7.3f %6.3f %7.2f %s %s %6.3f  %-8s %s\n", MAP_NAMES[map],
               layer, head, h.distance, h.entropy, h.special, h.width95, prev, next, h.local,
               s2s_head_label_name(h.label), pname);
        return S2S_EXIT_OK;
    }
    json_t *o = json_plane(map, layer, head);
    json_object_set_new(o, "distance", json_real(h.distance));
    json_object_set_new(o, "entropy", json_real(h.entropy));
    json_object_set_new(o, "eos_share", json_real(h.special));
    json_object_set_new(o, "width95", json_real(h.width95));
    json_object_set_new(o, "previous", isnan(h.previous) ? json_null() : json_real(h.previous));
    json_object_set_new(o, "next", isnan(h.next) ? json_null() : json_real(h.next));
    json_object_set_new(o, "local", json_real(h.local));
    json_object_set_new(o, "local_uniform", json_real(h.local_uniform));
    json_object_set_new(o, "label", json_string(s2s_head_label_name(h.label)));
    json_object_set_new(o, "pattern", json_string(pname));
    json_object_set_new(o, "rows", json_integer(h.rows));
    return s2s_cli_print_json(o, 6);
}

static int heads_run(lab *b) {
    int rc = read_maps(b);
    if (rc != S2S_EXIT_OK) return rc;
    if (!b->json)
        printf("# heads on the greedy translations of %s\nmap   layer head  distance entropy  "
               "</s>  width95   prev   next  local  label    pattern\n", b->in.name);
    return each_plane(b, heads_row);
}

// ---- probe equivariance ----

static int equi_line(lab *b, const s2s_tokens *t, double *worst) {
    int *perm = malloc(((size_t)t->n + 1) * sizeof *perm);
    if (!perm) return s2s_cli_fail(S2S_ERR_NOMEM);
    s2s_equivariance e;
    s2s_status st = s2s_probe_equivariance(b->st, t->ids, t->n, b->seed, perm, &e);
    int rc = st == S2S_OK ? S2S_EXIT_OK : s2s_cli_fail(st);
    if (rc == S2S_EXIT_OK && b->json) {
        json_t *o = json_object(), *pj = json_array();
        json_object_set_new(o, "line", json_integer(b->in.line));
        json_object_set_new(o, "rows", json_integer(e.n));
        for (int i = 0; i < e.n; i++) json_array_append_new(pj, json_integer(perm[i]));
        json_object_set_new(o, "permutation", pj);
        json_object_set_new(o, "without_positions", json_real(e.without_positions));
        json_object_set_new(o, "with_positions", json_real(e.with_positions));
        json_object_set_new(o, "largest", json_real(e.largest));
        rc = s2s_cli_print_json(o, 6);
    } else if (rc == S2S_EXIT_OK) {
        printf("%5d %5d  %17.3e %15.3e %11.3f\n", b->in.line, e.n, e.without_positions,
               e.with_positions, e.largest);
    }
    if (rc == S2S_EXIT_OK) {
        worst[0] = e.without_positions > worst[0] ? e.without_positions : worst[0];
        worst[1] = e.with_positions > worst[1] ? e.with_positions : worst[1];
    }
    free(perm);
    return rc;
}

static int equi_run(lab *b) {
    double worst[2] = {0, 0};
    int rc = S2S_EXIT_OK, lines = 0, max_tokens = s2s_cli_max_tokens(b->m);
    if (!b->json)
        printf("# encoder output, seed %llu: max |f(Px) - P f(x)| without and with positions\n"
               " line  rows  without positions  with positions  max |f(x)|\n", b->seed);
    s2s_tokens t = {0};
    while (rc == S2S_EXIT_OK && s2s_lines_next(&b->in)) {
        bool cut = false;
        if (!s2s_lines_check(&b->in)) continue;
        rc = s2s_lines_tokenize(&b->in, b->in.line, s2s_model_src_vocab(b->m), b->in.text,
                                max_tokens, &t, &cut);
        if (rc == S2S_EXIT_OK && t.n == 0) s2s_lines_skip(&b->in, b->in.line, "no source token");
        else if (rc == S2S_EXIT_OK) rc = equi_line(b, &t, worst), lines++;
        if (rc == S2S_EXIT_WARNINGS) rc = S2S_EXIT_OK;
    }
    s2s_tokens_free(&t);
    if (rc == S2S_EXIT_OK && b->in.failed) rc = b->in.failed;
    if (rc == S2S_EXIT_OK && !lines)
        return s2s_cli_usage_error(b->cmd, "%s: no sentence to permute", b->in.name);
    if (rc == S2S_EXIT_OK && !b->json)
        printf("# largest over %d sentences: %.3e without positions, %.3e with\n", lines,
               worst[0], worst[1]);
    return rc;
}

// ---- the commands ----

static int run(const char *cmd, const s2s_cmd_spec *spec, int (*body)(lab *), int argc,
               char **argv) {
    lab *b = calloc(1, sizeof *b);
    if (!b) return S2S_EXIT_FAILURE;
    *b = (lab){.cmd = cmd, .spec = spec, .o = s2s_cli_decode_opts(), .seed = 1, .rows = 256};
    b->in = (s2s_lines){.cmd = cmd, .name = "<stdin>"};
    s2s_cli_set_command(cmd);
    s2s_args args;
    int rc = parse(b, argc, argv, &args);
    if (rc == S2S_EXIT_OK && !args.help) {
        if (spec == &scale_spec && !b->o.model) rc = scale_random(b);
        else if ((rc = open_model(b)) == S2S_EXIT_OK) rc = body(b);
        rc = s2s_lines_exit(&b->in, rc);
    }
    s2s_attn_probe_free(b->probe);
    s2s_lines_close(&b->in);
    s2s_state_free(b->st);
    s2s_model_free(b->m);
    s2s_args_free(&args);
    free(b);
    return rc;
}

int s2s_cmd_probe_scale(int argc, char **argv) {
    return run("probe scale", &scale_spec, scale_model, argc, argv);
}

int s2s_cmd_probe_heads(int argc, char **argv) {
    return run("probe heads", &heads_spec, heads_run, argc, argv);
}

int s2s_cmd_probe_equivariance(int argc, char **argv) {
    return run("probe equivariance", &equi_spec, equi_run, argc, argv);
}
