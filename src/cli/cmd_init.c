// s2s init CONFIG -o MODEL [--seed N] [--set key=value ...]
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const s2s_opt init_opts[] = {
    {.name = "--output", .alias = "-o", .value = "MODEL",
     .help = "the model file to write (required)"},
    {.name = "--seed", .value = "N", .help = "the random seed of the weights", .def = "1"},
    {.name = "--set", .value = "KEY=VALUE",
     .help = "override one config key (repeatable; in order)"},
    {0},
};

static const s2s_cmd_spec init_spec = {
    "init", "s2s init CONFIG -o MODEL [OPTIONS]",
    "Writes a model with randomly initialised weights, shaped as CONFIG says.", init_opts,
    /*decode=*/false};

int s2s_cmd_init(int argc, char **argv) {
    const char *config = NULL, *out = NULL;
    int seed = 1;
    s2s_config cfg;
    s2s_config_default(&cfg);
    const char *sets[64];
    int n_sets = 0;
    s2s_args a;
    int rc = s2s_args_parse(&init_spec, argc, argv, &a);
    for (int k = 0; k < a.n_opts && rc == S2S_EXIT_OK; k++) {
        const s2s_arg *x = &a.opts[k];
        if (s2s_arg_is(x, "--output")) out = x->value;
        else if (s2s_arg_is(x, "--seed") &&
                 !s2s_cli_int("init", "--seed", x->value, 0, S2S_CLI_INT_MAX, &seed))
            rc = S2S_EXIT_USAGE;
        else if (s2s_arg_is(x, "--set") && n_sets == 64)
            rc = s2s_cli_usage_error("init", "too many --set options");
        else if (s2s_arg_is(x, "--set")) sets[n_sets++] = x->value;
    }
    if (rc == S2S_EXIT_OK && a.n_pos > 1)
        rc = s2s_cli_usage_error("init", "unexpected argument '%s'", a.pos[1]);
    if (a.n_pos > 0) config = a.pos[0];
    bool help = a.help;
    s2s_args_free(&a);
    if (rc != S2S_EXIT_OK || help) return rc;
    if (!config || !out) return s2s_cli_usage_error("init", "usage: %s", init_spec.usage);

    s2s_status st = s2s_config_load_file_set(&cfg, config, sets, n_sets);
    if (st != S2S_OK) return s2s_cli_fail(st);
    rc = s2s_cli_check_output(out);
    if (rc != S2S_EXIT_OK) return rc;
    s2s_model *m;
    st = s2s_model_init(&m, &cfg, (uint64_t)seed);
    if (st != S2S_OK) return s2s_cli_fail(st);
    st = s2s_model_save(m, out);
    s2s_model_free(m);
    if (st != S2S_OK) {
        s2s_cli_error(s2s_last_error());
        return S2S_EXIT_FAILURE;
    }
    return S2S_EXIT_OK;
}
