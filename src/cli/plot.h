// `s2s plot` (cmd_plot.c): training logs read into series (plot_log.c) and
// drawn as one self-contained SVG of small multiples (plot_svg.c). A tool
// of the command, not library API.
//
//     s2s_plot p = {0};
//     rc = s2s_plot_read(&p, "run.train.log", "fp32", false);   // per log
//     char *svg = s2s_plot_svg(&p);   // NULL: out of memory
//     s2s_plot_free(&p);
#ifndef S2S_CLI_PLOT_H
#define S2S_CLI_PLOT_H

#include <stdbool.h>

// y against step, in the log's order; y is NAN where a line had null.
typedef struct s2s_plot_series {
    double *x, *y;
    int n, cap;
} s2s_plot_series;

// The quantities every log line (or validation line) has.
typedef enum s2s_plot_quantity {
    S2S_PLOT_LOSS,       // "loss"
    S2S_PLOT_DEV_LOSS,   // "valid": {"loss"}
    S2S_PLOT_BLEU,       // "valid": {"bleu"}
    S2S_PLOT_LR,         // "lr"
    S2S_PLOT_GRAD_NORM,  // "grad_norm"
    S2S_PLOT_COUNT
} s2s_plot_quantity;

// One matrix's gradient norms ("grad_norms" of the log).
typedef struct s2s_plot_norm {
    char *key;  // "encoder.layers.0.self_attn.q_proj"
    s2s_plot_series s;
} s2s_plot_norm;

// One run: a log, or one of the runs a log holds (its steps start again at 1).
typedef struct s2s_plot_run {
    char *label;  // the legend's name
    s2s_plot_series q[S2S_PLOT_COUNT];
    s2s_plot_norm *norms;
    int n_norms, cap_norms;
    int last_step;  // of its last line
} s2s_plot_run;

typedef struct s2s_plot {
    s2s_plot_run *runs;
    int n_runs, cap_runs;
} s2s_plot;

// Reads the log at path into p as one run labelled label (a log of several
// runs: one run each, "label (run K)", or its last run alone when
// last_only). A line that is not a log object (not JSON, no "step", a field
// of the wrong type) is skipped with the warning "s2s plot: FILE:LINE:
// skipped: WHY" and the others are kept. Returns S2S_EXIT_OK, or
// S2S_EXIT_WARNINGS when lines were skipped, or S2S_EXIT_USAGE (the file
// cannot be read, or has no log line) or S2S_EXIT_FAILURE (out of memory)
// after a message.
int s2s_plot_read(s2s_plot *p, const char *path, const char *label, bool last_only);

// The picture of p: one panel per quantity (loss, dev loss, BLEU, learning
// rate, gradient norm) and one per sublayer with grad_norms (its matrices'
// norms), every run a colour, every matrix a dash pattern. Caller frees;
// NULL when out of memory.
char *s2s_plot_svg(const s2s_plot *p);
// The same SVG in an HTML page (title: title). Caller frees; NULL when out
// of memory.
char *s2s_plot_html(const s2s_plot *p, const char *title);

void s2s_plot_free(s2s_plot *p);

#endif
