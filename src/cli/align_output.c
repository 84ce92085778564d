// The output of `s2s align`: Pharaoh lines, JSON Lines, CSV cells, text
// heatmaps and the AER table (docs/alignment.md shows each).
#include "cli/align_output.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tools/heatmap.h"
#include "tools/map_json.h"

const char *const s2s_cli_align_format_names[S2S_CLI_FMT_COUNT] = {"pharaoh", "json", "csv", "text"};
const char *const s2s_cli_align_map_names[S2S_CLI_MAP_COUNT] = {"cross", "self", "enc"};
static const char *const MAP_TITLES[S2S_CLI_MAP_COUNT] = {
    "cross-attention", "decoder self-attention", "encoder self-attention"};

char *s2s_cli_align_sel_name(int x, char buf[16]) {
    if (x < 0) return strcpy(buf, "avg");
    snprintf(buf, 16, "%d", x);
    return buf;
}

static int no_memory(void) {
    fputs("s2s align: out of memory\n", stderr);
    return S2S_EXIT_FAILURE;
}

// ---- labels ----

bool s2s_cli_align_sent_labels(s2s_cli_align_sent *s, const s2s_tokens *src,
                               const s2s_tokens *tgt, const s2s_vocab *tv,
                               const s2s_hypothesis *h) {
    s->h = h;
    s->n_src = src->n;
    s->n_tgt = h->n;
    s->src_lab = malloc(((size_t)s->n_src + 1) * sizeof *s->src_lab);
    s->tgt_lab = malloc(((size_t)h->n_out + 1) * sizeof *s->tgt_lab);
    s->dec_in = malloc(((size_t)h->n_out + 1) * sizeof *s->dec_in);
    if (!s->src_lab || !s->tgt_lab || !s->dec_in) {
        s2s_cli_align_sent_free(s);
        return false;
    }
    for (int i = 0; i < s->n_src; i++) s->src_lab[i] = src->pieces[i];
    s->src_lab[s->n_src] = "</s>";
    for (int i = 0; i < h->n_out; i++) {
        s->tgt_lab[i] = i >= h->n ? "</s>" : tgt ? tgt->pieces[i] : s2s_vocab_token(tv, h->ids[i]);
        s->dec_in[i] = i == 0 ? "<s>" : s->tgt_lab[i - 1];
    }
    return true;
}

void s2s_cli_align_sent_free(s2s_cli_align_sent *s) {
    free(s->src_lab);
    free(s->tgt_lab);
    free(s->dec_in);
    s->src_lab = s->tgt_lab = s->dec_in = NULL;
}

// ---- displayed planes ----

// A displayed map: the (rows, cols) plane of `layer`/`head` of the map
// type, specials dropped with no_eos. Labels point into the sentence.
typedef struct shown {
    float *w;
    bool *seen;  // (rows, cols): a key some head of the plane may see, not hidden by its pattern
    int rows, cols;
    const char **rl, **cl;
} shown;

static void shown_free(shown *v) {
    free(v->w);
    free(v->seen);
    free(v->cl);
    *v = (shown){0};
}

static const s2s_attn_map ATTN_MAP[S2S_CLI_MAP_COUNT] = {
    [S2S_CLI_MAP_CROSS] = S2S_ATTN_MAP_CROSS, [S2S_CLI_MAP_SELF] = S2S_ATTN_MAP_SELF,
    [S2S_CLI_MAP_ENC] = S2S_ATTN_MAP_ENC};

static int map_layers(const s2s_hypothesis *h, s2s_cli_align_map t) {
    return t == S2S_CLI_MAP_ENC ? h->enc_layers : h->layers;
}

static s2s_status make_shown(shown *v, const s2s_cli_align_view *o, const s2s_cli_align_sent *s,
                             int layer, int head) {
    const s2s_hypothesis *h = s->h;
    s2s_cli_align_map t = o->map;
    const float *maps = t == S2S_CLI_MAP_CROSS ? h->cross_attn
                        : t == S2S_CLI_MAP_SELF ? h->self_attn : h->enc_attn;
    int R = t == S2S_CLI_MAP_ENC ? h->n_src : h->n_out;
    int C = t == S2S_CLI_MAP_CROSS ? h->n_src : R;
    int special = t == S2S_CLI_MAP_SELF ? 0 : C - 1;  // <s> of the decoder, else the source </s>
    const char **rl = t == S2S_CLI_MAP_CROSS ? s->tgt_lab : t == S2S_CLI_MAP_SELF ? s->dec_in : s->src_lab;
    const char **cl = t == S2S_CLI_MAP_CROSS ? s->src_lab : rl;
    *v = (shown){0};
    size_t plane = (size_t)R * C;
    float *w = malloc((plane ? plane : 1) * sizeof *w);
    v->w = malloc((plane ? plane : 1) * sizeof *v->w);
    v->cl = malloc(((size_t)C + 1) * sizeof *v->cl);
    v->seen = malloc((plane ? plane : 1) * sizeof *v->seen);
    bool *keep = malloc(((size_t)C + 1) * sizeof *keep);
    bool *seen = malloc((plane ? plane : 1) * sizeof *seen);
    s2s_status st = w && v->w && v->cl && v->seen && keep && seen ? S2S_OK : S2S_ERR_NOMEM;
    if (st == S2S_OK) st = s2s_attn_select(w, maps, map_layers(h, t), h->heads, R, C, layer, head);
    if (st == S2S_OK && o->model)
        st = s2s_attn_select_seen(seen, o->model, ATTN_MAP[t], R, C, layer, head);
    else if (st == S2S_OK)
        for (size_t e = 0; e < plane; e++) seen[e] = true;
    if (st == S2S_OK) {
        for (int c = 0; c < C; c++) keep[c] = !(o->no_eos && c == special);
        v->rows = R;
        v->cols = s2s_attn_drop_columns(v->w, w, R, C, keep);
        if (!o->no_eos) memcpy(v->w, w, plane * sizeof *w);  // exactly as the model gave them
        int k = 0;
        for (int c = 0; c < C; c++)
            if (keep[c]) v->cl[k++] = cl[c];
        for (int r = 0, e = 0; r < R; r++)
            for (int c = 0; c < C; c++)
                if (keep[c]) v->seen[e++] = seen[(size_t)r * C + c];
        v->rl = rl;
    }
    free(w);
    free(seen);
    free(keep);
    if (st != S2S_OK) shown_free(v);
    return st;
}

// The displayed planes: a single selection, or every index then avg.
static int plane_list(int sel, int n, int *out) {
    if (sel != S2S_CLI_SEL_ALL) {
        out[0] = sel;
        return 1;
    }
    for (int i = 0; i < n; i++) out[i] = i;
    out[n] = S2S_ALIGN_AVG;
    return n + 1;
}

// The planes of one sentence, layers (ls, nl) by heads (hs, nh).
typedef struct planes {
    int *ls, *hs;
    int nl, nh;
} planes;

// ---- each head's pattern ----

// The layers and heads of the attention behind map type t in m.
static void model_planes(const s2s_model *m, s2s_attn_map t, int *layers, int *heads) {
    const s2s_model_config *mc = &s2s_model_get_config(m)->model;
    *layers = t == S2S_ATTN_MAP_ENC ? mc->encoder_layers : mc->decoder_layers;
    *heads = mc->heads;
}

// Map m of plane (layer, head) gets "pattern", its head's, when it is one
// head of one layer, else "patterns": the pattern of every plane of the
// mean, with its layer and head.
static void json_set_patterns(json_t *m, const s2s_model *model, s2s_attn_map t, int layer,
                              int head) {
    if (layer >= 0 && head >= 0) {
        s2s_head_pattern p = s2s_model_head_pattern(model, t, layer, head);
        json_object_set_new(m, "pattern", s2s_pattern_json(&p));
        return;
    }
    int L, H;
    model_planes(model, t, &L, &H);
    json_t *list = json_array();
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            if ((layer >= 0 && l != layer) || (head >= 0 && h != head)) continue;
            s2s_head_pattern p = s2s_model_head_pattern(model, t, l, h);
            json_t *e = s2s_pattern_json(&p);
            json_object_set_new(e, "layer", json_integer(l));
            json_object_set_new(e, "head", json_integer(h));
            json_array_append_new(list, e);
        }
    json_object_set_new(m, "patterns", list);
}

void s2s_cli_align_pattern_names(char *out, size_t n, const s2s_model *m, s2s_attn_map t,
                                 int layer, int head) {
    out[0] = '\0';
    if (!m || !s2s_model_attn_varies(m, t)) return;
    // Each pattern once, in the order of the planes. An attention has one
    // config, so a type comes with one span: types tell patterns apart.
    s2s_head_pattern seen[S2S_ATTN_TYPE_COUNT];
    int L, H, k = 0;
    model_planes(m, t, &L, &H);
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            if ((layer >= 0 && l != layer) || (head >= 0 && h != head)) continue;
            s2s_head_pattern p = s2s_model_head_pattern(m, t, l, h);
            bool known = false;
            for (int i = 0; i < k; i++) known |= seen[i].type == p.type;
            if (!known && k < S2S_ATTN_TYPE_COUNT) seen[k++] = p;
        }
    size_t len = 0;
    for (int i = 0; i < k && len < n; i++) {
        char name[48];
        s2s_head_pattern_text(&seen[i], name, sizeof name);
        len += (size_t)snprintf(out + len, n - len, "%s%s", i ? " / " : ": ", name);
    }
}

// ---- formats ----

static int print_pharaoh(const s2s_cli_align_sent *s) {
    char *t = s2s_alignment_format(s->final);
    if (!t) return no_memory();
    puts(t);
    free(t);
    return S2S_EXIT_OK;
}

// The map of one plane as a JSON object; NULL on out of memory.
static json_t *json_map(const s2s_cli_align_view *o, const s2s_cli_align_sent *s, int layer,
                        int head) {
    shown v;
    if (make_shown(&v, o, s, layer, head) != S2S_OK) return NULL;
    json_t *m = s2s_map_json(s2s_cli_align_map_names[o->map], layer, head,
                             (const char *const *)v.rl, v.rows, (const char *const *)v.cl, v.cols,
                             v.w);
    if (o->model) json_set_patterns(m, o->model, ATTN_MAP[o->map], layer, head);
    shown_free(&v);
    return m;
}

static int print_json(const s2s_cli_align_view *o, const s2s_cli_align_sent *s, const planes *p) {
    json_t *j = json_object();
    json_object_set_new(j, "sentence", json_integer(o->sentence));
    json_object_set_new(j, "source", json_string(s->source));
    if (s->target) json_object_set_new(j, "target", json_string(s->target));
    json_object_set_new(j, "source_tokens", s2s_json_strings((const char *const *)s->src_lab, s->n_src));
    json_object_set_new(j, "target_tokens", s2s_json_strings((const char *const *)s->tgt_lab, s->n_tgt));
    json_object_set_new(j, "alignment", s2s_json_links(s->final));
    json_object_set_new(j, "alignment_layer", s2s_json_sel(o->align_layer));
    json_object_set_new(j, "alignment_head", s2s_json_sel(o->align_head));
    if (o->reverse) {
        json_object_set_new(j, "forward_alignment", s2s_json_links(s->fwd));
        json_object_set_new(j, "symmetrize", json_string(s2s_symmetrize_name(o->sym)));
    }
    if (s->gold) json_object_set_new(j, "gold", s2s_json_links(s->gold));
    json_t *maps = json_array();
    json_object_set_new(j, "maps", maps);
    for (int i = 0; i < p->nl; i++)
        for (int k = 0; k < p->nh; k++) {
            json_t *m = json_map(o, s, p->ls[i], p->hs[k]);
            if (!m) {
                json_decref(j);
                return no_memory();
            }
            json_array_append_new(maps, m);
        }
    return s2s_cli_print_json(j, 6);
}

// RFC 4180: quoted when it holds a comma, a quote or a line break.
static void csv_field(const char *s) {
    if (!s) s = "";
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

static int print_csv(s2s_cli_align_view *o, const s2s_cli_align_sent *s, const planes *p) {
    if (!o->csv_header) {
        puts("sentence,map,layer,head,row,row_token,col,col_token,weight");
        o->csv_header = true;
    }
    char lb[16], hb[16];
    for (int i = 0; i < p->nl; i++)
        for (int k = 0; k < p->nh; k++) {
            shown v;
            if (make_shown(&v, o, s, p->ls[i], p->hs[k]) != S2S_OK) return no_memory();
            for (int r = 0; r < v.rows; r++)
                for (int c = 0; c < v.cols; c++) {
                    printf("%d,%s,%s,%s,%d,", o->sentence, s2s_cli_align_map_names[o->map],
                           s2s_cli_align_sel_name(p->ls[i], lb), s2s_cli_align_sel_name(p->hs[k], hb), r);
                    csv_field(v.rl[r]);
                    printf(",%d,", c);
                    csv_field(v.cl[c]);
                    printf(",%.6f\n", v.w[(size_t)r * v.cols + c]);
                }
            shown_free(&v);
        }
    return S2S_EXIT_OK;
}

// Every plane (l, h) of the map as make_shown gives it, in one block
// (layers, heads, rows, cols) for s2s_heatmap_grid_text: the text grid.
static char *grid_text(const s2s_cli_align_view *o, const s2s_cli_align_sent *s) {
    int L = map_layers(s->h, o->map), H = s->h->heads, R = 0, C = 0;
    float *w = NULL;
    bool *seen = NULL, ok = true;
    const char **rl = NULL, **cl = NULL;
    for (int l = 0; l < L && ok; l++)
        for (int h = 0; h < H && ok; h++) {
            shown v;
            if (make_shown(&v, o, s, l, h) != S2S_OK) {
                ok = false;
                break;
            }
            size_t plane = (size_t)v.rows * v.cols, at = ((size_t)l * H + h) * plane;
            if (!w) {  // the first plane: every plane has its shape
                size_t n = (size_t)L * H * plane + 1;
                R = v.rows, C = v.cols, rl = v.rl;
                w = malloc(n * sizeof *w);
                seen = malloc(n * sizeof *seen);
                cl = malloc(((size_t)C + 1) * sizeof *cl);
                ok = w && seen && cl;
                if (ok) memcpy(cl, v.cl, (size_t)C * sizeof *cl);
            }
            if (ok) {
                memcpy(w + at, v.w, plane * sizeof *w);
                memcpy(seen + at, v.seen, plane * sizeof *seen);
            }
            shown_free(&v);
        }
    char *t = NULL;
    if (ok && w) t = s2s_heatmap_grid_text(w, seen, L, H, R, C, rl, cl, o->width, o->color);
    free(w);
    free(seen);
    free(cl);
    return t;
}

static int print_text(const s2s_cli_align_view *o, const s2s_cli_align_sent *s, const planes *p) {
    printf("%s[%d] %s", o->sentence ? "\n" : "", o->sentence, s->source);
    printf("  \xE2\x86\x92  ");  // →
    for (int i = 0; i < s->n_tgt; i++) printf("%s%s", i ? " " : "", s->tgt_lab[i]);
    putchar('\n');
    char lb[16], hb[16];
    bool grid = o->layer_sel == S2S_CLI_SEL_ALL && o->head_sel == S2S_CLI_SEL_ALL;
    if (grid) {  // every layer and head side by side, in place of a heatmap each
        char *t = grid_text(o, s), pat[256];
        if (!t) return no_memory();
        s2s_cli_align_pattern_names(pat, sizeof pat, o->model, ATTN_MAP[o->map], -1, -1);
        printf("%s, every layer and head%s%s%s\n%s", MAP_TITLES[o->map], pat,
               pat[0] ? " (\xC2\xB7 a hidden key)" : "", o->no_eos ? " (</s>/<s> left out)" : "",
               t);
        free(t);
    }
    for (int i = 0; i < p->nl && !grid; i++)
        for (int k = 0; k < p->nh; k++) {
            shown v;
            if (make_shown(&v, o, s, p->ls[i], p->hs[k]) != S2S_OK) return no_memory();
            char *t = s2s_heatmap_text_seen(v.w, v.seen, v.rows, v.cols, v.rl, v.cl, o->color);
            shown_free(&v);
            if (!t) return no_memory();
            char pat[256];
            s2s_cli_align_pattern_names(pat, sizeof pat, o->model, ATTN_MAP[o->map], p->ls[i],
                                        p->hs[k]);
            printf("%s, layer %s, head %s%s%s\n%s", MAP_TITLES[o->map], s2s_cli_align_sel_name(p->ls[i], lb),
                   s2s_cli_align_sel_name(p->hs[k], hb), pat, o->no_eos ? " (</s>/<s> left out)" : "", t);
            free(t);
        }
    char *al = s2s_alignment_format(s->final);
    if (!al) return no_memory();
    // The alignment always comes from cross-attention; under another map's
    // heatmap, say so.
    printf("%salignment (layer %s, head %s%s%s): %s\n",
           o->map != S2S_CLI_MAP_CROSS ? "cross-attention " : "",
           s2s_cli_align_sel_name(o->align_layer, lb), s2s_cli_align_sel_name(o->align_head, hb),
           o->reverse ? ", " : "", o->reverse ? s2s_symmetrize_name(o->sym) : "", al);
    free(al);
    return S2S_EXIT_OK;
}

int s2s_cli_align_print(s2s_cli_align_view *v, const s2s_cli_align_sent *s) {
    if (v->fmt == S2S_CLI_FMT_PHARAOH) return print_pharaoh(s);
    int n_layers = map_layers(s->h, v->map), rc;
    planes p = {malloc(((size_t)n_layers + 1) * sizeof(int)),
                malloc(((size_t)s->h->heads + 1) * sizeof(int)), 0, 0};
    if (!p.ls || !p.hs) {
        rc = no_memory();
    } else {
        p.nl = plane_list(v->layer_sel, n_layers, p.ls);
        p.nh = plane_list(v->head_sel, s->h->heads, p.hs);
        rc = v->fmt == S2S_CLI_FMT_JSON ? print_json(v, s, &p)
             : v->fmt == S2S_CLI_FMT_CSV ? print_csv(v, s, &p) : print_text(v, s, &p);
    }
    free(p.ls);
    free(p.hs);
    return rc;
}

// ---- the AER table ----

static void print_row(const s2s_aer_counts *c, int l, int h, bool best, bool stored) {
    char lb[16], hb[16];
    printf("%-5s %-5s %-8.4f %-9.4f %.4f%s%s\n", s2s_cli_align_sel_name(l, lb),
           s2s_cli_align_sel_name(h, hb), s2s_aer(c), s2s_aer_precision(c), s2s_aer_recall(c),
           best ? "  best" : "", stored ? "  stored" : "");
}

void s2s_cli_align_print_table(const s2s_plane_table *t, const char *input, bool no_eos,
                               const s2s_model *m, const s2s_align_pair *pair,
                               const s2s_aer_counts *sym) {
    const s2s_model_config *mc = &s2s_model_get_config(m)->model;
    int L = mc->decoder_layers, H = mc->heads, bl, bh, cl, ch;
    s2s_plane_table_best(t, &bl, &bh);
    bool calibrated = s2s_model_head(m, S2S_HEAD_ALIGN, &cl, &ch);
    printf("# AER against %s: %lld sentences%s, share %g\n", input, s2s_plane_table_sentences(t),
           no_eos ? ", </s> left out" : "", (double)s2s_plane_table_share(t));
    printf("%-5s %-5s %-8s %-9s %s\n", "layer", "head", "AER", "precision", "recall");
    // Each layer's heads then its average; then per-head averages over
    // layers; then the average of everything.
    for (int l = 0; l <= L; l++)
        for (int h = 0; h <= H; h++) {
            int li = l < L ? l : S2S_ALIGN_AVG, hi = h < H ? h : S2S_ALIGN_AVG;
            print_row(&s2s_plane_table_counts(t, li, hi)->aer, li, hi, li == bl && hi == bh,
                      calibrated && li == cl && hi == ch);
        }
    if (pair) {
        char lb[16], hb[16], rl[16], rh[16];
        printf("%-11s %-8.4f %-9.4f %.4f    (layer %s head %s, reverse model layer %s head %s)\n",
               s2s_symmetrize_name(pair->method), s2s_aer(sym), s2s_aer_precision(sym),
               s2s_aer_recall(sym), s2s_cli_align_sel_name(pair->layer, lb),
               s2s_cli_align_sel_name(pair->head, hb), s2s_cli_align_sel_name(pair->rev_layer, rl),
               s2s_cli_align_sel_name(pair->rev_head, rh));
    }
}
