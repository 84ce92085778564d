// s2s: the command-line entry point. Dispatches to one command and checks,
// on the way out, that everything it printed reached standard output.
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *synopsis, *summary;
} command;

#define S2S_CLI_ROW(name, fn, synopsis, summary) {name, s2s_cmd_##fn, synopsis, summary},
static const command commands[] = {S2S_CLI_COMMANDS(S2S_CLI_ROW)};
#undef S2S_CLI_ROW

// The usage, one line per row of the table: summaries in a column, after
// two spaces where a synopsis is too wide for it, on the next line where
// the line would pass 100 columns.
static void print_usage(FILE *f) {
    fputs("usage: s2s COMMAND [OPTIONS]    (s2s COMMAND --help: its options and defaults)\n"
          "       s2s --version\n"
          "\n"
          "commands:\n", f);
    enum { column = 34, width = 100 };
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        const command *c = &commands[i];
        size_t n = strlen(c->synopsis);
        if (n + 2 <= column)
            fprintf(f, "  %-*s%s\n", column, c->synopsis, c->summary);
        else if (2 + n + 2 + strlen(c->summary) <= width)
            fprintf(f, "  %s  %s\n", c->synopsis, c->summary);
        else
            fprintf(f, "  %s\n  %*s%s\n", c->synopsis, column, "", c->summary);
    }
    fputs("\n"
          "options may stand anywhere after COMMAND; `--` ends them\n"
          "exit codes: 0 ok, 1 runtime failure, 2 bad usage or bad input,\n"
          "            3 finished with input lines skipped or cut (README \"Bad lines\")\n", f);
}

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
        print_usage(stderr);
        return S2S_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        print_usage(stdout);
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
    fprintf(stderr, "s2s: unknown command '%s'\n", argv[1]);
    print_usage(stderr);
    return S2S_EXIT_USAGE;
}
