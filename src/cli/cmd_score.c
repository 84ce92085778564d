// s2s score -m MODEL: forced decoding of source<TAB>target lines on stdin.
// Prints one JSON object per line:
//   {"logprob": sum, "token_logprobs": [...], "tokens": [..., "</s>"]}
// Bad lines follow the bad-line rule (cli.h): a line without a tab, with a
// NUL byte or invalid UTF-8 gets a warning and an empty output line; a
// side longer than the model takes is cut.
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define CHUNK 256

typedef struct scorer {
    s2s_model *m;
    s2s_state *st;
    s2s_decode_params p;
    s2s_lines in;
    s2s_tokens src[CHUNK], tgt[CHUNK];
    bool skipped[CHUNK];
    int n;
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
    int sl[CHUNK], tl[CHUNK], m = 0;
    for (int k = 0; k < sc->n; k++) {
        if (sc->skipped[k]) continue;
        src[m] = sc->src[k].ids, sl[m] = sc->src[k].n;
        tgt[m] = sc->tgt[k].ids, tl[m++] = sc->tgt[k].n;
    }
    s2s_hypothesis hyps[CHUNK];
    s2s_status st = s2s_score(sc->st, &sc->p, src, sl, tgt, tl, m, hyps);
    if (st != S2S_OK) return s2s_cli_fail(st);
    int rc = S2S_EXIT_OK;
    for (int k = 0, j = 0; k < sc->n; k++) {
        if (sc->skipped[k]) {
            if (rc == S2S_EXIT_OK) printf("\n");
            continue;
        }
        if (rc == S2S_EXIT_OK) rc = print_json(s2s_model_tgt_vocab(sc->m), &hyps[j]);
        s2s_hypothesis_free(&hyps[j++]);
    }
    if (!s2s_cli_flush_stdout()) rc = S2S_EXIT_FAILURE;
    sc->n = 0;
    return rc;
}

// Splits the current line at its tab and tokenizes both sides into slot
// sc->n, which is marked skipped when the line is bad.
static int add_line(scorer *sc) {
    s2s_lines *in = &sc->in;
    int k = sc->n++, max_tokens = s2s_cli_max_tokens(sc->m), rc = S2S_EXIT_OK;
    bool cut = false;
    char *target;
    sc->skipped[k] = true;
    if (!s2s_lines_split_tsv(in, &target)) return S2S_EXIT_OK;
    rc = s2s_lines_tokenize(in, in->line, s2s_model_src_vocab(sc->m), in->text, max_tokens,
                            &sc->src[k], &cut);
    if (rc == S2S_EXIT_OK)
        rc = s2s_lines_tokenize(in, in->line, s2s_model_tgt_vocab(sc->m), target, max_tokens,
                                &sc->tgt[k], &cut);
    if (rc == S2S_EXIT_FAILURE) return rc;
    sc->skipped[k] = rc != S2S_EXIT_OK;
    return S2S_EXIT_OK;
}

static const s2s_opt score_opts[] = {{0}};

static const s2s_cmd_spec score_spec = {
    "score", "s2s score -m MODEL [OPTIONS] < PAIRS.tsv",
    "Prints, for each source<TAB>target line of stdin, one JSON object: the target's\n"
    "log-probability, its per-token log-probabilities and its tokens (</s> last).",
    score_opts, /*decode=*/true};

int s2s_cmd_score(int argc, char **argv) {
    s2s_decode_opts o = s2s_cli_decode_opts();
    s2s_args a;
    int rc = s2s_args_parse(&score_spec, argc, argv, &a);
    for (int k = 0; k < a.n_opts && rc == S2S_EXIT_OK; k++)
        if (s2s_cli_decode_arg("score", &o, &a.opts[k]) < 0) rc = S2S_EXIT_USAGE;
    if (rc == S2S_EXIT_OK && a.n_pos > 0)
        rc = s2s_cli_usage_error("score", "unexpected argument '%s' (pairs come from stdin)",
                                 a.pos[0]);
    bool help = a.help;
    s2s_args_free(&a);
    if (rc != S2S_EXIT_OK || help) return rc;
    scorer *sc = calloc(1, sizeof *sc);
    if (!sc) return S2S_EXIT_FAILURE;
    rc = s2s_cli_open("score", &o, &sc->m, &sc->st, &sc->p);
    if (rc == S2S_EXIT_OK) rc = s2s_lines_open(&sc->in, "score", NULL);
    while (rc == S2S_EXIT_OK && s2s_lines_next(&sc->in)) {
        rc = add_line(sc);
        if (rc == S2S_EXIT_OK && sc->n == CHUNK) rc = flush_chunk(sc);
    }
    if (rc == S2S_EXIT_OK && sc->n > 0) rc = flush_chunk(sc);
    rc = s2s_lines_exit(&sc->in, rc);
    s2s_lines_close(&sc->in);
    for (int k = 0; k < CHUNK; k++) {
        s2s_tokens_free(&sc->src[k]);
        s2s_tokens_free(&sc->tgt[k]);
    }
    s2s_state_free(sc->st);
    s2s_model_free(sc->m);
    free(sc);
    return rc;
}
