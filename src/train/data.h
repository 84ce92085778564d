// Training data (internal): a TSV corpus tokenized with the model's
// vocabularies, and its batches.
//
// A line is `source<TAB>target[<TAB>alignment[<TAB>coreference]]`. The
// third column, gold word alignments in Pharaoh form ("0-0 1-2 2p1": source
// token i, target token j, from 0 over the tokens the vocabularies split,
// </s> excluded; a possible link "ipj" counts as a link), is read only when
// asked for (guided alignment, <unk> replacement) and ignored otherwise; a
// line without it has no links. The fourth, gold coreference "SRC|TGT"
// (s2s_coref_parse: each side "p-a" links from a pronoun to its antecedent,
// on that side's tokens), likewise (guided coreference); only its source
// side is kept. Lines are numbered from 1 and every problem is reported as
// "file:line: problem".
//
// Batching: a batch of n sentences costs n * (S + T) tokens, S and T being
// the padded source and target lengths (S = longest source + </s>, T =
// longest target + 1), i.e. every cell of the padded id matrices. Sentences
// are added while the cost stays within train.batch_tokens; a sentence that
// alone exceeds it gets a batch of its own.
//   shuffle on:  each epoch, a permutation drawn from (seed, epoch) orders
//                the sentences, a stable sort by source + target length
//                buckets them, batches are cut in that order and the batch
//                order is shuffled with the same generator. An epoch's
//                order is a pure function of (seed, epoch), so a resumed
//                run rebuilds it from the epoch number alone.
//   shuffle off: file order, cut into batches the same way, every epoch.
#ifndef S2S_TRAIN_DATA_H
#define S2S_TRAIN_DATA_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s2s/status.h"
#include "s2s/tokenizer.h"
#include "train/batch.h"

typedef struct s2s_example {
    size_t src, tgt;      // offsets of the ids in s2s_dataset.ids
    int src_len, tgt_len; // tokens, no </s>
    int line;             // in the file, from 1
    size_t ref;           // first of tgt_len entries in ref_tokens (with keep_refs)
    size_t link;          // first of n_links pairs in s2s_dataset.links (S2S_DATA_ALIGN)
    int n_links;
    size_t coref;         // first of n_coref pairs in s2s_dataset.coref (S2S_DATA_COREF)
    int n_coref;
} s2s_example;

typedef struct s2s_dataset {
    int n;
    s2s_example *ex;    // (n)
    int *ids;           // every example's source and target ids
    // With keep_refs: the target pieces as split from the text (unknown
    // words keep their spelling), for BLEU and exact match.
    const char **ref_tokens;
    char *ref_text;     // the bytes ref_tokens point into
    // With S2S_DATA_ALIGN: every example's links as (source, target) index
    // pairs, each sentence's sorted and without duplicates; non-NULL then
    // even when no line has links, so that batches carry alignments.
    int *links;         // (2 * n_links)
    size_t n_links;
    // With S2S_DATA_COREF: every example's source-side coreference links as
    // (pronoun, antecedent) pairs, sorted, no duplicates; non-NULL then.
    int *coref;         // (2 * n_coref)
    size_t n_coref;
} s2s_dataset;

// What s2s_dataset_load keeps besides the ids (or-ed together).
enum {
    S2S_DATA_REFS = 1,   // the target pieces (ref_tokens)
    S2S_DATA_ALIGN = 2,  // the third column (links)
    S2S_DATA_COREF = 4,  // the fourth column's source side (coref)
};

// Reads and tokenizes a TSV file. A source or target of max_len tokens or
// more (</s> or <s> must still fit) is an error, as are a missing tab,
// invalid UTF-8, a NUL byte and an empty file. A malformed link, or one
// naming a token the line does not have, in a column `keep` asks for is
// an error ("file:line: ..."); columns not asked for are not read.
s2s_status s2s_dataset_load(s2s_dataset **out, const char *path, const s2s_vocab *src_vocab,
                            const s2s_vocab *tgt_vocab, int max_len, int keep);
// The same, checking *stop (when stop is not NULL) before each line: once
// it is non-zero the load stops with S2S_ERR_INVALID ("PATH: stopped at
// line N by a signal"), so that SIGINT ends `s2s train` on a big file or
// an endless pipe.
s2s_status s2s_dataset_load_until(s2s_dataset **out, const char *path,
                                  const s2s_vocab *src_vocab, const s2s_vocab *tgt_vocab,
                                  int max_len, int keep, const volatile sig_atomic_t *stop);
// The same from n pairs already tokenized (tgt pieces become the
// references with keep_refs); lines are numbered 1..n. No alignments.
s2s_status s2s_dataset_from_tokens(s2s_dataset **out, const s2s_tokens *src,
                                   const s2s_tokens *tgt, int n, int max_len, bool keep_refs);
void s2s_dataset_free(s2s_dataset *d);

// An epoch's batches: batch b holds the sentences order[start[b] .. start[b+1]).
typedef struct s2s_batch_plan {
    int n_batches;
    int *start;  // (n_batches + 1)
    int *order;  // (n) example indices
} s2s_batch_plan;

s2s_status s2s_batch_plan_make(s2s_batch_plan *p, const s2s_dataset *d, int batch_tokens,
                               bool shuffle, uint64_t seed, int epoch);
void s2s_batch_plan_free(s2s_batch_plan *p);

// Rank `rank`'s share of the global batch idx[0..n) among `size` ranks
// (data-parallel training): idx[*lo..*hi). The shares are contiguous, in
// rank order, cover the batch, and balance its tokens (source + target +
// 2 per sentence): sentence i goes to the rank whose slice of the token
// count holds the middle of its own tokens. A share may be empty (a batch
// of fewer sentences than ranks). A pure function of the batch: every rank
// computes every share alike.
void s2s_batch_share(const s2s_dataset *d, const int *idx, int n, int rank, int size, int *lo,
                     int *hi);

// Reusable batch buffers.
typedef struct s2s_batch_buf {
    s2s_batch b;
    size_t cap_cells, cap_rows, cap_guide[S2S_HEAD_ROLE_COUNT];
    float *guide[S2S_HEAD_ROLE_COUNT];  // b.guide's storage, kept when a batch has none
} s2s_batch_buf;

// Fills buf->b with the examples idx[0..n); with alignments when d has them
// (b.guide[S2S_HEAD_ALIGN] row j of a sentence: its links to target token j,
// each of the k linked source tokens weighing 1/k), with coreference
// likewise (b.guide[S2S_HEAD_COREF] row p: source pronoun p's antecedents,
// 1/k each).
s2s_status s2s_batch_fill(s2s_batch_buf *buf, const s2s_dataset *d, const int *idx, int n);
void s2s_batch_buf_free(s2s_batch_buf *buf);

// ---- <unk> replacement (train.unk_replace) ----
//
// A candidate pair is a source token s and a target token t linked to each
// other and to nothing else in the sentence's gold alignment, both ordinary
// words by s2s_unk_words. Pair (s, t) of the sentence on line `line` becomes
// <unk> on both sides (t in tgt_out and in tgt_in one row later) in epoch e
// when u < rate, u in [0, 1) from a hash of (seed, e, line, s, t): a pure
// function of them, so a resumed run replaces what the first run did, and
// the alignment rows are left as they are (the link stays).

// word (vocab size of v): 1 for the ids that may become <unk> on `side` (0
// source, 1 target) of d: neither a special, nor punctuation (a token that
// starts with a punctuation character; those are tokens on their own), nor
// a function word: one that d's gold alignment links one-to-one in fewer
// than half of its occurrences. Articles, auxiliaries, measure words and
// particles (the, is, to, 个, 的, 了) are left unaligned or linked to a
// phrase; words that translate word for word are linked one-to-one.
// Without links nothing qualifies. Caller frees.
s2s_status s2s_unk_words(uint8_t **word, const s2s_vocab *v, const s2s_dataset *d, int side);

typedef struct s2s_unk_replace {
    float rate;        // in [0, 1)
    uint64_t seed;
    int epoch;
    const uint8_t *src_word, *tgt_word;  // from s2s_unk_words
} s2s_unk_replace;

// Applies the replacement to b, which s2s_batch_fill filled with d's
// examples idx[0..b->n). Needs d's links (S2S_DATA_ALIGN). Returns the
// number of pairs replaced.
int s2s_batch_unk_replace(s2s_batch *b, const s2s_dataset *d, const int *idx,
                          const s2s_unk_replace *u);

#endif
