// s2s translate -m MODEL [--tokens] [--verbose] [--quiet] [--no-split] [--json] [--flush]
//               [options] [SENTENCE ...]
//
// Sentences come from the arguments or, without any, one per line from
// stdin. Input is read and translated in chunks and each chunk is flushed,
// so a long file streams through in bounded memory; on a terminal, or with
// --flush, each line is answered as soon as it is read. Bad lines follow the
// bad-line rule (cli.h): skipped or cut, with a warning, output aligned.
// Each line goes the library's one translation path (s2s_line_prepare,
// s2s_translate_lines: split into sentences, all of a chunk's sentences
// decoded in one call, a line's translations joined back onto its one
// output line), as in `s2s serve`.
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
    bool tokens, verbose, json, quiet, split;
    s2s_lines in;    // where the lines come from, and its warnings
    int max_tokens;  // a longer sentence is cut to this many
    // one chunk of lines, each split into sentences by the library (s2s_line)
    char *lines[CHUNK];
    int line[CHUNK];       // numbers in the input, from 1
    bool skipped[CHUNK];   // bad lines: an empty output line each
    s2s_line res[CHUNK];   // the lines' sentences and, once translated, hypotheses
    int n;
} translator;

// Unknown source words, one line each on stderr (the library lists them,
// as typed; --quiet silences this).
static void report_unknown(const translator *t, const s2s_tokens *tk, int line) {
    int which[64];
    int n = s2s_unknown_words(tk, which, 64);
    for (int u = 0; u < n && u < 64; u++) {
        char *w = s2s_token_typed(tk, which[u]);
        fprintf(stderr, "s2s translate: %s:%d: '%s' is not in the model's source vocabulary\n",
                t->in.name, line, w ? w : tk->pieces[which[u]]);
        free(w);
    }
}

// --verbose: the input as the model sees it, when normalising changed it.
static void report_normalised(const translator *t, int k) {
    char *norm = NULL;
    s2s_lang lang = s2s_vocab_lang(s2s_model_src_vocab(t->m));
    if (s2s_normalize(lang, t->lines[k], &norm) == S2S_OK && strcmp(norm, t->lines[k]) != 0)
        fprintf(stderr, "s2s translate: %s:%d: normalised: %s\n", t->in.name, t->line[k], norm);
    free(norm);
}

// Splits line k into sentences (one without --split) and tokenizes them
// (s2s_line_prepare); cuts each sentence to max_tokens as the bad-line
// rule says (one warning per line) and names its unknown words, or, when
// the line looks like the model's other language, says that instead, on
// one line. Returns an exit code; a line that cannot be read is marked
// skipped.
static int prepare(translator *t, int k) {
    s2s_line *l = &t->res[k];
    s2s_status st = s2s_line_prepare(t->m, t->lines[k], t->split, l);
    if (st == S2S_ERR_INVALID) {  // invalid UTF-8: the library says where
        s2s_line_free(l);
        t->skipped[k] = !s2s_lines_skip(&t->in, t->line[k], s2s_last_error());
        return S2S_EXIT_OK;
    }
    if (st != S2S_OK) return s2s_cli_fail(st);
    bool cut = false;
    for (int i = 0; i < l->n_sentences; i++) {
        s2s_tokens *tk = &l->sentences[i].src;
        if (tk->n > t->max_tokens) {
            tk->n = t->max_tokens;
            if (!cut) {
                fprintf(stderr, "s2s translate: %s:%d: cut to %d tokens (the model takes at most %d)\n",
                        t->in.name, t->line[k], t->max_tokens, t->max_tokens);
                t->in.warnings++;
            }
            cut = true;
        }
        if (!t->quiet && !l->language_warning) report_unknown(t, tk, t->line[k]);
    }
    if (!t->quiet && l->language_warning)
        fprintf(stderr,
                "s2s translate: %s:%d: %s (%d of its %d words are not in the model's source "
                "vocabulary)\n",
                t->in.name, t->line[k], l->language_warning, l->n_unknown, l->n_words);
    return S2S_EXIT_OK;
}

// Adds line `text` (number `line`) to the chunk. text must stay valid
// until the chunk is flushed.
static int add_line(translator *t, char *text, int line, bool bad) {
    int k = t->n++;
    t->lines[k] = text;
    t->line[k] = line;
    t->skipped[k] = bad;
    t->res[k] = (s2s_line){0};
    int rc = bad ? S2S_EXIT_OK : prepare(t, k);
    if (rc == S2S_EXIT_OK && t->verbose && !t->skipped[k]) report_normalised(t, k);
    return rc;
}

// A hypothesis of a line as printed: its text, or with --tokens its
// tokens separated by spaces. Caller frees; NULL when out of memory.
static char *printed(const translator *t, const s2s_translation *h) {
    if (!t->tokens) return strdup(h->text);
    size_t size = 0;
    char *s = NULL;
    FILE *f = open_memstream(&s, &size);
    if (!f) return NULL;
    for (int x = 0; x < h->n; x++) fprintf(f, "%s%s", x ? " " : "", h->tokens[x]);
    if (fclose(f) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

// One JSON object for input k: its hypotheses, best first; its sentences
// when it was split; its unknown words.
static int print_json(const translator *t, int k) {
    const s2s_line *l = &t->res[k];
    json_t *o = json_object(), *list = json_array(), *unk = json_array();
    json_object_set_new(o, "source", json_string(t->lines[k]));
    if (l->n_sentences > 1) {
        json_t *sents = json_array();
        for (int i = 0; i < l->n_sentences; i++) {
            const char *text = l->sentences[i].src.text;
            json_array_append_new(sents, json_string(text ? text : ""));
        }
        json_object_set_new(o, "sentences", sents);
    }
    for (int i = 0; i < l->n_sentences; i++) {
        const s2s_tokens *tk = &l->sentences[i].src;
        int which[64], n = s2s_unknown_words(tk, which, 64);
        for (int u = 0; u < n && u < 64; u++) {
            char *w = s2s_token_typed(tk, which[u]);
            json_array_append_new(unk, json_string(w ? w : ""));
            free(w);
        }
    }
    for (int j = 0; j < l->n_hyps; j++) {
        const s2s_translation *h = &l->out[j];
        json_t *hj = json_object(), *tokens = json_array();
        for (int x = 0; x < h->n; x++) json_array_append_new(tokens, json_string(h->tokens[x]));
        json_object_set_new(hj, "text", json_string(h->text));
        json_object_set_new(hj, "tokens", tokens);
        json_object_set_new(hj, "score", json_real(h->score));
        json_object_set_new(hj, "logprob", json_real(h->logprob));
        json_array_append_new(list, hj);
    }
    json_object_set_new(o, "hypotheses", list);
    json_object_set_new(o, "unknown", unk);
    json_object_set_new(o, "language_warning",
                        l->language_warning ? json_string(l->language_warning) : json_null());
    return s2s_cli_print_json(o, 7);
}

// Translates the chunk (every sentence of every line in one
// s2s_translate_lines call) and prints, per input line: the translation,
// its sentences' translations joined; or with --n-best N > 1 N lines
// "INDEX ||| TEXT ||| SCORE" (Moses n-best format; a split line's j-th is
// its sentences' j-th joined, with the sum of their scores); or with
// --json one object. A skipped line prints one empty line.
static int flush_chunk(translator *t) {
    int rc = S2S_EXIT_OK, nb = t->p.n_best;
    s2s_status st = s2s_translate_lines(t->st, &t->p, t->res, t->n);
    if (st != S2S_OK) rc = s2s_cli_fail(st);
    for (int k = 0; k < t->n && rc == S2S_EXIT_OK; k++) {
        const s2s_line *l = &t->res[k];
        int total = 0;  // tokens in the line
        for (int i = 0; i < l->n_sentences; i++) total += l->sentences[i].src.n;
        if (t->skipped[k]) {
            printf("\n");
        } else if (t->json) {
            rc = print_json(t, k);
        } else if (total == 0) {  // an empty line stays empty: no translation, no score
            if (nb == 1) printf("\n");
            else printf("%d |||  ||| 0\n", t->line[k] - 1);
        } else {
            if (l->n_hyps == 0) rc = S2S_EXIT_FAILURE;
            for (int j = 0; j < l->n_hyps && rc == S2S_EXIT_OK; j++) {
                char *text = printed(t, &l->out[j]);
                if (!text) {
                    rc = S2S_EXIT_FAILURE;
                } else if (nb == 1) {
                    printf("%s\n", text);
                } else {
                    printf("%d ||| %s ||| %.6f\n", t->line[k] - 1, text, l->out[j].score);
                }
                free(text);
            }
        }
    }
    for (int k = 0; k < t->n; k++) s2s_line_free(&t->res[k]);
    if (!s2s_cli_flush_stdout()) rc = S2S_EXIT_FAILURE;
    t->n = 0;
    return rc;
}

static const s2s_opt translate_opts[] = {
    {.name = "--tokens", .help = "print target tokens separated by spaces, not detokenized text"},
    {.name = "--json",
     .help = "one JSON object per line: source, hypotheses with tokens and scores"},
    {.name = "--verbose", .alias = "-v",
     .help = "show on stderr each input as normalised for the model, when that changed it"},
    {.name = "--quiet", .alias = "-q",
     .help = "do not report source words outside the model's vocabulary on stderr"},
    {.name = "--no-split",
     .help = "translate each line whole, not sentence by sentence"},
    {.name = "--flush", .help = "answer each stdin line as soon as it is read",
     .def = "on when stdin is a terminal, else off: chunks of 256 lines"},
    {0},
};

static const s2s_cmd_spec translate_spec = {
    "translate", "s2s translate -m MODEL [OPTIONS] [SENTENCE...]",
    "Translates each SENTENCE argument or, without any, each line of stdin, sentence by\n"
    "sentence (one output line per input line; --n-best N prints N lines\n"
    "'INDEX ||| TEXT ||| SCORE'). Source words outside the model's vocabulary are named\n"
    "on stderr; each <unk> the model writes is printed as the source word it attends to.",
    translate_opts, /*decode=*/true};

int s2s_cmd_translate(int argc, char **argv) {
    s2s_decode_opts o = s2s_cli_decode_opts();
    translator t = {.split = true};
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
        else if (s2s_arg_is(x, "--quiet")) t.quiet = true;
        else if (s2s_arg_is(x, "--no-split")) t.split = false;
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
    for (int k = 0; k < t.n; k++) s2s_line_free(&t.res[k]);
    rc = s2s_lines_exit(&t.in, rc);
    s2s_lines_close(&t.in);
    s2s_state_free(t.st);
    s2s_model_free(t.m);
    s2s_args_free(&a);
    return rc;
}
