// s2s score -m MODEL: forced decoding of source<TAB>target lines on stdin.
// Prints one JSON object per line:
//   {"logprob": sum, "token_logprobs": [...], "tokens": [..., "</s>"]}
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define CHUNK 256

typedef struct scorer {
    s2s_model *m;
    s2s_state *st;
    s2s_decode_params p;
    s2s_tokens src[CHUNK], tgt[CHUNK];
    int n, first_line;
} scorer;

static int print_json(const s2s_vocab *tv, const s2s_hypothesis *h) {
    json_t *o = json_object(), *lp = json_array(), *tok = json_array();
    for (int t = 0; t < h->n_out; t++) {
        json_array_append_new(lp, json_real(h->token_logprobs[t]));
        const char *t_text = t < h->n ? s2s_vocab_token(tv, h->ids[t]) : s2s_special_token(S2S_EOS);
        json_array_append_new(tok, json_string(t_text));
    }
    json_object_set_new(o, "logprob", json_real(h->logprob));
    json_object_set_new(o, "token_logprobs", lp);
    json_object_set_new(o, "tokens", tok);
    return s2s_cli_print_json(o, 9);
}

static int flush_chunk(scorer *sc) {
    const int *src[CHUNK], *tgt[CHUNK];
    int sl[CHUNK], tl[CHUNK];
    for (int k = 0; k < sc->n; k++) {
        src[k] = sc->src[k].ids, sl[k] = sc->src[k].n;
        tgt[k] = sc->tgt[k].ids, tl[k] = sc->tgt[k].n;
    }
    s2s_hypothesis hyps[CHUNK];
    s2s_status st = s2s_score(sc->st, &sc->p, src, sl, tgt, tl, sc->n, hyps);
    if (st != S2S_OK) {
        fprintf(stderr, "s2s: stdin:%d-%d: %s\n", sc->first_line, sc->first_line + sc->n - 1,
                s2s_last_error());
        return st == S2S_ERR_NOMEM || st == S2S_ERR_BACKEND ? S2S_EXIT_FAILURE : S2S_EXIT_USAGE;
    }
    int rc = S2S_EXIT_OK;
    for (int k = 0; k < sc->n; k++) {
        if (rc == S2S_EXIT_OK) rc = print_json(s2s_model_tgt_vocab(sc->m), &hyps[k]);
        s2s_hypothesis_free(&hyps[k]);
    }
    if (!s2s_cli_flush_stdout()) rc = S2S_EXIT_FAILURE;
    sc->first_line += sc->n;
    sc->n = 0;
    return rc;
}

// Splits "source<TAB>target" and tokenizes both into slot sc->n.
static int add_line(scorer *sc, char *line, int lineno) {
    char *target, *extra;  // a third column (alignments) is ignored
    if (s2s_tsv_split(line, strlen(line), "stdin", lineno, &target, &extra) != S2S_OK) {
        fprintf(stderr, "s2s: %s\n", s2s_last_error());
        return S2S_EXIT_USAGE;
    }
    s2s_status st = s2s_tokenize(s2s_model_src_vocab(sc->m), line, &sc->src[sc->n]);
    if (st == S2S_OK) st = s2s_tokenize(s2s_model_tgt_vocab(sc->m), target, &sc->tgt[sc->n]);
    if (st != S2S_OK) {
        fprintf(stderr, "s2s: stdin:%d: %s\n", lineno, s2s_last_error());
        return S2S_EXIT_USAGE;
    }
    sc->n++;
    return S2S_EXIT_OK;
}

int s2s_cmd_score(int argc, char **argv) {
    s2s_decode_opts o = s2s_cli_decode_opts();
    for (int i = 0; i < argc; i++) {
        int r = s2s_cli_decode_opt("score", &o, argc, argv, &i);
        if (r < 0) return S2S_EXIT_USAGE;
        if (r == 0) return s2s_cli_usage_error("score", "unexpected argument '%s'", argv[i]);
    }
    scorer *sc = calloc(1, sizeof *sc);
    if (!sc) return S2S_EXIT_FAILURE;
    sc->first_line = 1;
    int rc = s2s_cli_open("score", &o, &sc->m, &sc->st, &sc->p);
    char *buf = NULL;
    size_t cap = 0;
    int lineno = 0;
    while (rc == S2S_EXIT_OK && s2s_cli_getline(&buf, &cap, stdin)) {
        rc = add_line(sc, buf, ++lineno);
        if (rc == S2S_EXIT_OK && sc->n == CHUNK) rc = flush_chunk(sc);
    }
    if (rc == S2S_EXIT_OK && sc->n > 0) rc = flush_chunk(sc);
    free(buf);
    for (int k = 0; k < CHUNK; k++) {
        s2s_tokens_free(&sc->src[k]);
        s2s_tokens_free(&sc->tgt[k]);
    }
    s2s_state_free(sc->st);
    s2s_model_free(sc->m);
    free(sc);
    return rc;
}
