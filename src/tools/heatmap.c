// Attention heatmaps for the terminal: shade blocks, token labels, and
// column widths that stay right with CJK (double-width) tokens.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "tools/heatmap.h"
#include "tokenizer/utf8.h"

// ---- display width ----

typedef struct range {
    uint32_t lo, hi;
} range;

// East Asian Width W and F (Unicode 15 EastAsianWidth.txt, merged into
// blocks; a few text-presentation symbols inside the emoji blocks are
// counted wide too, as most terminals draw them).
static const range WIDE[] = {
    {0x1100, 0x115F},   {0x231A, 0x231B},   {0x2329, 0x232A},   {0x23E9, 0x23EC},
    {0x23F0, 0x23F0},   {0x23F3, 0x23F3},   {0x25FD, 0x25FE},   {0x2614, 0x2615},
    {0x2648, 0x2653},   {0x267F, 0x267F},   {0x2693, 0x2693},   {0x26A1, 0x26A1},
    {0x26AA, 0x26AB},   {0x26BD, 0x26BE},   {0x26C4, 0x26C5},   {0x26CE, 0x26CE},
    {0x26D4, 0x26D4},   {0x26EA, 0x26EA},   {0x26F2, 0x26F3},   {0x26F5, 0x26F5},
    {0x26FA, 0x26FA},   {0x26FD, 0x26FD},   {0x2705, 0x2705},   {0x270A, 0x270B},
    {0x2728, 0x2728},   {0x274C, 0x274C},   {0x274E, 0x274E},   {0x2753, 0x2755},
    {0x2757, 0x2757},   {0x2795, 0x2797},   {0x27B0, 0x27B0},   {0x27BF, 0x27BF},
    {0x2B1B, 0x2B1C},   {0x2B50, 0x2B50},   {0x2B55, 0x2B55},   {0x2E80, 0x303E},
    {0x3041, 0x33FF},   {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},
    {0xA960, 0xA97F},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFE10, 0xFE19},
    {0xFE30, 0xFE6F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x16FE0, 0x16FE4},
    {0x17000, 0x18CFF}, {0x1B000, 0x1B2FF}, {0x1F004, 0x1F004}, {0x1F0CF, 0x1F0CF},
    {0x1F18E, 0x1F18E}, {0x1F191, 0x1F19A}, {0x1F200, 0x1F265}, {0x1F300, 0x1F64F},
    {0x1F680, 0x1F6FF}, {0x1F7E0, 0x1F7EB}, {0x1F90C, 0x1F9FF}, {0x1FA70, 0x1FAFF},
    {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
};

// Combining marks and zero-width format characters (the common blocks).
static const range ZERO[] = {
    {0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x05BF, 0x05BF}, {0x05C1, 0x05C2},
    {0x05C4, 0x05C5}, {0x05C7, 0x05C7}, {0x0610, 0x061A}, {0x064B, 0x065F}, {0x0670, 0x0670},
    {0x06D6, 0x06DC}, {0x06DF, 0x06E4}, {0x06E7, 0x06E8}, {0x06EA, 0x06ED}, {0x0E31, 0x0E31},
    {0x0E34, 0x0E3A}, {0x0E47, 0x0E4E}, {0x1160, 0x11FF}, {0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF},
    {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x2064}, {0x20D0, 0x20FF}, {0x302A, 0x302D},
    {0x3099, 0x309A}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0xFEFF, 0xFEFF}, {0xE0100, 0xE01EF},
};

static bool in_ranges(uint32_t c, const range *r, size_t n) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c < r[mid].lo)
            hi = mid;
        else if (c > r[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

// One character of the NUL-terminated s: its length in bytes, and *cp, or
// *cp = 0xFFFFFFFF (length 1) for a byte that starts no valid character.
static int utf8_next(const unsigned char *s, uint32_t *cp) {
    int n = s2s_utf8_decode((const char *)s, strnlen((const char *)s, 4), cp);
    if (n > 0) return n;
    *cp = 0xFFFFFFFFu;
    return 1;
}

static int char_width(uint32_t c) {
    if (c == 0xFFFFFFFFu) return 1;
    if (c < 0x20 || (c >= 0x7F && c < 0xA0)) return 0;
    if (in_ranges(c, ZERO, sizeof ZERO / sizeof ZERO[0])) return 0;
    if (in_ranges(c, WIDE, sizeof WIDE / sizeof WIDE[0])) return 2;
    return 1;
}

// Length of an ANSI CSI sequence (ESC [ params letter) at s, else 0.
static size_t csi_len(const char *s) {
    if (s[0] != 0x1B || s[1] != '[') return 0;
    size_t k = 2;
    while (s[k] && (s[k] < 0x40 || s[k] > 0x7E)) k++;
    return s[k] ? k + 1 : k;
}

int s2s_display_width(const char *s) {
    int w = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t esc = csi_len((const char *)p);
        if (esc) {
            p += esc;
            continue;
        }
        uint32_t c;
        p += utf8_next(p, &c);
        w += char_width(c);
    }
    return w;
}

// ---- heatmap ----

#define LABEL_MAX 12  // display columns of a label before it is cut

// Columns of a label as put_label draws it (a control character or an
// invalid byte as one '?').
static int text_width(const char *label) {
    int total = 0;
    for (const unsigned char *q = (const unsigned char *)(label ? label : ""); *q;) {
        uint32_t c;
        q += utf8_next(q, &c);
        total += c == 0xFFFFFFFFu || c < 0x20 || (c >= 0x7F && c < 0xA0) ? 1 : char_width(c);
    }
    return total;
}

// Appends `label` made safe for a terminal (control characters and invalid
// bytes become '?') and cut to at most `width` columns ("…" marks a cut),
// then pads it with spaces to exactly `width` columns.
static void put_label(s2s_buf *b, const char *label, int width) {
    const unsigned char *p = (const unsigned char *)(label ? label : "");
    int total = text_width(label);
    int budget = total > width ? width - 1 : width, used = 0;
    while (*p) {
        uint32_t c;
        int n = utf8_next(p, &c);
        bool bad = c == 0xFFFFFFFFu || c < 0x20 || (c >= 0x7F && c < 0xA0);
        int cw = bad ? 1 : char_width(c);
        if (used + cw > budget) break;
        if (bad)
            s2s_buf_putc(b, '?');
        else
            s2s_buf_append(b, (const char *)p, (size_t)n);
        used += cw;
        p += n;
    }
    if (total > width) {
        s2s_buf_puts(b, "\xE2\x80\xA6");  // …
        used++;
    }
    for (; used < width; used++) s2s_buf_putc(b, ' ');
}

static int label_width(const char *label) {
    int w = text_width(label);
    return w < LABEL_MAX ? w : LABEL_MAX;
}

static int shade_level(float w) {
    if (!(w >= 0.05f)) return 0;  // also NaN
    if (w < 0.25f) return 1;
    if (w < 0.5f) return 2;
    if (w < 0.75f) return 3;
    return 4;
}

static const char *const SHADE[5] = {" ", "\xE2\x96\x91", "\xE2\x96\x92", "\xE2\x96\x93",
                                     "\xE2\x96\x88"};  // ░ ▒ ▓ █
static const int RAMP[5] = {238, 24, 31, 38, 45};         // dark grey to cyan

// The row's largest cell (the first of equals; NaN skipped), -1 for none.
static int row_best(const float *x, int cols) {
    int best = -1;
    for (int c = 0; c < cols; c++)
        if (x[c] == x[c] && (best < 0 || x[c] > x[best])) best = c;
    return best;
}

// One cell of weight x, `width` columns: a shade, or '·' for a key hidden
// by the head's pattern; with color the row's largest cell in orange.
static void put_cell(s2s_buf *b, float x, bool best, bool hidden, int width, bool color) {
    int lvl = shade_level(x);
    if (color) s2s_buf_printf(b, "\x1b[38;5;%dm", best && lvl > 0 ? 214 : RAMP[lvl]);
    s2s_buf_repeat(b, hidden ? "\xC2\xB7" : SHADE[lvl], width);  // ·: a hidden key
    if (color) s2s_buf_puts(b, "\x1b[0m");
}

char *s2s_heatmap_text(const float *w, int rows, int cols, const char *const *row_labels,
                       const char *const *col_labels, bool color) {
    return s2s_heatmap_text_seen(w, NULL, rows, cols, row_labels, col_labels, color);
}

char *s2s_heatmap_text_seen(const float *w, const bool *seen, int rows, int cols,
                            const char *const *row_labels, const char *const *col_labels,
                            bool color) {
    int *cw = malloc(((size_t)cols + 1) * sizeof *cw);
    if (!cw) return NULL;
    int lw = 1;
    for (int r = 0; r < rows; r++) {
        int x = label_width(row_labels[r]);
        if (x > lw) lw = x;
    }
    for (int c = 0; c < cols; c++) {
        cw[c] = label_width(col_labels[c]);
        if (cw[c] < 2) cw[c] = 2;
    }
    s2s_buf b = {0};
    put_label(&b, "", lw);
    for (int c = 0; c < cols; c++) {
        s2s_buf_putc(&b, ' ');
        put_label(&b, col_labels[c], cw[c]);
    }
    s2s_buf_putc(&b, '\n');
    for (int r = 0; r < rows; r++) {
        const float *x = w + (size_t)r * cols;
        int best = row_best(x, cols);
        put_label(&b, row_labels[r], lw);
        for (int c = 0; c < cols; c++) {
            s2s_buf_putc(&b, ' ');
            put_cell(&b, x[c], c == best, seen && !seen[(size_t)r * cols + c], cw[c], color);
        }
        s2s_buf_putc(&b, '\n');
    }
    free(cw);
    if (b.oom || !b.s) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

// ---- every layer and head ----

#define GRID_LABEL 8  // display columns of a row label in the grid
#define GRID_GAP 2    // spaces before each block

// The band of heads [h0, h1) of layer l: a title line ("layer l" over the
// row labels, "head h" over each block), then the rows.
static void put_band(s2s_buf *b, const float *w, const bool *seen, int l, int h0, int h1,
                     int heads, int rows, int cols, const char *const *row_labels, int lw, int bw,
                     int cw, bool color) {
    char t[32];
    snprintf(t, sizeof t, "layer %d", l);
    put_label(b, t, lw);
    for (int h = h0; h < h1; h++) {
        snprintf(t, sizeof t, "head %d", h);
        s2s_buf_repeat(b, " ", GRID_GAP);
        put_label(b, t, bw);
    }
    s2s_buf_putc(b, '\n');
    size_t plane = (size_t)rows * cols;
    for (int r = 0; r < rows; r++) {
        put_label(b, row_labels[r], lw);
        for (int h = h0; h < h1; h++) {
            size_t o = ((size_t)l * heads + h) * plane + (size_t)r * cols;
            int best = row_best(w + o, cols);
            s2s_buf_repeat(b, " ", GRID_GAP);
            for (int c = 0; c < cols; c++)
                put_cell(b, w[o + c], c == best, seen && !seen[o + c], cw, color);
            s2s_buf_repeat(b, " ", bw - cols * cw);
        }
        s2s_buf_putc(b, '\n');
    }
}

// "columns: a b c", cut to `width` columns.
static void put_columns_line(s2s_buf *b, const char *const *col_labels, int cols, int width) {
    s2s_buf line = {0};
    s2s_buf_puts(&line, "columns:");
    for (int c = 0; c < cols; c++) {
        s2s_buf_putc(&line, ' ');
        s2s_buf_puts(&line, col_labels[c] ? col_labels[c] : "");
    }
    int total = text_width(line.s);
    put_label(b, line.s, total < width ? total : width);
    s2s_buf_putc(b, '\n');
    free(line.s);
}

char *s2s_heatmap_grid_text(const float *w, const bool *seen, int layers, int heads, int rows,
                            int cols, const char *const *row_labels,
                            const char *const *col_labels, int width, bool color) {
    int lw = 7;  // "layer N"
    for (int r = 0; r < rows; r++) {
        int x = label_width(row_labels[r]);
        if (x > lw) lw = x;
    }
    if (lw > GRID_LABEL) lw = GRID_LABEL;
    char t[32];
    int tw = snprintf(t, sizeof t, "head %d", heads - 1);
    // Square-looking cells (2 columns) when a layer's heads fit so, else 1.
    int cw = lw + heads * (GRID_GAP + (2 * cols > tw ? 2 * cols : tw)) <= width ? 2 : 1;
    int bw = cols * cw > tw ? cols * cw : tw;
    int per = (width - lw) / (GRID_GAP + bw);
    if (per < 1) per = 1;  // a block wider than the terminal: one a band
    s2s_buf b = {0};
    put_columns_line(&b, col_labels, cols, width);
    for (int l = 0; l < layers; l++)
        for (int h0 = 0; h0 < heads; h0 += per)
            put_band(&b, w, seen, l, h0, h0 + per < heads ? h0 + per : heads, heads, rows, cols,
                     row_labels, lw, bw, cw, color);
    if (b.oom || !b.s) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
