// s2s init CONFIG -o MODEL [--seed N] [--set key=value ...]
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int s2s_cmd_init(int argc, char **argv) {
    const char *config = NULL, *out = NULL;
    int seed = 1;
    s2s_config cfg;
    s2s_config_default(&cfg);
    const char *sets[64];
    int n_sets = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!val) return s2s_cli_usage_error("init", "-o needs a file name");
            out = argv[++i];
        } else if (!strcmp(a, "--seed")) {
            if (!s2s_cli_int("init", a, val, 0, &seed)) return S2S_EXIT_USAGE;
            i++;
        } else if (!strcmp(a, "--set")) {
            if (!val) return s2s_cli_usage_error("init", "--set needs key.path=value");
            if (n_sets == 64) return s2s_cli_usage_error("init", "too many --set options");
            sets[n_sets++] = argv[++i];
        } else if (a[0] == '-') {
            return s2s_cli_usage_error("init", "unknown option '%s'", a);
        } else if (!config) {
            config = a;
        } else {
            return s2s_cli_usage_error("init", "unexpected argument '%s'", a);
        }
    }
    if (!config || !out) return s2s_cli_usage_error("init", "usage: s2s init CONFIG -o MODEL [--seed N]");

    s2s_status st = s2s_config_load_file_set(&cfg, config, sets, n_sets);
    if (st != S2S_OK) return s2s_cli_fail(st);
    int rc = s2s_cli_check_output(out);
    if (rc != S2S_EXIT_OK) return rc;
    s2s_model *m;
    st = s2s_model_init(&m, &cfg, (uint64_t)seed);
    if (st != S2S_OK) return s2s_cli_fail(st);
    st = s2s_model_save(m, out);
    s2s_model_free(m);
    if (st != S2S_OK) {
        fprintf(stderr, "s2s: %s\n", s2s_last_error());
        return S2S_EXIT_FAILURE;
    }
    return S2S_EXIT_OK;
}
