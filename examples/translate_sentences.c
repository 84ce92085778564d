// Translates the lines given on the command line with the public API, as
// `s2s translate` does: each line split into sentences, translated, and
// joined (s2s_line_prepare, s2s_translate_lines).
//
//   translate_sentences MODEL LINE...
#include <stdio.h>
#include <stdlib.h>

#include "s2s/s2s.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL LINE...\n", argv[0]);
        return 2;
    }
    s2s_model *m;
    s2s_state *st;
    if (s2s_model_load(&m, argv[1]) != S2S_OK || s2s_state_new(&st, m) != S2S_OK) {
        fprintf(stderr, "%s\n", s2s_last_error());
        return 2;
    }
    int n = argc - 2, rc = 0;
    s2s_line *lines = calloc((size_t)n, sizeof *lines);
    for (int i = 0; i < n && rc == 0; i++)
        if (s2s_line_prepare(m, argv[i + 2], /*split=*/true, &lines[i]) != S2S_OK) rc = 2;
    s2s_decode_params p = s2s_decode_default_params(m);
    if (rc == 0 && s2s_translate_lines(st, &p, lines, n) != S2S_OK) rc = 1;
    if (rc != 0) fprintf(stderr, "%s\n", s2s_last_error());
    for (int i = 0; i < n && rc == 0; i++) {
        const s2s_line *l = &lines[i];  // no hypotheses for a line of no tokens
        printf("%s\t%s\t(logprob %.3f)\n", argv[i + 2], l->n_hyps ? l->out[0].text : "",
               l->n_hyps ? l->out[0].logprob : 0.0);
    }
    for (int i = 0; i < n; i++) s2s_line_free(&lines[i]);
    free(lines);
    s2s_state_free(st);
    s2s_model_free(m);
    return rc;
}
