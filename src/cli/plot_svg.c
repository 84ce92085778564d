// `s2s plot`: the SVG of training runs (plot.h). Small multiples: one panel
// per quantity, laid out in rows of three under a legend; every run has
// one colour in every panel, every matrix of a sublayer one dash pattern.
// Self-contained: no script, no external font or image, so the file shows
// in a browser, in an <img> and in Markdown alike.
//
// The elements a reader (or a test) can count: each panel is a
// <g class="panel" data-quantity="Q" data-series="N"> (Q: loss, dev_loss,
// bleu, lr, grad_norm, or grad_norms with data-group="encoder.layers.0.self_attn"),
// holding N <path class="series" data-run="LABEL" [data-matrix="q_proj"]>,
// a <text class="title">, a <text class="xlabel"> and a <text class="ylabel">.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/plot.h"

enum {
    PANEL_W = 340, PANEL_H = 230,     // one panel, margins included
    MARGIN_L = 64, MARGIN_R = 14,     // inside a panel: room for the y ticks
    MARGIN_T = 28, MARGIN_B = 42,     // the title; the x ticks and label
    COLUMNS = 3, PAD = 10, LEGEND_ROW = 22,
    PLOT_W = PANEL_W - MARGIN_L - MARGIN_R, PLOT_H = PANEL_H - MARGIN_T - MARGIN_B,
};

// Okabe and Ito's colours, told apart with most colour blindness.
static const char *const colours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                      "#E69F00", "#56B4E9", "#000000"};
enum { N_COLOURS = sizeof colours / sizeof colours[0] };

static const struct {
    const char *matrix, *dash;
} dashes[] = {{"q_proj", ""}, {"k_proj", "7 3"}, {"v_proj", "2 2"}, {"out_proj", "9 3 2 3"},
              {"fc1", ""}, {"fc2", "7 3"}};

static const char *dash_of(const char *matrix) {
    for (size_t i = 0; i < sizeof dashes / sizeof dashes[0]; i++)
        if (!strcmp(dashes[i].matrix, matrix)) return dashes[i].dash;
    return "1 3";
}

// ---- text ----

// The len bytes of s as XML text: markup escaped, and anything that is
// not valid UTF-8 or is a control character shown as U+FFFD, so that a
// file name of any bytes gives well-formed XML.
static void put_text_n(FILE *b, const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s, *end = u + len;
    while (u < end) {
        unsigned c = *u;
        int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        bool ok = n > 0 && n <= end - u && (c >= 0x20 || c == '\t') && c != 0x7f &&
                  (n != 2 || c >= 0xc2);
        for (int k = 1; ok && k < n; k++) ok = (u[k] & 0xc0) == 0x80;
        if (ok && n == 3) {
            unsigned cp = (c & 15) << 12 | (u[1] & 63) << 6 | (u[2] & 63);
            ok = cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff) && cp != 0xfffe && cp != 0xffff;
        }
        if (ok && n == 4) {
            unsigned cp = (c & 7) << 18 | (u[1] & 63) << 12 | (u[2] & 63) << 6 | (u[3] & 63);
            ok = cp >= 0x10000 && cp <= 0x10ffff;
        }
        if (!ok) {
            fputs("\xef\xbf\xbd", b);
            u++;
            continue;
        }
        if (c == '<') fputs("&lt;", b);
        else if (c == '>') fputs("&gt;", b);
        else if (c == '&') fputs("&amp;", b);
        else if (c == '"') fputs("&quot;", b);
        else fwrite(u, 1, (size_t)n, b);
        u += n;
    }
}

static void put_text(FILE *b, const char *s) { put_text_n(b, s, strlen(s)); }

// A number as a tick shows it: six significant digits at most.
static void put_num(FILE *b, double v) {
    if (fabs(v) < 1e-12) v = 0;  // not "-0" or "1e-17" for the zero tick
    fprintf(b, "%.6g", v);
}

// ---- axes ----

typedef struct axis {
    double lo, hi;  // the range drawn (log10 of it on a log axis)
    double step;    // between ticks
    bool log;
} axis;

static double nice_step(double range, int ticks) {
    double raw = range / ticks, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

// An axis over [lo, hi] (finite; on a log axis positive): ticks at round
// numbers, or at powers of ten.
static axis axis_make(double lo, double hi, bool log) {
    axis a = {.log = log};
    if (log) {
        a.lo = floor(log10(lo));
        a.hi = ceil(log10(hi));
        if (a.hi <= a.lo) a.hi = a.lo + 1;
        a.step = ceil((a.hi - a.lo) / 6);
        return a;
    }
    if (hi <= lo) {
        double d = lo != 0 ? fabs(lo) * 0.1 : 1;
        lo -= d;
        hi += d;
    }
    a.step = nice_step(hi - lo, 5);
    a.lo = floor(lo / a.step) * a.step;
    a.hi = ceil(hi / a.step) * a.step;
    return a;
}

// Where v lies on a, from 0 to 1 (NAN when it cannot be drawn).
static double axis_at(const axis *a, double v) {
    if (!isfinite(v) || (a->log && v <= 0)) return NAN;
    return ((a->log ? log10(v) : v) - a->lo) / (a->hi - a->lo);
}

// ---- panels ----

typedef struct series_ref {
    const s2s_plot_series *s;
    int run;
    const char *matrix;  // grad_norms: "q_proj"; else NULL
} series_ref;

typedef struct panel {
    const char *quantity;  // data-quantity
    const char *title, *ylabel;
    const char *group;     // grad_norms: "encoder.layers.0.self_attn" (group_len bytes)
    size_t group_len;
    series_ref *refs;
    int n_refs;
    bool markers;          // validations: few points, each marked
} panel;

static int drawable(const s2s_plot_series *s, bool log) {
    int n = 0;
    for (int i = 0; i < s->n; i++) n += isfinite(s->y[i]) && (!log || s->y[i] > 0);
    return n;
}

// Whether a panel's values are all positive (then drawn on a log axis, as
// gradient norms span decades), and their range.
static void value_range(const panel *pn, bool want_log, double *lo, double *hi, bool *log) {
    *lo = INFINITY;
    *hi = -INFINITY;
    *log = want_log;
    for (int r = 0; r < pn->n_refs; r++)
        for (int i = 0; i < pn->refs[r].s->n; i++) {
            double y = pn->refs[r].s->y[i];
            if (!isfinite(y)) continue;
            *log = *log && y > 0;
            *lo = fmin(*lo, y);
            *hi = fmax(*hi, y);
        }
}

// The indices of one pixel column's points that its path keeps.
typedef struct column {
    int first, lo, hi, last;
} column;

static void put_column(FILE *b, const s2s_plot_series *s, const column *c, const axis *ax,
                       const axis *ay, bool *pen_down) {
    int k[4] = {c->first, c->lo, c->hi, c->last};
    for (int i = 1; i < 4; i++)  // in the order they came
        for (int j = i; j > 0 && k[j] < k[j - 1]; j--) {
            int t = k[j];
            k[j] = k[j - 1];
            k[j - 1] = t;
        }
    for (int i = 0; i < 4; i++) {
        if (i > 0 && k[i] == k[i - 1]) continue;
        double px = MARGIN_L + axis_at(ax, s->x[k[i]]) * PLOT_W;
        double py = MARGIN_T + (1 - axis_at(ay, s->y[k[i]])) * PLOT_H;
        fprintf(b, "%s%.1f %.1f", *pen_down ? " L" : "M", px, py);
        *pen_down = true;
    }
}

// The path of s: M/L commands, broken where a value cannot be drawn. Many
// points in one pixel column keep their first, lowest, highest and last,
// so that a spike survives and a long run stays a small file.
static void put_path(FILE *b, const s2s_plot_series *s, const axis *ax, const axis *ay) {
    column c = {0};
    int open = -1;  // the pixel column being gathered, -1 for none
    bool pen_down = false;
    for (int i = 0; i < s->n; i++) {
        double fx = axis_at(ax, s->x[i]), fy = axis_at(ay, s->y[i]);
        int col = isfinite(fx) && isfinite(fy) ? (int)floor(fx * PLOT_W) : -1;
        if (open >= 0 && col != open) put_column(b, s, &c, ax, ay, &pen_down);
        if (col < 0) pen_down = false;  // a gap
        else if (col != open) c = (column){i, i, i, i};
        else {
            if (s->y[i] < s->y[c.lo]) c.lo = i;
            if (s->y[i] > s->y[c.hi]) c.hi = i;
            c.last = i;
        }
        open = col;
    }
    if (open >= 0) put_column(b, s, &c, ax, ay, &pen_down);
}

// ---- the panels of a plot ----

static const struct {
    s2s_plot_quantity q;
    const char *quantity, *title, *ylabel;
    bool markers;
} fixed[S2S_PLOT_COUNT] = {
    {S2S_PLOT_LOSS, "loss", "training loss", "loss", false},
    {S2S_PLOT_DEV_LOSS, "dev_loss", "dev loss", "loss", true},
    {S2S_PLOT_BLEU, "bleu", "dev BLEU (greedy)", "BLEU", true},
    {S2S_PLOT_LR, "lr", "learning rate", "learning rate", false},
    {S2S_PLOT_GRAD_NORM, "grad_norm", "global gradient norm", "gradient norm", false},
};

// The sublayer of a grad_norms key: all before its last dot.
static size_t group_len(const char *key) {
    const char *dot = strrchr(key, '.');
    return dot ? (size_t)(dot - key) : strlen(key);
}

static bool in_group(const char *key, const panel *pn) {
    return group_len(key) == pn->group_len && !memcmp(key, pn->group, pn->group_len);
}

// The sublayer panels, one per group of keys in the order they first come.
static int add_groups(const s2s_plot *p, panel *pn, int n) {
    for (int r = 0; r < p->n_runs; r++)
        for (int i = 0; i < p->runs[r].n_norms; i++) {
            const char *key = p->runs[r].norms[i].key;
            bool seen = false;
            for (int k = S2S_PLOT_COUNT; k < n && !seen; k++) seen = in_group(key, &pn[k]);
            if (seen) continue;
            pn[n] = (panel){.quantity = "grad_norms", .ylabel = "gradient norm", .group = key,
                            .group_len = group_len(key)};
            n++;
        }
    return n;
}

// Every panel with its series (those with a value to draw). *refs: one
// block the panels point into. -1 when out of memory.
static int panels_make(const s2s_plot *p, panel **out, series_ref **refs) {
    int keys = 0;
    for (int r = 0; r < p->n_runs; r++) keys += p->runs[r].n_norms;
    panel *pn = calloc((size_t)S2S_PLOT_COUNT + (size_t)keys, sizeof *pn);
    series_ref *rf = calloc((size_t)p->n_runs * S2S_PLOT_COUNT + (size_t)keys + 1, sizeof *rf);
    if (!pn || !rf) {
        free(pn);
        free(rf);
        return -1;
    }
    int n = 0, nr = 0;
    for (int q = 0; q < S2S_PLOT_COUNT; q++, n++) {
        pn[n] = (panel){.quantity = fixed[q].quantity, .title = fixed[q].title,
                        .ylabel = fixed[q].ylabel, .markers = fixed[q].markers, .refs = rf + nr};
        for (int r = 0; r < p->n_runs; r++)
            if (drawable(&p->runs[r].q[fixed[q].q], false) > 0)
                rf[nr++] = (series_ref){.s = &p->runs[r].q[fixed[q].q], .run = r};
        pn[n].n_refs = (int)(rf + nr - pn[n].refs);
    }
    n = add_groups(p, pn, n);
    for (int k = S2S_PLOT_COUNT; k < n; k++) {
        pn[k].refs = rf + nr;
        for (int r = 0; r < p->n_runs; r++)
            for (int i = 0; i < p->runs[r].n_norms; i++) {
                const s2s_plot_norm *nm = &p->runs[r].norms[i];
                if (!in_group(nm->key, &pn[k]) || drawable(&nm->s, false) == 0) continue;
                size_t g = pn[k].group_len;
                rf[nr++] = (series_ref){.s = &nm->s, .run = r,
                                        .matrix = nm->key + g + (nm->key[g] == '.')};
            }
        pn[k].n_refs = (int)(rf + nr - pn[k].refs);
    }
    *out = pn;
    *refs = rf;
    return n;
}

// ---- drawing ----

static void put_ticks(FILE *b, const axis *ax, const axis *ay) {
    for (double t = ay->lo; t <= ay->hi + 1e-9 * ay->step; t += ay->step) {
        double py = MARGIN_T + (1 - (t - ay->lo) / (ay->hi - ay->lo)) * PLOT_H;
        fprintf(b, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
                       "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">",
                       MARGIN_L, MARGIN_L + PLOT_W, py, py, MARGIN_L - 5, py + 4);
        put_num(b, ay->log ? pow(10, t) : t);
        fputs("</text>\n", b);
    }
    for (double t = ax->lo; t <= ax->hi + 1e-9 * ax->step; t += ax->step) {
        double px = MARGIN_L + (t - ax->lo) / (ax->hi - ax->lo) * PLOT_W;
        fprintf(b, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>"
                       "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">",
                       px, px, MARGIN_T, MARGIN_T + PLOT_H, px, MARGIN_T + PLOT_H + 15);
        put_num(b, t);
        fputs("</text>\n", b);
    }
}

static void put_series(FILE *b, const s2s_plot *p, const series_ref *rf, bool markers,
                       const axis *ax, const axis *ay) {
    const char *colour = colours[rf->run % N_COLOURS];
    fputs("<path class=\"series\" data-run=\"", b);
    put_text(b, p->runs[rf->run].label);
    if (rf->matrix) {
        fputs("\" data-matrix=\"", b);
        put_text(b, rf->matrix);
        const char *dash = dash_of(rf->matrix);
        if (*dash) fprintf(b, "\" stroke-dasharray=\"%s", dash);
    }
    fprintf(b, "\" stroke=\"%s\" d=\"", colour);
    put_path(b, rf->s, ax, ay);
    fputs("\"/>\n", b);
    if (!markers && drawable(rf->s, ay->log) > 1) return;
    for (int i = 0, shown = 0; i < rf->s->n && shown < 500; i++) {
        double fx = axis_at(ax, rf->s->x[i]), fy = axis_at(ay, rf->s->y[i]);
        if (!isfinite(fx) || !isfinite(fy)) continue;
        fprintf(b, "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>",
                       MARGIN_L + fx * PLOT_W, MARGIN_T + (1 - fy) * PLOT_H, colour);
        shown++;
    }
    fputc('\n', b);
}

static void put_panel(FILE *b, const s2s_plot *p, const panel *pn, const axis *ax, int ox,
                      int oy) {
    fprintf(b, "<g class=\"panel\" data-quantity=\"%s\"", pn->quantity);
    if (pn->group) {
        fputs(" data-group=\"", b);
        put_text_n(b, pn->group, pn->group_len);
        fputc('"', b);
    }
    fprintf(b, " data-series=\"%d\" transform=\"translate(%d,%d)\">\n", pn->n_refs, ox, oy);
    fprintf(b, "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n",
                   MARGIN_L, MARGIN_T, PLOT_W, PLOT_H);
    fprintf(b, "<text class=\"title\" x=\"%d\" y=\"18\">", MARGIN_L);
    if (pn->group) put_text_n(b, pn->group, pn->group_len);
    else put_text(b, pn->title);
    fprintf(b, "</text>\n<text class=\"xlabel\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">"
                   "step</text>\n", MARGIN_L + PLOT_W / 2, PANEL_H - 8);
    double lo, hi;
    bool log;
    value_range(pn, pn->group || !strcmp(pn->quantity, "grad_norm"), &lo, &hi, &log);
    fprintf(b, "<text class=\"ylabel\" transform=\"translate(14,%d) rotate(-90)\" "
                   "text-anchor=\"middle\">%s%s</text>\n", MARGIN_T + PLOT_H / 2, pn->ylabel,
                   log && pn->n_refs ? " (log)" : "");
    if (pn->n_refs == 0) {
        fprintf(b, "<text class=\"empty\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">"
                       "no data in these logs</text>\n</g>\n", MARGIN_L + PLOT_W / 2,
                       MARGIN_T + PLOT_H / 2);
        return;
    }
    axis ay = axis_make(lo, hi, log);
    put_ticks(b, ax, &ay);
    for (int r = 0; r < pn->n_refs; r++) put_series(b, p, &pn->refs[r], pn->markers, ax, &ay);
    fputs("</g>\n", b);
}

// ---- the picture ----

// About how wide text is drawn at 11px: a character of UTF-8 each.
static int text_width(const char *s) {
    int n = 0;
    for (const char *c = s; *c; c++) n += ((unsigned char)*c & 0xc0) != 0x80;
    return 7 * n;
}

typedef struct legend {
    FILE *b;
    int x, y, width;  // where the next item goes; the picture's width
} legend;

// One legend item: a stroke of the colour and dash, then its name.
static void put_item(legend *lg, const char *cls, const char *attr, const char *name,
                     const char *colour, const char *dash) {
    int w = 34 + text_width(name) + 18;
    if (lg->x + w > lg->width - PAD && lg->x > PAD) {
        lg->x = PAD;
        lg->y += LEGEND_ROW;
    }
    fprintf(lg->b, "<g class=\"%s\" %s=\"", cls, attr);
    put_text(lg->b, name);
    fprintf(lg->b, "\"><line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" "
                   "stroke-width=\"2.5\"%s%s%s/><text x=\"%d\" y=\"%d\">", lg->x, lg->x + 28,
                   lg->y - 4, lg->y - 4, colour, *dash ? " stroke-dasharray=\"" : "", dash,
                   *dash ? "\"" : "", lg->x + 34, lg->y);
    put_text(lg->b, name);
    fputs("</text></g>\n", lg->b);
    lg->x += w;
}

// The legend: each run's colour, then (on a row of their own) the dash of
// each matrix the sublayer panels show. Returns its height.
static int put_legend(FILE *b, const s2s_plot *p, const panel *pn, int n, int width) {
    legend lg = {.b = b, .x = PAD, .y = PAD + 14, .width = width};
    for (int r = 0; r < p->n_runs; r++)
        put_item(&lg, "legend-run", "data-run", p->runs[r].label, colours[r % N_COLOURS], "");
    bool row = false;
    for (int k = S2S_PLOT_COUNT; k < n; k++)
        for (int i = 0; i < pn[k].n_refs; i++) {
            const char *m = pn[k].refs[i].matrix;
            bool seen = false;  // in an earlier panel, or earlier in this one
            for (int j = S2S_PLOT_COUNT; j <= k && !seen; j++)
                for (int e = 0; e < (j < k ? pn[j].n_refs : i) && !seen; e++)
                    seen = !strcmp(pn[j].refs[e].matrix, m);
            if (seen) continue;
            if (!row) {
                lg.x = PAD;
                lg.y += LEGEND_ROW;
                row = true;
            }
            put_item(&lg, "legend-matrix", "data-matrix", m, "#555", dash_of(m));
        }
    return lg.y + 8 - PAD;
}

static const char style[] =
    "<style>\n"
    "text{font-family:sans-serif;font-size:11px;fill:#222}\n"
    ".title{font-size:12px;font-weight:bold}\n"
    ".tick{fill:#555;font-size:10px}\n"
    ".frame{fill:#fcfcfc;stroke:#999}\n"
    ".grid{stroke:#e6e6e6}\n"
    ".series{fill:none;stroke-width:1.5;stroke-linejoin:round;stroke-opacity:0.85}\n"
    ".empty{fill:#999}\n"
    "</style>\n";

// The steps every panel shows: those of all its series.
static axis step_axis(const panel *pn, int n) {
    double lo = INFINITY, hi = -INFINITY;
    for (int k = 0; k < n; k++)
        for (int r = 0; r < pn[k].n_refs; r++) {
            const s2s_plot_series *s = pn[k].refs[r].s;
            for (int i = 0; i < s->n; i++) {
                lo = fmin(lo, s->x[i]);
                hi = fmax(hi, s->x[i]);
            }
        }
    return lo <= hi ? axis_make(lo, hi, false) : axis_make(0, 1, false);
}

// Writes p's SVG to f. False when out of memory.
static bool write_svg(FILE *f, const s2s_plot *p) {
    panel *pn;
    series_ref *rf;
    int n = panels_make(p, &pn, &rf);
    if (n < 0) return false;
    int width = COLUMNS * PANEL_W + 2 * PAD;
    char *leg = NULL;
    size_t leg_len = 0;
    FILE *lf = open_memstream(&leg, &leg_len);
    int top = lf ? PAD + put_legend(lf, p, pn, n, width) : 0;
    bool ok = lf && !ferror(lf) && fclose(lf) == 0;
    int height = top + (n + COLUMNS - 1) / COLUMNS * PANEL_H + PAD;
    if (ok) {
        fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                "viewBox=\"0 0 %d %d\">\n<title>s2s plot: training runs</title>\n%s"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n"
                "<g class=\"legend\">\n%s</g>\n", width, height, width, height, style, leg);
        axis ax = step_axis(pn, n);
        for (int k = 0; k < n; k++)
            put_panel(f, p, &pn[k], &ax, PAD + k % COLUMNS * PANEL_W, top + k / COLUMNS * PANEL_H);
        fputs("</svg>\n", f);
    }
    free(leg);
    free(pn);
    free(rf);
    return ok;
}

// What write(f, p, title) wrote, as a string; NULL when out of memory.
static char *to_string(bool (*write)(FILE *, const s2s_plot *, const char *), const s2s_plot *p,
                       const char *title) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    bool ok = write(f, p, title) && !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (!ok) {
        free(text);
        return NULL;
    }
    return text;
}

static bool svg_page(FILE *f, const s2s_plot *p, const char *title) {
    (void)title;
    return write_svg(f, p);
}

static bool html_page(FILE *f, const s2s_plot *p, const char *title) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", f);
    put_text(f, title);
    fputs("</title>\n<style>body{margin:16px;background:#fff}</style>\n</head>\n<body>\n", f);
    bool ok = write_svg(f, p);
    fputs("</body>\n</html>\n", f);
    return ok;
}

char *s2s_plot_svg(const s2s_plot *p) { return to_string(svg_page, p, NULL); }

char *s2s_plot_html(const s2s_plot *p, const char *title) {
    return to_string(html_page, p, title);
}
