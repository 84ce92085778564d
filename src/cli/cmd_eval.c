// s2s eval -m MODEL TEST.tsv [decoding options]: test-set quality.
//
// Translates the source column (greedy, or as the options say) and prints
// corpus BLEU (sacreBLEU's definition, on the tokenized text), exact match,
// and the teacher-forced token accuracy and loss. Bad lines follow the
// bad-line rule (cli.h): skipped or cut with a warning, exit 3 at the end.
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "s2s/train.h"

// Reads every good line of in as a tokenized pair (*n of them, arrays the
// caller frees), warning about the others. Returns an exit code.
static int read_pairs(s2s_lines *in, const s2s_model *m, s2s_tokens **src, s2s_tokens **tgt,
                      int *n) {
    int cap = 0, max_tokens = s2s_cli_max_tokens(m);
    while (s2s_lines_next(in)) {
        char *target;
        if (!s2s_lines_split_tsv(in, &target)) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 256;
            s2s_tokens *s = realloc(*src, (size_t)cap * sizeof *s);
            if (s) *src = s;
            s2s_tokens *t = realloc(*tgt, (size_t)cap * sizeof *t);
            if (t) *tgt = t;
            if (!s || !t) return S2S_EXIT_FAILURE;
        }
        s2s_tokens *s = &(*src)[*n], *t = &(*tgt)[*n];
        *s = (s2s_tokens){0};
        *t = (s2s_tokens){0};
        (*n)++;  // freed by the caller even when the line is dropped below
        bool cut = false;
        int rc = s2s_lines_tokenize(in, in->line, s2s_model_src_vocab(m), in->text, max_tokens,
                                    s, &cut);
        if (rc == S2S_EXIT_OK)
            rc = s2s_lines_tokenize(in, in->line, s2s_model_tgt_vocab(m), target, max_tokens, t,
                                    &cut);
        if (rc == S2S_EXIT_FAILURE) return rc;
        if (rc != S2S_EXIT_OK) {  // skipped: the slot is reused
            s2s_tokens_free(s);
            s2s_tokens_free(t);
            (*n)--;
        }
    }
    return in->failed;  // S2S_EXIT_OK, or the exit code that stopped the input
}

static const s2s_opt eval_opts[] = {
    {.name = "--json", .help = "print the figures as one JSON object"},
    {0},
};

static const s2s_cmd_spec eval_spec = {
    "eval", "s2s eval -m MODEL TEST.tsv [OPTIONS]",
    "Translates the source column of TEST.tsv (source<TAB>target lines) and prints\n"
    "corpus BLEU, exact match, token accuracy and loss.",
    eval_opts, /*decode=*/true};

int s2s_cmd_eval(int argc, char **argv) {
    s2s_decode_opts o = s2s_cli_decode_opts();
    const char *tsv = NULL;
    bool json = false;
    s2s_args a;
    int rc = s2s_args_parse(&eval_spec, argc, argv, &a);
    for (int k = 0; k < a.n_opts && rc == S2S_EXIT_OK; k++) {
        int r = s2s_cli_decode_arg("eval", &o, &a.opts[k]);
        if (r < 0) rc = S2S_EXIT_USAGE;
        else if (r == 0 && s2s_arg_is(&a.opts[k], "--json")) json = true;
    }
    if (rc == S2S_EXIT_OK && !a.help && a.n_pos != 1)
        rc = a.n_pos ? s2s_cli_usage_error("eval", "unexpected argument '%s'", a.pos[1])
                     : s2s_cli_usage_error("eval", "usage: %s", eval_spec.usage);
    if (a.n_pos > 0) tsv = a.pos[0];  // a pointer into argv: it outlives a
    bool help = a.help;
    s2s_args_free(&a);
    if (rc != S2S_EXIT_OK || help) return rc;
    s2s_model *m;
    s2s_state *st;
    s2s_decode_params p;
    rc = s2s_cli_open("eval", &o, &m, &st, &p);
    if (rc != S2S_EXIT_OK) return rc;
    s2s_valid_result r;
    s2s_tokens *src = NULL, *tgt = NULL;
    int n = 0;
    s2s_lines in;
    rc = s2s_lines_open(&in, "eval", tsv);
    if (rc == S2S_EXIT_OK) rc = read_pairs(&in, m, &src, &tgt, &n);
    if (rc == S2S_EXIT_OK && n == 0)
        rc = s2s_cli_usage_error("eval", "%s: no sentence pairs to evaluate", tsv);
    s2s_status status = rc == S2S_EXIT_OK ? s2s_evaluate_tokens(m, src, tgt, n, &p, &r) : S2S_OK;
    if (status != S2S_OK) {
        rc = s2s_cli_fail(status);
    } else if (rc != S2S_EXIT_OK) {
        // the message is out
    } else if (json) {
        json_t *obj = json_pack("{s:s, s:i, s:f, s:f, s:f, s:f}", "file", tsv, "sentences",
                                r.sentences, "bleu", r.bleu, "exact_match", r.exact_match,
                                "token_accuracy", r.token_accuracy, "loss", r.loss);
        rc = obj ? s2s_cli_print_json(obj, 9)  // NULL: json_pack refuses a name that is not UTF-8
               : s2s_cli_usage_error("eval", "--json: the file name is not UTF-8");
    } else {
        printf("%s: %d sentences, %s\n", tsv, r.sentences,
               p.decode.beam_size > 1 ? "beam search" : "greedy");
        printf("BLEU %.2f  exact match %.2f%%  token accuracy %.2f%%  loss %.4f\n", r.bleu,
               100 * r.exact_match, 100 * r.token_accuracy, r.loss);
    }
    rc = s2s_lines_exit(&in, rc);
    s2s_lines_close(&in);
    for (int k = 0; k < n; k++) {
        s2s_tokens_free(&src[k]);
        s2s_tokens_free(&tgt[k]);
    }
    free(src);
    free(tgt);
    s2s_state_free(st);
    s2s_model_free(m);
    return rc;
}
