// Tokenizer cost against the longest CJK token of the vocab (issue 27,
// item 9): seconds to tokenize a line of N CJK characters with a vocab of
// the specials and one token of L characters (一 x (L-1) then 二), for two
// inputs: 一 x N, which follows that token for L-1 characters at every
// position (the most a match can be walked), and N characters that start
// no token. Then the shipped zh vocab on a corpus column, in characters/s,
// and on one line of 1 MiB made of it (a request body at serve's limit).
// A program that prints figures, not a timed test; it uses the public API
// only, so the same source builds against any libs2s (before/after).
//
//   bench_tokenizer [L] [ZH_VOCAB TSV]   (default L 2000, 0 for none; with
//                                         ZH_VOCAB and TSV, the corpus figures)
//   bench_tokenizer --worst [L]          (the walk's worst cases, below)
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "s2s/s2s.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// n copies of the 3-byte character c. Caller frees.
static char *repeat(const char *c, size_t n) {
    char *s = malloc(3 * n + 1);
    if (!s) exit(1);
    for (size_t i = 0; i < n; i++) memcpy(s + 3 * i, c, 3);
    s[3 * n] = '\0';
    return s;
}

// Seconds per s2s_tokenize of text: one call when it takes over a second,
// else the best of 5.
static double time_tokenize(const s2s_vocab *v, const char *text, int *ntok) {
    s2s_tokens t = {0};
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now();
        if (s2s_tokenize(v, text, &t) != S2S_OK) {
            fprintf(stderr, "bench_tokenizer: %s\n", s2s_last_error());
            exit(1);
        }
        double dt = now() - t0;
        if (dt < best) best = dt;
        if (dt > 1.0) break;
    }
    *ntok = t.n;
    s2s_tokens_free(&t);
    return best;
}

static void long_token(size_t L) {
    char *tok = repeat("一", L);
    memcpy(tok + 3 * (L - 1), "二", 3);
    size_t vn = strlen("<pad>\n<unk>\n<s>\n</s>\n") + strlen(tok) + 1;
    char *vtext = malloc(vn);
    if (!vtext) exit(1);
    snprintf(vtext, vn, "<pad>\n<unk>\n<s>\n</s>\n%s", tok);
    s2s_vocab *v;
    if (s2s_vocab_from_string(&v, vtext, "bench") != S2S_OK) {
        fprintf(stderr, "bench_tokenizer: %s\n", s2s_last_error());
        exit(1);
    }
    printf("one vocab token of %zu CJK characters\n", L);
    printf("%-28s %8s %8s %12s\n", "input", "chars", "tokens", "seconds");
    const size_t sizes[] = {1000, 2000, 4000, 8000};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int ntok;
        char *same = repeat("一", sizes[k]);
        double dt = time_tokenize(v, same, &ntok);
        printf("%-28s %8zu %8d %12.6f\n", "一 x N (follows the token)", sizes[k], ntok, dt);
        free(same);
        char *other = malloc(3 * sizes[k] + 1);
        if (!other) exit(1);
        const char *alphabet[] = {"我", "爱", "吃", "苹", "果", "你", "好", "看", "很", "猫"};
        for (size_t i = 0; i < sizes[k]; i++) memcpy(other + 3 * i, alphabet[i % 10], 3);
        other[3 * sizes[k]] = '\0';
        dt = time_tokenize(v, other, &ntok);
        printf("%-28s %8zu %8d %12.6f\n", "other characters", sizes[k], ntok, dt);
        free(other);
    }
    s2s_vocab_free(v);
    free(vtext);
    free(tok);
}

static void corpus(const char *vocab, const char *tsv) {
    s2s_vocab *v;
    if (s2s_vocab_load(&v, vocab) != S2S_OK) {
        fprintf(stderr, "bench_tokenizer: %s\n", s2s_last_error());
        exit(1);
    }
    FILE *f = fopen(tsv, "r");
    if (!f) {
        perror(tsv);
        exit(1);
    }
    s2s_tokens t = {0};
    char *line = NULL;
    size_t cap = 0, chars = 0;
    long tokens = 0;
    double busy = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        char *tab = strchr(line, '\t');
        if (tab) *tab = '\0';
        for (const char *p = line; *p; p++) chars += ((unsigned char)*p & 0xC0) != 0x80;
        double t0 = now();
        if (s2s_tokenize(v, line, &t) == S2S_OK) tokens += t.n;
        busy += now() - t0;
    }
    printf("%s on %s (first column): %zu characters, %ld tokens, %.3f s, %.0f chars/s\n", vocab,
           tsv, chars, tokens, busy, (double)chars / busy);

    // The column again, joined into one line of 1 MiB: the largest request
    // body `s2s serve` takes by default, tokenized on the connection's
    // thread.
    enum { MIB = 1 << 20 };
    char *big = malloc(MIB + 1);
    if (!big) exit(1);
    size_t len = 0;
    for (bool full = false; !full;) {
        size_t before = len;
        rewind(f);
        while (!full && (n = getline(&line, &cap, f)) > 0) {
            char *tab = strchr(line, '\t');
            size_t k = tab ? (size_t)(tab - line) : strcspn(line, "\n");
            full = len + k > MIB;
            if (full) break;
            memcpy(big + len, line, k);
            len += k;
        }
        if (len == before) break;  // an empty column
    }
    big[len] = '\0';
    size_t big_chars = 0;
    for (size_t i = 0; i < len; i++) big_chars += ((unsigned char)big[i] & 0xC0) != 0x80;
    int ntok;
    double dt = time_tokenize(v, big, &ntok);
    printf("one line of %zu bytes (%zu characters) of that column: %d tokens, %.3f s\n", len,
           big_chars, ntok, dt);
    free(big);
    free(line);
    fclose(f);
    s2s_tokens_free(&t);
    s2s_vocab_free(v);
}

// The two worst cases of the walk, each on one line of 1 MiB of 一 (the
// largest request body `s2s serve` takes by default): a vocab of one token
// of L characters (一 x (L-1) then 二), which the line follows for L-1
// characters at every position; and a vocab of 一 x k then 二 for every k
// below L, which parts at every character of that stretch (a binary search
// each). Hours at 9f2c0a5, so only with --worst.
static void worst(size_t L) {
    size_t N = (1u << 20) / 3;
    char *line = repeat("一", N);
    for (int kind = 0; kind < 2; kind++) {
        size_t cap = 64 + (kind ? 3 * L * (L + 3) / 2 + L : 3 * L);
        char *vtext = malloc(cap);
        if (!vtext) exit(1);
        size_t h = (size_t)snprintf(vtext, cap, "<pad>\n<unk>\n<s>\n</s>");
        for (size_t k = kind ? 1 : L - 1; k < L; k++) {
            vtext[h++] = '\n';
            for (size_t i = 0; i < k; i++, h += 3) memcpy(vtext + h, "一", 3);
            memcpy(vtext + h, "二", 3);
            h += 3;
        }
        vtext[h] = '\0';
        s2s_vocab *v;
        if (s2s_vocab_from_string(&v, vtext, "bench") != S2S_OK) {
            fprintf(stderr, "bench_tokenizer: %s\n", s2s_last_error());
            exit(1);
        }
        int ntok;
        double dt = time_tokenize(v, line, &ntok);
        printf("%s (%zu vocab bytes): one line of %zu characters, %d tokens, %.3f s\n",
               kind ? "一 x k then 二 for every k < L" : "one token of L characters", h, N,
               ntok, dt);
        s2s_vocab_free(v);
        free(vtext);
    }
    free(line);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--worst")) {
        worst(argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 2000);
        return 0;
    }
    size_t L = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 2000;
    if (L > 0) long_token(L);  // 0: the corpus figures alone
    if (argc > 3) corpus(argv[2], argv[3]);
    return 0;
}
