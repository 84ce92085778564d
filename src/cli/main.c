// s2s: the command-line entry point. Dispatches to one command.
#include <string.h>

#include "cli/cli.h"
#include "ops/matmul.h"

static const char usage[] =
    "usage: s2s COMMAND [OPTIONS]\n"
    "\n"
    "commands:\n"
    "  init CONFIG -o MODEL [--seed N]   write a randomly initialised model\n"
    "  translate -m MODEL [SENTENCE...]  translate arguments, or stdin line by line\n"
    "  score -m MODEL                    log-probs of source<TAB>target lines on stdin\n"
    "  inspect MODEL                     config, vocab sizes, tensors, parameter count\n"
    "  train CONFIG -o OUT               train a model (--init MODEL, --resume CKPT, --quiet)\n"
    "  vocab build TSV --column src|tgt -o VOCAB  write a vocab file from a corpus\n"
    "  config check|show|diff FILE...    validate, print or compare YAML configs\n"
    "  eval -m MODEL TEST.tsv            BLEU, exact match, accuracy on a source<TAB>target file\n"
    "  align -m MODEL [SENTENCE...]      attention alignments, heatmaps, AER (eval-align)\n"
    "\n"
    "decoding options: --threads N, --batch N, --max-len N\n"
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
    {"train", s2s_cmd_train},
    {"vocab", s2s_cmd_vocab},
    {"config", s2s_cmd_config},
    {"eval", s2s_cmd_eval},
    {"align", s2s_cmd_align},
    {"eval-align", s2s_cmd_eval_align},
};

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(usage, stderr);
        return S2S_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        fputs(usage, stdout);
        return S2S_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (!strcmp(argv[1], commands[i].name)) {
            int rc = commands[i].run(argc - 2, argv + 2);
            s2s_backend_shutdown();
            return rc;
        }
    }
    fprintf(stderr, "s2s: unknown command '%s'\n%s", argv[1], usage);
    return S2S_EXIT_USAGE;
}
