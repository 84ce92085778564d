// Validation metrics (internal): corpus BLEU and exact match over token
// strings.
//
// BLEU follows sacreBLEU's corpus_bleu on already tokenized text (its
// tokenize='none'): clipped n-gram matches for n = 1..4 and the lengths are
// summed over the corpus first; p_n = correct_n / total_n; when correct_n is
// 0 the 'exp' smoothing uses p_n = 1 / (2^k * total_n) for the k-th such n;
// when total_n is 0 the score is 0; brevity penalty exp(1 - ref/sys) when
// sys < ref (0 when sys is 0); BLEU = 100 * BP * exp(mean log p_n).
//
//     s2s_bleu_stats s = {0};
//     s2s_bleu_add(&s, hyp_tokens, n_hyp, ref_tokens, n_ref);  // per sentence
//     double bleu = s2s_bleu_score(&s);
#ifndef S2S_TRAIN_METRICS_H
#define S2S_TRAIN_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "s2s/status.h"

#define S2S_BLEU_ORDER 4

typedef struct s2s_bleu_stats {
    int64_t correct[S2S_BLEU_ORDER];  // clipped n-gram matches, n = 1..4
    int64_t total[S2S_BLEU_ORDER];    // hypothesis n-grams
    int64_t sys_len, ref_len;
} s2s_bleu_stats;

// Adds one sentence pair (token strings). S2S_ERR_NOMEM on out of memory.
s2s_status s2s_bleu_add(s2s_bleu_stats *s, const char *const *hyp, int n_hyp,
                        const char *const *ref, int n_ref);

// 0..100.
double s2s_bleu_score(const s2s_bleu_stats *s);

// The same tokens in the same order.
bool s2s_tokens_match(const char *const *hyp, int n_hyp, const char *const *ref, int n_ref);

#endif
