// Options of the s2s commands: one table per command, one parser for all.
//
// Each command describes its options in a table of s2s_opt (name, alias,
// value placeholder, help, default); s2s_args_parse reads argv against it
// as GNU getopt does: options may stand anywhere, before or after the
// positional arguments, `--` ends them, and `--name=value` equals
// `--name value`. `-h`/`--help` prints the help made from the same table,
// so the help lists exactly what the parser accepts. An unknown option is
// refused with a did-you-mean (exit 2).
//
//     static const s2s_opt opts[] = {{"--json", NULL, NULL, "one JSON object"}, {0}};
//     static const s2s_cmd_spec spec = {"eval", "eval -m MODEL TEST.tsv", NULL, opts, true};
//     s2s_args a;
//     int rc = s2s_args_parse(&spec, argc, argv, &a);
//     if (rc != S2S_EXIT_OK || a.help) return s2s_args_free(&a), rc;
//     for (int k = 0; k < a.n_opts; k++) ... a.opts[k].opt->name, a.opts[k].value ...
//     ... a.pos[0 .. a.n_pos) ...
//     s2s_args_free(&a);
#ifndef S2S_CLI_ARGS_H
#define S2S_CLI_ARGS_H

#include <stdbool.h>
#include <stdio.h>

typedef struct s2s_opt {
    const char *name;   // "--beam"
    const char *alias;  // "-m", or NULL
    const char *value;  // its value's placeholder ("N"), or NULL for a switch
    const char *help;   // one line
    const char *def;    // the default, as --help shows it, or NULL
    const char *key;    // decoding flags: the schema key it sets ("decode.beam_size")
    bool optional;      // the value may be left out: taken only when the next
                        // argument is "-" or does not start with '-'
} s2s_opt;

typedef struct s2s_cmd_spec {
    const char *name;      // "translate", "vocab build"
    const char *usage;     // "s2s translate -m MODEL [OPTIONS] [SENTENCE...]"
    const char *about;     // a few lines under the usage, or NULL
    const s2s_opt *opts;   // ends with {0}
    bool decode;           // also takes the decoding options (cli.h)
} s2s_cmd_spec;

typedef struct s2s_arg {
    const s2s_opt *opt;
    const char *value;  // NULL for a switch (or an optional value left out)
} s2s_arg;

typedef struct s2s_args {
    s2s_arg *opts;  // the options given, in command-line order
    int n_opts;
    char **pos;     // the positional arguments, in order
    int n_pos;
    bool help;      // --help was given, and the help printed
} s2s_args;

// The decoding options every decoding command takes: -m, --config, --set,
// --threads, --batch and the decoding flags (cli_util.c). Ends with {0}.
extern const s2s_opt s2s_cli_decode_table[];

// Parses argv[0..argc) against spec. Returns S2S_EXIT_OK (for -h/--help:
// with a->help set after printing the help on stdout, and no options or
// positionals, so the command only returns), S2S_EXIT_USAGE after a
// message for an unknown option (with a did-you-mean) or a missing value,
// S2S_EXIT_FAILURE when out of memory. a is always the caller's to free.
int s2s_args_parse(const s2s_cmd_spec *spec, int argc, char **argv, s2s_args *a);
void s2s_args_free(s2s_args *a);
// True when x is the option named `name` ("--tokens").
bool s2s_arg_is(const s2s_arg *x, const char *name);
// Prints spec's help: usage, about, then every option with its value,
// help and default.
void s2s_args_help(const s2s_cmd_spec *spec, FILE *f);

#endif
