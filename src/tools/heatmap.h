// The terminal heatmap of `s2s align --show` and `s2s probe coref --show`
// (a tool of the command, not the library's API: src/tools/).
#ifndef S2S_TOOLS_HEATMAP_H
#define S2S_TOOLS_HEATMAP_H

#include <stdbool.h>

// Columns the UTF-8 text takes in a terminal: 2 for East Asian Wide and
// Fullwidth characters (CJK, kana, hangul, fullwidth forms, most emoji),
// 0 for combining marks, zero-width characters and ANSI escape sequences
// (ESC [ ... letter), 1 otherwise (ambiguous-width characters such as the
// shade blocks count 1, as wcwidth does outside CJK locales). A byte that
// is not valid UTF-8 counts 1.
int s2s_display_width(const char *s);

// The weights (rows, cols), each in [0, 1], as text: a header line with the
// column labels, then one line per row with its label and one cell per
// column drawn with the shades " ░▒▓█" (the row's largest cell is also
// marked with colour when `color`). Labels wider than 12 columns are cut
// with "…". Every line has the same display width (s2s_display_width)
// and ends in "\n". With `color`, ANSI 256-colour escapes shade the cells.
// Caller frees; NULL on out of memory.
char *s2s_heatmap_text(const float *w, int rows, int cols, const char *const *row_labels,
                       const char *const *col_labels, bool color);

// The same, with the cells whose seen[r * cols + c] is false (a key the
// head's pattern hides, s2s_attn_select_seen) drawn as '·' (U+00B7, one
// column each) instead of a shade or blank; seen NULL: every cell seen,
// as s2s_heatmap_text.
char *s2s_heatmap_text_seen(const float *w, const bool *seen, int rows, int cols,
                            const char *const *row_labels, const char *const *col_labels,
                            bool color);

// Every layer and head of one map type at a glance (bertviz's model view):
// the planes w (layers, heads, rows, cols) as small blocks of the same
// shades, one per head, side by side within `width` display columns. A
// line "columns: ..." (cut to the width), then a band per layer: a title
// line ("layer L" over the row labels, cut to 8 columns; "head H" over each
// block) and the rows. A cell takes 2 columns when a layer's heads fit so,
// else 1; heads that do not fit go on to a further band of the layer (a
// block wider than `width` stands alone). seen (layers, heads, rows, cols)
// as in s2s_heatmap_text_seen, NULL: every key seen. Within a band every
// line has one display width. Caller frees; NULL on out of memory.
char *s2s_heatmap_grid_text(const float *w, const bool *seen, int layers, int heads, int rows,
                            int cols, const char *const *row_labels,
                            const char *const *col_labels, int width, bool color);

#endif
