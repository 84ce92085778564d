// The s2s command line: each command is one function taking argc/argv
// after the command name and returning the process exit code.
#ifndef S2S_CLI_H
#define S2S_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "s2s/s2s.h"

// Exit codes (documented in README and `s2s --help`).
enum {
    S2S_EXIT_OK = 0,
    S2S_EXIT_FAILURE = 1,  // a runtime failure: out of memory, oneDNN, a failed write
    S2S_EXIT_USAGE = 2,    // bad usage or bad input: options, files, configs, models
};

int s2s_cmd_init(int argc, char **argv);
int s2s_cmd_translate(int argc, char **argv);
int s2s_cmd_score(int argc, char **argv);
int s2s_cmd_inspect(int argc, char **argv);
int s2s_cmd_train(int argc, char **argv);
int s2s_cmd_vocab(int argc, char **argv);
int s2s_cmd_config(int argc, char **argv);
int s2s_cmd_eval(int argc, char **argv);
int s2s_cmd_align(int argc, char **argv);
int s2s_cmd_eval_align(int argc, char **argv);

// Prints "s2s: <message>" and returns the exit code for a status.
int s2s_cli_fail(s2s_status st);
// Prints "s2s <cmd>: <formatted message>" and returns S2S_EXIT_USAGE.
int s2s_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// Flushes stdout (at each point where a command's output should be out).
// False once any write to stdout has failed: the command should stop and
// return S2S_EXIT_FAILURE; main prints the one message, with the errno.
bool s2s_cli_flush_stdout(void);

// Parses a non-negative int option value; false (after a message) if bad.
bool s2s_cli_int(const char *cmd, const char *opt, const char *text, int min, int *out);

// Prints o as one compact JSON line (keys in insertion order, reals with
// `precision` significant digits) and releases it. Returns the exit code.
int s2s_cli_print_json(json_t *o, int precision);

// Reads one line from f without its newline (and a trailing \r). Returns
// false at end of input. *buf grows as needed; caller frees.
bool s2s_cli_getline(char **buf, size_t *cap, FILE *f);

// Shared options of commands that decode: -m MODEL, --threads N,
// --batch N, --max-len N, --config FILE, --set key=value, and the search
// options (--beam, --n-best,
// --length-penalty, --min-len, --max-len-ratio, --sampling-topk,
// --sampling-topp, --temperature, --seed). Unset options keep the model's
// decode config. Returns 1 when argv[*i] was one of them (advancing *i past
// its value), 0 when not, -1 on a bad value (after a message).
typedef struct s2s_decode_opts {
    const char *model;
    const char *config;  // --config FILE: decode options (architecture must match)
    const char *sets[64];  // --set key=value
    int n_sets;
    int threads, batch, max_len, beam, n_best, min_len, topk;  // -1: unset
    double length_penalty, max_len_ratio, topp, temperature;   // NAN: unset
    long long seed;                                            // -1: unset
} s2s_decode_opts;

s2s_decode_opts s2s_cli_decode_opts(void);
int s2s_cli_decode_opt(const char *cmd, s2s_decode_opts *o, int argc, char **argv, int *i);

// Loads o->model and makes a state with params from the options.
int s2s_cli_open(const char *cmd, const s2s_decode_opts *o, s2s_model **m, s2s_state **st,
                 s2s_decode_params *p);

#endif
