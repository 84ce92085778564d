// s2s align -m MODEL [options] [SENTENCE ...]: attention alignments.
//
// Free decoding of sentences (arguments, or stdin lines), or with --ref
// forced decoding of source<TAB>target[<TAB>gold] lines. Prints hard
// alignments (Pharaoh), the attention maps (JSON, CSV) or terminal
// heatmaps; writes an HTML report; measures AER against gold (--eval) and
// stores the best layer/head in the model (--calibrate). docs/alignment.md
// describes every option.
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "s2s/align.h"

#define CHUNK 64
#define CMD "align"

enum { SEL_ALL = -2, SEL_UNSET = -3 };  // besides an index or S2S_ALIGN_AVG
typedef enum { FMT_PHARAOH, FMT_JSON, FMT_CSV, FMT_TEXT, FMT_UNSET } out_format;
typedef enum { MAP_CROSS, MAP_SELF, MAP_ENC } map_type;
static const char *const FORMAT_NAMES[] = {"pharaoh", "json", "csv", "text"};
static const char *const MAP_NAMES[] = {"cross", "self", "enc"};
static const char *const MAP_TITLES[] = {"cross-attention", "decoder self-attention",
                                         "encoder self-attention"};

// A model with its state, its decode parameters and its default
// alignment plane (the calibrated layer/head, else avg/avg).
typedef struct side {
    s2s_model *m;
    s2s_state *st;
    s2s_decode_params p;
    int layer, head;
} side;

typedef struct aligner {
    side fw, rv;
    bool ref, no_eos, color, reverse, eval;
    out_format fmt;
    map_type map;
    int layer_sel, head_sel;      // the displayed planes: index, S2S_ALIGN_AVG or SEL_ALL
    int align_layer, align_head;  // the plane the hard alignment comes from
    s2s_symmetrize sym;
    const char *html_path, *calibrate_path, *out_path, *eval_path;
    s2s_align_html *html;
    const char *input;  // the name of the input in messages
    // one chunk of input
    char *lines[CHUNK];    // the source (the line, split in place with --ref)
    const char *targets[CHUNK];  // --ref: the target column
    s2s_tokens src[CHUNK], tgt[CHUNK];
    s2s_alignment gold[CHUNK];
    bool has_gold[CHUNK];
    int n, first_line;
    int sentence;  // 0-based index of the next sentence printed
    bool csv_header;
    // --eval / --calibrate: counts per plane, index (l + 1) * (H + 1) + (h + 1)
    // with l or h = -1 for the average
    s2s_aer_counts *counts, sym_counts;
    long long n_eval;
} aligner;

// ---- option values ----

static bool parse_sel(const char *opt, const char *text, int *out) {
    if (!text) return s2s_cli_usage_error(CMD, "%s needs a value: a number, all or avg", opt), false;
    if (!strcmp(text, "all")) {
        *out = SEL_ALL;
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

// ---- alignments from a hypothesis ----

// The hard alignment of plane (layer, head) of h's cross-attention:
// argmax per target token, </s> column left out and the rows renormalised
// with no_eos, else a token looking most at </s> stays unaligned.
static s2s_status hard_align(s2s_alignment *out, const s2s_hypothesis *h, int layer, int head,
                             bool no_eos) {
    size_t plane = (size_t)h->n_out * h->n_src;
    float *w = malloc((plane ? plane : 1) * sizeof *w), *w2 = malloc((plane ? plane : 1) * sizeof *w2);
    bool *keep = malloc((size_t)h->n_src * sizeof *keep);
    s2s_status st = w && w2 && keep ? S2S_OK : S2S_ERR_NOMEM;
    if (st == S2S_OK)
        st = s2s_attn_select(w, h->cross_attn, h->layers, h->heads, h->n_out, h->n_src, layer, head);
    if (st == S2S_OK && no_eos) {
        for (int c = 0; c < h->n_src; c++) keep[c] = c < h->n_src - 1;
        int cols = s2s_attn_drop_columns(w2, w, h->n, h->n_src, keep);
        st = s2s_align_argmax(out, w2, h->n, cols, cols);
    } else if (st == S2S_OK) {
        st = s2s_align_argmax(out, w, h->n, h->n_src, h->n_src - 1);
    }
    free(w);
    free(w2);
    free(keep);
    return st;
}

// One sentence's tokens and maps, with the labels of every axis.
typedef struct sent {
    const char *source, *target;  // the input text; target NULL when decoded freely
    const char **src_lab;         // (n_src + 1): source tokens, "</s>"
    const char **tgt_lab;         // (n_out): target tokens, "</s>" when produced
    const char **dec_in;          // (n_out): "<s>", target tokens shifted right
    int n_src, n_tgt;
    const s2s_hypothesis *h;
    const s2s_alignment *gold;    // NULL without one
    s2s_alignment fwd, final;     // the forward and the printed (maybe symmetrised) alignment
} sent;

// A displayed map: the (rows, cols) plane of `layer`/`head` of the map
// type, specials dropped with no_eos. Labels point into s.
typedef struct shown {
    float *w;
    int rows, cols;
    const char **rl, **cl;
} shown;

static void shown_free(shown *v) {
    free(v->w);
    free(v->cl);
    *v = (shown){0};
}

static int map_layers(const s2s_hypothesis *h, map_type t) {
    return t == MAP_ENC ? h->enc_layers : h->layers;
}

static s2s_status make_shown(shown *v, const aligner *a, const sent *s, int layer, int head) {
    const s2s_hypothesis *h = s->h;
    const float *maps = a->map == MAP_CROSS ? h->cross_attn : a->map == MAP_SELF ? h->self_attn : h->enc_attn;
    int R = a->map == MAP_ENC ? h->n_src : h->n_out;
    int C = a->map == MAP_CROSS ? h->n_src : R;
    int special = a->map == MAP_SELF ? 0 : C - 1;  // <s> of the decoder, else the source </s>
    const char **rl = a->map == MAP_CROSS ? s->tgt_lab : a->map == MAP_SELF ? s->dec_in : s->src_lab;
    const char **cl = a->map == MAP_CROSS ? s->src_lab : rl;
    *v = (shown){0};
    size_t plane = (size_t)R * C;
    float *w = malloc((plane ? plane : 1) * sizeof *w);
    v->w = malloc((plane ? plane : 1) * sizeof *v->w);
    v->cl = malloc(((size_t)C + 1) * sizeof *v->cl);
    bool *keep = malloc(((size_t)C + 1) * sizeof *keep);
    s2s_status st = w && v->w && v->cl && keep ? S2S_OK : S2S_ERR_NOMEM;
    if (st == S2S_OK) st = s2s_attn_select(w, maps, map_layers(h, a->map), h->heads, R, C, layer, head);
    if (st == S2S_OK) {
        for (int c = 0; c < C; c++) keep[c] = !(a->no_eos && c == special);
        v->rows = R;
        v->cols = s2s_attn_drop_columns(v->w, w, R, C, keep);
        if (!a->no_eos) memcpy(v->w, w, plane * sizeof *w);  // exactly as the model gave them
        int k = 0;
        for (int c = 0; c < C; c++)
            if (keep[c]) v->cl[k++] = cl[c];
        v->rl = rl;
    }
    free(w);
    free(keep);
    if (st != S2S_OK) shown_free(v);
    return st;
}

// The displayed planes: a single selection, or every index then avg.
static int plane_list(int sel, int n, int *out) {
    if (sel != SEL_ALL) {
        out[0] = sel;
        return 1;
    }
    for (int i = 0; i < n; i++) out[i] = i;
    out[n] = S2S_ALIGN_AVG;
    return n + 1;
}

// ---- output ----

static char *sel_name(int x, char buf[16]) {
    if (x < 0) return strcpy(buf, "avg");
    snprintf(buf, 16, "%d", x);
    return buf;
}

static json_t *json_sel(int x) { return x < 0 ? json_string("avg") : json_integer(x); }

static json_t *json_strings(const char **s, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_string(s[i] ? s[i] : ""));
    return a;
}

static int emit_pharaoh(const sent *s) {
    char *t = s2s_alignment_format(&s->final);
    if (!t) return S2S_EXIT_FAILURE;
    puts(t);
    free(t);
    return S2S_EXIT_OK;
}

static int emit_json(aligner *a, const sent *s, const int *ls, int nl, const int *hs, int nh) {
    json_t *o = json_object();
    json_object_set_new(o, "sentence", json_integer(a->sentence));
    json_object_set_new(o, "source", json_string(s->source));
    if (s->target) json_object_set_new(o, "target", json_string(s->target));
    json_object_set_new(o, "source_tokens", json_strings(s->src_lab, s->n_src));
    json_object_set_new(o, "target_tokens", json_strings(s->tgt_lab, s->n_tgt));
    char *al = s2s_alignment_format(&s->final), *fw = a->reverse ? s2s_alignment_format(&s->fwd) : NULL;
    char *gold = s->gold ? s2s_alignment_format(s->gold) : NULL;
    json_object_set_new(o, "alignment", json_string(al ? al : ""));
    json_object_set_new(o, "alignment_layer", json_sel(a->align_layer));
    json_object_set_new(o, "alignment_head", json_sel(a->align_head));
    if (a->reverse) {
        json_object_set_new(o, "forward_alignment", json_string(fw ? fw : ""));
        json_object_set_new(o, "symmetrize", json_string(s2s_symmetrize_name(a->sym)));
    }
    if (gold) json_object_set_new(o, "gold", json_string(gold));
    free(al);
    free(fw);
    free(gold);
    json_t *maps = json_array();
    int rc = S2S_EXIT_OK;
    for (int i = 0; i < nl && rc == S2S_EXIT_OK; i++)
        for (int j = 0; j < nh && rc == S2S_EXIT_OK; j++) {
            shown v;
            if (make_shown(&v, a, s, ls[i], hs[j]) != S2S_OK) {
                rc = s2s_cli_fail(S2S_ERR_NOMEM);
                break;
            }
            json_t *m = json_object(), *rows = json_array();
            json_object_set_new(m, "type", json_string(MAP_NAMES[a->map]));
            json_object_set_new(m, "layer", json_sel(ls[i]));
            json_object_set_new(m, "head", json_sel(hs[j]));
            json_object_set_new(m, "rows", json_strings(v.rl, v.rows));
            json_object_set_new(m, "cols", json_strings(v.cl, v.cols));
            for (int r = 0; r < v.rows; r++) {
                json_t *row = json_array();
                for (int c = 0; c < v.cols; c++)
                    json_array_append_new(row, json_real(round(v.w[(size_t)r * v.cols + c] * 1e6) / 1e6));
                json_array_append_new(rows, row);
            }
            json_object_set_new(m, "weights", rows);
            json_array_append_new(maps, m);
            shown_free(&v);
        }
    json_object_set_new(o, "maps", maps);
    if (rc != S2S_EXIT_OK) {
        json_decref(o);
        return rc;
    }
    return s2s_cli_print_json(o, 6);
}

// RFC 4180: quoted when it holds a comma, a quote or a line break.
static void csv_field(const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"') putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static int emit_csv(aligner *a, const sent *s, const int *ls, int nl, const int *hs, int nh) {
    if (!a->csv_header) {
        puts("sentence,map,layer,head,row,row_token,col,col_token,weight");
        a->csv_header = true;
    }
    char lb[16], hb[16];
    for (int i = 0; i < nl; i++)
        for (int j = 0; j < nh; j++) {
            shown v;
            if (make_shown(&v, a, s, ls[i], hs[j]) != S2S_OK) return s2s_cli_fail(S2S_ERR_NOMEM);
            for (int r = 0; r < v.rows; r++)
                for (int c = 0; c < v.cols; c++) {
                    printf("%d,%s,%s,%s,%d,", a->sentence, MAP_NAMES[a->map], sel_name(ls[i], lb),
                           sel_name(hs[j], hb), r);
                    csv_field(v.rl[r] ? v.rl[r] : "");
                    printf(",%d,", c);
                    csv_field(v.cl[c] ? v.cl[c] : "");
                    printf(",%.6f\n", v.w[(size_t)r * v.cols + c]);
                }
            shown_free(&v);
        }
    return S2S_EXIT_OK;
}

static int emit_text(aligner *a, const sent *s, const int *ls, int nl, const int *hs, int nh) {
    printf("%s[%d] %s", a->sentence ? "\n" : "", a->sentence, s->source);
    printf("  \xE2\x86\x92  ");  // →
    for (int i = 0; i < s->n_tgt; i++) printf("%s%s", i ? " " : "", s->tgt_lab[i]);
    putchar('\n');
    char lb[16], hb[16];
    for (int i = 0; i < nl; i++)
        for (int j = 0; j < nh; j++) {
            shown v;
            if (make_shown(&v, a, s, ls[i], hs[j]) != S2S_OK) return s2s_cli_fail(S2S_ERR_NOMEM);
            char *t = s2s_heatmap_text(v.w, v.rows, v.cols, v.rl, v.cl, a->color);
            shown_free(&v);
            if (!t) return s2s_cli_fail(S2S_ERR_NOMEM);
            printf("%s, layer %s, head %s%s\n%s", MAP_TITLES[a->map], sel_name(ls[i], lb),
                   sel_name(hs[j], hb), a->no_eos ? " (</s>/<s> left out)" : "", t);
            free(t);
        }
    char *al = s2s_alignment_format(&s->final);
    if (!al) return S2S_EXIT_FAILURE;
    printf("alignment (layer %s, head %s%s%s): %s\n", sel_name(a->align_layer, lb),
           sel_name(a->align_head, hb), a->reverse ? ", " : "",
           a->reverse ? s2s_symmetrize_name(a->sym) : "", al);
    free(al);
    return S2S_EXIT_OK;
}

// ---- one chunk ----

// The reverse model's ids for tokens of the forward model: the same token
// text (the vocab's spelling, or the input piece when it was unknown).
static int *map_ids(const s2s_vocab *from, const s2s_vocab *to, const int *ids, char **pieces,
                    int n) {
    int *out = malloc(((size_t)n + 1) * sizeof *out);
    if (!out) return NULL;
    for (int i = 0; i < n; i++) {
        const char *t = ids[i] != S2S_UNK ? s2s_vocab_token(from, ids[i]) : NULL;
        out[i] = s2s_vocab_id(to, t ? t : pieces ? pieces[i] : "");
    }
    return out;
}

static int eval_sentence(aligner *a, const sent *s) {
    int L = s->h->layers, H = s->h->heads;
    s2s_alignment hyp = {0};
    for (int l = -1; l < L; l++)
        for (int h = -1; h < H; h++) {
            if (hard_align(&hyp, s->h, l < 0 ? S2S_ALIGN_AVG : l, h < 0 ? S2S_ALIGN_AVG : h,
                           a->no_eos) != S2S_OK) {
                s2s_alignment_free(&hyp);
                return s2s_cli_fail(S2S_ERR_NOMEM);
            }
            s2s_aer_add(&a->counts[(l + 1) * (H + 1) + (h + 1)], &hyp, s->gold);
        }
    if (a->reverse) s2s_aer_add(&a->sym_counts, &s->final, s->gold);
    a->n_eval++;
    s2s_alignment_free(&hyp);
    return S2S_EXIT_OK;
}

static int flush_chunk(aligner *a) {
    const s2s_vocab *sv = s2s_model_src_vocab(a->fw.m), *tv = s2s_model_tgt_vocab(a->fw.m);
    const int *src[CHUNK], *tgt[CHUNK];
    int sl[CHUNK], tl[CHUNK];
    // An empty line has no ids buffer; the decoder memcpy's 0 ids from it,
    // which UBSan flags with NULL, so point at a dummy.
    static const int none[1] = {0};
    for (int k = 0; k < a->n; k++) {
        src[k] = a->src[k].ids ? a->src[k].ids : none, sl[k] = a->src[k].n;
        tgt[k] = a->tgt[k].ids ? a->tgt[k].ids : none, tl[k] = a->tgt[k].n;
    }
    s2s_hypothesis hyps[CHUNK], rhyps[CHUNK];
    memset(hyps, 0, sizeof hyps);
    memset(rhyps, 0, sizeof rhyps);
    s2s_status st = a->ref ? s2s_score(a->fw.st, &a->fw.p, src, sl, tgt, tl, a->n, hyps)
                           : s2s_translate(a->fw.st, &a->fw.p, src, sl, a->n, hyps);
    int rc = S2S_EXIT_OK;
    if (st != S2S_OK) {
        fprintf(stderr, "s2s: %s:%d-%d: %s\n", a->input, a->first_line,
                a->first_line + a->n - 1, s2s_last_error());
        return st == S2S_ERR_NOMEM || st == S2S_ERR_BACKEND ? S2S_EXIT_FAILURE : S2S_EXIT_USAGE;
    }
    // The reverse model scores target -> source for every pair.
    int *rsrc[CHUNK] = {0}, *rtgt[CHUNK] = {0}, rsl[CHUNK], rtl[CHUNK];
    if (a->reverse) {
        const s2s_vocab *rsv = s2s_model_src_vocab(a->rv.m), *rtv = s2s_model_tgt_vocab(a->rv.m);
        for (int k = 0; k < a->n && rc == S2S_EXIT_OK; k++) {
            rsrc[k] = map_ids(tv, rsv, hyps[k].ids, a->ref ? a->tgt[k].pieces : NULL, hyps[k].n);
            rtgt[k] = map_ids(sv, rtv, a->src[k].ids, a->src[k].pieces, a->src[k].n);
            rsl[k] = hyps[k].n;
            rtl[k] = a->src[k].n;
            if (!rsrc[k] || !rtgt[k]) rc = S2S_EXIT_FAILURE;
        }
        if (rc == S2S_EXIT_OK) {
            st = s2s_score(a->rv.st, &a->rv.p, (const int *const *)rsrc, rsl,
                           (const int *const *)rtgt, rtl, a->n, rhyps);
            if (st != S2S_OK) {
                fprintf(stderr, "s2s: %s:%d-%d: reverse model: %s\n", a->input, a->first_line,
                        a->first_line + a->n - 1, s2s_last_error());
                rc = st == S2S_ERR_NOMEM || st == S2S_ERR_BACKEND ? S2S_EXIT_FAILURE : S2S_EXIT_USAGE;
            }
        }
    }
    const s2s_model_config *mc = &s2s_model_get_config(a->fw.m)->model;
    int most = mc->encoder_layers > mc->decoder_layers ? mc->encoder_layers : mc->decoder_layers;
    if (mc->heads > most) most = mc->heads;
    int *ls = malloc(((size_t)most + 1) * sizeof *ls), *hs = malloc(((size_t)most + 1) * sizeof *hs);
    int nl = 0, nh = 0;
    if (!ls || !hs) rc = S2S_EXIT_FAILURE;
    for (int k = 0; k < a->n && rc == S2S_EXIT_OK; k++) {
        const s2s_hypothesis *h = &hyps[k];
        sent s = {.source = a->lines[k], .target = a->targets[k], .h = h, .n_src = a->src[k].n,
                  .n_tgt = h->n, .gold = a->has_gold[k] ? &a->gold[k] : NULL};
        s.src_lab = malloc(((size_t)s.n_src + 1) * sizeof *s.src_lab);
        s.tgt_lab = malloc(((size_t)h->n_out + 1) * sizeof *s.tgt_lab);
        s.dec_in = malloc(((size_t)h->n_out + 1) * sizeof *s.dec_in);
        if (!s.src_lab || !s.tgt_lab || !s.dec_in) rc = S2S_EXIT_FAILURE;
        for (int i = 0; rc == S2S_EXIT_OK && i < s.n_src; i++) s.src_lab[i] = a->src[k].pieces[i];
        if (rc == S2S_EXIT_OK) s.src_lab[s.n_src] = "</s>";
        for (int i = 0; rc == S2S_EXIT_OK && i < h->n_out; i++) {
            s.tgt_lab[i] = i >= h->n ? "</s>" : a->ref ? a->tgt[k].pieces[i] : s2s_vocab_token(tv, h->ids[i]);
            s.dec_in[i] = i == 0 ? "<s>" : s.tgt_lab[i - 1];
        }
        if (rc == S2S_EXIT_OK && hard_align(&s.fwd, h, a->align_layer, a->align_head, a->no_eos) != S2S_OK)
            rc = s2s_cli_fail(S2S_ERR_NOMEM);
        if (rc == S2S_EXIT_OK && a->reverse) {
            s2s_alignment rev = {0};
            st = hard_align(&rev, &rhyps[k], a->rv.layer, a->rv.head, a->no_eos);
            if (st == S2S_OK) {
                s2s_alignment_transpose(&rev);
                st = s2s_align_symmetrize(&s.final, &s.fwd, &rev, s.n_src, s.n_tgt, a->sym);
            }
            s2s_alignment_free(&rev);
            if (st != S2S_OK) rc = s2s_cli_fail(st);
        } else if (rc == S2S_EXIT_OK) {
            for (int i = 0; i < s.fwd.n && rc == S2S_EXIT_OK; i++)
                if (s2s_alignment_add(&s.final, s.fwd.links[i].src, s.fwd.links[i].tgt, false) != S2S_OK)
                    rc = S2S_EXIT_FAILURE;
        }
        if (rc == S2S_EXIT_OK && s.gold) {
            char where[64];
            snprintf(where, sizeof where, "%.40s:%d", a->input, a->first_line + k);
            if (s2s_alignment_check(s.gold, s.n_src, s.n_tgt, where) != S2S_OK) {
                fprintf(stderr, "s2s: %s\n", s2s_last_error());
                rc = S2S_EXIT_USAGE;
            }
        }
        if (rc == S2S_EXIT_OK && a->eval) {
            rc = eval_sentence(a, &s);
        } else if (rc == S2S_EXIT_OK) {
            nl = plane_list(a->layer_sel, map_layers(h, a->map), ls);
            nh = plane_list(a->head_sel, h->heads, hs);
            switch (a->fmt) {
            case FMT_PHARAOH: rc = emit_pharaoh(&s); break;
            case FMT_JSON: rc = emit_json(a, &s, ls, nl, hs, nh); break;
            case FMT_CSV: rc = emit_csv(a, &s, ls, nl, hs, nh); break;
            default: rc = emit_text(a, &s, ls, nl, hs, nh); break;
            }
            if (rc == S2S_EXIT_OK && a->html) {
                char *al = s2s_alignment_format(&s.final);
                st = al ? s2s_align_html_add(a->html, s.src_lab, s.n_src, s.tgt_lab, s.n_tgt, h, al)
                        : S2S_ERR_NOMEM;
                free(al);
                if (st != S2S_OK) rc = s2s_cli_fail(st);
            }
        }
        a->sentence++;
        free(s.src_lab);
        free(s.tgt_lab);
        free(s.dec_in);
        s2s_alignment_free(&s.fwd);
        s2s_alignment_free(&s.final);
    }
    for (int k = 0; k < a->n; k++) {
        s2s_hypothesis_free(&hyps[k]);
        s2s_hypothesis_free(&rhyps[k]);
        free(rsrc[k]);
        free(rtgt[k]);
    }
    free(ls);
    free(hs);
    if (!s2s_cli_flush_stdout()) rc = S2S_EXIT_FAILURE;
    return rc;
}

// Tokenizes line (owned by the chunk from now on) into slot a->n; with
// --ref splits it in place into source, target and gold columns.
static int add_line(aligner *a, char *line, int lineno) {
    int k = a->n++;
    a->lines[k] = line;
    a->targets[k] = NULL;
    a->has_gold[k] = false;
    a->tgt[k].n = 0;
    char *gold = NULL;
    if (a->ref) {
        char *target;
        if (s2s_tsv_split(line, strlen(line), a->input, lineno, &target, &gold) != S2S_OK) {
            fprintf(stderr, "s2s: %s\n", s2s_last_error());
            return S2S_EXIT_USAGE;
        }
        a->targets[k] = target;
        char *tab = gold ? strchr(gold, '\t') : NULL;
        if (tab) *tab = '\0';  // further columns are ignored
        if (a->eval && !gold) {
            fprintf(stderr, "s2s: %s:%d: expected source<TAB>target<TAB>gold alignment\n",
                    a->input, lineno);
            return S2S_EXIT_USAGE;
        }
    }
    char where[64];
    snprintf(where, sizeof where, "%.40s:%d", a->input, lineno);
    s2s_status st = s2s_tokenize(s2s_model_src_vocab(a->fw.m), line, &a->src[k]);
    if (st == S2S_OK && a->targets[k])
        st = s2s_tokenize(s2s_model_tgt_vocab(a->fw.m), a->targets[k], &a->tgt[k]);
    if (st == S2S_OK && gold) {
        st = s2s_alignment_parse(&a->gold[k], gold, where);
        a->has_gold[k] = st == S2S_OK;
    }
    if (st != S2S_OK) {
        if (st == S2S_ERR_FORMAT)
            fprintf(stderr, "s2s: %s\n", s2s_last_error());
        else
            fprintf(stderr, "s2s: %s: %s\n", where, s2s_last_error());
        return st == S2S_ERR_NOMEM ? S2S_EXIT_FAILURE : S2S_EXIT_USAGE;
    }
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

// ---- --eval / --calibrate ----

static void print_row(const s2s_aer_counts *c, int l, int h, bool best, bool stored) {
    char lb[16], hb[16];
    printf("%-5s %-5s %-8.4f %-9.4f %.4f%s%s\n", sel_name(l, lb), sel_name(h, hb), s2s_aer(c),
           s2s_aer_precision(c), s2s_aer_recall(c), best ? "  best" : "", stored ? "  stored" : "");
}

static void print_table(const aligner *a, int *best_l, int *best_h) {
    int L = s2s_model_get_config(a->fw.m)->model.decoder_layers;
    int H = s2s_model_get_config(a->fw.m)->model.heads;
    int cl, ch;
    bool calibrated = s2s_model_alignment_head(a->fw.m, &cl, &ch);
    double best = INFINITY;
    *best_l = *best_h = 0;
    for (int l = -1; l < L; l++)  // single heads and averages (-1) alike
        for (int h = -1; h < H; h++) {
            double e = s2s_aer(&a->counts[(l + 1) * (H + 1) + (h + 1)]);
            if (e < best) best = e, *best_l = l, *best_h = h;
        }
    printf("# AER against %s: %lld sentences%s\n", a->input, a->n_eval,
           a->no_eos ? ", </s> left out" : "");
    printf("%-5s %-5s %-8s %-9s %s\n", "layer", "head", "AER", "precision", "recall");
    // Each layer's heads then its average; then per-head averages over
    // layers; then the average of everything.
    for (int l = 0; l <= L; l++)
        for (int h = 0; h <= H; h++) {
            int li = l < L ? l : -1, hi = h < H ? h : -1;
            print_row(&a->counts[(li + 1) * (H + 1) + (hi + 1)], li, hi, li == *best_l && hi == *best_h,
                      calibrated && li == cl && hi == ch);
        }
    if (a->reverse) {
        char lb[16], hb[16];
        const s2s_aer_counts *c = &a->sym_counts;
        char rl[16], rh[16];
        printf("%-11s %-8.4f %-9.4f %.4f    (layer %s head %s, reverse model layer %s head %s)\n",
               s2s_symmetrize_name(a->sym), s2s_aer(c), s2s_aer_precision(c), s2s_aer_recall(c),
               sel_name(a->align_layer, lb), sel_name(a->align_head, hb), sel_name(a->rv.layer, rl),
               sel_name(a->rv.head, rh));
    }
}

// ---- command ----

static int open_side(side *sd, const char *path, const s2s_decode_opts *o, bool self) {
    s2s_decode_opts oo = *o;
    oo.model = path;
    int rc = s2s_cli_open(CMD, &oo, &sd->m, &sd->st, &sd->p);
    if (rc != S2S_EXIT_OK) return rc;
    sd->p.n_best = 1;
    sd->p.want_attention = true;
    sd->p.want_self_attention = self;
    if (!s2s_model_alignment_head(sd->m, &sd->layer, &sd->head)) sd->layer = sd->head = S2S_ALIGN_AVG;
    return S2S_EXIT_OK;
}

static const char usage_text[] =
    "usage: s2s align -m MODEL [options] [SENTENCE ...]\n"
    "       s2s align -m MODEL --ref < source<TAB>target[<TAB>gold] lines\n"
    "       s2s align -m MODEL --eval [GOLD.tsv]      (also: s2s eval-align -m MODEL GOLD.tsv)\n"
    "       s2s align -m MODEL --calibrate DEV.tsv [-o OUT]\n"
    "options: --layer L|all|avg  --head H|all|avg  --format pharaoh|json|csv|text\n"
    "         --map cross|self|enc  --no-eos  --html FILE\n"
    "         --reverse MODEL2 [--symmetrize intersection|union|grow-diag|grow-diag-final|"
    "grow-diag-final-and]\n"
    "         and the decoding options of s2s translate\n";

int s2s_cmd_align(int argc, char **argv) {
    s2s_decode_opts o = s2s_cli_decode_opts();
    aligner *a = calloc(1, sizeof *a);
    if (!a) return S2S_EXIT_FAILURE;
    *a = (aligner){.fmt = FMT_UNSET, .layer_sel = SEL_UNSET, .head_sel = SEL_UNSET,
                   .sym = S2S_SYM_GROW_DIAG, .input = "stdin", .first_line = 1};
    const char *reverse_path = NULL;
    bool sym_given = false;
    int rc = S2S_EXIT_OK, first_arg = argc, n_pos = 0;
    for (int i = 0; i < argc && rc == S2S_EXIT_OK; i++) {
        int r = s2s_cli_decode_opt(CMD, &o, argc, argv, &i);
        if (r < 0) rc = S2S_EXIT_USAGE;
        if (r != 0) continue;
        const char *x = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int v;
        if (!strcmp(x, "--ref")) {
            a->ref = true;
        } else if (!strcmp(x, "--no-eos")) {
            a->no_eos = true;
        } else if (!strcmp(x, "--layer") || !strcmp(x, "--head")) {
            if (!parse_sel(x, val, x[2] == 'l' ? &a->layer_sel : &a->head_sel)) rc = S2S_EXIT_USAGE;
            i++;
        } else if (!strcmp(x, "--format")) {
            if (parse_name(x, val, FORMAT_NAMES, 4, &v)) a->fmt = (out_format)v;
            else rc = S2S_EXIT_USAGE;
            i++;
        } else if (!strcmp(x, "--map")) {
            if (parse_name(x, val, MAP_NAMES, 3, &v)) a->map = (map_type)v;
            else rc = S2S_EXIT_USAGE;
            i++;
        } else if (!strcmp(x, "--symmetrize")) {
            static const char *const names[] = {"intersection", "union", "grow-diag",
                                                "grow-diag-final", "grow-diag-final-and"};
            if (parse_name(x, val, names, 5, &v)) a->sym = (s2s_symmetrize)v;
            else rc = S2S_EXIT_USAGE;
            sym_given = true;
            i++;
        } else if (!strcmp(x, "--reverse") || !strcmp(x, "--html") || !strcmp(x, "--calibrate") ||
                   !strcmp(x, "-o") || !strcmp(x, "--output")) {
            if (!val) {
                rc = s2s_cli_usage_error(CMD, "%s needs a file name", x);
                break;
            }
            const char **dst = x[2] == 'r' ? &reverse_path : x[2] == 'h' ? &a->html_path
                             : x[2] == 'c' ? &a->calibrate_path : &a->out_path;
            *dst = val;
            i++;
        } else if (!strcmp(x, "--eval")) {
            a->eval = true;
            if (val && (val[0] != '-' || !strcmp(val, "-"))) a->eval_path = argv[++i];
        } else if (!strcmp(x, "-h") || !strcmp(x, "--help")) {
            fputs(usage_text, stdout);
            free(a);
            return S2S_EXIT_OK;
        } else if (!strcmp(x, "--")) {
            first_arg = i + 1;
            n_pos = argc - i - 1;
            break;
        } else if (x[0] == '-' && x[1]) {
            rc = s2s_cli_usage_error(CMD, "unknown option '%s'", x);
        } else {
            first_arg = i;  // sentences from here on, as in s2s translate
            n_pos = argc - i;
            break;
        }
    }
    // Combinations that cannot work, refused before any model is read.
    if (rc == S2S_EXIT_OK && a->calibrate_path) {
        if (a->eval) rc = s2s_cli_usage_error(CMD, "--calibrate and --eval do not go together");
        a->eval = true;
        a->eval_path = a->calibrate_path;
    }
    if (rc == S2S_EXIT_OK && a->eval) {
        a->ref = true;
        if (!a->eval_path && n_pos == 1) a->eval_path = argv[first_arg], n_pos = 0;
        if (n_pos > 0) rc = s2s_cli_usage_error(CMD, "--eval and --calibrate read a TSV file, not sentences");
        if (rc == S2S_EXIT_OK && a->html_path)
            rc = s2s_cli_usage_error(CMD, "--html does not go with --eval or --calibrate");
    }
    if (rc == S2S_EXIT_OK && a->out_path && !a->calibrate_path)
        rc = s2s_cli_usage_error(CMD, "-o is for --calibrate (where to write the calibrated model)");
    if (rc == S2S_EXIT_OK && sym_given && !reverse_path)
        rc = s2s_cli_usage_error(CMD, "--symmetrize needs --reverse MODEL2 (a target-to-source model)");
    const char *n_best = s2s_cli_decode_value(&o, "decode.n_best");
    if (rc == S2S_EXIT_OK && n_best && atoi(n_best) > 1)
        rc = s2s_cli_usage_error(CMD, "--n-best: align works on the best translation only");
    if (rc == S2S_EXIT_OK && a->fmt == FMT_UNSET) a->fmt = isatty(fileno(stdout)) ? FMT_TEXT : FMT_PHARAOH;
    if (rc == S2S_EXIT_OK && a->fmt == FMT_PHARAOH && (a->layer_sel == SEL_ALL || a->head_sel == SEL_ALL))
        rc = s2s_cli_usage_error(CMD, "--format pharaoh prints one alignment: give a single --layer and "
                                      "--head (a number or avg), not all");
    a->color = a->fmt == FMT_TEXT && isatty(fileno(stdout)) && !getenv("NO_COLOR");
    if (rc != S2S_EXIT_OK) {
        free(a);
        return rc;
    }

    rc = open_side(&a->fw, o.model, &o, a->html_path || a->map != MAP_CROSS);
    // Beam search records cross-attention only: the HTML page then shows
    // just that, and --map self|enc cannot work.
    if (rc == S2S_EXIT_OK && !a->ref && a->fw.p.beam_size > 1) {
        a->fw.p.want_self_attention = false;
        if (a->map != MAP_CROSS)
            rc = s2s_cli_usage_error(CMD, "--map %s: beam search returns cross-attention only (use --beam 1)",
                                     MAP_NAMES[a->map]);
    }
    if (rc == S2S_EXIT_OK && reverse_path) {
        a->reverse = true;
        rc = open_side(&a->rv, reverse_path, &o, false);
    }
    if (rc == S2S_EXIT_OK) {
        const s2s_model_config *mc = &s2s_model_get_config(a->fw.m)->model;
        int L = a->map == MAP_ENC ? mc->encoder_layers : mc->decoder_layers;
        if (!check_sel("--layer", a->layer_sel, L, a->map == MAP_ENC ? "encoder layers" : "decoder layers") ||
            !check_sel("--head", a->head_sel, mc->heads, "heads"))
            rc = S2S_EXIT_USAGE;
        // Unset selectors fall back to the calibrated plane, else avg; the
        // hard alignment uses the displayed plane when it is a single
        // cross-attention plane, else that default.
        if (a->layer_sel == SEL_UNSET) a->layer_sel = a->eval ? S2S_ALIGN_AVG : a->fw.layer;
        if (a->head_sel == SEL_UNSET) a->head_sel = a->eval ? S2S_ALIGN_AVG : a->fw.head;
        bool single = !a->eval && a->map == MAP_CROSS && a->layer_sel != SEL_ALL && a->head_sel != SEL_ALL;
        a->align_layer = single ? a->layer_sel : a->fw.layer;
        a->align_head = single ? a->head_sel : a->fw.head;
    }
    if (rc == S2S_EXIT_OK && a->eval) {
        const s2s_model_config *mc = &s2s_model_get_config(a->fw.m)->model;
        a->counts = calloc((size_t)(mc->decoder_layers + 1) * (mc->heads + 1), sizeof *a->counts);
        if (!a->counts) rc = S2S_EXIT_FAILURE;
    }
    if (rc == S2S_EXIT_OK && a->html_path) {
        s2s_status st = s2s_align_html_new(&a->html, "s2s attention");
        if (st != S2S_OK) rc = s2s_cli_fail(st);
        else
            s2s_align_html_set_view(a->html, a->layer_sel == SEL_ALL ? S2S_ALIGN_AVG : a->layer_sel,
                                    a->head_sel == SEL_ALL ? S2S_ALIGN_AVG : a->head_sel, a->no_eos);
    }

    // Input: sentences from the arguments, else lines of the file or stdin.
    FILE *in = stdin;
    if (rc == S2S_EXIT_OK && a->eval_path && strcmp(a->eval_path, "-")) {
        in = fopen(a->eval_path, "r");
        a->input = a->eval_path;
        if (!in) {
            fprintf(stderr, "s2s: %s: cannot open\n", a->eval_path);
            rc = S2S_EXIT_USAGE;
        }
    }
    char *buf = NULL;
    size_t cap = 0;
    int lineno = 0;
    if (rc == S2S_EXIT_OK && n_pos > 0) a->input = "argument";
    while (rc == S2S_EXIT_OK) {
        char *line = NULL;
        if (n_pos > 0) {
            if (lineno == n_pos) break;
            line = strdup(argv[first_arg + lineno]);
        } else {
            if (!s2s_cli_getline(&buf, &cap, in)) break;
            line = strdup(buf);
        }
        lineno++;
        if (!line) {
            rc = S2S_EXIT_FAILURE;
            break;
        }
        rc = add_line(a, line, lineno);
        if (rc == S2S_EXIT_OK && a->n == CHUNK) rc = flush_chunk(a);
        if (a->n == CHUNK || rc != S2S_EXIT_OK) clear_chunk(a);
    }
    if (rc == S2S_EXIT_OK && a->n > 0) rc = flush_chunk(a);
    clear_chunk(a);
    free(buf);
    if (in && in != stdin) fclose(in);

    if (rc == S2S_EXIT_OK && a->eval) {
        int bl, bh;
        print_table(a, &bl, &bh);
        if (a->calibrate_path) {
            const char *dst = a->out_path ? a->out_path : o.model;
            s2s_status st = s2s_model_set_alignment_head(a->fw.m, bl, bh);
            if (st == S2S_OK) st = s2s_model_save(a->fw.m, dst);
            if (st != S2S_OK) {
                fprintf(stderr, "s2s: %s\n", s2s_last_error());
                rc = S2S_EXIT_FAILURE;
            } else {
                char lb[16], hb[16];
                printf("calibrated: layer %s, head %s (AER %.4f); written to %s\n",
                       sel_name(bl, lb), sel_name(bh, hb),
                       s2s_aer(&a->counts[(bl + 1) * (s2s_model_get_config(a->fw.m)->model.heads + 1) + bh + 1]),
                       dst);
            }
        }
    }
    if (rc == S2S_EXIT_OK && a->html) {
        s2s_status st = s2s_align_html_write(a->html, a->html_path);
        if (st != S2S_OK) {
            fprintf(stderr, "s2s: %s\n", s2s_last_error());
            rc = S2S_EXIT_FAILURE;  // a failed write
        }
    }
    s2s_align_html_free(a->html);
    for (int k = 0; k < CHUNK; k++) {
        s2s_tokens_free(&a->src[k]);
        s2s_tokens_free(&a->tgt[k]);
        s2s_alignment_free(&a->gold[k]);
    }
    free(a->counts);
    s2s_state_free(a->fw.st);
    s2s_model_free(a->fw.m);
    s2s_state_free(a->rv.st);
    s2s_model_free(a->rv.m);
    free(a);
    return rc;
}

// s2s eval-align -m MODEL GOLD.tsv: the same as s2s align --eval.
int s2s_cmd_eval_align(int argc, char **argv) {
    char **args = malloc(((size_t)argc + 2) * sizeof *args);
    if (!args) return S2S_EXIT_FAILURE;
    args[0] = "--eval";
    for (int i = 0; i < argc; i++) args[i + 1] = argv[i];
    args[argc + 1] = NULL;
    int rc = s2s_cmd_align(argc + 1, args);
    free(args);
    return rc;
}
