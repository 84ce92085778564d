// s2s probe coref -m MODEL GOLD.tsv: does encoder self-attention find a
// pronoun's antecedent?
//
// Reads source<TAB>target<TAB>alignment<TAB>coreference lines (the corpus
// format, docs/toy-corpus.md), scores each source with the model's encoder
// and counts, for every encoder layer and head and their averages, how
// often the pronoun's row peaks at the gold antecedent (s2s_plane_table).
// --calibrate stores the best plane in the model (s2s.coref_layer /
// _head), which `s2s align --map enc` and `--html` then open on; --show
// prints one sentence's pronoun rows. docs/alignment.md describes it.
#include <stdlib.h>
#include <string.h>

#include "cli/align_output.h"
#include "cli/cli.h"
#include "tools/heatmap.h"
#include "tools/map_json.h"

#define CHUNK 64
#define CMD "probe coref"

typedef struct prober {
    s2s_model *m;
    s2s_state *st;
    s2s_decode_params p;
    const char *gold_path, *show, *out_path;
    bool json, calibrate;
    int layer, head;  // --show's plane; SEL_UNSET until given or defaulted
    s2s_plane_table *table;
    s2s_lines in;
    int max_tokens;
    // one chunk of good lines
    s2s_tokens src[CHUNK];
    s2s_alignment links[CHUNK];
    int n;
} prober;

enum { SEL_UNSET = -3 };

static const s2s_opt probe_opts[] = {
    {.name = "--json", .help = "print the table (or --show's rows) as one JSON object"},
    {.name = "--calibrate",
     .help = "store the most accurate layer/head in the model (with -o: a copy)"},
    {.name = "--output", .alias = "-o", .value = "OUT", .help = "--calibrate: the model to write",
     .def = "the model itself"},
    {.name = "--show", .value = "SENTENCE",
     .help = "print each pronoun's attention row in SENTENCE (its gold links from GOLD.tsv)"},
    {.name = "--layer", .value = "L|avg", .help = "--show: the encoder layer",
     .def = "the calibrated layer, else avg"},
    {.name = "--head", .value = "H|avg", .help = "--show: the head",
     .def = "the calibrated head, else avg"},
    {0},
};

static const s2s_cmd_spec probe_spec = {
    "probe coref", "s2s probe coref -m MODEL GOLD.tsv [OPTIONS]",
    "Antecedent accuracy and weight of every encoder self-attention layer/head on the\n"
    "source side's coreference links of GOLD.tsv (source<TAB>target<TAB>alignment<TAB>\n"
    "coreference lines, docs/toy-corpus.md; docs/alignment.md):\n"
    "  s2s probe coref -m MODEL GOLD.tsv [--json]\n"
    "  s2s probe coref -m MODEL GOLD.tsv --calibrate [-o OUT]\n"
    "  s2s probe coref -m MODEL [GOLD.tsv] --show SENTENCE [--layer L --head H]",
    probe_opts, /*decode=*/true};

// ---- options ----

static bool parse_sel(const char *opt, const char *text, int *out) {
    if (text && !strcmp(text, "avg")) {
        *out = S2S_ALIGN_AVG;
        return true;
    }
    return s2s_cli_int(CMD, opt, text, 0, S2S_CLI_INT_MAX, out);
}

static int parse_args(prober *pr, s2s_decode_opts *o, const s2s_args *args) {
    for (int k = 0; k < args->n_opts; k++) {
        const s2s_arg *x = &args->opts[k];
        int r = s2s_cli_decode_arg(CMD, o, x);
        if (r < 0) return S2S_EXIT_USAGE;
        if (r) continue;
        if (s2s_arg_is(x, "--json")) pr->json = true;
        else if (s2s_arg_is(x, "--calibrate")) pr->calibrate = true;
        else if (s2s_arg_is(x, "--output")) pr->out_path = x->value;
        else if (s2s_arg_is(x, "--show")) pr->show = x->value;
        else if (s2s_arg_is(x, "--layer") && !parse_sel("--layer", x->value, &pr->layer))
            return S2S_EXIT_USAGE;
        else if (s2s_arg_is(x, "--head") && !parse_sel("--head", x->value, &pr->head))
            return S2S_EXIT_USAGE;
    }
    if (args->n_pos > 1) return s2s_cli_usage_error(CMD, "unexpected argument '%s'", args->pos[1]);
    if (args->n_pos == 1) pr->gold_path = args->pos[0];
    if (!pr->gold_path && !pr->show)
        return s2s_cli_usage_error(CMD, "no gold file given (usage: %s)", probe_spec.usage);
    if (pr->out_path && !pr->calibrate)
        return s2s_cli_usage_error(CMD, "-o is for --calibrate (where to write the calibrated model)");
    if (pr->calibrate && pr->show)
        return s2s_cli_usage_error(CMD, "--calibrate and --show do not go together");
    if ((pr->layer != SEL_UNSET || pr->head != SEL_UNSET) && !pr->show)
        return s2s_cli_usage_error(CMD, "--layer and --head choose the plane of --show");
    return S2S_EXIT_OK;
}

static int open_model(prober *pr, const s2s_decode_opts *o) {
    if (pr->calibrate && o->model) {
        int rc = s2s_cli_check_output(pr->out_path ? pr->out_path : o->model);
        if (rc != S2S_EXIT_OK) return rc;
    }
    int rc = s2s_cli_open(CMD, o, &pr->m, &pr->st, &pr->p);
    if (rc != S2S_EXIT_OK) return rc;
    pr->p.decode.n_best = 1;
    pr->p.decode.beam_size = 1;
    pr->p.want_attention = true;  // the encoder's maps come with the decoder's
    pr->p.want_self_attention = true;
    pr->max_tokens = s2s_cli_max_tokens(pr->m);
    const s2s_model_config *mc = &s2s_model_get_config(pr->m)->model;
    int cl, ch;
    if (!s2s_model_head(pr->m, S2S_HEAD_COREF, &cl, &ch)) cl = ch = S2S_ALIGN_AVG;
    if (pr->layer == SEL_UNSET) pr->layer = cl;
    if (pr->head == SEL_UNSET) pr->head = ch;
    if (pr->layer >= mc->encoder_layers)
        return s2s_cli_usage_error(CMD, "--layer %d: the model has %d encoder layers (use 0-%d or avg)",
                                   pr->layer, mc->encoder_layers, mc->encoder_layers - 1);
    if (pr->head >= mc->heads)
        return s2s_cli_usage_error(CMD, "--head %d: the model has %d heads (use 0-%d or avg)",
                                   pr->head, mc->heads, mc->heads - 1);
    s2s_status st = s2s_plane_table_new(&pr->table, S2S_HEAD_COREF, mc->encoder_layers, mc->heads,
                                       1.0f, /*no_eos=*/false);
    return st == S2S_OK ? S2S_EXIT_OK : s2s_cli_fail(st);
}

// ---- scoring ----

// The encoder maps of n tokenized sources: s2s_score with empty targets
// (the decoder runs one step; the encoder does not depend on it).
static s2s_status encode(prober *pr, const s2s_tokens *src, int n, s2s_hypothesis *out) {
    static const int none[1] = {0};
    const int *ids[CHUNK], *tgt[CHUNK];
    int sl[CHUNK], tl[CHUNK];
    for (int k = 0; k < n; k++) {
        ids[k] = src[k].ids ? src[k].ids : none;
        sl[k] = src[k].n;
        tgt[k] = none;
        tl[k] = 0;
    }
    return s2s_score(pr->st, &pr->p, ids, sl, tgt, tl, n, out);
}

static int flush_chunk(prober *pr) {
    s2s_hypothesis hyps[CHUNK] = {0};
    s2s_status st = pr->n ? encode(pr, pr->src, pr->n, hyps) : S2S_OK;
    for (int k = 0; k < pr->n && st == S2S_OK; k++)
        st = s2s_plane_table_add(pr->table, &hyps[k], &pr->links[k],
                                 (const char *const *)pr->src[k].pieces, NULL);  // checked when read
    for (int k = 0; k < pr->n; k++) s2s_hypothesis_free(&hyps[k]);
    pr->n = 0;
    return st == S2S_OK ? S2S_EXIT_OK : s2s_cli_fail(st);
}

// The current line into the chunk, by the bad-line rule: a missing column,
// a bad coreference column or a link outside the (possibly cut) sentence
// skips it with a warning. Returns an exit code (out of memory).
static int add_line(prober *pr) {
    s2s_lines *in = &pr->in;
    char *target, *third;
    if (!s2s_lines_check(in)) return S2S_EXIT_OK;
    if (s2s_tsv_split(in->text, in->len, NULL, 0, &target, &third) != S2S_OK)
        return s2s_lines_skip(in, in->line, s2s_last_error()), S2S_EXIT_OK;
    const char *coref = s2s_tsv_next(third);
    s2s_tokens *t = &pr->src[pr->n];
    s2s_alignment *links = &pr->links[pr->n], tgt_side = {0};
    s2s_status st = s2s_coref_parse(links, &tgt_side, coref, "coreference column");
    s2s_alignment_free(&tgt_side);  // the target side has no encoder here
    if (st == S2S_ERR_NOMEM) return s2s_cli_fail(st);
    if (st != S2S_OK) return s2s_lines_skip(in, in->line, s2s_last_error()), S2S_EXIT_OK;
    bool cut = false;
    int rc = s2s_lines_tokenize(in, in->line, s2s_model_src_vocab(pr->m), in->text,
                                pr->max_tokens, t, &cut);
    if (rc != S2S_EXIT_OK) return rc == S2S_EXIT_FAILURE ? rc : S2S_EXIT_OK;
    if (s2s_coref_check(links, (const char *const *)t->pieces, t->n, NULL) != S2S_OK)
        return s2s_lines_skip(in, in->line, s2s_last_error()), S2S_EXIT_OK;
    return ++pr->n == CHUNK ? flush_chunk(pr) : S2S_EXIT_OK;
}

static int read_gold(prober *pr) {
    int rc = s2s_lines_open(&pr->in, CMD, pr->gold_path);
    while (rc == S2S_EXIT_OK && s2s_lines_next(&pr->in)) rc = add_line(pr);
    if (rc == S2S_EXIT_OK) rc = flush_chunk(pr);
    if (rc == S2S_EXIT_OK && pr->in.failed) rc = pr->in.failed;
    if (rc == S2S_EXIT_OK && s2s_plane_table_counts(pr->table, -1, -1)->coref.links == 0)
        rc = s2s_cli_usage_error(CMD, "%s: no source-side coreference link to score",
                                 pr->in.name);
    return rc;
}

// ---- the table ----

static json_t *json_plane(const s2s_plane_table *t, int l, int h) {
    const s2s_coref_counts *c = &s2s_plane_table_counts(t, l, h)->coref;
    json_t *o = json_object();
    json_object_set_new(o, "layer", s2s_json_sel(l));
    json_object_set_new(o, "head", s2s_json_sel(h));
    json_object_set_new(o, "accuracy", json_real(s2s_coref_accuracy(c)));
    json_object_set_new(o, "weight", json_real(s2s_coref_mean_weight(c)));
    json_object_set_new(o, "hits", json_integer(c->hits));
    return o;
}

// Each layer's heads then its average; then per-head averages over
// layers; then the average of everything (as align --eval's table).
static int print_table(const prober *pr) {
    const s2s_plane_table *t = pr->table;
    const s2s_model_config *mc = &s2s_model_get_config(pr->m)->model;
    int L = mc->encoder_layers, H = mc->heads, bl, bh, cl, ch;
    s2s_plane_table_best(t, &bl, &bh);
    bool stored = s2s_model_head(pr->m, S2S_HEAD_COREF, &cl, &ch);
    long long links = s2s_plane_table_counts(t, -1, -1)->coref.links;
    json_t *j = NULL, *planes = NULL;
    if (pr->json) {
        j = json_object();
        json_object_set_new(j, "gold", json_string(pr->in.name));
        json_object_set_new(j, "sentences", json_integer(s2s_plane_table_sentences(t)));
        json_object_set_new(j, "links", json_integer(links));
        json_object_set_new(j, "planes", planes = json_array());
    } else {
        printf("# antecedents in encoder self-attention against %s: %lld sentences, %lld links\n",
               pr->in.name, s2s_plane_table_sentences(t), links);
        printf("%-5s %-5s %-8s %s\n", "layer", "head", "accuracy", "weight");
    }
    char lb[16], hb[16];
    for (int l = 0; l <= L; l++)
        for (int h = 0; h <= H; h++) {
            int li = l < L ? l : S2S_ALIGN_AVG, hi = h < H ? h : S2S_ALIGN_AVG;
            const s2s_coref_counts *c = &s2s_plane_table_counts(t, li, hi)->coref;
            if (j) {
                json_array_append_new(planes, json_plane(t, li, hi));
                continue;
            }
            printf("%-5s %-5s %-8.4f %.4f%s%s\n", s2s_cli_align_sel_name(li, lb),
                   s2s_cli_align_sel_name(hi, hb), s2s_coref_accuracy(c),
                   s2s_coref_mean_weight(c), li == bl && hi == bh ? "  best" : "",
                   stored && li == cl && hi == ch ? "  stored" : "");
        }
    if (!j) return S2S_EXIT_OK;
    json_object_set_new(j, "best", json_plane(t, bl, bh));
    json_object_set_new(j, "stored", stored ? json_plane(t, cl, ch) : json_null());
    return s2s_cli_print_json(j, 6);
}

// --calibrate: the best plane stored in the model, written to -o OUT or
// back to the model's own file (as align --calibrate does).
static int calibrate(prober *pr, const char *model_path) {
    int bl, bh;
    s2s_plane_table_best(pr->table, &bl, &bh);
    const char *dst = pr->out_path ? pr->out_path : model_path;
    s2s_status st = s2s_model_set_head(pr->m, S2S_HEAD_COREF, bl, bh);
    if (st == S2S_OK) st = s2s_model_save(pr->m, dst);
    if (st != S2S_OK) {
        s2s_cli_error(s2s_last_error());
        return S2S_EXIT_FAILURE;
    }
    char lb[16], hb[16], pat[256];
    s2s_cli_align_pattern_names(pat, sizeof pat, pr->m, S2S_ATTN_MAP_ENC, bl, bh);
    // After --json the table owns stdout.
    fprintf(pr->json ? stderr : stdout, "calibrated: layer %s, head %s%s (accuracy %.4f); written to %s\n",
            s2s_cli_align_sel_name(bl, lb), s2s_cli_align_sel_name(bh, hb), pat,
            s2s_coref_accuracy(&s2s_plane_table_counts(pr->table, bl, bh)->coref), dst);
    return S2S_EXIT_OK;
}

// ---- --show ----

// Pronouns --show looks at when GOLD.tsv does not hold the sentence.
static const char *const PRONOUNS[] = {
    "it", "they", "them", "he", "him", "she", "her",
    "\xE5\xAE\x83", "\xE4\xBB\x96", "\xE5\xA5\xB9",  // 它 他 她
    "\xE5\xAE\x83\xE4\xBB\xAC", "\xE4\xBB\x96\xE4\xBB\xAC", "\xE5\xA5\xB9\xE4\xBB\xAC",  // 它们 他们 她们
};

static bool same_tokens(const s2s_tokens *a, const s2s_tokens *b) {
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->pieces[i], b->pieces[i])) return false;
    return true;
}

// The rows --show prints: the source links of the first GOLD.tsv line
// with the same tokens, else every listed pronoun (antecedent -1).
// *found says which. Returns an exit code.
static int show_links(prober *pr, const s2s_tokens *t, s2s_alignment *links, bool *found) {
    *found = false;
    int rc = S2S_EXIT_OK;
    if (pr->gold_path) {
        s2s_tokens g = {0};
        int warned = pr->in.warnings;  // SENTENCE's own (cut)
        rc = s2s_lines_open(&pr->in, CMD, pr->gold_path);
        pr->in.warnings += warned;
        while (rc == S2S_EXIT_OK && !*found && s2s_lines_next(&pr->in)) {
            char *target, *third;
            if (!s2s_lines_check(&pr->in) ||
                s2s_tsv_split(pr->in.text, pr->in.len, NULL, 0, &target, &third) != S2S_OK ||
                s2s_tokenize(s2s_model_src_vocab(pr->m), pr->in.text, &g) != S2S_OK ||
                !same_tokens(&g, t))
                continue;
            s2s_alignment tgt_side = {0};
            s2s_status st = s2s_coref_parse(links, &tgt_side, s2s_tsv_next(third), "coreference column");
            s2s_alignment_free(&tgt_side);
            if (st == S2S_OK) st = s2s_coref_check(links, (const char *const *)t->pieces, t->n, NULL);
            if (st != S2S_OK) {
                fprintf(stderr, "s2s %s: %s:%d: %s\n", CMD, pr->in.name, pr->in.line, s2s_last_error());
                rc = S2S_EXIT_USAGE;
            }
            *found = true;
        }
        s2s_tokens_free(&g);
    }
    for (int i = 0; rc == S2S_EXIT_OK && !*found && i < t->n; i++)
        for (size_t k = 0; k < sizeof PRONOUNS / sizeof *PRONOUNS; k++)
            if (!strcmp(t->pieces[i], PRONOUNS[k]) &&
                s2s_alignment_add(links, i, 0, /*possible=*/true) != S2S_OK)
                rc = S2S_EXIT_FAILURE;
    return rc;
}

// One pronoun's row: every source token with its weight, the candidates'
// largest and the gold antecedent marked, the others left out noted, and
// the keys the plane's attention pattern hides (seen false: a local
// window, a block, a stride) marked "hidden", apart from a weight of 0.
static void print_row(const s2s_tokens *t, const float *w, const float *cand, const bool *seen,
                      int p, int ante, int best, json_t *rows) {
    int S = t->n + 1;
    if (rows) {
        json_t *r = json_object(), *ws = json_array();
        json_object_set_new(r, "pronoun", json_integer(p));
        json_object_set_new(r, "token", json_string(t->pieces[p]));
        json_object_set_new(r, "antecedent", ante >= 0 ? json_integer(ante) : json_null());
        json_object_set_new(r, "argmax", best >= 0 ? json_integer(best) : json_null());
        for (int c = 0; c < S; c++) json_array_append_new(ws, json_real(w[(size_t)p * S + c]));
        json_object_set_new(r, "weights", ws);
        json_array_append_new(rows, r);
        return;
    }
    printf("\n%s (token %d)%s\n", t->pieces[p], p,
           ante < 0 ? "" : best == ante ? ": finds its antecedent" : ": misses its antecedent");
    for (int c = 0; c < S; c++) {
        const char *tok = c < t->n ? t->pieces[c] : "</s>";
        int pad = 12 - s2s_display_width(tok);
        printf("  %2d  %s%*s %.4f", c, tok, pad > 0 ? pad : 0, "", w[(size_t)p * S + c]);
        if (!seen[(size_t)p * S + c]) printf("  (hidden)");
        if (cand[c] < 0) printf("  (%s)", c == p ? "itself" : c == t->n ? "</s>" : "punctuation");
        if (c == best) printf("  <- largest");
        if (c == ante) printf("  <- antecedent");
        putchar('\n');
    }
}

static int show(prober *pr) {
    s2s_tokens t = {0};
    s2s_alignment links = {0};
    s2s_hypothesis h = {0};
    bool found = false, cut = false;
    json_t *j = NULL, *rows = NULL;
    float *w = NULL, *cand = NULL;
    bool *seen = NULL;
    int rc = s2s_lines_tokenize(&pr->in, 1, s2s_model_src_vocab(pr->m), pr->show, pr->max_tokens,
                                &t, &cut);
    if (rc == S2S_EXIT_WARNINGS) rc = S2S_EXIT_USAGE;  // the one input is bad
    if (rc == S2S_EXIT_OK) rc = show_links(pr, &t, &links, &found);
    s2s_status st = rc == S2S_EXIT_OK ? encode(pr, &t, 1, &h) : S2S_OK;
    int S = t.n + 1;
    if (rc == S2S_EXIT_OK && st == S2S_OK) {
        w = malloc((size_t)S * S * sizeof *w);
        cand = malloc((size_t)S * sizeof *cand);
        seen = malloc((size_t)S * S * sizeof *seen);
        st = w && cand && seen ? s2s_attn_select(w, h.enc_attn, h.enc_layers, h.heads, S, S,
                                                 pr->layer, pr->head)
                               : S2S_ERR_NOMEM;
        if (st == S2S_OK)
            st = s2s_attn_select_seen(seen, pr->m, S2S_ATTN_MAP_ENC, S, S, pr->layer, pr->head);
    }
    if (rc == S2S_EXIT_OK && st != S2S_OK) rc = s2s_cli_fail(st);
    char lb[16], hb[16];
    if (rc == S2S_EXIT_OK && pr->json) {
        j = json_object();
        json_object_set_new(j, "layer", s2s_json_sel(pr->layer));
        json_object_set_new(j, "head", s2s_json_sel(pr->head));
        json_object_set_new(j, "gold", json_boolean(found));
        json_t *tok = json_array();
        for (int i = 0; i < t.n; i++) json_array_append_new(tok, json_string(t.pieces[i]));
        json_array_append_new(tok, json_string("</s>"));
        json_object_set_new(j, "tokens", tok);
        json_object_set_new(j, "rows", rows = json_array());
    } else if (rc == S2S_EXIT_OK) {
        printf("# encoder self-attention, layer %s, head %s; %s\n",
               s2s_cli_align_sel_name(pr->layer, lb), s2s_cli_align_sel_name(pr->head, hb),
               found ? "antecedents from the gold file" : "pronouns by list, no gold antecedent");
        if (links.n == 0) printf("(no pronoun)\n");
    }
    for (int i = 0; rc == S2S_EXIT_OK && i < links.n; i++) {
        int p = links.links[i].src, ante = found ? links.links[i].tgt : -1;
        print_row(&t, w, cand, seen, p, ante,
                  s2s_coref_row(cand, w, S, (const char *const *)t.pieces, p), rows);
    }
    if (j) rc = s2s_cli_print_json(j, 4);
    free(w);
    free(cand);
    free(seen);
    s2s_hypothesis_free(&h);
    s2s_alignment_free(&links);
    s2s_tokens_free(&t);
    return rc;
}

// ---- the command ----

static int probe_coref(int argc, char **argv) {
    s2s_decode_opts o = s2s_cli_decode_opts();
    s2s_args args;
    s2s_cli_set_command(CMD);
    int rc = s2s_args_parse(&probe_spec, argc, argv, &args);
    prober *pr = rc == S2S_EXIT_OK && !args.help ? calloc(1, sizeof *pr) : NULL;
    if (rc != S2S_EXIT_OK || args.help || !pr) {
        if (rc == S2S_EXIT_OK && !args.help) rc = S2S_EXIT_FAILURE;
        s2s_args_free(&args);
        return rc;
    }
    pr->layer = pr->head = SEL_UNSET;
    pr->in = (s2s_lines){.cmd = CMD, .name = "argument"};
    rc = parse_args(pr, &o, &args);
    if (rc == S2S_EXIT_OK) rc = open_model(pr, &o);
    if (rc == S2S_EXIT_OK && pr->show) {
        rc = show(pr);
    } else if (rc == S2S_EXIT_OK) {
        rc = read_gold(pr);
        if (rc == S2S_EXIT_OK) rc = print_table(pr);
        if (rc == S2S_EXIT_OK && pr->calibrate) rc = calibrate(pr, o.model);
    }
    rc = s2s_lines_exit(&pr->in, rc);
    for (int k = 0; k < CHUNK; k++) {
        s2s_tokens_free(&pr->src[k]);
        s2s_alignment_free(&pr->links[k]);
    }
    s2s_plane_table_free(pr->table);
    s2s_lines_close(&pr->in);
    s2s_state_free(pr->st);
    s2s_model_free(pr->m);
    free(pr);
    s2s_args_free(&args);
    return rc;
}

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *what;
} PROBES[] = {
    {"coref", probe_coref, "which encoder heads find a pronoun's antecedent"},
    {"scale", s2s_cmd_probe_scale, "the scores' spread and softmax saturation without 1/sqrt(d_k)"},
    {"heads", s2s_cmd_probe_heads, "each head's distance, entropy, </s> share, 95% width, label"},
    {"equivariance", s2s_cmd_probe_equivariance,
     "the encoder's max |f(Px) - P f(x)| without and with positions"},
};

int s2s_cmd_probe(int argc, char **argv) {
    size_t n = sizeof PROBES / sizeof *PROBES;
    for (size_t k = 0; argc >= 1 && k < n; k++)
        if (!strcmp(argv[0], PROBES[k].name)) return PROBES[k].run(argc - 1, argv + 1);
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        printf("usage: s2s probe coref|scale|heads|equivariance ... (each answers --help)\n");
        for (size_t k = 0; k < n; k++) printf("  %-13s %s\n", PROBES[k].name, PROBES[k].what);
        return S2S_EXIT_OK;
    }
    return s2s_cli_usage_error("probe", "usage: s2s probe coref|scale|heads|equivariance ... "
                                        "(%s%s%s)",
                               argc ? "unknown probe '" : "no probe given",
                               argc ? argv[0] : "", argc ? "'" : "");
}
