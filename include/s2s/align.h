// s2s/align.h — word alignments from attention: hard links, symmetrisation,
// Pharaoh text, alignment error rate, and which attention plane finds gold
// links best (word alignments, coreference).
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
// s2s_hard_align reads one plane (s2s_attn_select) of a hypothesis's
// cross-attention; s2s_align_symmetrize_pair adds a reverse model;
// s2s_plane_table scores every plane against gold: cross-attention on word
// alignments (AER), encoder self-attention on pronoun -> antecedent links.
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

S2S_API void s2s_alignment_free(s2s_alignment *a);

// Parses Pharaoh text into out (cleared first; normalized). `where` names
// the input in messages ("dev.tsv:7"). Bad links give S2S_ERR_FORMAT:
//   "dev.tsv:7: bad alignment link '3-x' (expected i-j, or ipj for possible)"
S2S_API s2s_status s2s_alignment_parse(s2s_alignment *out, const char *text, const char *where);

// Parses a corpus's coreference column, "SRC|TGT" (docs/toy-corpus.md):
// each side is a list of "p-a" links from a pronoun's token index p to its
// antecedent's index a, on that side's tokens; either side may be empty.
// Fills src and tgt (cleared first, normalized) with link.src = pronoun and
// link.tgt = antecedent. text NULL or "" gives two empty sides. A missing
// '|' or a bad link is S2S_ERR_FORMAT naming `where`.
S2S_API s2s_status s2s_coref_parse(s2s_alignment *src, s2s_alignment *tgt, const char *text,
                                   const char *where);

// Pharaoh text of a in its link order: "0-0 1-2 3p4"; "" when empty.
// Caller frees; NULL on out of memory.
S2S_API char *s2s_alignment_format(const s2s_alignment *a);

// ---- from attention to links ----

enum {
    S2S_ALIGN_AVG = -1,  // a layer or head selector: the mean over all of them
};

// out (rows, cols) = the attention plane of (layer, head) from maps
// (layers, heads, rows, cols); layer and/or head may be S2S_ALIGN_AVG for
// the mean over layers and/or heads. S2S_ERR_INVALID (with a message giving
// the valid range) when a selector is out of range.
S2S_API s2s_status s2s_attn_select(float *out, const float *maps, int layers, int heads, int rows,
                                   int cols, int layer, int head);

// ---- symmetrisation ----

// How a forward and a reverse alignment are combined: Koehn et al.'s
// heuristics as in Moses, from the intersection; grow-diag adds union
// links next to current ones while either word is unaligned, -final then
// adds union links whose source or target word is still unaligned
// (-final-and: both).
typedef enum s2s_symmetrize {
    S2S_SYM_INTERSECTION,
    S2S_SYM_UNION,
    S2S_SYM_GROW_DIAG,
    S2S_SYM_GROW_DIAG_FINAL,
    S2S_SYM_GROW_DIAG_FINAL_AND,
    S2S_SYM_COUNT
} s2s_symmetrize;

// ---- from decoded hypotheses ----

// The hard alignment of h (from s2s_translate or s2s_score with
// want_attention) read off the cross-attention plane (layer, head), each
// an index or S2S_ALIGN_AVG (the mean, as s2s_attn_select): for each
// target token t < h->n, the link (i, t) with the source token i it
// attends to most and those with at least `share` of that weight
// (share 1: the largest alone; the </s> row gets none;
// s2s_model_alignment_share is the model's calibrated share). The last
// column is the source </s>: without no_eos a token whose largest weight
// is there stays unaligned; with no_eos that column is left out and the
// rows renormalised first, so every target token gets a source token.
// out is cleared first and normalized. S2S_ERR_INVALID when h has no
// cross-attention or a selector is out of range, S2S_ERR_NOMEM.
S2S_API s2s_status s2s_hard_align(s2s_alignment *out, const s2s_hypothesis *h, int layer, int head,
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

// A pair with each model's calibrated plane (s2s_model_head,
// S2S_HEAD_ALIGN; else avg/avg) and share (s2s_model_alignment_share),
// rev's default decode params, </s> kept and grow-diag.
S2S_API s2s_align_pair s2s_align_pair_default(const s2s_model *fwd, const s2s_model *rev,
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
// flipped, and the two combined with p->method (s2s_symmetrize).
// out[k] gets the result and, when fwd_out is not NULL, fwd_out[k] the
// forward alignment; all are cleared first. Returns S2S_ERR_INVALID when
// hyp[k] does not match src[k] or a plane is out of range, S2S_ERR_NOMEM,
// or s2s_score's status (its message prefixed "reverse model: ").
S2S_API s2s_status s2s_align_symmetrize_pair(const s2s_align_pair *p, int n, const s2s_tokens *src,
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
S2S_API void s2s_aer_add(s2s_aer_counts *c, const s2s_alignment *hyp, const s2s_alignment *gold);

// 0 when |A| + |S| = 0 (nothing to get wrong).
S2S_API double s2s_aer(const s2s_aer_counts *c);

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

// ---- attention maps ----

// The three kinds of map a hypothesis holds (s2s/decode.h): s2s_attn_map,
// in s2s/config.h.

// ---- every plane of a model against gold links ----
//
// Which attention plane finds the gold links best, over a corpus: every
// plane of one attention, single heads and averages alike, (layer, head)
// with layer S2S_ALIGN_AVG or 0 .. layers - 1 and head S2S_ALIGN_AVG or
// 0 .. heads - 1. `s2s align --eval` and `--calibrate` run the alignment
// probe, `s2s probe coref` the coreference one.
//
// A table of role S2S_HEAD_ALIGN holds cross-attention planes against gold
// word alignments: each plane's hard alignment (s2s_hard_align with the
// table's share and no_eos) scored by AER; the best plane has the lowest
// AER. One of role S2S_HEAD_COREF holds encoder self-attention planes
// against gold pronoun -> antecedent links (s2s_coref_parse): accuracy and
// weight as s2s_coref_counts says; the best plane has the highest
// accuracy, ties to the higher mean weight.

// One plane's counts: aer for S2S_HEAD_ALIGN, coref for S2S_HEAD_COREF.
typedef struct s2s_plane_counts {
    s2s_aer_counts aer;
    s2s_coref_counts coref;
} s2s_plane_counts;

typedef struct s2s_plane_table s2s_plane_table;

// An empty table of layers x heads planes. share and no_eos are the hard
// alignments' (s2s_hard_align) for S2S_HEAD_ALIGN; S2S_HEAD_COREF ignores them.
// S2S_ERR_INVALID for another role or when layers or heads < 1,
// S2S_ERR_NOMEM.
S2S_API s2s_status s2s_plane_table_new(s2s_plane_table **out, s2s_head_role probe, int layers,
                                       int heads, float share, bool no_eos);
S2S_API void s2s_plane_table_free(s2s_plane_table *t);

// Adds one sentence: gold its links (normalized), h its hypothesis.
// ALIGN: h holds cross-attention (want_attention) and gold's links lie
// inside the sentence; src_tokens and where are not read. COREF: h holds
// the encoder self-attention (s2s_score or s2s_translate with
// want_self_attention), src_tokens its h->n_src - 1 source tokens (for
// punctuation), and a link outside them, linking a token to itself or
// with punctuation as antecedent is refused, the message starting with
// `where` ("gold.tsv:3: coreference link 9-1 ...") or, when where is NULL,
// with "coreference link". S2S_ERR_INVALID, the table unchanged, for a
// hypothesis without the maps or of other layers/heads than the table, or
// a refused link; S2S_ERR_NOMEM (an ALIGN table may then hold part of the
// sentence: free it).
S2S_API s2s_status s2s_plane_table_add(s2s_plane_table *t, const s2s_hypothesis *h,
                                       const s2s_alignment *gold, const char *const *src_tokens,
                                       const char *where);

// The counts of a plane; NULL when it is out of range.
S2S_API const s2s_plane_counts *s2s_plane_table_counts(const s2s_plane_table *t, int layer,
                                                       int head);

// Sentences added (with or without links).
S2S_API long long s2s_plane_table_sentences(const s2s_plane_table *t);

// The best plane by the probe's measure. Ties go to the first in the order
// layer avg, 0, 1, ..., then within a layer head avg, 0, 1, ... (so the
// plainer average wins a tie), and an empty table gives avg/avg.
S2S_API void s2s_plane_table_best(const s2s_plane_table *t, int *layer, int *head);

#ifdef __cplusplus
}
#endif
#endif
