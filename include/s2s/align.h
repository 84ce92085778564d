// s2s/align.h — word alignments from attention: hard links, symmetrisation,
// Pharaoh text, alignment error rate, terminal and HTML heatmaps.
//
// A soft alignment is a (rows, cols) matrix of attention weights, one row
// per target token and one column per source token, as s2s_translate and
// s2s_score return in s2s_hypothesis.cross_attn with want_attention. A hard
// alignment is a set of links (i, j): source token i, target token j, both
// 0-based over the tokens the tokenizer splits (no <s>, no </s>).
//
//     p.want_attention = true;                             // decode params
//     s2s_translate(st, &p, src, src_len, 1, &h);
//     s2s_alignment a = {0};
//     s2s_hard_align(&a, &h, S2S_ALIGN_AVG, S2S_ALIGN_AVG,  // mean of all heads
//                    /*no_eos=*/false);
//     char *text = s2s_alignment_format(&a);                // "0-0 1-2 2-1"
//
// s2s_hard_align is s2s_attn_select (a plane), s2s_attn_drop_columns (with
// no_eos) and s2s_align_argmax; s2s_align_symmetrize_pair adds a reverse
// model; s2s_aer_table scores every plane against gold; s2s_coref_table
// scores every encoder self-attention plane on pronoun -> antecedent links.
//
// Pharaoh text: links separated by spaces; "i-j" is a sure link, "ipj" a
// possible one (the convention of the Lilt alignment-scripts aer.py used by
// awesome-align, SimAlign and others). When reading, "i?j" and "i-jp" (a
// 'p' suffix) are accepted as possible links too.
#ifndef S2S_ALIGN_H
#define S2S_ALIGN_H

#include <stdbool.h>

#include "s2s/decode.h"
#include "s2s/status.h"
#include "s2s/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- hard alignments ----

typedef struct s2s_link {
    int src, tgt;   // 0-based token indices
    bool possible;  // a possible (not sure) link; only gold alignments have them
} s2s_link;

typedef struct s2s_alignment {
    int n;  // links in use
    int cap;
    s2s_link *links;  // (n), sorted by (src, tgt) after s2s_alignment_normalize
} s2s_alignment;

void s2s_alignment_free(s2s_alignment *a);
// Appends a link (no dedup). S2S_ERR_NOMEM or S2S_ERR_INVALID (negative index).
s2s_status s2s_alignment_add(s2s_alignment *a, int src, int tgt, bool possible);
// Sorts by (src, tgt) and merges duplicates; a link that is both sure and
// possible stays sure.
void s2s_alignment_normalize(s2s_alignment *a);
// Whether (src, tgt) is a link (sure or possible). a must be normalized.
bool s2s_alignment_has(const s2s_alignment *a, int src, int tgt);

// Parses Pharaoh text into out (cleared first; normalized). `where` names
// the input in messages ("dev.tsv:7"). Bad links give S2S_ERR_FORMAT:
//   "dev.tsv:7: bad alignment link '3-x' (expected i-j, or ipj for possible)"
s2s_status s2s_alignment_parse(s2s_alignment *out, const char *text, const char *where);
// Parses a corpus's coreference column, "SRC|TGT" (docs/toy-corpus.md):
// each side is a list of "p-a" links from a pronoun's token index p to its
// antecedent's index a, on that side's tokens; either side may be empty.
// Fills src and tgt (cleared first, normalized) with link.src = pronoun and
// link.tgt = antecedent. text NULL or "" gives two empty sides. A missing
// '|' or a bad link is S2S_ERR_FORMAT naming `where`.
s2s_status s2s_coref_parse(s2s_alignment *src, s2s_alignment *tgt, const char *text,
                           const char *where);
// Pharaoh text of a in its link order: "0-0 1-2 3p4"; "" when empty.
// Caller frees; NULL on out of memory.
char *s2s_alignment_format(const s2s_alignment *a);
// S2S_ERR_FORMAT naming `where` when a link's source index is >= n_src or
// its target index >= n_tgt.
s2s_status s2s_alignment_check(const s2s_alignment *a, int n_src, int n_tgt, const char *where);

// ---- from attention to links ----

enum {
    S2S_ALIGN_AVG = -1,  // a layer or head selector: the mean over all of them
};

// out (rows, cols) = the attention plane of (layer, head) from maps
// (layers, heads, rows, cols); layer and/or head may be S2S_ALIGN_AVG for
// the mean over layers and/or heads. S2S_ERR_INVALID (with a message giving
// the valid range) when a selector is out of range.
s2s_status s2s_attn_select(float *out, const float *maps, int layers, int heads, int rows,
                           int cols, int layer, int head);

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

// ---- symmetrisation ----

typedef enum s2s_symmetrize {
    S2S_SYM_INTERSECTION,
    S2S_SYM_UNION,
    S2S_SYM_GROW_DIAG,
    S2S_SYM_GROW_DIAG_FINAL,
    S2S_SYM_GROW_DIAG_FINAL_AND,
    S2S_SYM_COUNT
} s2s_symmetrize;

// "intersection", "union", "grow-diag", "grow-diag-final",
// "grow-diag-final-and"; NULL for an out-of-range value.
const char *s2s_symmetrize_name(s2s_symmetrize m);
// The method of a name; false when there is none.
bool s2s_symmetrize_parse(const char *name, s2s_symmetrize *out);

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

// Swaps src and tgt of every link (and re-sorts).
void s2s_alignment_transpose(s2s_alignment *a);

// ---- from decoded hypotheses ----

// The hard alignment of h (from s2s_translate or s2s_score with
// want_attention) read off the cross-attention plane (layer, head), each
// an index or S2S_ALIGN_AVG (the mean, as s2s_attn_select): for each
// target token t < h->n, the link (i, t) with the source token i it
// attends to most and those with at least `share` of that weight
// (s2s_align_share; share 1: the largest alone; the </s> row gets none;
// s2s_model_alignment_share is the model's calibrated share). The last
// column is the source </s>: without no_eos a token whose largest weight
// is there stays unaligned; with no_eos that column is left out and the
// rows renormalised first, so every target token gets a source token.
// out is cleared first and normalized. S2S_ERR_INVALID when h has no
// cross-attention or a selector is out of range, S2S_ERR_NOMEM.
s2s_status s2s_hard_align(s2s_alignment *out, const s2s_hypothesis *h, int layer, int head,
                          float share, bool no_eos);

// A source-to-target model, a target-to-source one, and how their
// alignments are read (each its own plane) and combined.
typedef struct s2s_align_pair {
    const s2s_model *fwd;          // source -> target: its vocabs spell the tokens
    const s2s_model *rev;          // target -> source
    s2s_state *rev_state;          // a state of rev, which the reverse scoring uses
    s2s_decode_params rev_params;  // rev's scoring (threads, batch); attention is turned on
    int layer, head;               // the forward plane: an index or S2S_ALIGN_AVG
    float share;                   // its s2s_hard_align share
    int rev_layer, rev_head;       // the reverse plane
    float rev_share;
    bool no_eos;                   // as in s2s_hard_align, both directions
    s2s_symmetrize method;
} s2s_align_pair;

// A pair with each model's calibrated plane (s2s_model_alignment_head, else
// avg/avg) and share (s2s_model_alignment_share), rev's default decode
// params, </s> kept and grow-diag.
s2s_align_pair s2s_align_pair_default(const s2s_model *fwd, const s2s_model *rev,
                                      s2s_state *rev_state);

// The symmetrised alignments of n sentences p->fwd has decoded. Sentence
// k: src[k] its source tokens (s2s_tokenize with fwd's source vocab),
// hyp[k] fwd's hypothesis for it (s2s_translate or s2s_score, with
// want_attention); tgt is NULL, or with forced decoding the target tokens
// given to s2s_score (their pieces spell the words fwd does not know).
// The reverse model force-decodes hyp[k]'s tokens back to src[k] in one
// s2s_score batch (tokens map between the vocabs by their text: the
// vocab's spelling, or the input piece of an unknown word); each side's
// hard alignment (s2s_hard_align at its plane) is taken, the reverse one
// flipped, and the two combined by s2s_align_symmetrize with p->method.
// out[k] gets the result and, when fwd_out is not NULL, fwd_out[k] the
// forward alignment; all are cleared first. Returns S2S_ERR_INVALID when
// hyp[k] does not match src[k] or a plane is out of range, S2S_ERR_NOMEM,
// or s2s_score's status (its message prefixed "reverse model: ").
s2s_status s2s_align_symmetrize_pair(const s2s_align_pair *p, int n, const s2s_tokens *src,
                                     const s2s_hypothesis *hyp, const s2s_tokens *tgt,
                                     s2s_alignment *fwd_out, s2s_alignment *out);

// ---- alignment error rate (Och & Ney 2003) ----

// Counts summed over a corpus. With A the hypothesis links, S the sure
// and P the sure-or-possible gold links:
//   precision = |A∩P| / |A|, recall = |A∩S| / |S|,
//   AER = 1 - (|A∩S| + |A∩P|) / (|A| + |S|).
// Hypothesis links count as links whatever their possible flag.
typedef struct s2s_aer_counts {
    long long a, s, a_s, a_p;  // |A|, |S|, |A∩S|, |A∩P|
} s2s_aer_counts;

// Adds one sentence. Both alignments must be normalized.
void s2s_aer_add(s2s_aer_counts *c, const s2s_alignment *hyp, const s2s_alignment *gold);
// 0 when |A| + |S| = 0 (nothing to get wrong).
double s2s_aer(const s2s_aer_counts *c);
// 1 when |A| = 0.
double s2s_aer_precision(const s2s_aer_counts *c);
// 1 when |S| = 0.
double s2s_aer_recall(const s2s_aer_counts *c);

// The AER counts of every cross-attention plane of a model, single heads
// and averages alike: (layer, head) with layer S2S_ALIGN_AVG or
// 0 .. layers - 1 and head S2S_ALIGN_AVG or 0 .. heads - 1.
typedef struct s2s_aer_table s2s_aer_table;

// An empty table whose hard alignments take `share` (s2s_hard_align);
// S2S_ERR_INVALID when layers or heads < 1, S2S_ERR_NOMEM.
s2s_status s2s_aer_table_new(s2s_aer_table **out, int layers, int heads, float share);
void s2s_aer_table_free(s2s_aer_table *t);
// Adds one sentence: the hard alignment of every plane of h
// (s2s_hard_align with no_eos) against gold (normalized, its links inside
// the sentence). S2S_ERR_INVALID (the table unchanged) when h has no
// cross-attention or other layers/heads than the table; S2S_ERR_NOMEM,
// after which some planes may hold the sentence: free the table then.
s2s_status s2s_aer_table_add(s2s_aer_table *t, const s2s_hypothesis *h, const s2s_alignment *gold,
                             bool no_eos);
// The counts of a plane; NULL when it is out of range.
const s2s_aer_counts *s2s_aer_table_counts(const s2s_aer_table *t, int layer, int head);
// Sentences added.
long long s2s_aer_table_sentences(const s2s_aer_table *t);
// The share its hard alignments take.
float s2s_aer_table_share(const s2s_aer_table *t);
// The plane with the lowest AER. Ties go to the first in the order
// layer avg, 0, 1, ..., then within a layer head avg, 0, 1, ... (so the
// plainer average wins a tie), and an empty table gives avg/avg.
void s2s_aer_table_best(const s2s_aer_table *t, int *layer, int *head);

// ---- coreference in encoder self-attention ----

// How well each encoder self-attention plane finds a pronoun's antecedent,
// over gold links (s2s_coref_parse: link.src the pronoun's source token,
// link.tgt its antecedent's). For a link and a plane, the pronoun's row of
// the plane (s2s_attn_select over enc_attn) is read over the candidates:
// every source token but the pronoun itself and punctuation, and never
// </s>. The link is a hit when the antecedent's weight is larger than
// every other candidate's (a tie is a miss: the head did not choose).
// Each plane sums its links, hits and the antecedent's weight as the model
// gives it (not renormalised over the candidates).
typedef struct s2s_coref_counts {
    long long links, hits;
    double weight;  // the summed attention weight on the antecedents
} s2s_coref_counts;

// hits / links; 0 when there are no links.
double s2s_coref_accuracy(const s2s_coref_counts *c);
// weight / links; 0 when there are no links.
double s2s_coref_mean_weight(const s2s_coref_counts *c);

// Whether a source token counts as punctuation (its first character is a
// punctuation mark, ASCII or CJK): never a candidate antecedent.
bool s2s_token_is_punct(const char *token);

// The counts of every encoder self-attention plane, single heads and
// averages alike, as s2s_aer_table: (layer, head), each S2S_ALIGN_AVG or
// an index.
typedef struct s2s_coref_table s2s_coref_table;

// An empty table; S2S_ERR_INVALID when layers or heads < 1, S2S_ERR_NOMEM.
s2s_status s2s_coref_table_new(s2s_coref_table **out, int layers, int heads);
void s2s_coref_table_free(s2s_coref_table *t);
// S2S_ERR_INVALID when a link of links lies outside the n source tokens,
// links a token to itself or has punctuation as antecedent; the message
// starts with `where` ("gold.tsv:3: coreference link 9-1 ...") or, when
// where is NULL, with "coreference link".
s2s_status s2s_coref_check(const s2s_alignment *links, const char *const *tokens, int n,
                           const char *where);
// Adds one sentence: h holds its encoder self-attention (s2s_score or
// s2s_translate with want_self_attention), tokens its h->n_src - 1 source
// tokens (for punctuation), links its gold links (normalized). Links that
// s2s_coref_check refuses, a hypothesis without enc_attn or of another
// shape are S2S_ERR_INVALID, with the table unchanged. S2S_ERR_NOMEM.
s2s_status s2s_coref_table_add(s2s_coref_table *t, const s2s_hypothesis *h,
                               const char *const *tokens, const s2s_alignment *links,
                               const char *where);
// The counts of a plane; NULL when it is out of range.
const s2s_coref_counts *s2s_coref_table_counts(const s2s_coref_table *t, int layer, int head);
// Sentences added (with or without links).
long long s2s_coref_table_sentences(const s2s_coref_table *t);
// The plane of highest accuracy, ties to the higher mean weight, then to
// the first in s2s_aer_table_best's order (avg/avg for an empty table).
void s2s_coref_table_best(const s2s_coref_table *t, int *layer, int *head);

// The candidate weights of one pronoun's row: out (n_src) = row `pronoun`
// of the (n_src, n_src) plane w, with the non-candidates (itself,
// punctuation by tokens, </s>) set to -1. Returns the candidate of largest
// weight (the first on ties), or -1 when there is none.
int s2s_coref_row(float *out, const float *w, int n_src, const char *const *tokens, int pronoun);

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

// The three kinds of map a hypothesis holds (s2s/decode.h).
typedef enum s2s_attn_map {
    S2S_ATTN_MAP_CROSS,  // cross_attn: outputs x source tokens and </s>
    S2S_ATTN_MAP_SELF,   // self_attn: decoder inputs x decoder inputs
    S2S_ATTN_MAP_ENC,    // enc_attn: source tokens and </s> x the same
    S2S_ATTN_MAP_COUNT
} s2s_attn_map;

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

// Whether some head of that attention, in any layer, is not full (the
// causal cut aside): false for every map of a model without variants.
bool s2s_model_attn_varies(const s2s_model *m, s2s_attn_map map);

// Whether query row i of a head running p sees key column j (both >= 0),
// rows and columns being positions as in a hypothesis's maps: row t of
// self_attn is decoder position t (<s> at 0), row t of enc_attn source
// position t, and a cross-attention row sees every column. The engine's
// own definition (layers/mask.c), key by key.
bool s2s_head_pattern_sees(const s2s_head_pattern *p, int i, int j);

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

// ---- terminal heatmap ----

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

// ---- HTML report ----

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
// coreference head, s2s_model_coref_head); with `open` the page opens on
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

#ifdef __cplusplus
}
#endif
#endif
