// s2s eval -m MODEL TEST.tsv [decoding options]: test-set quality.
//
// Translates the source column (greedy, or as the options say) and prints
// corpus BLEU (sacreBLEU's definition, on the tokenized text), exact match,
// and the teacher-forced token accuracy and loss.
#include <string.h>

#include "cli/cli.h"
#include "s2s/train.h"

int s2s_cmd_eval(int argc, char **argv) {
    s2s_decode_opts o = s2s_cli_decode_opts();
    const char *tsv = NULL;
    bool json = false;
    for (int i = 0; i < argc; i++) {
        int r = s2s_cli_decode_opt("eval", &o, argc, argv, &i);
        if (r < 0) return S2S_EXIT_USAGE;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--json")) json = true;
        else if (argv[i][0] == '-' && argv[i][1]) return s2s_cli_usage_error("eval", "unknown option '%s'", argv[i]);
        else if (!tsv) tsv = argv[i];
        else return s2s_cli_usage_error("eval", "unexpected argument '%s'", argv[i]);
    }
    if (!tsv) return s2s_cli_usage_error("eval", "usage: s2s eval -m MODEL TEST.tsv [--beam K] [--json]");
    s2s_model *m;
    s2s_state *st;
    s2s_decode_params p;
    int rc = s2s_cli_open("eval", &o, &m, &st, &p);
    if (rc != S2S_EXIT_OK) return rc;
    s2s_valid_result r;
    s2s_status status = s2s_evaluate(m, tsv, &p, &r);
    if (status != S2S_OK) {
        rc = s2s_cli_fail(status);
    } else if (json) {
        json_t *o = json_pack("{s:s, s:i, s:f, s:f, s:f, s:f}", "file", tsv, "sentences",
                              r.sentences, "bleu", r.bleu, "exact_match", r.exact_match,
                              "token_accuracy", r.token_accuracy, "loss", r.loss);
        rc = o ? s2s_cli_print_json(o, 9)  // NULL: json_pack refuses a name that is not UTF-8
               : s2s_cli_usage_error("eval", "--json: the file name is not UTF-8");
    } else {
        printf("%s: %d sentences, %s\n", tsv, r.sentences,
               p.beam_size > 1 ? "beam search" : "greedy");
        printf("BLEU %.2f  exact match %.2f%%  token accuracy %.2f%%  loss %.4f\n", r.bleu,
               100 * r.exact_match, 100 * r.token_accuracy, r.loss);
    }
    s2s_state_free(st);
    s2s_model_free(m);
    return rc;
}
