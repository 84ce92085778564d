// s2s config check|show|diff|reference|schema|init|explain: read configs
// exactly as the other commands do (base: files, --set overrides, every
// check) and print or compare them; print the reference of every key
// (docs/config.md), the JSON Schema for editors (docs/config.schema.json)
// or one key's entry; write a commented starting config.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

static const char config_usage[] =
    "usage: s2s config check FILE... [--set key.path=value ...]\n"
    "       s2s config show FILE [--set key.path=value ...]\n"
    "       s2s config diff A B [--model-only]\n"
    "       s2s config reference > docs/config.md\n"
    "       s2s config schema > docs/config.schema.json\n"
    "       s2s config init [--preset demo|zh-en|bench] [-o FILE] [--force]\n"
    "       s2s config explain KEY\n"
    "\n"
    "check      exits 0 when every file is valid, else 2 after listing every problem;\n"
    "           'ok (translate, init; train needs data.train)' names the commands a\n"
    "           valid file is complete for, and the keys the others need\n"
    "show       prints the effective config as YAML, paths absolute and canonical;\n"
    "           '# default' marks defaults\n"
    "diff       prints 'key: value in A -> value in B' for each key that differs;\n"
    "           exits 0 when none does, 1 when some do, 2 on an error (as diff(1))\n"
    "reference  prints every key with its type, default, range and help (Markdown)\n"
    "schema     prints the JSON Schema (draft 2020-12) that editors check configs with\n"
    "init       writes a config with every key and a comment on each (its meaning,\n"
    "           range and default): the defaults, or a preset's values; to stdout\n"
    "           without -o; an existing FILE is kept unless --force\n"
    "explain    prints one key's entry: 'model.d_model', or 'd_model' when one\n"
    "           table has it\n";

typedef struct config_args {
    const char **files;
    int n_files;
    const char **sets;
    int n_sets;
    bool model_only;
    const char *preset, *output;  // init
    bool force;                   // init
} config_args;

// ---- options: one table per subcommand ----

static const s2s_opt set_opt[] = {
    {.name = "--set", .value = "KEY=VALUE", .help = "override one key (repeatable; in order)"},
    {0},
};
static const s2s_opt diff_opts[] = {
    {.name = "--model-only", .help = "compare only the model: sections"},
    {0},
};
static const s2s_opt init_opts[] = {
    {.name = "--preset", .value = "demo|zh-en|bench", .help = "start from a preset's values",
     .def = "the defaults"},
    {.name = "--output", .alias = "-o", .value = "FILE", .help = "the file to write",
     .def = "stdout"},
    {.name = "--force", .help = "replace an existing FILE"},
    {0},
};
static const s2s_opt no_opts[] = {{0}};

static const s2s_cmd_spec config_specs[] = {
    {"config check", "s2s config check FILE... [--set KEY=VALUE ...]",
     "Exits 0 when every file is valid, else 2 after listing every problem. A valid\n"
     "file's 'ok (translate, init; train needs data.train)' names the commands it is\n"
     "complete for and the keys the others need (init: vocab.src, vocab.tgt; train:\n"
     "data.train too, and -o OUT without train.output).", set_opt, false},
    {"config show", "s2s config show FILE [--set KEY=VALUE ...]",
     "Prints the effective config as YAML; '# default' marks defaults.", set_opt, false},
    {"config diff", "s2s config diff A B [--model-only]",
     "Prints 'key: value in A -> value in B' for each key that differs; exits 0 when\n"
     "none does, 1 when some do, 2 on an error (as diff(1)).", diff_opts, false},
    {"config reference", "s2s config reference > docs/config.md",
     "Prints every key with its type, default, range and help (Markdown).", no_opts, false},
    {"config schema", "s2s config schema > docs/config.schema.json",
     "Prints the JSON Schema (draft 2020-12) that editors check configs with.", no_opts, false},
    {"config init", "s2s config init [--preset demo|zh-en|bench] [-o FILE] [--force]",
     "Writes a config with every key and a comment on each.", init_opts, false},
    {"config explain", "s2s config explain KEY",
     "Prints one key's entry: 'model.d_model', or 'd_model' when one table has it.", no_opts,
     false},
};

// "config check" etc.: the prefix of this run's messages ("s2s config check: ").
static const char *cmd_name = "config";

// Splits argv (after the subcommand) into files and options. Returns -1
// when it printed the help for --help, 0 when fine, else an exit code.
static int parse_args(const char *sub, int argc, char **argv, config_args *a) {
    const s2s_cmd_spec *spec = NULL;
    for (size_t k = 0; k < sizeof config_specs / sizeof config_specs[0]; k++)
        if (!strcmp(config_specs[k].name + strlen("config "), sub)) spec = &config_specs[k];
    if (spec) s2s_cli_set_command(cmd_name = spec->name);
    s2s_args args;
    int rc = s2s_args_parse(spec, argc, argv, &args);
    a->files = malloc(((size_t)argc + 1) * sizeof *a->files);
    a->sets = malloc(((size_t)argc + 1) * sizeof *a->sets);
    if (rc == S2S_EXIT_OK && (!a->files || !a->sets)) {
        fprintf(stderr, "s2s %s: out of memory\n", cmd_name);
        rc = S2S_EXIT_FAILURE;
    }
    for (int k = 0; k < args.n_opts && rc == S2S_EXIT_OK; k++) {
        const s2s_arg *x = &args.opts[k];
        if (s2s_arg_is(x, "--set")) a->sets[a->n_sets++] = x->value;
        else if (s2s_arg_is(x, "--model-only")) a->model_only = true;
        else if (s2s_arg_is(x, "--preset")) a->preset = x->value;
        else if (s2s_arg_is(x, "--output")) a->output = x->value;
        else if (s2s_arg_is(x, "--force")) a->force = true;
    }
    for (int k = 0; k < args.n_pos && rc == S2S_EXIT_OK; k++) a->files[a->n_files++] = args.pos[k];
    if (rc == S2S_EXIT_OK && args.help) rc = -1;
    s2s_args_free(&args);
    return rc;
}

// Paths in the effective config are relative to the working directory
// (the loader joined them to the config's folder). Printed like that they
// would break once the text is saved anywhere else, so make them absolute.
static bool absolute_paths(s2s_config *cfg) {
    s2s_status st = s2s_config_absolute_paths(cfg);
    if (st != S2S_OK) s2s_cli_fail(st);
    return st == S2S_OK;
}

static s2s_status load(s2s_config *cfg, const char *path, const config_args *a) {
    s2s_config_default(cfg);
    return s2s_config_load_file_set(cfg, path, a->sets, a->n_sets);
}

// main reports a failed write (s2s_cli_flush_stdout).
static int finish_output(void) {
    return s2s_cli_flush_stdout() ? S2S_EXIT_OK : S2S_EXIT_FAILURE;
}

// Which commands a valid config is complete for: "translate, init, train",
// or "translate, init; train needs data.train", from the keys each command
// refuses to run without (s2s_config_unset_keys). A config used as
// translate's --config needs nothing more; train without train.output
// needs -o OUT.
static const char *uses(const s2s_config *cfg) {
    static char out[512];
    char init[128], train[128];
    int n_init = s2s_config_unset_keys(cfg, S2S_CONFIG_FOR_INIT, init, sizeof init);
    int n_train = s2s_config_unset_keys(cfg, S2S_CONFIG_FOR_TRAIN, train, sizeof train);
    bool no_out = !cfg->train.output[0];
    if (!n_init && !n_train)
        snprintf(out, sizeof out, "translate, init, train%s", no_out ? " with -o OUT" : "");
    else if (!n_init)
        snprintf(out, sizeof out, "translate, init; train needs %s%s", train,
                 no_out ? ", and -o OUT" : "");
    else
        snprintf(out, sizeof out, "translate; init needs %s; train needs %s%s", init, train,
                 no_out ? ", and -o OUT" : "");
    return out;
}

static int cmd_check(const config_args *a) {
    if (a->n_files < 1)
        return s2s_cli_usage_error(cmd_name,
                                   "needs at least one FILE (see s2s config --help)");
    int rc = S2S_EXIT_OK, bad = 0;
    for (int i = 0; i < a->n_files; i++) {
        s2s_config cfg;
        s2s_status st = load(&cfg, a->files[i], a);
        if (st == S2S_OK) {
            printf("%s: ok (%s)\n", a->files[i], uses(&cfg));
            continue;
        }
        int code = s2s_cli_fail(st);
        if (code > rc) rc = code;  // a bad config (2) outranks a runtime failure (1)
        bad++;
    }
    if (a->n_files > 1 && bad > 0)
        fprintf(stderr, "s2s %s: %d of %d configs have problems\n", cmd_name, bad, a->n_files);
    int out = finish_output();
    return rc != S2S_EXIT_OK ? rc : out;
}

static int cmd_show(const config_args *a) {
    if (a->n_files != 1)
        return s2s_cli_usage_error(cmd_name, "takes one FILE (see s2s config --help)");
    s2s_config cfg;
    s2s_status st = load(&cfg, a->files[0], a);
    if (st != S2S_OK) return s2s_cli_fail(st);
    if (!absolute_paths(&cfg)) return S2S_EXIT_USAGE;
    char *text = s2s_config_to_yaml(&cfg);
    if (!text) {
        fprintf(stderr, "s2s %s: out of memory\n", cmd_name);
        return S2S_EXIT_FAILURE;
    }
    fputs(text, stdout);
    free(text);
    return finish_output();
}

// As diff(1): 0 the same, 1 different, 2 trouble (a bad config, a failed
// write, anything else).
static int cmd_diff(const config_args *a) {
    if (a->n_files != 2)
        return s2s_cli_usage_error(cmd_name, "takes two FILEs (see s2s config --help)");
    s2s_config cfg[2];
    bool ok = true;
    for (int i = 0; i < 2; i++) {
        s2s_status st = load(&cfg[i], a->files[i], a);
        if (st != S2S_OK) {
            s2s_cli_fail(st);
            ok = false;
        } else if (!absolute_paths(&cfg[i])) {
            ok = false;
        }
    }
    if (!ok) return S2S_EXIT_USAGE;
    char *text;
    s2s_status st = s2s_config_diff(&cfg[0], &cfg[1], a->model_only, &text);
    if (st != S2S_OK) {
        s2s_cli_fail(st);
        return S2S_EXIT_USAGE;
    }
    fputs(text, stdout);
    bool differ = text[0] != '\0';
    free(text);
    if (finish_output() != S2S_EXIT_OK) return S2S_EXIT_USAGE;
    return differ ? 1 : 0;
}

// Prints text made by the library (NULL: out of memory) and frees it.
static int print_text(char *text) {
    if (!text) {
        fprintf(stderr, "s2s %s: out of memory\n", cmd_name);
        return S2S_EXIT_FAILURE;
    }
    fputs(text, stdout);
    free(text);
    return finish_output();
}

static int cmd_reference(const config_args *a) {
    if (a->n_files != 0 || a->n_sets != 0)
        return s2s_cli_usage_error(cmd_name, "takes no FILE (see s2s config --help)");
    return print_text(s2s_config_reference());
}

static int cmd_schema(const config_args *a) {
    if (a->n_files != 0 || a->n_sets != 0)
        return s2s_cli_usage_error(cmd_name, "takes no FILE (see s2s config --help)");
    return print_text(s2s_config_json_schema());
}

static int cmd_explain(const config_args *a) {
    if (a->n_files != 1 || a->n_sets != 0)
        return s2s_cli_usage_error(cmd_name, "takes one KEY (see s2s config --help)");
    char *text;
    s2s_status st = s2s_config_explain(a->files[0], &text);
    if (st != S2S_OK) return s2s_cli_fail(st);
    return print_text(text);
}

static int cmd_init(const config_args *a) {
    if (a->n_files != 0 || a->n_sets != 0)
        return s2s_cli_usage_error(cmd_name,
                                   "init takes no FILE; use -o FILE (see s2s config --help)");
    s2s_config cfg;
    s2s_config_default(&cfg);
    if (a->preset) {
        s2s_status st = s2s_config_preset(&cfg, a->preset);
        if (st != S2S_OK) return s2s_cli_usage_error(cmd_name, "%s", s2s_last_error());
    }
    struct stat sb;
    if (a->output && !a->force && stat(a->output, &sb) == 0 && S_ISREG(sb.st_mode))
        return s2s_cli_usage_error(cmd_name, "%s exists; --force replaces it", a->output);
    int rc = a->output ? s2s_cli_check_output(a->output) : S2S_EXIT_OK;
    if (rc != S2S_EXIT_OK) return rc;
    char header[512];
    snprintf(header, sizeof header,
             "An s2s config from `s2s config init%s%s`. Every key is here with a comment: "
             "its meaning, then its type, allowed values and default. File paths are unset: "
             "fill in the vocabularies (and data for training). `s2s config check FILE` "
             "checks it; `s2s config explain KEY` and docs/config.md tell more.",
             a->preset ? " --preset " : "", a->preset ? a->preset : "");
    if (!a->output) return print_text(s2s_config_to_commented_yaml(&cfg, header));
    s2s_status st = s2s_config_write_commented(&cfg, header, a->output);
    if (st == S2S_OK) return S2S_EXIT_OK;
    s2s_cli_error(s2s_last_error());
    return st == S2S_ERR_IO || st == S2S_ERR_NOMEM ? S2S_EXIT_FAILURE : S2S_EXIT_USAGE;  // a failed write: 1
}

int s2s_cmd_config(int argc, char **argv) {
    if (argc < 1) {
        fputs(config_usage, stderr);
        return S2S_EXIT_USAGE;
    }
    const char *sub = argv[0];
    if (!strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help")) {
        fputs(config_usage, stdout);
        return S2S_EXIT_OK;
    }
    int (*run)(const config_args *) = !strcmp(sub, "check") ? cmd_check
                                      : !strcmp(sub, "show") ? cmd_show
                                      : !strcmp(sub, "diff") ? cmd_diff
                                      : !strcmp(sub, "reference") ? cmd_reference
                                      : !strcmp(sub, "schema") ? cmd_schema
                                      : !strcmp(sub, "init") ? cmd_init
                                      : !strcmp(sub, "explain") ? cmd_explain
                                                                  : NULL;
    if (!run) {
        s2s_suggest s = s2s_suggest_start(sub, strlen(sub));
        for (size_t k = 0; k < sizeof config_specs / sizeof config_specs[0]; k++)
            s2s_suggest_offer(&s, config_specs[k].name + strlen("config "));
        if (s.best)
            return s2s_cli_usage_error(cmd_name, "unknown subcommand '%s' (did you mean '%s'?)",
                                       sub, s.best);
        return s2s_cli_usage_error(cmd_name, "unknown subcommand '%s' (see s2s config --help)",
                                   sub);
    }
    config_args a = {0};
    int rc = parse_args(sub, argc - 1, argv + 1, &a);
    if (rc == 0) rc = run(&a);
    else if (rc < 0) rc = S2S_EXIT_OK;
    free(a.files);
    free(a.sets);
    return rc;
}
