// The align layer's functions beyond the public s2s/align.h (internal):
// building and checking alignments link by link, the steps inside
// s2s_hard_align, method names, the coreference probe's pieces, and what
// the command's views draw (the pattern of a head as text, the cells a
// pattern hides).
#ifndef S2S_ALIGN_ALIGN_H
#define S2S_ALIGN_ALIGN_H

#include <stdbool.h>
#include <stddef.h>

#include "s2s/align.h"

// Combines a forward (source-to-target) and a reverse alignment, both
// given as (src, tgt) links over n_src x n_tgt tokens (flip the reverse
// model's links with s2s_alignment_transpose first), with Koehn et al.'s
// heuristics as in Moses: start from the intersection; grow-diag adds
// union links neighbouring (8 directions) a current link while either
// of their words is unaligned, until nothing changes (rows scanned in
// source order, then target order); -final then adds union links of the
// forward and then the reverse alignment whose source or target word is
// still unaligned (-final-and: both unaligned). out is cleared first.
s2s_status s2s_align_symmetrize(s2s_alignment *out, const s2s_alignment *fwd,
                                const s2s_alignment *rev, int n_src, int n_tgt,
                                s2s_symmetrize method);

// 1 when |A| = 0.
double s2s_aer_precision(const s2s_aer_counts *c);

// 1 when |S| = 0.
double s2s_aer_recall(const s2s_aer_counts *c);

// ---- attention patterns ----
//
// Which keys each head's queries see (model.encoder_attention,
// .decoder_attention, .cross_attention; docs/attention.md). A hypothesis's
// maps hold 0 both where a head gave a key no weight and where its pattern
// hides the key; these say which, for drawing the two apart:
//
//     s2s_head_pattern p = s2s_model_head_pattern(m, S2S_ATTN_MAP_ENC, 0, 2);
//     char name[48];
//     s2s_head_pattern_text(&p, name, sizeof name);      // "local, window 3"
//     bool seen = s2s_head_pattern_sees(&p, 0, 5);       // false: |0 - 5| > 3

// What one head runs: its type and that type's parameter.
typedef struct s2s_head_pattern {
    s2s_attn_type type;
    int span;     // local: the window; block: the block; strided: the stride; else 0
    bool causal;  // the decoder's self-attention: no key after the query's position
} s2s_head_pattern;

// The pattern of head `head` in layer `layer` of the attention behind map
// type `map` in m (the decoder's layers for cross and self, the encoder's
// for enc). Indices out of range give a full pattern.
s2s_head_pattern s2s_model_head_pattern(const s2s_model *m, s2s_attn_map map, int layer,
                                        int head);

// Whether query row i of a head running p sees key column j (both >= 0),
// rows and columns being positions as in a hypothesis's maps: row t of
// self_attn is decoder position t (<s> at 0), row t of enc_attn source
// position t, and a cross-attention row sees every column. The engine's
// own definition (layers/mask.c), key by key.
bool s2s_head_pattern_sees(const s2s_head_pattern *p, int i, int j);

// Appends a link (no dedup). S2S_ERR_NOMEM or S2S_ERR_INVALID (negative index).
s2s_status s2s_alignment_add(s2s_alignment *a, int src, int tgt, bool possible);

// Sorts by (src, tgt) and merges duplicates; a link that is both sure and
// possible stays sure.
void s2s_alignment_normalize(s2s_alignment *a);

// Whether (src, tgt) is a link (sure or possible). a must be normalized.
bool s2s_alignment_has(const s2s_alignment *a, int src, int tgt);

// S2S_ERR_FORMAT naming `where` when a link's source index is >= n_src or
// its target index >= n_tgt.
s2s_status s2s_alignment_check(const s2s_alignment *a, int n_src, int n_tgt, const char *where);

// out (rows, n_keep) = in (rows, cols) without the columns whose keep[c] is
// false, each row rescaled to sum to 1 (a row with no kept mass stays 0).
// Returns n_keep. out may not alias in.
int s2s_attn_drop_columns(float *out, const float *in, int rows, int cols, const bool *keep);

// Hard alignment by argmax: for each row t < rows, the column c with the
// largest weight (the first on ties); adds link (c, t) when c < n_src_tokens.
// Columns >= n_src_tokens are specials (the source </s>): a row whose
// maximum falls there gets no link. out is cleared first and normalized.
s2s_status s2s_align_argmax(s2s_alignment *out, const float *attn, int rows, int cols,
                            int n_src_tokens);

// The same, and a row also links every other column c < n_src_tokens with
// at least share x its largest weight; share >= 1 is s2s_align_argmax. A
// model trained with guided alignment splits a target word's weight
// between its gold source words (a word with two links gets 0.5 each),
// so a share below 1 finds both: see docs/alignment.md. A row whose
// largest weight falls on a special column still gets no link.
s2s_status s2s_align_share(s2s_alignment *out, const float *attn, int rows, int cols,
                           int n_src_tokens, float share);

// "intersection", "union", "grow-diag", "grow-diag-final",
// "grow-diag-final-and"; NULL for an out-of-range value.
const char *s2s_symmetrize_name(s2s_symmetrize m);

// The method of a name; false when there is none.
bool s2s_symmetrize_parse(const char *name, s2s_symmetrize *out);

// Swaps src and tgt of every link (and re-sorts).
void s2s_alignment_transpose(s2s_alignment *a);

// hits / links; 0 when there are no links.
double s2s_coref_accuracy(const s2s_coref_counts *c);
// weight / links; 0 when there are no links.
double s2s_coref_mean_weight(const s2s_coref_counts *c);

// Whether a source token counts as punctuation (its first character is a
// punctuation mark, ASCII or CJK): never a candidate antecedent.
bool s2s_token_is_punct(const char *token);

// The candidate weights of one pronoun's row: out (n_src) = row `pronoun`
// of the (n_src, n_src) plane w, with the non-candidates (itself,
// punctuation by tokens, </s>) set to -1. Returns the candidate of largest
// weight (the first on ties), or -1 when there is none.
int s2s_coref_row(float *out, const float *w, int n_src, const char *const *tokens, int pronoun);

// Whether some head of that attention, in any layer, is not full (the
// causal cut aside): false for every map of a model without variants.
bool s2s_model_attn_varies(const s2s_model *m, s2s_attn_map map);

// p as text: "full", "local, window 3", "block, block 4", "strided,
// stride 4" or "linear" (the causal cut is not named). Writes at most n
// bytes into buf, NUL included; returns buf.
char *s2s_head_pattern_text(const s2s_head_pattern *p, char *buf, size_t n);

// out (rows, cols) = whether some plane of the selection (layer, head: an
// index or S2S_ALIGN_AVG each, as s2s_attn_select) sees the cell: false
// where every such head's pattern hides the key, so that s2s_attn_select's
// plane holds 0 there for that reason. S2S_ERR_INVALID as s2s_attn_select
// for a selector out of range.
s2s_status s2s_attn_select_seen(bool *out, const s2s_model *m, s2s_attn_map map, int rows,
                                int cols, int layer, int head);

// S2S_ERR_INVALID when a link of links lies outside the n source tokens,
// links a token to itself or has punctuation as antecedent; the message
// starts with `where` ("gold.tsv:3: coreference link 9-1 ...") or, when
// where is NULL, with "coreference link".
s2s_status s2s_coref_check(const s2s_alignment *links, const char *const *tokens, int n,
                           const char *where);

// The share the hard alignments of an S2S_HEAD_ALIGN table take.
float s2s_plane_table_share(const s2s_plane_table *t);

#endif
