// The s2s command line: each command is one function taking argc/argv
// after the command name and returning the process exit code.
#ifndef S2S_CLI_H
#define S2S_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli/args.h"
#include "s2s/s2s.h"
// The library's internals the command uses (it links them: s2s_internal).
#include "align/align.h"
#include "config/command.h"
#include "core/io.h"
#include "core/util.h"
#include "tokenizer/tsv.h"

// Exit codes (documented in README and `s2s --help`).
enum {
    S2S_EXIT_OK = 0,
    S2S_EXIT_FAILURE = 1,  // a runtime failure: out of memory, oneDNN, a failed write
    S2S_EXIT_USAGE = 2,    // bad usage or bad input: options, files, configs, models
    S2S_EXIT_WARNINGS = 3, // finished, but some input lines were skipped or cut
};

// ---- the commands ----
// One row per command, in the order `s2s --help` lists them: its name, the
// function s2s_cmd_FN that runs it (argc/argv after the name; in its own
// src/cli/cmd_*.c), its synopsis and its summary. main.c dispatches and
// prints the usage from these rows, and tests/cli_args_test.sh reads the
// commands back from `s2s --help`: a new command is its file, a row here and
// its line in CMakeLists.txt's s2s_cli.
#define S2S_CLI_COMMANDS(X)                                                                  \
    X("init", init, "init CONFIG -o MODEL [--seed N]", "write a randomly initialised model") \
    X("translate", translate, "translate -m MODEL [SENTENCE...]",                            \
      "translate arguments, or stdin line by line")                                          \
    X("score", score, "score -m MODEL", "log-probs of source<TAB>target lines on stdin")     \
    X("inspect", inspect, "inspect MODEL", "config, vocab sizes, tensors, parameter count")  \
    X("quantize", quantize, "quantize MODEL -o OUT --type int8|bf16",                        \
      "store the decoding matrices as I8 or BF16")                                           \
    X("train", train, "train CONFIG -o OUT",                                                 \
      "train a model (--init MODEL, --resume CKPT, --quiet)")                                \
    X("plot", plot, "plot LOG... -o FILE.svg|.html",                                         \
      "draw training logs: loss, BLEU, lr, gradient norms")                                  \
    X("vocab", vocab, "vocab build TSV --column src|tgt -o VOCAB",                           \
      "write a vocab file from a corpus")                                                    \
    X("config", config, "config check|show|diff|reference|schema|init|explain",              \
      "validate, print, compare or start YAML configs")                                      \
    X("eval", eval, "eval -m MODEL TEST.tsv",                                                \
      "BLEU, exact match, accuracy on a source<TAB>target file")                             \
    X("align", align, "align -m MODEL [SENTENCE...]", "attention alignments, heatmaps, AER") \
    X("eval-align", eval_align, "eval-align -m MODEL GOLD.tsv",                              \
      "AER of every layer/head against gold alignments")                                     \
    X("probe", probe, "probe coref|scale|heads|equivariance",                                \
      "antecedent heads, softmax scaling, each head's figures, permutation equivariance")    \
    X("serve", serve, "serve -m MODEL [-m MODEL...]",                                        \
      "the translation demo and JSON API over HTTP")

#define S2S_CLI_DECLARE(name, fn, synopsis, summary) int s2s_cmd_##fn(int argc, char **argv);
S2S_CLI_COMMANDS(S2S_CLI_DECLARE)
#undef S2S_CLI_DECLARE
// probe scale, probe heads, probe equivariance (cmd_probe_attn.c), which
// s2s_cmd_probe dispatches to.
int s2s_cmd_probe_scale(int argc, char **argv);
int s2s_cmd_probe_heads(int argc, char **argv);
int s2s_cmd_probe_equivariance(int argc, char **argv);

// The display columns text on stdout may take: $COLUMNS when it is a
// number >= 20, else the terminal's width when stdout is one, else 80.
int s2s_cli_stdout_width(void);

// Every error and warning line starts "s2s CMD: " (CMD: the command, as
// main dispatched it; "s2s: " before there is one). main sets it.
void s2s_cli_set_command(const char *name);
// Prints msg with that prefix on each of its problems: a message of several
// (a config's) gets it on every problem line, not on the source line and
// caret quoted under one.
void s2s_cli_error(const char *msg);
// Prints s2s_last_error() (or the status's name) as s2s_cli_error does and
// returns the exit code for the status.
int s2s_cli_fail(s2s_status st);
// Prints "s2s <cmd>: <formatted message>" and returns S2S_EXIT_USAGE.
int s2s_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// Flushes stdout (at each point where a command's output should be out).
// False once any write to stdout has failed: the command should stop and
// return S2S_EXIT_FAILURE; main prints the one message, with the errno.
bool s2s_cli_flush_stdout(void);
// errno of the first failed stdout write s2s_cli_flush_stdout saw, or 0.
int s2s_cli_stdout_errno(void);

// Checks that the output path can be written (s2s_check_writable), before
// a command does its work. Returns S2S_EXIT_OK, or S2S_EXIT_FAILURE (a
// failed write) after the one-line message "s2s: PATH: cannot write: WHY".
int s2s_cli_check_output(const char *path);

// Parses an int option value from min to max; false (after a message
// naming both bounds) if bad. S2S_CLI_INT_MAX is the bound of options that
// have no smaller one of their own; S2S_CLI_MAX_THREADS that of --threads.
#define S2S_CLI_INT_MAX 1000000000
#define S2S_CLI_MAX_THREADS 1024
bool s2s_cli_int(const char *cmd, const char *opt, const char *text, int min, int max, int *out);

// Prints o as one compact JSON line (keys in insertion order, reals with
// `precision` significant digits) and releases it. Returns the exit code.
int s2s_cli_print_json(json_t *o, int precision);

// ---- input lines: the bad-line rule (README "Bad lines and exit codes") ----
//
// A command reading lines never stops at a bad one. A line that can't be
// repaired (a NUL byte, invalid UTF-8, a missing tab, more than
// S2S_LINE_MAX_BYTES bytes, which is read through but never held whole)
// gets the warning
//     s2s CMD: FILE:LINE: skipped: REASON
// and an empty output line; one with more tokens than the model takes is
// cut, with
//     s2s CMD: FILE:LINE: cut to N tokens (the model takes at most N)
// Each warning counts, and s2s_lines_exit turns a finished run with
// warnings into exit 3.
//
//     s2s_lines in;  s2s_lines_open(&in, "score", NULL);   // NULL: stdin
//     while (s2s_lines_next(&in)) { ... in.text, in.len, in.line ... }
//     rc = s2s_lines_exit(&in, rc);  s2s_lines_close(&in);
typedef struct s2s_lines {
    const char *cmd;
    const char *name;  // the input path, or "<stdin>"
    FILE *f;
    char *text;        // the current line, without its line end
    size_t len;        // its bytes (a NUL byte makes strlen(text) < len)
    size_t cap;
    bool too_long;     // longer than S2S_LINE_MAX_BYTES (text is then empty)
    int line;          // its number, from 1
    int warnings;      // lines skipped or cut so far
    int failed;        // after a message, the exit code that stopped the input: 0 none,
                       // 1 a read error, 2 a line with no end (S2S_LINE_SKIP_MAX_BYTES)
} s2s_lines;

// Opens path for reading (NULL or "-": stdin). Returns an exit code, after
// a message naming the file when it cannot be opened.
int s2s_lines_open(s2s_lines *r, const char *cmd, const char *path);
// Reads the next line. False at the end of input or on a read error.
bool s2s_lines_next(s2s_lines *r);
// Prints the skip warning for line `line` and counts it. Returns false.
bool s2s_lines_skip(s2s_lines *r, int line, const char *reason);
// Checks the current line: false (after the skip warning) when it was too
// long or holds a NUL byte.
bool s2s_lines_check(s2s_lines *r);
// Splits the current line as s2s_tsv_split does: the source stays in
// r->text, *target points at the target (a third column is ignored). False
// (after the skip warning) when too long, on a NUL byte or a missing tab.
bool s2s_lines_split_tsv(s2s_lines *r, char **target);
// Tokenizes text of line `line` into t, cut to max_tokens (counting one
// warning per line: *cut is set, and the first cut of a line warns).
// Returns S2S_EXIT_OK; S2S_EXIT_WARNINGS when the line is skipped (invalid
// UTF-8, after the warning); S2S_EXIT_FAILURE when out of memory.
int s2s_lines_tokenize(s2s_lines *r, int line, const s2s_vocab *v, const char *text,
                       int max_tokens, s2s_tokens *t, bool *cut);
// rc, or S2S_EXIT_WARNINGS when rc is S2S_EXIT_OK and a line was skipped
// or cut; r->failed when the input stopped early.
int s2s_lines_exit(const s2s_lines *r, int rc);
void s2s_lines_close(s2s_lines *r);
// Most tokens a source or target may have in m (its max_len less </s>).
int s2s_cli_max_tokens(const s2s_model *m);

// Shared options of commands that decode: -m MODEL, --config FILE, --set
// key=value, the decoding flags, and two machine resources that are not
// decode keys, --threads N (matrix-product threads) and --batch N
// (sentences decoded together). Each decoding flag is the override of one
// schema key (--beam 3 is --set decode.beam_size=3; the table is in
// cli_util.c), so a flag and its --set give the same result and the same
// message for a bad value. Overrides apply in command-line order over the
// model's decode config (or over --config FILE). The options are
// s2s_cli_decode_table (args.h), taken by a command whose s2s_cmd_spec
// says .decode; s2s_cli_decode_arg returns 1 when x was one of them (and
// records it), 0 when not, -1 on a bad value (after a message).
typedef struct s2s_decode_override {
    const char *key;   // schema key of a flag, or NULL for a raw --set
    const char *text;  // the flag's value, or the whole "key=value" of --set
    const char *flag;  // "--beam", or "--set"
} s2s_decode_override;

typedef struct s2s_decode_opts {
    const char *model;
    const char *config;  // --config FILE: decode options (architecture must match)
    s2s_decode_override sets[64];
    int n_sets;
    int threads, batch;  // 0: unset
} s2s_decode_opts;

s2s_decode_opts s2s_cli_decode_opts(void);
int s2s_cli_decode_arg(const char *cmd, s2s_decode_opts *o, const s2s_arg *x);

// The last value a decoding flag gave `key` ("decode.n_best"), or NULL.
const char *s2s_cli_decode_value(const s2s_decode_opts *o, const char *key);

// Loads o->model and makes a state with params from the options.
int s2s_cli_open(const char *cmd, const s2s_decode_opts *o, s2s_model **m, s2s_state **st,
                 s2s_decode_params *p);

#endif
