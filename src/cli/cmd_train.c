// s2s train CONFIG [-o OUT] [--init MODEL [--overwrite]] [--resume CKPT]
//                  [--set key=value ...] [--allow-outside] [--threads N]
//                  [--log-every N] [--quiet]
//
// -o OUT moves the log with the output (BASE.train.log) unless --set
// train.log= names one. Output paths given on the command line (-o, --set
// train.output=, --set train.log=) are the user's and may go anywhere; the
// config file's must stay in its folder unless --allow-outside. Exit 1 when
// a log or model write fails, or an output folder cannot take the files
// (checked before the first step).
//
// Progress goes to stderr: on a terminal one live line redrawn with \r,
// otherwise a plain line every --log-every steps (default 100); validation
// results always get their own line. The first and last lines say where
// the log is and the `s2s plot` command that draws it. SIGINT/SIGTERM finish the current
// step, write a checkpoint and exit 130; so does SIGUSR1, which mpirun forwards
// to every rank (it turns SIGINT into SIGTERM and exits 1 itself).
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "s2s/train.h"

#define EXIT_INTERRUPTED 130

static volatile sig_atomic_t stop_flag;

// ---- signals ----

// No signal handler ever runs: oneDNN 2.6's AVX-512 sgemm moves its stack
// pointer into a malloc'd workspace when K > 84, and a handler's frame
// pushed there overwrites the heap block below it (docs/reliability.md
// "Signals"). So SIGINT, SIGTERM and SIGUSR1 (what mpirun forwards) are
// blocked in the main thread before any other thread exists (OpenMP's,
// oneDNN's and OpenMPI's inherit the mask), and one thread of our own takes
// them with sigwait(), which runs no handler.

// Set by the first step's progress call (the main thread).
static atomic_int stepped_once;

static void *wait_for_stop(void *arg) {
    const sigset_t *set = arg;
    for (;;) {
        int sig;
        if (sigwait(set, &sig) != 0) continue;
        // Before the first step the data loader looks at the flag at each
        // line; a read that blocks (a pipe whose writer is silent) does not,
        // so a second signal ends the process. Nothing is written yet, and
        // the files' writes are all-or-nothing even under SIGKILL.
        if (stop_flag && !atomic_load(&stepped_once)) {
            static const char msg[] = "s2s train: interrupted before the first step; "
                                      "nothing written\n";
            ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
            (void)w;  // exiting either way
            _exit(EXIT_INTERRUPTED);
        }
        // A plain int store; the trainer reads the flag once per step.
        stop_flag = 1;
    }
    return NULL;
}

// Blocks SIGINT, SIGTERM and SIGUSR1 in the calling thread and in every thread it
// starts later, and starts the thread that waits for them. Call it before
// anything starts a thread.
static bool stop_on_signals(void) {
    static sigset_t set;  // the waiter's: lives as long as the process
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    int err = pthread_sigmask(SIG_BLOCK, &set, NULL);
    pthread_attr_t attr;
    if (!err) err = pthread_attr_init(&attr);
    if (!err) {
        pthread_t waiter;
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        err = pthread_create(&waiter, &attr, wait_for_stop, &set);
        pthread_attr_destroy(&attr);
    }
    if (!err) return true;
    fprintf(stderr, "s2s train: cannot start the signal thread: %s\n", strerror(err));
    return false;
}

typedef struct progress {
    bool tty, quiet, live;  // live: a \r line is on screen
    const s2s_config *cfg;  // for the log's path (print_log_hint)
    const s2s_train_params *tp;
    int every;
    double drawn;           // elapsed time of the last redraw
    int first_step;         // the step before this process's first (0, or the resumed one)
    bool stepped;           // a step ran in this process
    const char *resume;     // --resume's CKPT, or NULL
} progress;


static void format_eta(char *buf, size_t n, double sec) {
    if (!isfinite(sec) || sec < 0) sec = 0;
    long s = (long)(sec + 0.5);
    if (s >= 3600) snprintf(buf, n, "%ldh%02ldm", s / 3600, s / 60 % 60);
    else if (s >= 60) snprintf(buf, n, "%ldm%02lds", s / 60, s % 60);
    else snprintf(buf, n, "%lds", s);
}

static void on_step(const s2s_train_progress *p, void *user) {
    progress *pg = user;
    pg->stepped = true;
    atomic_store(&stepped_once, 1);
    if (pg->quiet) return;
    if (pg->first_step < 0) {
        pg->first_step = p->step - 1;
        if (pg->resume)
            fprintf(stderr, "resumed from step %d (%s)\n", pg->first_step, pg->resume);
    }
    int done = p->step - pg->first_step;
    char eta[32];
    format_eta(eta, sizeof eta, done > 0 ? p->elapsed / done * (p->max_steps - p->step) : 0);
    if (pg->tty) {
        // About ten redraws a second: a tiny model makes hundreds of steps.
        bool due = !pg->live || p->elapsed - pg->drawn >= 0.1 || p->step == p->max_steps ||
                   p->valid;
        if (due) {
            pg->drawn = p->elapsed;
            fprintf(stderr, "\r\033[Kstep %d/%d  loss %.4f  lr %.3g  %.0f tok/s  ETA %s", p->step,
                    p->max_steps, p->loss, p->lr, p->tokens_per_sec, eta);
            pg->live = true;
        }
    } else if (p->step % pg->every == 0 || p->step == p->max_steps) {
        fprintf(stderr, "step %d/%d  loss %.4f  lr %.3g  %.0f tok/s  ETA %s\n", p->step,
                p->max_steps, p->loss, p->lr, p->tokens_per_sec, eta);
    }
    if (p->valid) {
        const s2s_valid_result *v = p->valid;
        fprintf(stderr, "%svalid step %d: loss %.4f  accuracy %.2f%%  bleu %.2f  exact %.2f%%%s\n",
                pg->live ? "\n" : "", p->step, v->loss, 100 * v->token_accuracy, v->bleu,
                100 * v->exact_match, p->best ? "  (best)" : "");
        pg->live = false;
    }
    fflush(stderr);
}

// ---- the memory plan ----

static double mb(size_t bytes) { return (double)bytes / 1e6; }

// `s2s train CONFIG --plan`: the table, on stdout.
static void print_plan(const s2s_train_memory *m, const s2s_config *cfg) {
    static const char *const ckpt[S2S_CHECKPOINT_COUNT] = {
        [S2S_CHECKPOINT_NONE] = "none", [S2S_CHECKPOINT_LAYER] = "layer"};
    printf("batches of up to %d sentences, %d source rows, %d target rows "
           "(checkpoint_activations: %s, attention_chunk: %d)\n",
           m->batch_sentences, m->src_rows, m->tgt_rows, ckpt[cfg->train.checkpoint_activations],
           cfg->train.attention_chunk);
    const struct {
        const char *name;
        size_t bytes;
    } rows[] = {{"weights", m->weights},         {"gradients", m->gradients},
                {"adam", m->adam},               {"activations", m->activations},
                {"attention", m->attention},     {"scratch", m->scratch},
                {"total", m->total}};
    printf("%-12s %14s %10s\n", "part", "bytes", "MB");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        printf("%-12s %14zu %10.2f\n", rows[i].name, rows[i].bytes, mb(rows[i].bytes));
}

static void print_log_hint(const s2s_config *cfg, const s2s_train_params *tp);

// The lines at the start of a run, on stderr: the memory, and the log.
static void on_plan(const s2s_train_memory *m, void *user) {
    const progress *pg = user;
    if (pg->quiet) return;
    fprintf(stderr, "memory: %.1f MB (weights %.1f, gradients %.1f, adam %.1f, activations %.1f, "
            "attention %.1f, scratch %.1f) for batches of up to %d sentences, %d x %d rows\n",
            mb(m->total), mb(m->weights), mb(m->gradients), mb(m->adam), mb(m->activations),
            mb(m->attention), mb(m->scratch), m->batch_sentences, m->src_rows, m->tgt_rows);
    print_log_hint(pg->cfg, pg->tp);
}

static const s2s_opt train_opts[] = {
    {.name = "--output", .alias = "-o", .value = "OUT", .help = "the model to write",
     .def = "the config's train.output"},
    {.name = "--init", .value = "MODEL", .help = "start from this model's weights",
     .def = "random weights"},
    {.name = "--overwrite", .help = "let OUT be the --init model"},
    {.name = "--resume", .value = "CKPT", .help = "go on from a checkpoint (model and optimizer)"},
    {.name = "--set", .value = "KEY=VALUE",
     .help = "override one config key (repeatable; in order)"},
    {.name = "--allow-outside",
     .help = "let train.output and train.log point outside the config's folder"},
    {.name = "--threads", .value = "N", .help = "matrix-product threads", .def = "all cores"},
    {.name = "--log-every", .value = "N",
     .help = "a progress line every N steps (not on a terminal)", .def = "100"},
    {.name = "--quiet", .alias = "-q", .help = "no progress lines"},
    {.name = "--plan",
     .help = "print the bytes the run would hold, by part, and exit (nothing is written)"},
    {0},
};

static const s2s_cmd_spec train_spec = {
    "train", "s2s train CONFIG [-o OUT] [--init MODEL [--overwrite] | --resume CKPT] [OPTIONS]",
    "Writes OUT (the model) and, beside it, .ckpt.safetensors (model and\n"
    "optimizer state for --resume), .best.safetensors (best validation) and\n"
    ".train.log (JSON lines, appended). The config's train.output and train.log\n"
    "must stay in its folder unless --allow-outside; an output that is the\n"
    "--init model needs --overwrite.\n"
    "Ctrl-C or SIGTERM finishes the step, writes a checkpoint and exits 130.\n"
    "mpirun -np N s2s train CONFIG trains one model on N processes, the\n"
    "batches shared among them (docs/training.md).",
    train_opts, /*decode=*/false};

// ---- the command that continues an interrupted run ----

// Prints arg after a space, single-quoted when the shell would read it otherwise.
static void shell_word(FILE *f, const char *arg) {
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                "0123456789@%+=:,./-_";
    if (*arg && strspn(arg, plain) == strlen(arg)) {
        fprintf(f, " %s", arg);
        return;
    }
    fputs(" '", f);
    for (const char *c = arg; *c; c++)
        if (*c == '\'') fputs("'\\''", f);
        else fputc(*c, f);
    fputc('\'', f);
}

// Prints "s2s train CONFIG [this run's options] --resume OUT": the command
// line argv gave, with --init, --overwrite and --resume replaced (argv
// parsed before, so parsing it again prints nothing).
static void print_resume_command(FILE *f, int argc, char **argv, const char *out) {
    s2s_args a;
    if (s2s_args_parse(&train_spec, argc, argv, &a) != S2S_EXIT_OK || a.n_pos < 1) {
        s2s_args_free(&a);
        fprintf(f, "s2s train CONFIG --resume %s", out);
        return;
    }
    fputs("s2s train", f);
    shell_word(f, a.pos[0]);
    for (int k = 0; k < a.n_opts; k++) {
        const s2s_arg *x = &a.opts[k];
        if (s2s_arg_is(x, "--init") || s2s_arg_is(x, "--overwrite") || s2s_arg_is(x, "--resume"))
            continue;
        shell_word(f, x->opt->alias && !strcmp(x->opt->alias, "-o") ? "-o" : x->opt->name);
        if (x->value) shell_word(f, x->value);
    }
    fputs(" --resume", f);
    shell_word(f, out);
    s2s_args_free(&a);
}

// "log: LOG; plot it with: s2s plot LOG -o LOGBASE.svg" (LOGBASE: LOG
// without ".log"), on stderr.
static void print_log_hint(const s2s_config *cfg, const s2s_train_params *tp) {
    char *log = s2s_train_log_path(cfg, tp);
    if (!log) return;
    size_t n = strlen(log);
    if (n > 4 && !strcmp(log + n - 4, ".log")) n -= 4;
    char *svg = malloc(n + 5);
    if (svg) {
        memcpy(svg, log, n);
        memcpy(svg + n, ".svg", 5);
        fputs("log:", stderr);
        shell_word(stderr, log);
        fputs("; plot it with: s2s plot", stderr);
        shell_word(stderr, log);
        fputs(" -o", stderr);
        shell_word(stderr, svg);
        fputc('\n', stderr);
    }
    free(svg);
    free(log);
}

int s2s_cmd_train(int argc, char **argv) {
    if (!stop_on_signals()) return S2S_EXIT_FAILURE;
    const char *config = NULL;
    s2s_train_params tp = s2s_train_default_params();
    progress pg = {.tty = isatty(STDERR_FILENO), .every = 100, .first_step = -1};
    int threads = 0;
    const char **sets = calloc((size_t)argc + 1, sizeof *sets);
    if (!sets) return S2S_EXIT_FAILURE;
    int n_sets = 0;
    bool log_set = false, output_set = false;  // --set train.log= / train.output=
    bool plan_only = false;
    s2s_args args;
    int rc = s2s_args_parse(&train_spec, argc, argv, &args);
    for (int k = 0; k < args.n_opts && rc == S2S_EXIT_OK; k++) {
        const s2s_arg *x = &args.opts[k];
        const char *val = x->value;
        if (s2s_arg_is(x, "--output")) {
            tp.output = val;
        } else if (s2s_arg_is(x, "--init")) {
            tp.init = val;
        } else if (s2s_arg_is(x, "--resume")) {
            tp.resume = pg.resume = val;
        } else if (s2s_arg_is(x, "--set")) {
            log_set |= strncmp(val, "train.log=", 10) == 0;
            output_set |= strncmp(val, "train.output=", 13) == 0;
            sets[n_sets++] = val;
        } else if (s2s_arg_is(x, "--threads")) {
            if (!s2s_cli_int("train", "--threads", val, 1, S2S_CLI_MAX_THREADS, &threads))
                rc = S2S_EXIT_USAGE;
        } else if (s2s_arg_is(x, "--log-every")) {
            if (!s2s_cli_int("train", "--log-every", val, 1, S2S_CLI_INT_MAX, &pg.every))
                rc = S2S_EXIT_USAGE;
        } else if (s2s_arg_is(x, "--allow-outside")) {
            tp.allow_outside = true;
        } else if (s2s_arg_is(x, "--overwrite")) {
            tp.overwrite = true;
        } else if (s2s_arg_is(x, "--quiet")) {
            pg.quiet = true;
        } else if (s2s_arg_is(x, "--plan")) {
            plan_only = true;
        }
    }
    if (rc == S2S_EXIT_OK && args.n_pos > 1)
        rc = s2s_cli_usage_error("train", "unexpected argument '%s'", args.pos[1]);
    if (args.n_pos > 0) config = args.pos[0];
    bool help = args.help;
    s2s_args_free(&args);
    if (rc != S2S_EXIT_OK || help) {
        free(sets);
        return rc;
    }
    if (!config)
        rc = s2s_cli_usage_error("train", "no CONFIG given: the config names the data, vocabularies "
                                 "and schedule, also for --resume (usage: %s)", train_spec.usage);
    if (rc == S2S_EXIT_OK && tp.init && tp.resume)
        rc = s2s_cli_usage_error("train", "--init and --resume exclude each other");
    s2s_config cfg;
    s2s_config_default(&cfg);
    if (rc == S2S_EXIT_OK) {
        // File, then overrides, then cross-field checks; problems reported together.
        s2s_status st = s2s_config_load_file_set(&cfg, config, sets, n_sets);
        if (st != S2S_OK) rc = s2s_cli_fail(st);
    }
    free(sets);
    if (rc != S2S_EXIT_OK) return rc;
    if (output_set && !tp.output) tp.output = cfg.train.output;
    if (log_set) tp.log = cfg.train.log;
    else if (tp.output) cfg.train.log[0] = '\0';  // BASE.train.log beside -o's OUT
    // The config's relative output paths resolved against its folder.
    const char *slash = strrchr(config, '/');
    char *config_dir = slash ? strndup(config, (size_t)(slash - config) + 1) : strdup(".");
    if (!config_dir) {
        fputs("s2s train: out of memory\n", stderr);
        return S2S_EXIT_FAILURE;
    }
    tp.config_dir = config_dir;

    s2s_set_threads(threads);
    tp.stop = &stop_flag;
    tp.on_step = on_step;
    tp.on_plan = on_plan;
    tp.user = &pg;
    pg.cfg = &cfg;
    pg.tp = &tp;
    if (plan_only) {
        s2s_train_memory mem;
        s2s_status st = s2s_train_plan(&cfg, &tp, &mem);
        free(config_dir);
        if (st != S2S_OK) return s2s_cli_fail(st);
        print_plan(&mem, &cfg);
        return S2S_EXIT_OK;
    }

    s2s_train_summary sum = {0};
    // Under mpirun: one training across the ranks, rank 0 alone talking.
    s2s_status st = s2s_dist_init();
    pg.quiet |= s2s_dist_rank() > 0;
    if (st == S2S_OK) st = s2s_train(&cfg, &tp, &sum);
    free(config_dir);
    if (pg.live) fputc('\n', stderr);
    if (st != S2S_OK) {
        rc = s2s_cli_fail(st);
        rc = sum.write_failed ? S2S_EXIT_FAILURE : rc;
        s2s_dist_abort(rc);  // the other ranks would wait for this one forever
        return rc;
    }
    s2s_dist_finalize();
    const char *out = tp.output ? tp.output : cfg.train.output;
    if (sum.interrupted && !pg.stepped) {  // stopped while loading the data
        fputs("s2s train: interrupted before the first step; nothing written\n", stderr);
        return EXIT_INTERRUPTED;
    }
    if (!pg.quiet) {
        if (sum.interrupted) {
            fprintf(stderr, "interrupted after step %d; model and checkpoint saved as %s; "
                    "continue with: ", sum.steps, out);
            print_resume_command(stderr, argc, argv, out);
            fputc('\n', stderr);
        } else {
            fprintf(stderr, "%s after step %d (%.0f tok/s); model %s\n",
                    sum.early_stopped ? "stopped early" : "done", sum.steps, sum.tokens_per_sec,
                    out);
        }
        static const char *const metric[S2S_BEST_COUNT] = {
            [S2S_BEST_BLEU] = "bleu", [S2S_BEST_LOSS] = "loss",
            [S2S_BEST_EXACT_MATCH] = "exact match"};
        if (!isnan(sum.best_score))
            fprintf(stderr, "best %s %.4f at step %d\n", metric[cfg.train.best_metric],
                    sum.best_score, sum.best_step);
        print_log_hint(&cfg, &tp);
    }
    return sum.interrupted ? EXIT_INTERRUPTED : S2S_EXIT_OK;
}
