// What `s2s align` prints: one sentence as Pharaoh, JSON, CSV or a text
// heatmap, and the AER table of --eval / --calibrate. cmd_align.c parses
// the options, decodes and aligns (through the library), then calls these.
#ifndef S2S_CLI_ALIGN_OUTPUT_H
#define S2S_CLI_ALIGN_OUTPUT_H

#include <stdbool.h>

#include "align/align.h"
#include "s2s/s2s.h"

enum { S2S_CLI_SEL_ALL = -2 };  // a plane selector besides an index or S2S_ALIGN_AVG

typedef enum {
    S2S_CLI_FMT_PHARAOH,
    S2S_CLI_FMT_JSON,
    S2S_CLI_FMT_CSV,
    S2S_CLI_FMT_TEXT,
    S2S_CLI_FMT_COUNT
} s2s_cli_align_format;

typedef enum { S2S_CLI_MAP_CROSS, S2S_CLI_MAP_SELF, S2S_CLI_MAP_ENC, S2S_CLI_MAP_COUNT } s2s_cli_align_map;

// "pharaoh", "json", ... and "cross", "self", "enc": the option values.
extern const char *const s2s_cli_align_format_names[S2S_CLI_FMT_COUNT];
extern const char *const s2s_cli_align_map_names[S2S_CLI_MAP_COUNT];

// How sentences are printed.
typedef struct s2s_cli_align_view {
    s2s_cli_align_format fmt;
    s2s_cli_align_map map;
    int layer_sel, head_sel;      // the displayed planes: index, S2S_ALIGN_AVG or S2S_CLI_SEL_ALL
    int align_layer, align_head;  // the plane the hard alignment comes from
    float align_share;            // and its share (s2s_hard_align)
    bool no_eos;                  // </s> (and <s>) columns left out, rows renormalised
    bool color;                   // ANSI colour in text heatmaps
    int width;                    // display columns of the text grid (--layer all --head all)
    bool reverse;                 // symmetrised with a reverse model, by `sym`
    s2s_symmetrize sym;
    int sentence;                 // 0-based index of the sentence printed next
    bool csv_header;              // printed already
    const s2s_model *model;       // whose maps are printed: each head's pattern
} s2s_cli_align_view;

// One sentence's hypothesis and alignments, with the labels of every axis.
typedef struct s2s_cli_align_sent {
    const char *source, *target;  // the input text; target NULL when decoded freely
    const char **src_lab;         // (n_src + 1): source tokens, "</s>"
    const char **tgt_lab;         // (h->n_out): target tokens, "</s>" when produced
    const char **dec_in;          // (h->n_out): "<s>", target tokens shifted right
    int n_src, n_tgt;
    const s2s_hypothesis *h;
    const s2s_alignment *gold;    // NULL without one
    const s2s_alignment *fwd;     // the forward alignment
    const s2s_alignment *final;   // the printed one (fwd, or the symmetrised one)
} s2s_cli_align_sent;

// Fills s's labels from the source tokens, the target tokens (forced
// decoding; NULL: h's ids spelled by the target vocab tv) and h, which s
// then points to. false on out of memory (s freed). Free with _sent_free.
bool s2s_cli_align_sent_labels(s2s_cli_align_sent *s, const s2s_tokens *src,
                               const s2s_tokens *tgt, const s2s_vocab *tv,
                               const s2s_hypothesis *h);
void s2s_cli_align_sent_free(s2s_cli_align_sent *s);

// Prints s in v->fmt (the planes v selects; as text, --layer all --head all
// is the grid of every layer and head within v->width). Returns the exit code.
int s2s_cli_align_print(s2s_cli_align_view *v, const s2s_cli_align_sent *s);

// The --eval table: every plane of t, `best` on t's best, `stored` on the
// model's calibrated plane, then (pair not NULL) the symmetrised row.
void s2s_cli_align_print_table(const s2s_plane_table *t, const char *input, bool no_eos,
                               const s2s_model *m, const s2s_align_pair *pair,
                               const s2s_aer_counts *sym);

// ": local, window 3": the pattern of plane (layer, head) of map type t
// in m (an index or S2S_ALIGN_AVG each; for a mean, each pattern of its
// planes once, joined by " / "), when some head of that attention is not
// full; "" otherwise, so that a model without variants prints as before.
void s2s_cli_align_pattern_names(char *out, size_t n, const s2s_model *m, s2s_attn_map t,
                                 int layer, int head);

// "avg" for a negative selector, else its number.
char *s2s_cli_align_sel_name(int x, char buf[16]);

#endif
