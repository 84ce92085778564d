// Corpus BLEU (sacreBLEU's definition) and exact match.
//
// n-grams are compared through 64-bit hashes, sorted and merged, so a long
// sentence costs O(L log L) rather than O(L^2) string comparisons.
#include "train/metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"

static uint64_t mix(uint64_t h, uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

// keys[i] = hash of the n-gram starting at i, for i < len - n + 1; sorted.
static int ngram_keys(uint64_t *keys, const uint64_t *tok, int len, int n) {
    int cnt = len - n + 1;
    for (int i = 0; i < cnt; i++) {
        uint64_t h = (uint64_t)n;
        for (int j = 0; j < n; j++) h = mix(h, tok[i + j]);
        keys[i] = h;
    }
    if (cnt > 0) qsort(keys, (size_t)cnt, sizeof *keys, cmp_u64);
    return cnt > 0 ? cnt : 0;
}

s2s_status s2s_bleu_add(s2s_bleu_stats *s, const char *const *hyp, int n_hyp,
                        const char *const *ref, int n_ref) {
    s->sys_len += n_hyp;
    s->ref_len += n_ref;
    size_t cap = (size_t)(n_hyp > n_ref ? n_hyp : n_ref) + 1;
    uint64_t *buf = s2s_calloc(cap * 4, sizeof *buf);
    if (!buf) return S2S_ERR_NOMEM;
    uint64_t *th = buf, *tr = buf + cap, *kh = buf + 2 * cap, *kr = buf + 3 * cap;
    for (int i = 0; i < n_hyp; i++) th[i] = s2s_fnv1a(S2S_FNV1A_INIT, hyp[i], strlen(hyp[i]));
    for (int i = 0; i < n_ref; i++) tr[i] = s2s_fnv1a(S2S_FNV1A_INIT, ref[i], strlen(ref[i]));
    for (int n = 1; n <= S2S_BLEU_ORDER; n++) {
        int a = ngram_keys(kh, th, n_hyp, n), b = ngram_keys(kr, tr, n_ref, n);
        s->total[n - 1] += a;
        // Merge the sorted lists: each distinct n-gram scores min(count in hyp, count in ref).
        int i = 0, j = 0;
        while (i < a && j < b) {
            if (kh[i] < kr[j]) i++;
            else if (kh[i] > kr[j]) j++;
            else {
                uint64_t k = kh[i];
                int ci = 0, cj = 0;
                while (i < a && kh[i] == k) i++, ci++;
                while (j < b && kr[j] == k) j++, cj++;
                s->correct[n - 1] += ci < cj ? ci : cj;
            }
        }
    }
    free(buf);
    return S2S_OK;
}

double s2s_bleu_score(const s2s_bleu_stats *s) {
    double log_sum = 0, smooth = 1;
    for (int n = 0; n < S2S_BLEU_ORDER; n++) {
        // sacreBLEU leaves the precision at 0 (log = -inf) once an order has no n-grams.
        if (s->total[n] == 0 || s->sys_len == 0) return 0.0;
        double p;
        if (s->correct[n] == 0) {
            smooth *= 2;
            p = 1.0 / (smooth * (double)s->total[n]);
        } else {
            p = (double)s->correct[n] / (double)s->total[n];
        }
        log_sum += log(p);
    }
    double bp = s->sys_len < s->ref_len ? exp(1.0 - (double)s->ref_len / (double)s->sys_len) : 1.0;
    return 100.0 * bp * exp(log_sum / S2S_BLEU_ORDER);
}

bool s2s_tokens_match(const char *const *hyp, int n_hyp, const char *const *ref, int n_ref) {
    if (n_hyp != n_ref) return false;
    for (int i = 0; i < n_hyp; i++)
        if (strcmp(hyp[i], ref[i]) != 0) return false;
    return true;
}
