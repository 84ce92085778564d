// Translates the sentences given on the command line with the public API.
//
//   translate_sentences MODEL SENTENCE...
#include <stdio.h>
#include <stdlib.h>

#include "s2s/s2s.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL SENTENCE...\n", argv[0]);
        return 2;
    }
    s2s_model *m;
    s2s_state *st;
    if (s2s_model_load(&m, argv[1]) != S2S_OK || s2s_state_new(&st, m) != S2S_OK) {
        fprintf(stderr, "%s\n", s2s_last_error());
        return 2;
    }
    int n = argc - 2;
    s2s_tokens *toks = calloc((size_t)n, sizeof *toks);
    const int **src = calloc((size_t)n, sizeof *src);
    int *len = calloc((size_t)n, sizeof *len);
    s2s_hypothesis *hyps = calloc((size_t)n, sizeof *hyps);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        if (s2s_tokenize(s2s_model_src_vocab(m), argv[i + 2], &toks[i]) != S2S_OK) rc = 2;
        src[i] = toks[i].ids;
        len[i] = toks[i].n;
    }
    s2s_decode_params p = s2s_decode_default_params(m);
    if (rc == 0 && s2s_translate(st, &p, src, len, n, hyps) != S2S_OK) rc = 1;
    if (rc != 0) fprintf(stderr, "%s\n", s2s_last_error());
    for (int i = 0; i < n && rc == 0; i++) {
        char *text = s2s_detokenize(s2s_model_tgt_vocab(m), hyps[i].ids, hyps[i].n);
        printf("%s\t%s\t(logprob %.3f)\n", argv[i + 2], text ? text : "", hyps[i].logprob);
        free(text);
    }
    for (int i = 0; i < n; i++) {
        s2s_tokens_free(&toks[i]);
        s2s_hypothesis_free(&hyps[i]);
    }
    free(toks);
    free(src);
    free(len);
    free(hyps);
    s2s_state_free(st);
    s2s_model_free(m);
    return rc;
}
