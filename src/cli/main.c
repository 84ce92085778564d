// s2s: the command-line entry point. Dispatches to one command and checks,
// on the way out, that everything it printed reached standard output.
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: s2s COMMAND [OPTIONS]    (s2s COMMAND --help: its options and defaults)\n"
    "       s2s --version\n"
    "\n"
    "commands:\n"
    "  init CONFIG -o MODEL [--seed N]   write a randomly initialised model\n"
    "  translate -m MODEL [SENTENCE...]  translate arguments, or stdin line by line\n"
    "  score -m MODEL                    log-probs of source<TAB>target lines on stdin\n"
    "  inspect MODEL                     config, vocab sizes, tensors, parameter count\n"
    "  quantize MODEL -o OUT --type int8|bf16  store the decoding matrices as I8 or BF16\n"
    "  train CONFIG -o OUT               train a model (--init MODEL, --resume CKPT, --quiet)\n"
    "  plot LOG... -o FILE.svg|.html     draw training logs: loss, BLEU, lr, gradient norms\n"
    "  vocab build TSV --column src|tgt -o VOCAB  write a vocab file from a corpus\n"
    "  config check|show|diff|reference|schema|init|explain\n"
    "                                    validate, print, compare or start YAML configs\n"
    "  eval -m MODEL TEST.tsv            BLEU, exact match, accuracy on a source<TAB>target file\n"
    "  align -m MODEL [SENTENCE...]      attention alignments, heatmaps, AER (eval-align)\n"
    "  probe coref -m MODEL GOLD.tsv     which encoder heads find pronouns' antecedents\n"
    "  probe scale [-m MODEL [FILE]]     score spread and softmax saturation without 1/sqrt(d_k)\n"
    "  probe heads -m MODEL [FILE]       each head's distance, entropy, </s> share, label\n"
    "  probe equivariance -m MODEL [FILE]  the encoder's |f(Px) - P f(x)|, without/with positions\n"
    "  serve -m MODEL [-m MODEL...]      the translation demo and JSON API over HTTP\n"
    "\n"
    "options may stand anywhere after COMMAND; `--` ends them\n"
    "exit codes: 0 ok, 1 runtime failure, 2 bad usage or bad input,\n"
    "            3 finished with input lines skipped or cut (README \"Bad lines\")\n";

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} command;

static const command commands[] = {
    {"init", s2s_cmd_init},
    {"translate", s2s_cmd_translate},
    {"score", s2s_cmd_score},
    {"inspect", s2s_cmd_inspect},
    {"quantize", s2s_cmd_quantize},
    {"train", s2s_cmd_train},
    {"vocab", s2s_cmd_vocab},
    {"config", s2s_cmd_config},
    {"eval", s2s_cmd_eval},
    {"align", s2s_cmd_align},
    {"eval-align", s2s_cmd_eval_align},
    {"probe", s2s_cmd_probe},
    {"serve", s2s_cmd_serve},
    {"plot", s2s_cmd_plot},
};

// ---- standard output ----

// A closed descriptor 0, 1 or 2 (`s2s translate >&-`) would be reused by the
// next open(), and stdout's lines would go into, say, a model's temp file.
// /dev/null fills the slot, opened the wrong way round, so that writes to a
// closed stdout still fail (EBADF) and reads from a closed stdin too.
static void fill_closed_std_fds(void) {
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        int got = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
        if (got >= 0 && got != fd) close(got);  // not the lowest free slot: leave it
    }
}

// The exit code after a command returned rc: 1 with one message if any of
// its output was lost (a full disk, a closed stdout), else rc.
static int finish(const char *cmd, int rc) {
    if (s2s_cli_flush_stdout()) return rc;
    int err = s2s_cli_stdout_errno();
    if (!err && write(STDOUT_FILENO, "", 0) != 0) err = errno;  // e.g. EBADF
    if (err)
        fprintf(stderr, "s2s %s: writing standard output: %s\n", cmd, strerror(err));
    else
        fprintf(stderr, "s2s %s: writing standard output failed\n", cmd);
    return rc == S2S_EXIT_OK ? S2S_EXIT_FAILURE : rc;
}

int main(int argc, char **argv) {
    fill_closed_std_fds();
    if (argc < 2) {
        fputs(usage, stderr);
        return S2S_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        fputs(usage, stdout);
        return finish("help", S2S_EXIT_OK);
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") || !strcmp(argv[1], "version")) {
        printf("s2s %s\n", s2s_version());
        return finish("version", S2S_EXIT_OK);
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (!strcmp(argv[1], commands[i].name)) {
            s2s_cli_set_command(commands[i].name);
            int rc = commands[i].run(argc - 2, argv + 2);
            s2s_shutdown();
            return finish(commands[i].name, rc);
        }
    }
    // "transalte": the nearest command, as a mistyped option gets the nearest option.
    s2s_suggest s = s2s_suggest_start(argv[1], strlen(argv[1]));
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        s2s_suggest_offer(&s, commands[i].name);
    if (s.best) {
        fprintf(stderr, "s2s: unknown command '%s' (did you mean '%s'?)\n", argv[1], s.best);
        return S2S_EXIT_USAGE;
    }
    fprintf(stderr, "s2s: unknown command '%s'\n%s", argv[1], usage);
    return S2S_EXIT_USAGE;
}
