// The HTML report of `s2s align --html` and `s2s probe coref --html` (a
// tool of the command, not the library's API: src/tools/).
#ifndef S2S_TOOLS_HTML_H
#define S2S_TOOLS_HTML_H

#include <stdbool.h>

#include "s2s/align.h"

// Several sentences' attention maps in one self-contained HTML page (inline
// CSS and JS, no network): a heatmap per layer and head and the averages,
// token labels on rows and columns, the weight on hover, selectors for
// sentence, map type (cross, decoder self, encoder self), layer and head,
// and every layer and head of each map type at once as small maps (a click
// opens one).
typedef struct s2s_align_html s2s_align_html;

s2s_status s2s_align_html_new(s2s_align_html **out, const char *title);
void s2s_align_html_free(s2s_align_html *d);

// Adds a sentence: its source tokens (n_src, no </s>), its target tokens
// (n_tgt = h->n, no </s>), the maps h holds (cross_attn must be set;
// self_attn and enc_attn when not NULL) and optionally its hard alignment
// as Pharaoh text (NULL: none). Everything is copied.
s2s_status s2s_align_html_add(s2s_align_html *d, const char *const *src_tokens, int n_src,
                              const char *const *tgt_tokens, int n_tgt,
                              const s2s_hypothesis *h, const char *alignment);

// Attaches gold links (normalized, within the sentence) to the sentence
// added last: the page marks each cell sure, possible, missed or wrong
// against the links of the view selected. S2S_ERR_INVALID without a
// sentence, S2S_ERR_NOMEM.
s2s_status s2s_align_html_set_gold(s2s_align_html *d, const s2s_alignment *gold);

// The view the page opens on: layer and head (an index or S2S_ALIGN_AVG;
// the default is avg/avg) and whether </s> / <s> columns start hidden.
void s2s_align_html_set_view(s2s_align_html *d, int layer, int head, bool drop_specials);

// The plane the encoder self-attention map shows when chosen (a
// coreference head, s2s_model_head S2S_HEAD_COREF); with `open` the page opens on
// that map. Without this call the encoder map starts on the view above.
void s2s_align_html_set_enc_view(s2s_align_html *d, int layer, int head, bool open);

// The last added sentence's pronoun -> antecedent links over its source
// tokens (link.src the pronoun, link.tgt the antecedent, as
// s2s_coref_parse gives them): the encoder map marks the pronouns' rows
// and their antecedents' cells. S2S_ERR_INVALID before any sentence.
s2s_status s2s_align_html_add_coref(s2s_align_html *d, const s2s_alignment *links);

// The pattern each head of m runs (s2s_model_head_pattern), for the maps
// of every sentence: the page names it beside the head ("head 2: local,
// window 3") and draws the cells its pattern hides hatched, apart from
// cells of weight 0. Without this call every head is drawn as full.
// S2S_ERR_NOMEM.
s2s_status s2s_align_html_set_patterns(s2s_align_html *d, const s2s_model *m);

// Writes the page atomically (temp file, fsync, rename): S2S_ERR_IO naming
// the path on failure, and no partial file left behind.
s2s_status s2s_align_html_write(const s2s_align_html *d, const char *path);

#endif
