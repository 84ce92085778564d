// s2s plot LOG... -o FILE.svg|FILE.html [--label NAME]... [--last-run]
//
// The training logs of `s2s train` (JSON lines) drawn as one picture: loss,
// dev loss, dev BLEU, learning rate, global gradient norm and the
// per-matrix gradient norms (grad_norms) of each sublayer against steps,
// every log's runs overlaid (plot.h). Bad lines are skipped with a warning
// naming FILE:LINE (exit 3, the picture still written); a log with no
// line, or that cannot be read, is refused (exit 2) and nothing is written.
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/plot.h"

#define CMD "plot"

static const s2s_opt plot_opts[] = {
    {.name = "--output", .alias = "-o", .value = "FILE",
     .help = "the picture to write: FILE.svg, or FILE.html (the SVG in a page)"},
    {.name = "--label", .value = "NAME",
     .help = "the legend's name of the next LOG (repeatable, in order)",
     .def = "the log's file name without .train.log"},
    {.name = "--last-run", .help = "of a log holding several runs, plot the last one only"},
    {0},
};

static const s2s_cmd_spec plot_spec = {
    "plot", "s2s plot LOG... -o FILE.svg|FILE.html [--label NAME]... [--last-run]",
    "Draws training logs (BASE.train.log of s2s train) as small multiples:\n"
    "training loss, dev loss, dev BLEU, learning rate, global gradient norm,\n"
    "and the gradient norm of each attention and feed-forward matrix by\n"
    "sublayer (the log's grad_norms). Several logs overlay, one colour each.\n"
    "A log of several runs (steps starting again at 1) gives one series per\n"
    "run, named \"NAME (run K)\", unless --last-run. A self-contained file: no\n"
    "script, font or network. Bad lines are skipped with a warning (exit 3);\n"
    "a log without any line is refused (exit 2).",
    plot_opts, /*decode=*/false};

// Whether path ends in ext, in any case.
static bool ends_with(const char *path, const char *ext) {
    size_t n = strlen(path), e = strlen(ext);
    return n >= e && strcasecmp(path + n - e, ext) == 0;
}

// path without a ".train.log" or ".log" ending, from its last '/' (or
// whole when base is false). Caller frees.
static char *default_label(const char *path, bool base) {
    const char *slash = strrchr(path, '/');
    const char *from = base && slash && slash[1] ? slash + 1 : path;
    size_t n = strlen(from);
    if (ends_with(from, ".train.log") && n > 10) n -= 10;
    else if (ends_with(from, ".log") && n > 4) n -= 4;
    return strndup(from, n);
}

// The legend names: --label's in order, then each log's file name (its
// whole path where two logs share a file name). NULL entries when out of
// memory.
static char **make_labels(char **logs, int n_logs, const char **given, int n_given) {
    char **label = calloc((size_t)n_logs, sizeof *label);
    for (int i = 0; label && i < n_logs; i++) {
        bool clash = false;
        for (int j = 0; i >= n_given && j < n_logs && !clash; j++) {
            char *a = default_label(logs[i], true), *b = default_label(logs[j], true);
            clash = j != i && a && b && !strcmp(a, b);
            free(a);
            free(b);
        }
        label[i] = i < n_given ? strdup(given[i]) : default_label(logs[i], !clash);
    }
    return label;
}

static void free_labels(char **label, int n) {
    for (int i = 0; label && i < n; i++) free(label[i]);
    free(label);
}

// Reads the logs, draws them and writes out. Returns the exit code.
static int plot(char **logs, int n_logs, char **label, const char *out, bool last_only) {
    s2s_plot p = {0};
    int rc = S2S_EXIT_OK;
    for (int i = 0; i < n_logs && rc != S2S_EXIT_USAGE && rc != S2S_EXIT_FAILURE; i++) {
        int got = s2s_plot_read(&p, logs[i], label[i], last_only);
        if (got != S2S_EXIT_OK) rc = got;
    }
    if (rc == S2S_EXIT_USAGE || rc == S2S_EXIT_FAILURE) {
        fprintf(stderr, "s2s %s: nothing written\n", CMD);
        s2s_plot_free(&p);
        return rc;
    }
    bool html = ends_with(out, ".html") || ends_with(out, ".htm");
    char *text = html ? s2s_plot_html(&p, "s2s plot") : s2s_plot_svg(&p);
    int runs = p.n_runs;
    s2s_plot_free(&p);
    if (!text) {
        fprintf(stderr, "s2s %s: out of memory\n", CMD);
        return S2S_EXIT_FAILURE;
    }
    s2s_status st = s2s_write_file(out, text, strlen(text));
    free(text);
    if (st != S2S_OK) {  // a failed write (exit 1), whatever the status
        s2s_cli_fail(st);
        return S2S_EXIT_FAILURE;
    }
    fprintf(stderr, "s2s %s: wrote %s (%d run%s)\n", CMD, out, runs, runs == 1 ? "" : "s");
    return rc;
}

int s2s_cmd_plot(int argc, char **argv) {
    s2s_args a;
    int rc = s2s_args_parse(&plot_spec, argc, argv, &a);
    const char *out = NULL;
    const char **given = calloc((size_t)argc + 1, sizeof *given);
    int n_given = 0;
    bool last_only = false;
    if (!given) rc = S2S_EXIT_FAILURE;
    for (int k = 0; rc == S2S_EXIT_OK && !a.help && k < a.n_opts; k++) {
        const s2s_arg *x = &a.opts[k];
        if (s2s_arg_is(x, "--output")) out = x->value;
        else if (s2s_arg_is(x, "--label")) given[n_given++] = x->value;
        else if (s2s_arg_is(x, "--last-run")) last_only = true;
    }
    if (rc == S2S_EXIT_OK && !a.help) {
        if (a.n_pos == 0)
            rc = s2s_cli_usage_error(CMD, "no LOG given (usage: %s)", plot_spec.usage);
        else if (!out)
            rc = s2s_cli_usage_error(CMD, "no -o FILE given: where to write the picture");
        else if (!ends_with(out, ".svg") && !ends_with(out, ".html") && !ends_with(out, ".htm"))
            rc = s2s_cli_usage_error(CMD, "-o %s: the picture is FILE.svg or FILE.html", out);
        else if (n_given > a.n_pos)
            rc = s2s_cli_usage_error(CMD, "%d --label for %d logs", n_given, a.n_pos);
    }
    if (rc == S2S_EXIT_OK && !a.help) rc = s2s_cli_check_output(out);
    if (rc == S2S_EXIT_OK && !a.help) {
        char **label = make_labels(a.pos, a.n_pos, given, n_given);
        bool ok = label != NULL;
        for (int i = 0; ok && i < a.n_pos; i++) ok = label[i] != NULL;
        rc = ok ? plot(a.pos, a.n_pos, label, out, last_only) : S2S_EXIT_FAILURE;
        if (!ok) fprintf(stderr, "s2s %s: out of memory\n", CMD);
        free_labels(label, a.n_pos);
    }
    free(given);
    s2s_args_free(&a);
    return rc;
}
