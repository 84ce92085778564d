// s2s translate -m MODEL [--tokens] [--verbose] [--json] [--flush] [options] [SENTENCE ...]
//
// Sentences come from the arguments or, without any, one per line from
// stdin. Input is read and translated in chunks and each chunk is flushed,
// so a long file streams through in bounded memory; on a terminal, or with
// --flush, each line is answered as soon as it is read. Bad lines follow the
// bad-line rule (cli.h): skipped or cut, with a warning, output aligned.
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

#define CHUNK 256

typedef struct translator {
    s2s_model *m;
    s2s_state *st;
    s2s_decode_params p;
    bool tokens, verbose, json;
    s2s_lines in;    // where the lines come from, and its warnings
    int max_tokens;  // a longer line is cut to this many
    // one chunk
    char *lines[CHUNK];
    s2s_tokens toks[CHUNK];
    int line[CHUNK];       // numbers in the input, from 1
    bool skipped[CHUNK];   // bad lines: an empty output line each
    int n;
} translator;

static void report_unknown(const translator *t, int k) {
    const s2s_tokens *tk = &t->toks[k];
    int n_unk = 0;
    for (int j = 0; j < tk->n; j++) {
        if (tk->ids[j] != S2S_UNK) continue;
        if (n_unk++ == 0)
            fprintf(stderr, "s2s translate: %s:%d: unknown words:", t->in.name, t->line[k]);
        fprintf(stderr, " %s", tk->pieces[j]);
    }
    if (n_unk) fputc('\n', stderr);
}

// --verbose: the input as the model sees it, when normalising changed it.
static void report_normalised(const translator *t, int k) {
    char *norm = NULL;
    s2s_lang lang = s2s_vocab_lang(s2s_model_src_vocab(t->m));
    if (s2s_normalize(lang, t->lines[k], &norm) == S2S_OK && strcmp(norm, t->lines[k]) != 0)
        fprintf(stderr, "s2s translate: %s:%d: normalised: %s\n", t->in.name, t->line[k], norm);
    free(norm);
}

// Adds line `text` (number `line`) to the chunk, tokenized and cut as the
// bad-line rule says (a bad line is marked skipped). text must stay valid
// until the chunk is flushed.
static int add_line(translator *t, char *text, int line, bool bad) {
    int k = t->n++;
    bool cut = false;
    t->lines[k] = text;
    t->line[k] = line;
    t->skipped[k] = bad;
    t->toks[k].n = 0;
    if (!bad) {
        int rc = s2s_lines_tokenize(&t->in, line, s2s_model_src_vocab(t->m), text, t->max_tokens,
                                    &t->toks[k], &cut);
        if (rc == S2S_EXIT_FAILURE) return rc;
        t->skipped[k] = rc != S2S_EXIT_OK;
    }
    if (t->verbose && !t->skipped[k]) report_normalised(t, k);
    if (t->verbose && !t->skipped[k]) report_unknown(t, k);
    return S2S_EXIT_OK;
}

static char *render(const translator *t, const s2s_hypothesis *h) {
    const s2s_vocab *tv = s2s_model_tgt_vocab(t->m);
    return t->tokens ? s2s_join_tokens(tv, h->ids, h->n) : s2s_detokenize(tv, h->ids, h->n);
}

// One JSON object for input k: its hypotheses, best first.
static int print_json(const translator *t, int k, const s2s_hypothesis *hyps, int n_best) {
    const s2s_vocab *tv = s2s_model_tgt_vocab(t->m);
    json_t *o = json_object(), *list = json_array();
    json_object_set_new(o, "source", json_string(t->lines[k]));
    for (int j = 0; j < n_best && t->toks[k].n > 0; j++) {
        const s2s_hypothesis *h = &hyps[j];
        if (!h->ids) continue;
        json_t *hj = json_object(), *toks = json_array();
        char *text = render(t, h);
        for (int i = 0; i < h->n; i++) json_array_append_new(toks, json_string(s2s_vocab_token(tv, h->ids[i])));
        json_object_set_new(hj, "text", json_string(text ? text : ""));
        json_object_set_new(hj, "tokens", toks);
        json_object_set_new(hj, "score", json_real(h->score));
        json_object_set_new(hj, "logprob", json_real(h->logprob));
        json_array_append_new(list, hj);
        free(text);
    }
    json_object_set_new(o, "hypotheses", list);
    return s2s_cli_print_json(o, 7);
}

// Translates the chunk and prints, per input line: the translation; or
// with --n-best N > 1 N lines "INDEX ||| TEXT ||| SCORE" (Moses n-best
// format); or with --json one object. A skipped line prints one empty line.
static int flush_chunk(translator *t) {
    const int *src[CHUNK];
    int len[CHUNK], slot[CHUNK], m = 0;  // the lines translated: slot[k] of the chunk's k-th
    for (int k = 0; k < t->n; k++) {
        slot[k] = m;
        if (t->skipped[k]) continue;
        src[m] = t->toks[k].ids;
        len[m++] = t->toks[k].n;
    }
    int nb = t->p.n_best;
    s2s_hypothesis *hyps = calloc((size_t)(m * nb) + 1, sizeof *hyps);
    if (!hyps) return S2S_EXIT_FAILURE;
    s2s_status st = s2s_translate(t->st, &t->p, src, len, m, hyps);
    if (st != S2S_OK) {
        free(hyps);
        return s2s_cli_fail(st);
    }
    int rc = S2S_EXIT_OK;
    for (int k = 0; k < t->n && rc == S2S_EXIT_OK; k++) {
        const s2s_hypothesis *h = hyps + slot[k] * nb;
        if (t->skipped[k]) {
            printf("\n");
        } else if (t->json) {
            rc = print_json(t, k, h, nb);
        } else if (t->toks[k].n == 0) {  // an empty line stays empty: no translation, no score
            if (nb == 1) printf("\n");
            else printf("%d |||  ||| 0\n", t->line[k] - 1);
        } else {
            for (int j = 0; j < nb; j++) {
                if (!h[j].ids) continue;  // fewer hypotheses than asked for
                char *text = render(t, &h[j]);
                if (!text) rc = S2S_EXIT_FAILURE;
                if (nb == 1)
                    printf("%s\n", text ? text : "");
                else
                    printf("%d ||| %s ||| %.6f\n", t->line[k] - 1, text ? text : "", h[j].score);
                free(text);
            }
        }
    }
    for (int k = 0; k < m * nb; k++) s2s_hypothesis_free(&hyps[k]);
    free(hyps);
    if (!s2s_cli_flush_stdout()) rc = S2S_EXIT_FAILURE;
    t->n = 0;
    return rc;
}

static const s2s_opt translate_opts[] = {
    {.name = "--tokens", .help = "print target tokens separated by spaces, not detokenized text"},
    {.name = "--json",
     .help = "one JSON object per line: source, hypotheses with tokens and scores"},
    {.name = "--verbose", .alias = "-v",
     .help = "report source words outside the model's vocabulary on stderr"},
    {.name = "--flush", .help = "answer each stdin line as soon as it is read",
     .def = "on when stdin is a terminal, else off: chunks of 256 lines"},
    {0},
};

static const s2s_cmd_spec translate_spec = {
    "translate", "s2s translate -m MODEL [OPTIONS] [SENTENCE...]",
    "Translates each SENTENCE argument or, without any, each line of stdin (one output\n"
    "line per input line; --n-best N prints N lines 'INDEX ||| TEXT ||| SCORE').",
    translate_opts, /*decode=*/true};

int s2s_cmd_translate(int argc, char **argv) {
    s2s_decode_opts o = s2s_cli_decode_opts();
    translator t = {0};
    bool flush = isatty(STDIN_FILENO);  // a person typing gets each answer at once
    s2s_args a;
    int rc = s2s_args_parse(&translate_spec, argc, argv, &a);
    for (int k = 0; k < a.n_opts && rc == S2S_EXIT_OK; k++) {
        const s2s_arg *x = &a.opts[k];
        int r = s2s_cli_decode_arg("translate", &o, x);
        if (r < 0) rc = S2S_EXIT_USAGE;
        else if (r > 0) continue;
        else if (s2s_arg_is(x, "--tokens")) t.tokens = true;
        else if (s2s_arg_is(x, "--json")) t.json = true;
        else if (s2s_arg_is(x, "--verbose")) t.verbose = true;
        else if (s2s_arg_is(x, "--flush")) flush = true;
    }
    if (rc == S2S_EXIT_OK && !a.help) rc = s2s_cli_open("translate", &o, &t.m, &t.st, &t.p);
    if (rc != S2S_EXIT_OK || a.help) {
        s2s_args_free(&a);
        return rc;
    }
    t.max_tokens = s2s_cli_max_tokens(t.m);
    if (a.n_pos > 0) {
        t.in = (s2s_lines){.cmd = "translate", .name = "argument"};
        for (int i = 0; i < a.n_pos && rc == S2S_EXIT_OK; i++) {
            rc = add_line(&t, a.pos[i], i + 1, false);
            if (rc == S2S_EXIT_OK && (t.n == CHUNK || i + 1 == a.n_pos)) rc = flush_chunk(&t);
        }
    } else {
        rc = s2s_lines_open(&t.in, "translate", NULL);
        while (rc == S2S_EXIT_OK) {
            bool more = s2s_lines_next(&t.in);
            if (more) {
                char *text = strdup(t.in.text);
                if (!text) rc = S2S_EXIT_FAILURE;
                else rc = add_line(&t, text, t.in.line, !s2s_lines_check(&t.in));
            }
            if (rc == S2S_EXIT_OK && (t.n == CHUNK || (flush && more) || (!more && t.n > 0))) {
                int n = t.n;
                rc = flush_chunk(&t);
                for (int k = 0; k < n; k++) free(t.lines[k]);
                t.n = 0;
            }
            if (!more) break;
        }
        for (int k = 0; k < t.n; k++) free(t.lines[k]);
    }
    rc = s2s_lines_exit(&t.in, rc);
    s2s_lines_close(&t.in);
    for (int k = 0; k < CHUNK; k++) s2s_tokens_free(&t.toks[k]);
    s2s_state_free(t.st);
    s2s_model_free(t.m);
    s2s_args_free(&a);
    return rc;
}
