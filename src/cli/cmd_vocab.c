// s2s vocab build CORPUS.tsv --column src|tgt -o VOCAB [--min-count N] [--max-size N]
#include <string.h>

#include "cli/cli.h"
#include "s2s/train.h"

static const char usage[] =
    "usage: s2s vocab build CORPUS.tsv --column src|tgt -o VOCAB [--min-count N] [--max-size N]";

int s2s_cmd_vocab(int argc, char **argv) {
    if (argc < 1 || strcmp(argv[0], "build") != 0)
        return s2s_cli_usage_error("vocab", "%s", usage);
    const char *corpus = NULL, *out = NULL;
    s2s_vocab_build_params p = {.column = -1, .min_count = 1, .max_size = 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!val) return s2s_cli_usage_error("vocab", "%s needs a file name", a);
            out = argv[++i];
        } else if (!strcmp(a, "--column")) {
            if (val && !strcmp(val, "src")) p.column = 0;
            else if (val && !strcmp(val, "tgt")) p.column = 1;
            else return s2s_cli_usage_error("vocab", "--column needs src or tgt");
            i++;
        } else if (!strcmp(a, "--min-count")) {
            if (!s2s_cli_int("vocab", a, val, 1, &p.min_count)) return S2S_EXIT_USAGE;
            i++;
        } else if (!strcmp(a, "--max-size")) {
            if (!s2s_cli_int("vocab", a, val, S2S_NUM_SPECIALS, &p.max_size)) return S2S_EXIT_USAGE;
            i++;
        } else if (a[0] == '-') {
            return s2s_cli_usage_error("vocab", "unknown option '%s'", a);
        } else if (!corpus) {
            corpus = a;
        } else {
            return s2s_cli_usage_error("vocab", "unexpected argument '%s'", a);
        }
    }
    if (!corpus || !out || p.column < 0) return s2s_cli_usage_error("vocab", "%s", usage);
    int rc = s2s_cli_check_output(out);
    if (rc != S2S_EXIT_OK) return rc;
    int n = 0;
    s2s_status st = s2s_vocab_build(corpus, &p, out, &n);
    // A write of the output that fails (a full disk) is a runtime failure,
    // not bad input: the library's message then starts with the output path.
    size_t ol = strlen(out);
    const char *e = s2s_last_error();
    if (st == S2S_ERR_IO && !strncmp(e, out, ol) && e[ol] == ':') {
        fprintf(stderr, "s2s: %s\n", e);
        return S2S_EXIT_FAILURE;
    }
    if (st != S2S_OK) return s2s_cli_fail(st);
    fprintf(stderr, "%s: %d tokens (4 specials included)\n", out, n);
    return S2S_EXIT_OK;
}
