// s2s align -m MODEL [options] [SENTENCE ...]: attention alignments.
//
// Free decoding of sentences (arguments, or stdin lines), or with --ref
// forced decoding of source<TAB>target[<TAB>gold] lines. Prints hard
// alignments (Pharaoh), the attention maps (JSON, CSV) or terminal
// heatmaps; writes an HTML report; measures AER against gold (--eval) and
// stores the best layer/head in the model (--calibrate). docs/alignment.md
// describes every option. The alignments come from the library
// (s2s_hard_align, s2s_align_symmetrize_pair, s2s_plane_table); the printing
// is in align_output.c.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/align_output.h"
#include "cli/cli.h"
#include "tools/html.h"

#define CHUNK 64
#define CMD "align"

enum { SEL_UNSET = -3 };  // besides an index, S2S_ALIGN_AVG or S2S_CLI_SEL_ALL

// A model with its state, its decode parameters, its default
// alignment plane (the calibrated layer/head, else avg/avg) and its
// calibrated coreference plane (encoder), if any.
typedef struct side {
    s2s_model *m;
    s2s_state *st;
    s2s_decode_params p;
    int layer, head;
    bool coref;
    int coref_layer, coref_head;
} side;

// The shares --calibrate tries (s2s_align_share), 1 (the largest weight
// alone) first, so that it wins a tie.
static const float SHARES[] = {1.0f, 0.8f, 0.6f, 0.5f, 0.4f, 0.3f, 0.2f, 0.1f};
enum { N_SHARES = sizeof SHARES / sizeof SHARES[0] };

typedef struct aligner {
    side fw, rv;
    float share;               // --share; 0: the model's
    s2s_cli_align_view view;
    bool ref, eval, fmt_given, sym_given;
    const char *reverse_path, *html_path, *calibrate_path, *out_path, *eval_path;
    char **pos;                // the sentences given as arguments
    int n_pos;
    bool flush;                // a chunk per line: --flush, or stdin is a terminal
    s2s_align_pair pair;       // with --reverse
    s2s_align_html *html;
    const char *cmd;           // "align" or "eval-align", in line warnings
    s2s_lines in;              // the input lines (or the arguments), and their warnings
    const char *input;         // the name of the input in messages
    int max_tokens;            // a longer source or target is cut to this many
    // one chunk of input
    char *lines[CHUNK];          // the source (the line, split in place with --ref)
    const char *targets[CHUNK];  // --ref: the target column
    s2s_tokens src[CHUNK], tgt[CHUNK];
    s2s_alignment gold[CHUNK];
    bool has_gold[CHUNK];
    s2s_alignment coref[CHUNK];  // --ref --html: the source side's coreference links
    bool skipped[CHUNK];         // bad lines (the bad-line rule): an empty output line each
    int lineno[CHUNK];
    int n, first_line;
    // --eval / --calibrate: a table per share tried (--calibrate: SHARES;
    // --eval: the one in effect)
    s2s_plane_table *tables[N_SHARES];
    int n_tables;
    s2s_aer_counts sym_counts;  // the symmetrised alignment, with --reverse
} aligner;

// ---- option values ----

static bool parse_sel(const char *opt, const char *text, int *out) {
    if (!text) return s2s_cli_usage_error(CMD, "%s needs a value: a number, all or avg", opt), false;
    if (!strcmp(text, "all")) {
        *out = S2S_CLI_SEL_ALL;
        return true;
    }
    if (!strcmp(text, "avg")) {
        *out = S2S_ALIGN_AVG;
        return true;
    }
    char *end;
    long v = strtol(text, &end, 10);
    if (!*text || *end || v < 0 || v > 1000000) {
        s2s_cli_usage_error(CMD, "%s needs a number >= 0, all or avg, got '%s'", opt, text);
        return false;
    }
    *out = (int)v;
    return true;
}

static bool parse_name(const char *opt, const char *text, const char *const *names, int n,
                       int *out) {
    for (int i = 0; text && i < n; i++)
        if (!strcmp(text, names[i])) {
            *out = i;
            return true;
        }
    char list[128] = "";
    for (int i = 0; i < n; i++) {
        strncat(list, names[i], sizeof list - strlen(list) - 1);
        if (i + 1 < n) strncat(list, "|", sizeof list - strlen(list) - 1);
    }
    s2s_cli_usage_error(CMD, "%s needs one of %s, got '%s'", opt, list, text ? text : "");
    return false;
}

// A selector checked against the model: "s2s align: --layer 5: the model
// has 2 decoder layers (use 0-1, all or avg)".
static bool check_sel(const char *opt, int sel, int n, const char *what) {
    if (sel < 0 || sel < n) return true;
    s2s_cli_usage_error(CMD, "%s %d: the model has %d %s (use 0-%d, all or avg)", opt, sel, n,
                        what, n - 1);
    return false;
}

// ---- command line ----

static const s2s_opt align_opts[] = {
    {.name = "--ref", .help = "forced decoding of source<TAB>target[<TAB>gold] lines on stdin"},
    {.name = "--eval", .value = "GOLD.tsv", .optional = true,
     .help = "AER of every layer/head against gold alignments (stdin without a file)"},
    {.name = "--calibrate", .value = "DEV.tsv",
     .help = "store the layer/head/share of lowest AER on DEV.tsv in the model (with -o: a copy)"},
    {.name = "--output", .alias = "-o", .value = "OUT", .help = "--calibrate: the model to write",
     .def = "the model itself"},
    {.name = "--share", .value = "X",
     .help = "also link source words with at least X of a row's largest weight (0 < X <= 1)",
     .def = "the calibrated share, else 1: the largest alone"},
    {.name = "--layer", .value = "L|all|avg", .help = "the decoder layer of the alignment plane",
     .def = "the calibrated layer, else avg"},
    {.name = "--head", .value = "H|all|avg",
     .help = "the attention head (text with --layer all --head all: every layer and head side by side, "
             "within $COLUMNS)",
     .def = "the calibrated head, else avg"},
    {.name = "--format", .value = "pharaoh|json|csv|text", .help = "how alignments are printed",
     .def = "text on a terminal, else pharaoh"},
    {.name = "--map", .value = "cross|self|enc", .help = "the attention map to print",
     .def = "cross"},
    {.name = "--no-eos", .help = "leave </s> out of the alignment (renormalise without it)"},
    {.name = "--html", .value = "FILE", .help = "write an HTML report of the heatmaps"},
    {.name = "--reverse", .value = "MODEL2", .help = "the target-to-source model, to symmetrise"},
    {.name = "--symmetrize",
     .value = "intersection|union|grow-diag|grow-diag-final|grow-diag-final-and",
     .help = "how forward and reverse alignments combine (with --reverse)", .def = "grow-diag"},
    {.name = "--flush", .help = "answer each stdin line as soon as it is read",
     .def = "on when stdin is a terminal, else off: chunks of 64 lines"},
    {0},
};

static const s2s_cmd_spec align_spec = {
    "align", "s2s align -m MODEL [OPTIONS] [SENTENCE...]",
    "Prints attention alignments of each SENTENCE or stdin line (docs/alignment.md):\n"
    "  s2s align -m MODEL --ref < source<TAB>target[<TAB>gold] lines\n"
    "  s2s align -m MODEL --eval [GOLD.tsv]      (also: s2s eval-align -m MODEL GOLD.tsv)\n"
    "  s2s align -m MODEL --calibrate DEV.tsv [-o OUT]",
    align_opts, /*decode=*/true};

static const s2s_cmd_spec eval_align_spec = {
    "eval-align", "s2s eval-align -m MODEL GOLD.tsv [OPTIONS]",
    "The same as s2s align --eval GOLD.tsv: AER of every layer/head against gold\n"
    "alignments, source<TAB>target<TAB>gold lines (docs/alignment.md).",
    align_opts, /*decode=*/true};

// One option of align's own (the decoding options are taken before).
static int parse_option(aligner *a, const s2s_arg *x) {
    const char *val = x->value;
    s2s_cli_align_view *v = &a->view;
    int k = 0;
    bool ok = true;
    if (s2s_arg_is(x, "--ref")) {
        a->ref = true;
    } else if (s2s_arg_is(x, "--no-eos")) {
        v->no_eos = true;
    } else if (s2s_arg_is(x, "--flush")) {
        a->flush = true;
    } else if (s2s_arg_is(x, "--layer") || s2s_arg_is(x, "--head")) {
        ok = parse_sel(x->opt->name, val, x->opt->name[2] == 'l' ? &v->layer_sel : &v->head_sel);
    } else if (s2s_arg_is(x, "--format")) {
        ok = parse_name("--format", val, s2s_cli_align_format_names, S2S_CLI_FMT_COUNT, &k);
        v->fmt = (s2s_cli_align_format)k;
        a->fmt_given = true;
    } else if (s2s_arg_is(x, "--map")) {
        ok = parse_name("--map", val, s2s_cli_align_map_names, S2S_CLI_MAP_COUNT, &k);
        v->map = (s2s_cli_align_map)k;
    } else if (s2s_arg_is(x, "--symmetrize")) {
        ok = s2s_symmetrize_parse(val, &v->sym);
        if (!ok) s2s_cli_usage_error(CMD, "--symmetrize needs one of intersection|union|grow-diag|"
                                          "grow-diag-final|grow-diag-final-and, got '%s'", val);
        a->sym_given = true;
    } else if (s2s_arg_is(x, "--reverse")) {
        a->reverse_path = val;
    } else if (s2s_arg_is(x, "--html")) {
        a->html_path = val;
    } else if (s2s_arg_is(x, "--share")) {
        char *end = NULL;
        a->share = val ? strtof(val, &end) : 0.0f;
        ok = val && end != val && !*end && a->share > 0.0f && a->share <= 1.0f;
        if (!ok) s2s_cli_usage_error(CMD, "--share needs a number in (0, 1], got '%s'", val ? val : "");
    } else if (s2s_arg_is(x, "--calibrate")) {
        a->calibrate_path = val;
    } else if (s2s_arg_is(x, "--output")) {
        a->out_path = val;
    } else if (s2s_arg_is(x, "--eval")) {  // an optional value: a file name or "-"
        a->eval = true;
        if (val) a->eval_path = val;
    }
    return ok ? S2S_EXIT_OK : S2S_EXIT_USAGE;
}

static int parse_args(aligner *a, s2s_decode_opts *o, const s2s_args *args) {
    for (int k = 0; k < args->n_opts; k++) {
        int r = s2s_cli_decode_arg(CMD, o, &args->opts[k]);
        if (r < 0) return S2S_EXIT_USAGE;
        int rc = r ? S2S_EXIT_OK : parse_option(a, &args->opts[k]);
        if (rc != S2S_EXIT_OK) return rc;
    }
    a->pos = args->pos;
    a->n_pos = args->n_pos;
    return S2S_EXIT_OK;
}

// Combinations that cannot work, refused before any model is read.
static int check_usage(aligner *a, const s2s_decode_opts *o) {
    s2s_cli_align_view *v = &a->view;
    if (a->calibrate_path) {
        if (a->eval) return s2s_cli_usage_error(CMD, "--calibrate and --eval do not go together");
        a->eval = true;
        a->eval_path = a->calibrate_path;
    }
    if (a->eval) {
        a->ref = true;
        if (!a->eval_path && a->n_pos == 1) a->eval_path = a->pos[0], a->n_pos = 0;
        if (a->n_pos > 0) return s2s_cli_usage_error(CMD, "--eval and --calibrate read a TSV file, not sentences");
        if (a->html_path) return s2s_cli_usage_error(CMD, "--html does not go with --eval or --calibrate");
    }
    if (a->out_path && !a->calibrate_path)
        return s2s_cli_usage_error(CMD, "-o is for --calibrate (where to write the calibrated model)");
    if (a->sym_given && !a->reverse_path)
        return s2s_cli_usage_error(CMD, "--symmetrize needs --reverse MODEL2 (a target-to-source model)");
    const char *n_best = s2s_cli_decode_value(o, "decode.n_best");
    if (n_best && atoi(n_best) > 1)
        return s2s_cli_usage_error(CMD, "--n-best: align works on the best translation only");
    if (!a->fmt_given) v->fmt = isatty(fileno(stdout)) ? S2S_CLI_FMT_TEXT : S2S_CLI_FMT_PHARAOH;
    if (v->fmt == S2S_CLI_FMT_PHARAOH && (v->layer_sel == S2S_CLI_SEL_ALL || v->head_sel == S2S_CLI_SEL_ALL))
        return s2s_cli_usage_error(CMD, "--format pharaoh prints one alignment: give a single --layer and "
                                        "--head (a number or avg), not all");
    v->color = v->fmt == S2S_CLI_FMT_TEXT && isatty(fileno(stdout)) && !getenv("NO_COLOR");
    v->width = s2s_cli_stdout_width();
    return S2S_EXIT_OK;
}

// ---- models and planes ----

static int open_side(side *sd, const char *path, const s2s_decode_opts *o, bool self) {
    s2s_decode_opts oo = *o;
    oo.model = path;
    int rc = s2s_cli_open(CMD, &oo, &sd->m, &sd->st, &sd->p);
    if (rc != S2S_EXIT_OK) return rc;
    sd->p.decode.n_best = 1;
    sd->p.want_attention = true;
    sd->p.want_self_attention = self;
    if (!s2s_model_head(sd->m, S2S_HEAD_ALIGN, &sd->layer, &sd->head))
        sd->layer = sd->head = S2S_ALIGN_AVG;
    sd->coref = s2s_model_head(sd->m, S2S_HEAD_COREF, &sd->coref_layer, &sd->coref_head);
    return S2S_EXIT_OK;
}

// The displayed planes, checked against the model, and the plane of the
// hard alignment. Unset selectors fall back to the calibrated plane (for
// --map enc the calibrated coreference plane, when there is one), else
// avg; the hard alignment uses the displayed plane when it is a single
// cross-attention plane, else that default.
static int choose_planes(aligner *a) {
    s2s_cli_align_view *v = &a->view;
    const s2s_model_config *mc = &s2s_model_get_config(a->fw.m)->model;
    bool enc = v->map == S2S_CLI_MAP_ENC;
    if (!check_sel("--layer", v->layer_sel, enc ? mc->encoder_layers : mc->decoder_layers,
                   enc ? "encoder layers" : "decoder layers") ||
        !check_sel("--head", v->head_sel, mc->heads, "heads"))
        return S2S_EXIT_USAGE;
    bool coref = enc && a->fw.coref && !a->eval;
    if (v->layer_sel == SEL_UNSET)
        v->layer_sel = a->eval ? S2S_ALIGN_AVG : coref ? a->fw.coref_layer : a->fw.layer;
    if (v->head_sel == SEL_UNSET)
        v->head_sel = a->eval ? S2S_ALIGN_AVG : coref ? a->fw.coref_head : a->fw.head;
    bool single = !a->eval && v->map == S2S_CLI_MAP_CROSS && v->layer_sel != S2S_CLI_SEL_ALL &&
                  v->head_sel != S2S_CLI_SEL_ALL;
    v->align_layer = single ? v->layer_sel : a->fw.layer;
    v->align_head = single ? v->head_sel : a->fw.head;
    v->align_share = a->share > 0.0f ? a->share : s2s_model_alignment_share(a->fw.m);
    return S2S_EXIT_OK;
}

// Opens the models and whatever the run writes into, before any input.
static int prepare(aligner *a, const s2s_decode_opts *o) {
    s2s_cli_align_view *v = &a->view;
    int rc = S2S_EXIT_OK;
    // Output files are written at the end: a bad path fails before anything
    // is decoded or printed.
    if (a->html_path && (rc = s2s_cli_check_output(a->html_path)) != S2S_EXIT_OK) return rc;
    if (a->calibrate_path && o->model &&
        (rc = s2s_cli_check_output(a->out_path ? a->out_path : o->model)) != S2S_EXIT_OK)
        return rc;
    rc = open_side(&a->fw, o->model, o, a->html_path || v->map != S2S_CLI_MAP_CROSS);
    // Beam search records cross-attention only: the HTML page then shows
    // just that, and --map self|enc cannot work.
    if (rc == S2S_EXIT_OK && !a->ref && a->fw.p.decode.beam_size > 1) {
        a->fw.p.want_self_attention = false;
        if (v->map != S2S_CLI_MAP_CROSS)
            return s2s_cli_usage_error(CMD, "--map %s: beam search returns cross-attention only (use --beam 1)",
                                       s2s_cli_align_map_names[v->map]);
    }
    if (rc == S2S_EXIT_OK) v->model = a->fw.m;
    if (rc == S2S_EXIT_OK && a->reverse_path) rc = open_side(&a->rv, a->reverse_path, o, false);
    if (rc == S2S_EXIT_OK) rc = choose_planes(a);
    if (rc != S2S_EXIT_OK) return rc;
    if (a->reverse_path) {
        v->reverse = true;
        a->pair = s2s_align_pair_default(a->fw.m, a->rv.m, a->rv.st);
        a->pair.rev_params = a->rv.p;
        a->pair.layer = v->align_layer;
        a->pair.head = v->align_head;
        a->pair.share = v->align_share;
        a->pair.no_eos = v->no_eos;
        a->pair.method = v->sym;
    }
    s2s_status st = S2S_OK;
    if (a->eval) {
        const s2s_model_config *mc = &s2s_model_get_config(a->fw.m)->model;
        bool all = a->calibrate_path && a->share == 0.0f;
        a->n_tables = all ? N_SHARES : 1;
        for (int k = 0; k < a->n_tables && st == S2S_OK; k++)
            st = s2s_plane_table_new(&a->tables[k], S2S_HEAD_ALIGN, mc->decoder_layers,
                                     mc->heads, all ? SHARES[k] : v->align_share,
                                     a->view.no_eos);
    }
    if (st == S2S_OK && a->html_path) {
        st = s2s_align_html_new(&a->html, "s2s attention");
        if (st == S2S_OK)
            s2s_align_html_set_view(a->html, v->layer_sel == S2S_CLI_SEL_ALL ? S2S_ALIGN_AVG : v->layer_sel,
                                    v->head_sel == S2S_CLI_SEL_ALL ? S2S_ALIGN_AVG : v->head_sel, v->no_eos);
        if (st == S2S_OK) st = s2s_align_html_set_patterns(a->html, a->fw.m);
        if (st == S2S_OK && a->fw.coref)  // the encoder map opens on the coreference head
            s2s_align_html_set_enc_view(a->html, a->fw.coref_layer, a->fw.coref_head,
                                        v->map == S2S_CLI_MAP_ENC);
    }
    return st == S2S_OK ? S2S_EXIT_OK : s2s_cli_fail(st);
}

// ---- one chunk ----

// The output of a skipped line: one empty line (nothing with --eval).
static int skipped_line(aligner *a) {
    if (!a->eval) putchar('\n');
    a->view.sentence++;
    return S2S_EXIT_OK;
}

// Sentence k of the chunk: checked against its gold, then counted (--eval)
// or printed and added to the HTML report.
static int sentence(aligner *a, int k, const s2s_hypothesis *h, const s2s_alignment *fwd,
                    const s2s_alignment *final) {
    s2s_cli_align_sent s = {.source = a->lines[k], .target = a->targets[k], .fwd = fwd,
                            .final = final, .gold = a->has_gold[k] ? &a->gold[k] : NULL};
    if (!s2s_cli_align_sent_labels(&s, &a->src[k], a->ref ? &a->tgt[k] : NULL,
                                   s2s_model_tgt_vocab(a->fw.m), h))
        return S2S_EXIT_FAILURE;
    int rc = S2S_EXIT_OK;
    s2s_status st = S2S_OK;
    // A gold link beyond the (possibly cut) sentence: the line is skipped.
    if (s.gold && s2s_alignment_check(s.gold, s.n_src, s.n_tgt, "gold") != S2S_OK) {
        s2s_lines_skip(&a->in, a->lineno[k], s2s_last_error());
        s2s_cli_align_sent_free(&s);
        return skipped_line(a);
    }
    if (rc == S2S_EXIT_OK && a->eval) {
        for (int t = 0; t < a->n_tables && st == S2S_OK; t++)
            st = s2s_plane_table_add(a->tables[t], h, s.gold, NULL, NULL);
        if (a->view.reverse) s2s_aer_add(&a->sym_counts, final, s.gold);
    } else if (rc == S2S_EXIT_OK) {
        rc = s2s_cli_align_print(&a->view, &s);
        if (rc == S2S_EXIT_OK && a->html) {
            char *al = s2s_alignment_format(final);
            st = al ? s2s_align_html_add(a->html, s.src_lab, s.n_src, s.tgt_lab, s.n_tgt, h, al)
                    : S2S_ERR_NOMEM;
            if (st == S2S_OK && a->coref[k].n) st = s2s_align_html_add_coref(a->html, &a->coref[k]);
            if (st == S2S_OK && s.gold) st = s2s_align_html_set_gold(a->html, s.gold);
            free(al);
        }
    }
    if (st != S2S_OK) rc = s2s_cli_fail(st);
    a->view.sentence++;
    s2s_cli_align_sent_free(&s);
    return rc;
}

// Decodes the good lines of the chunk (free or forced), aligns them
// (symmetrised with --reverse) and hands each sentence on; a skipped line
// gets its empty line in its place.
static int flush_chunk(aligner *a) {
    const int *src[CHUNK], *tgt[CHUNK];
    int sl[CHUNK], tl[CHUNK], m = 0;
    s2s_tokens stoks[CHUNK], ttoks[CHUNK];  // shallow copies of the good lines' tokens
    // An empty line has no ids buffer; the decoder memcpy's 0 ids from it,
    // which UBSan flags with NULL, so point at a dummy.
    static const int none[1] = {0};
    for (int k = 0; k < a->n; k++) {
        if (a->skipped[k]) continue;
        stoks[m] = a->src[k], ttoks[m] = a->tgt[k];
        src[m] = a->src[k].ids ? a->src[k].ids : none, sl[m] = a->src[k].n;
        tgt[m] = a->tgt[k].ids ? a->tgt[k].ids : none, tl[m] = a->tgt[k].n;
        m++;
    }
    s2s_hypothesis hyps[CHUNK] = {0};
    s2s_alignment fwd[CHUNK] = {0}, sym[CHUNK] = {0};
    s2s_status st = S2S_OK;
    if (m > 0)
        st = a->ref ? s2s_score(a->fw.st, &a->fw.p, src, sl, tgt, tl, m, hyps)
                    : s2s_translate(a->fw.st, &a->fw.p, src, sl, m, hyps);
    if (st == S2S_OK && m > 0 && a->view.reverse)
        st = s2s_align_symmetrize_pair(&a->pair, m, stoks, hyps, a->ref ? ttoks : NULL, fwd, sym);
    for (int j = 0; j < m && st == S2S_OK && !a->view.reverse; j++)
        st = s2s_hard_align(&fwd[j], &hyps[j], a->view.align_layer, a->view.align_head,
                            a->view.align_share, a->view.no_eos);
    int rc = S2S_EXIT_OK;
    if (st != S2S_OK) {
        fprintf(stderr, "s2s align: %s:%d-%d: %s\n", a->input, a->first_line, a->first_line + a->n - 1,
                s2s_last_error());
        rc = st == S2S_ERR_NOMEM || st == S2S_ERR_BACKEND ? S2S_EXIT_FAILURE : S2S_EXIT_USAGE;
    }
    for (int k = 0, j = 0; k < a->n && rc == S2S_EXIT_OK; k++) {
        if (a->skipped[k]) {
            rc = skipped_line(a);
            continue;
        }
        rc = sentence(a, k, &hyps[j], &fwd[j], a->view.reverse ? &sym[j] : &fwd[j]);
        j++;
    }
    for (int j = 0; j < m; j++) {
        s2s_hypothesis_free(&hyps[j]);
        s2s_alignment_free(&fwd[j]);
        s2s_alignment_free(&sym[j]);
    }
    if (!s2s_cli_flush_stdout()) rc = S2S_EXIT_FAILURE;
    return rc;
}

// Splits a --ref line in place into its columns: the target into
// a->targets[k], the gold alignment (NULL: none) into *gold, the
// coreference column (NULL: none) into *coref. False (after the skip
// warning) when a column is missing.
static bool split_columns(aligner *a, int k, int lineno, char **gold, char **coref) {
    char *target;
    if (s2s_tsv_split(a->lines[k], strlen(a->lines[k]), NULL, 0, &target, gold) != S2S_OK)
        return s2s_lines_skip(&a->in, lineno, s2s_last_error());
    a->targets[k] = target;
    *coref = s2s_tsv_next(*gold);
    if (!a->eval || *gold) return true;
    return s2s_lines_skip(&a->in, lineno, "expected source<TAB>target<TAB>gold alignment, found no gold column");
}

// Tokenizes line (owned by the chunk from now on) into slot a->n, cut to
// the model's length; with --ref splits it in place into source, target
// and gold columns. A bad line (bad: too long or a NUL byte, warned already) is
// marked skipped, after its warning. Returns an exit code (out of memory).
static int add_line(aligner *a, char *line, int lineno, bool bad) {
    int k = a->n++;
    a->lines[k] = line;
    a->lineno[k] = lineno;
    a->targets[k] = NULL;
    a->has_gold[k] = false;
    a->skipped[k] = true;
    a->src[k].n = a->tgt[k].n = a->coref[k].n = 0;
    char *gold = NULL, *coref = NULL;
    if (bad || (a->ref && !split_columns(a, k, lineno, &gold, &coref))) return S2S_EXIT_OK;
    bool cut = false;
    int rc = s2s_lines_tokenize(&a->in, lineno, s2s_model_src_vocab(a->fw.m), line, a->max_tokens,
                                &a->src[k], &cut);
    if (rc == S2S_EXIT_OK && a->targets[k])
        rc = s2s_lines_tokenize(&a->in, lineno, s2s_model_tgt_vocab(a->fw.m), a->targets[k],
                                a->max_tokens, &a->tgt[k], &cut);
    if (rc != S2S_EXIT_OK) return rc == S2S_EXIT_FAILURE ? rc : S2S_EXIT_OK;
    if (gold) {
        s2s_status st = s2s_alignment_parse(&a->gold[k], gold, "gold");
        if (st == S2S_ERR_NOMEM) return s2s_cli_fail(st);
        if (st != S2S_OK) return s2s_lines_skip(&a->in, lineno, s2s_last_error()), S2S_EXIT_OK;
        a->has_gold[k] = true;
    }
    if (coref && a->html) {  // the HTML page marks the source's pronouns and antecedents
        s2s_alignment tgt_side = {0};
        s2s_status st = s2s_coref_parse(&a->coref[k], &tgt_side, coref, "coreference column");
        s2s_alignment_free(&tgt_side);
        if (st == S2S_OK)
            st = s2s_coref_check(&a->coref[k], (const char *const *)a->src[k].pieces, a->src[k].n, NULL);
        if (st == S2S_ERR_NOMEM) return s2s_cli_fail(st);
        if (st != S2S_OK) return s2s_lines_skip(&a->in, lineno, s2s_last_error()), S2S_EXIT_OK;
    }
    a->skipped[k] = false;
    return S2S_EXIT_OK;
}

static void clear_chunk(aligner *a) {
    for (int k = 0; k < a->n; k++) {
        free(a->lines[k]);
        a->lines[k] = NULL;
    }
    a->first_line += a->n;
    a->n = 0;
}

// Sentences from the arguments, else lines of the file or stdin, in
// chunks, by the bad-line rule (cli.h).
static int read_input(aligner *a) {
    int rc = S2S_EXIT_OK;
    if (a->n_pos > 0)
        a->in = (s2s_lines){.cmd = a->cmd, .name = "argument"};
    else
        rc = s2s_lines_open(&a->in, a->cmd, a->eval_path);
    a->input = a->in.name;
    a->max_tokens = s2s_cli_max_tokens(a->fw.m);
    if (a->reverse_path && s2s_cli_max_tokens(a->rv.m) < a->max_tokens)
        a->max_tokens = s2s_cli_max_tokens(a->rv.m);
    for (int i = 0; rc == S2S_EXIT_OK; i++) {
        const char *text;
        int lineno = i + 1;
        bool bad = false;
        if (a->n_pos > 0) {
            if (i >= a->n_pos) break;
            text = a->pos[i];
        } else {
            if (!s2s_lines_next(&a->in)) break;
            text = a->in.text, lineno = a->in.line;
            bad = !s2s_lines_check(&a->in);
        }
        char *line = strdup(text);
        if (!line) {
            rc = S2S_EXIT_FAILURE;
            break;
        }
        rc = add_line(a, line, lineno, bad);
        if (rc == S2S_EXIT_OK && (a->n == CHUNK || a->flush)) rc = flush_chunk(a);
        if (a->n == CHUNK || a->flush || rc != S2S_EXIT_OK) clear_chunk(a);
    }
    if (rc == S2S_EXIT_OK && a->n > 0) rc = flush_chunk(a);
    clear_chunk(a);
    if (rc == S2S_EXIT_OK) rc = a->in.failed;  // the input stopped early: no figures of part
    if (rc == S2S_EXIT_OK && a->eval && s2s_plane_table_sentences(a->tables[0]) == 0)
        rc = s2s_cli_usage_error(a->cmd, "%s: no sentence with a gold alignment to evaluate", a->input);
    return rc;
}

// ---- after the input ----

// The --eval table; with --calibrate the best plane and share stored in
// the model, written to -o OUT or back to the model's own file, and the
// table printed the one of that share.
static int report_eval(aligner *a, const char *model_path) {
    int best = 0, bl, bh;
    for (int k = 1; k < a->n_tables; k++) {  // the lowest AER of each table's best plane
        int l0, h0, l1, h1;
        s2s_plane_table_best(a->tables[best], &l0, &h0);
        s2s_plane_table_best(a->tables[k], &l1, &h1);
        if (s2s_aer(&s2s_plane_table_counts(a->tables[k], l1, h1)->aer) <
            s2s_aer(&s2s_plane_table_counts(a->tables[best], l0, h0)->aer))
            best = k;
    }
    const s2s_plane_table *table = a->tables[best];
    s2s_cli_align_print_table(table, a->input, a->view.no_eos, a->fw.m,
                              a->view.reverse ? &a->pair : NULL, &a->sym_counts);
    if (!a->calibrate_path) return S2S_EXIT_OK;
    s2s_plane_table_best(table, &bl, &bh);
    float share = s2s_plane_table_share(table);
    const char *dst = a->out_path ? a->out_path : model_path;
    s2s_status st = s2s_model_set_head(a->fw.m, S2S_HEAD_ALIGN, bl, bh);
    if (st == S2S_OK) st = s2s_model_set_alignment_share(a->fw.m, share);
    if (st == S2S_OK) st = s2s_model_save(a->fw.m, dst);
    if (st != S2S_OK) {
        s2s_cli_error(s2s_last_error());
        return S2S_EXIT_FAILURE;
    }
    char lb[16], hb[16], pat[256];
    s2s_cli_align_pattern_names(pat, sizeof pat, a->fw.m, S2S_ATTN_MAP_CROSS, bl, bh);
    printf("calibrated: layer %s, head %s%s, share %g (AER %.4f); written to %s\n",
           s2s_cli_align_sel_name(bl, lb), s2s_cli_align_sel_name(bh, hb), pat, (double)share,
           s2s_aer(&s2s_plane_table_counts(table, bl, bh)->aer), dst);
    return S2S_EXIT_OK;
}

static void free_aligner(aligner *a) {
    s2s_align_html_free(a->html);
    for (int k = 0; k < CHUNK; k++) {
        s2s_tokens_free(&a->src[k]);
        s2s_tokens_free(&a->tgt[k]);
        s2s_alignment_free(&a->gold[k]);
        s2s_alignment_free(&a->coref[k]);
    }
    for (int k = 0; k < a->n_tables; k++) s2s_plane_table_free(a->tables[k]);
    s2s_lines_close(&a->in);
    s2s_state_free(a->fw.st);
    s2s_model_free(a->fw.m);
    s2s_state_free(a->rv.st);
    s2s_model_free(a->rv.m);
    free(a);
}

// align, or with eval true eval-align (align --eval); spec->name names the
// command in line warnings.
static int run(const s2s_cmd_spec *spec, bool eval, int argc, char **argv) {
    s2s_decode_opts o = s2s_cli_decode_opts();
    s2s_args args;
    int rc = s2s_args_parse(spec, argc, argv, &args);
    aligner *a = rc == S2S_EXIT_OK && !args.help ? calloc(1, sizeof *a) : NULL;
    if (rc != S2S_EXIT_OK || args.help || !a) {
        if (rc == S2S_EXIT_OK && !args.help) rc = S2S_EXIT_FAILURE;
        s2s_args_free(&args);
        return rc;
    }
    a->view = (s2s_cli_align_view){.layer_sel = SEL_UNSET, .head_sel = SEL_UNSET, .sym = S2S_SYM_GROW_DIAG};
    a->cmd = spec->name;
    a->input = "<stdin>";
    a->first_line = 1;
    a->eval = eval;
    a->flush = isatty(STDIN_FILENO);  // a person typing gets each answer at once
    rc = parse_args(a, &o, &args);
    if (rc == S2S_EXIT_OK) rc = check_usage(a, &o);
    if (rc == S2S_EXIT_OK) rc = prepare(a, &o);
    if (rc == S2S_EXIT_OK) rc = read_input(a);
    if (rc == S2S_EXIT_OK && a->eval) rc = report_eval(a, o.model);
    if (rc == S2S_EXIT_OK && a->html) {
        s2s_status st = s2s_align_html_write(a->html, a->html_path);
        if (st != S2S_OK) {
            s2s_cli_error(s2s_last_error());
            rc = S2S_EXIT_FAILURE;  // a failed write
        } else {
            fprintf(stderr, "s2s %s: wrote %s\n", a->cmd, a->html_path);
        }
    }
    rc = s2s_lines_exit(&a->in, rc);
    free_aligner(a);
    s2s_args_free(&args);
    return rc;
}

int s2s_cmd_align(int argc, char **argv) { return run(&align_spec, false, argc, argv); }

// s2s eval-align -m MODEL GOLD.tsv: the same as s2s align --eval.
int s2s_cmd_eval_align(int argc, char **argv) { return run(&eval_align_spec, true, argc, argv); }
