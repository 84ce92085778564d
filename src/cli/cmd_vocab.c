// s2s vocab build CORPUS.tsv --column src|tgt -o VOCAB [--min-count N] [--max-size N]
#include <string.h>

#include "cli/cli.h"
#include "s2s/train.h"

static const s2s_opt vocab_opts[] = {
    {.name = "--column", .value = "src|tgt", .help = "the corpus column to count (required)"},
    {.name = "--output", .alias = "-o", .value = "VOCAB",
     .help = "the vocab file to write (required)"},
    {.name = "--min-count", .value = "N", .help = "keep tokens seen at least N times", .def = "1"},
    {.name = "--max-size", .value = "N",
     .help = "keep at most N tokens, specials included", .def = "no limit"},
    {0},
};

static const s2s_cmd_spec vocab_spec = {
    "vocab build", "s2s vocab build CORPUS.tsv --column src|tgt -o VOCAB [OPTIONS]",
    "Writes a vocab file from one column of a source<TAB>target corpus, most frequent\n"
    "tokens first, after the 4 specials.",
    vocab_opts, /*decode=*/false};

int s2s_cmd_vocab(int argc, char **argv) {
    bool build = argc >= 1 && !strcmp(argv[0], "build");
    if (build) s2s_cli_set_command("vocab build");
    if (!build && !(argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))))
        return s2s_cli_usage_error("vocab", "usage: %s", vocab_spec.usage);
    const char *corpus = NULL, *out = NULL;
    s2s_vocab_build_params p = {.column = -1, .min_count = 1, .max_size = 0};
    s2s_args a;
    int rc = s2s_args_parse(&vocab_spec, argc - build, argv + build, &a);
    for (int k = 0; k < a.n_opts && rc == S2S_EXIT_OK; k++) {
        const s2s_arg *x = &a.opts[k];
        const char *val = x->value;
        if (s2s_arg_is(x, "--output")) {
            out = val;
        } else if (s2s_arg_is(x, "--column")) {
            if (!strcmp(val, "src")) p.column = 0;
            else if (!strcmp(val, "tgt")) p.column = 1;
            else rc = s2s_cli_usage_error("vocab build", "--column needs src or tgt");
        } else if (s2s_arg_is(x, "--min-count")) {
            if (!s2s_cli_int("vocab", "--min-count", val, 1, S2S_CLI_INT_MAX, &p.min_count))
                rc = S2S_EXIT_USAGE;
        } else if (s2s_arg_is(x, "--max-size")) {
            if (!s2s_cli_int("vocab", "--max-size", val, S2S_NUM_SPECIALS, S2S_CLI_INT_MAX,
                             &p.max_size))
                rc = S2S_EXIT_USAGE;
        }
    }
    if (rc == S2S_EXIT_OK && a.n_pos > 1)
        rc = s2s_cli_usage_error("vocab build", "unexpected argument '%s'", a.pos[1]);
    if (a.n_pos > 0) corpus = a.pos[0];
    bool help = a.help;
    s2s_args_free(&a);
    if (rc != S2S_EXIT_OK || help) return rc;
    if (!corpus || !out || p.column < 0)
        return s2s_cli_usage_error("vocab build", "usage: %s", vocab_spec.usage);
    rc = s2s_cli_check_output(out);
    if (rc != S2S_EXIT_OK) return rc;
    int n = 0;
    s2s_status st = s2s_vocab_build(corpus, &p, out, &n);
    // A write of the output that fails (a full disk) is a runtime failure,
    // not bad input: the library's message then starts with the output path.
    size_t ol = strlen(out);
    const char *e = s2s_last_error();
    if (st == S2S_ERR_IO && !strncmp(e, out, ol) && e[ol] == ':') {
        s2s_cli_error(e);
        return S2S_EXIT_FAILURE;
    }
    if (st != S2S_OK) return s2s_cli_fail(st);
    fprintf(stderr, "%s: %d tokens (4 specials included)\n", out, n);
    return S2S_EXIT_OK;
}
