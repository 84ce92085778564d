// The command line: the input is one s2s command line, an argument a line
// ("translate\n--beam\n0\n-m\nx"), run through the command itself (the
// src/cli sources less main.c): src/cli/args.c's option parser, then the
// command's own checks of its arguments. No model can load (see below), so
// no command gets past its checks to decode, train or listen. Checked:
// the exit code is one of 0-3 (cli.h); a failure says so on stderr; and
// no message is empty ("s2s: " and nothing after it).
//
// Arguments run in an empty folder of their own, emptied after each input,
// with '/' in any argument made '_': no command can read a file of the
// repository or of the system (/dev/zero, a FIFO), and whatever one writes
// (config init -o, vocab build -o) stays in that folder. Standard input is
// /dev/null; stdout and stderr go to memory while a command runs
// (S2S_FUZZ_VERBOSE=1 prints each exit code and stderr after it).
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "fuzz.h"

#define CHECK(x)           \
    do {                   \
        if (!(x)) abort(); \
    } while (0)

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} command;

// Every command of the table in cli/cli.h.
#define ROW(name, fn, synopsis, summary) {name, s2s_cmd_##fn},
static const command commands[] = {S2S_CLI_COMMANDS(ROW)};
#undef ROW

static char workdir[] = "/tmp/s2s-fuzz-cli-XXXXXX";
static int home = -1;  // the folder the fuzzer runs in, to come back to

// libFuzzer resolves its corpus folders and artifact prefix against the
// current folder, also while an input runs (a crash writes its input
// then): make them absolute before it parses them.
static char *absolute(const char *cwd, const char *flag, const char *path) {
    size_t n = strlen(flag) + strlen(cwd) + strlen(path) + 2;
    char *s = malloc(n);
    CHECK(s);
    snprintf(s, n, "%s%s/%s", flag, cwd, path);
    return s;
}

static void remove_workdir(void);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    char cwd[PATH_MAX];
    CHECK(getcwd(cwd, sizeof cwd));
    static const char *const flags[] = {"-artifact_prefix=", "-exact_artifact_path=", "-dict="};
    for (int i = 1; i < *argc; i++) {
        char *a = (*argv)[i];
        if (a[0] != '-' && a[0] != '/') {
            (*argv)[i] = absolute(cwd, "", a);
            continue;
        }
        for (size_t f = 0; f < sizeof flags / sizeof *flags; f++) {
            size_t k = strlen(flags[f]);
            if (!strncmp(a, flags[f], k) && a[k] != '/' && a[k] != '\0')
                (*argv)[i] = absolute(cwd, flags[f], a + k);
        }
    }
    CHECK(mkdtemp(workdir));
    atexit(remove_workdir);
    home = open(".", O_RDONLY | O_DIRECTORY);
    CHECK(home >= 0);
    CHECK(freopen("/dev/null", "r", stdin));
    return 0;
}

// Removes what a command wrote in the work folder (files, and folders of
// files, as `train -o` makes).
static void empty_workdir(void) {
    DIR *d = opendir(workdir);
    CHECK(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        int dfd = dirfd(d);
        if (unlinkat(dfd, e->d_name, 0) == 0) continue;
        int sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY);
        if (sub >= 0) {
            DIR *s = fdopendir(sub);
            for (struct dirent *f; s && (f = readdir(s));)
                if (strcmp(f->d_name, ".") && strcmp(f->d_name, "..")) unlinkat(sub, f->d_name, 0);
            if (s) closedir(s);
        }
        unlinkat(dfd, e->d_name, AT_REMOVEDIR);
    }
    closedir(d);
}

static void remove_workdir(void) {
    empty_workdir();
    rmdir(workdir);
}

// No message on stderr is empty: a line starting "s2s" (a message, as
// "s2s: WHY" or "s2s CMD: WHY"; usage and help lines start otherwise) has
// something after its last colon.
static void check_messages(const char *err) {
    for (const char *p = err; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r')) n--;
        if (n >= 3 && !memcmp(p, "s2s", 3)) CHECK(p[n - 1] != ':');
        p += nl ? (size_t)(nl - p) + 1 : strlen(p);
    }
}

// `s2s train` starts a detached thread that takes its stop signals for the
// rest of the process (cmd_train.c, stop_on_signals): one process runs one
// command. Run thousands of times here it left thousands of threads, and
// LeakSanitizer's check of each input slowed to a crawl; so a detached
// thread starts once (they all wait on the same signals and set the same
// flag), and pthread_create of the CLI's sources comes here
// (-Wl,--wrap=pthread_create in CMakeLists.txt).
int __real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg) {
    static bool detached_started;
    int state = PTHREAD_CREATE_JOINABLE;
    if (attr) pthread_attr_getdetachstate(attr, &state);
    if (state == PTHREAD_CREATE_DETACHED) {
        if (detached_started) {
            *t = pthread_self();
            return 0;
        }
        detached_started = true;
    }
    return __real_pthread_create(t, attr, fn, arg);
}

enum { MAX_ARGS = 64 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    CHECK(text);
    memcpy(text, data, size);
    text[size] = '\0';
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    for (size_t i = 0, start = 0; i <= size && argc < MAX_ARGS; i++) {
        if (i < size && text[i] != '\n' && text[i] != '\0') {
            if (text[i] == '/') text[i] = '_';
            continue;
        }
        text[i] = '\0';
        argv[argc++] = text + start;
        start = i + 1;
    }
    argv[argc] = NULL;
    const command *cmd = NULL;
    for (size_t k = 0; argc > 0 && k < sizeof commands / sizeof *commands; k++)
        if (!strcmp(argv[0], commands[k].name)) cmd = &commands[k];
    if (!cmd) {
        free(text);
        return 0;
    }

    // The command's world: the work folder, output to memory, and the
    // signal state it may change (serve blocks SIGTERM and SIGINT).
    char *out = NULL, *err = NULL;
    size_t out_n = 0, err_n = 0;
    FILE *fout = open_memstream(&out, &out_n), *ferr = open_memstream(&err, &err_n);
    CHECK(fout && ferr);
    FILE *real_out = stdout, *real_err = stderr;
    sigset_t mask;
    struct sigaction pipe_action;
    pthread_sigmask(SIG_SETMASK, NULL, &mask);
    sigaction(SIGPIPE, NULL, &pipe_action);
    CHECK(chdir(workdir) == 0);
    stdout = fout;
    stderr = ferr;

    int rc = cmd->run(argc - 1, argv + 1);
    s2s_shutdown();

    fflush(fout);
    fflush(ferr);
    stdout = real_out;
    stderr = real_err;
    CHECK(fchdir(home) == 0);
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    sigaction(SIGPIPE, &pipe_action, NULL);
    clearerr(stdin);
    empty_workdir();

    if (getenv("S2S_FUZZ_VERBOSE"))  // to read a finding: what the command said
        fprintf(stderr, "exit %d\n%s---\n", rc, err);
    CHECK(rc >= S2S_EXIT_OK && rc <= S2S_EXIT_WARNINGS);
    // A failure says why on stderr; `config diff` alone fails quietly,
    // with exit 1 and the differences on stdout, as diff(1) does.
    bool quiet_diff = !strcmp(cmd->name, "config") && argc > 1 && !strcmp(argv[1], "diff") &&
                      rc == S2S_EXIT_FAILURE && out_n > 0;
    if (rc != S2S_EXIT_OK && !quiet_diff) CHECK(err_n > 0);
    check_messages(err);
    fclose(fout);
    fclose(ferr);
    free(out);
    free(err);
    free(text);
    return 0;
}
