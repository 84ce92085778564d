// s2s translate -m MODEL [--tokens] [--verbose] [--quiet] [--no-split] [--json] [--flush]
//               [options] [SENTENCE ...]
//
// Sentences come from the arguments or, without any, one per line from
// stdin. Input is read and translated in chunks and each chunk is flushed,
// so a long file streams through in bounded memory; on a terminal, or with
// --flush, each line is answered as soon as it is read. Bad lines follow the
// bad-line rule (cli.h): skipped or cut, with a warning, output aligned.
// Each line is split into sentences (s2s_split_sentences), all of a chunk's
// sentences decoded in one call, and a line's translations joined back onto
// its one output line.
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
    const char *joiner;  // between the translations of a line's sentences
    s2s_lines in;    // where the lines come from, and its warnings
    int max_tokens;  // a longer sentence is cut to this many
    // one chunk of lines, each split into sentences ("pieces")
    char *lines[CHUNK];
    int line[CHUNK];       // numbers in the input, from 1
    bool skipped[CHUNK];   // bad lines: an empty output line each
    int first[CHUNK], count[CHUNK];  // the line's pieces: toks[first .. first + count)
    int n;
    s2s_tokens *toks;      // (cap_pieces) the pieces of the chunk, tokenized
    int n_pieces, cap_pieces;
} translator;

// Unknown source words, one line each on stderr (the library lists them,
// as typed; --quiet silences this).
static void report_unknown(const translator *t, const s2s_tokens *tk, int line) {
    int which[64];
    int n = s2s_unknown_words(tk, which, 64);
    for (int u = 0; u < n && u < 64; u++) {
        char *w = s2s_token_text(tk, which[u]);
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

// The next free piece of the chunk, or NULL when out of memory.
static s2s_tokens *new_piece(translator *t) {
    if (t->n_pieces == t->cap_pieces) {
        int cap = t->cap_pieces ? 2 * t->cap_pieces : 2 * CHUNK;
        s2s_tokens *g = realloc(t->toks, (size_t)cap * sizeof *g);
        if (!g) return NULL;
        memset(g + t->cap_pieces, 0, (size_t)(cap - t->cap_pieces) * sizeof *g);
        t->toks = g;
        t->cap_pieces = cap;
    }
    s2s_tokens *tk = &t->toks[t->n_pieces++];
    tk->n = 0;
    return tk;
}

// Splits line k into sentences (one piece without --split) and tokenizes
// each, cut as the bad-line rule says. Returns an exit code; a line that
// cannot be read is marked skipped.
static int add_pieces(translator *t, int k) {
    s2s_span *sp = NULL, whole = {0, strlen(t->lines[k])};
    int n = 1, rc = S2S_EXIT_OK;
    s2s_status st = t->split ? s2s_split_sentences(t->lines[k], &sp, &n) : S2S_OK;
    if (st == S2S_ERR_NOMEM) return s2s_cli_fail(st);
    if (st != S2S_OK) {  // invalid UTF-8
        t->skipped[k] = !s2s_lines_skip(&t->in, t->line[k], s2s_last_error());
        return S2S_EXIT_OK;
    }
    bool cut = false;
    for (int i = 0; i < n && rc == S2S_EXIT_OK; i++) {
        s2s_span s = sp ? sp[i] : whole;
        char *text = strndup(t->lines[k] + s.start, s.end - s.start);
        s2s_tokens *tk = text ? new_piece(t) : NULL;
        if (!tk) rc = S2S_EXIT_FAILURE;
        if (rc == S2S_EXIT_OK) {
            t->count[k]++;
            rc = s2s_lines_tokenize(&t->in, t->line[k], s2s_model_src_vocab(t->m), text,
                                    t->max_tokens, tk, &cut);
        }
        free(text);
        if (rc == S2S_EXIT_WARNINGS) {  // invalid UTF-8: the line is skipped whole
            t->skipped[k] = true;
            rc = S2S_EXIT_OK;
            break;
        }
        if (rc == S2S_EXIT_OK && !t->quiet) report_unknown(t, tk, t->line[k]);
    }
    free(sp);
    return rc;
}

// Adds line `text` (number `line`) to the chunk. text must stay valid
// until the chunk is flushed.
static int add_line(translator *t, char *text, int line, bool bad) {
    int k = t->n++;
    t->lines[k] = text;
    t->line[k] = line;
    t->skipped[k] = bad;
    t->first[k] = t->n_pieces;
    t->count[k] = 0;
    int rc = bad ? S2S_EXIT_OK : add_pieces(t, k);
    if (rc == S2S_EXIT_OK && t->verbose && !t->skipped[k]) report_normalised(t, k);
    return rc;
}

// A hypothesis of piece tk as text or tokens, <unk> replaced when the
// decode says which source word (unk_src).
static char *render(const translator *t, const s2s_hypothesis *h, const s2s_tokens *tk) {
    const s2s_vocab *tv = s2s_model_tgt_vocab(t->m);
    return t->tokens ? s2s_join_tokens_replacing(tv, h->ids, h->n, h->unk_src, tk)
                     : s2s_detokenize_replacing(tv, h->ids, h->n, h->unk_src, tk);
}

// The j-th hypothesis of line k: each piece's j-th, joined; NULL when a
// piece has fewer than j + 1. score and logprob are the pieces' sums.
// hyps[slot * n_best] are a piece's hypotheses (slot -1: an empty piece).
typedef struct joined {
    char *text;
    json_t *tokens;  // with --json
    double score, logprob;
} joined;

static bool join_hypothesis(const translator *t, int k, int j, const s2s_hypothesis *hyps,
                            const int *slot, joined *out) {
    const s2s_vocab *tv = s2s_model_tgt_vocab(t->m);
    *out = (joined){0};
    size_t size = 0;
    FILE *text = open_memstream(&out->text, &size);
    if (!text) return false;
    if (t->json) out->tokens = json_array();
    bool ok = true, any = false;
    for (int i = t->first[k]; i < t->first[k] + t->count[k] && ok; i++) {
        if (slot[i] < 0) continue;
        const s2s_hypothesis *h = &hyps[(size_t)slot[i] * (size_t)t->p.n_best + (size_t)j];
        const s2s_tokens *tk = &t->toks[i];
        if (!h->ids) {
            ok = false;
            break;
        }
        char *r = render(t, h, tk);
        if (!r) {
            ok = false;
            break;
        }
        if (any && *r) fputs(t->tokens ? " " : t->joiner, text);
        fputs(r, text);
        any = any || *r;
        free(r);
        out->score += h->score;
        out->logprob += h->logprob;
        for (int x = 0; x < h->n && out->tokens; x++) {
            char *w = h->unk_src && h->unk_src[x] >= 0 ? s2s_token_text(tk, h->unk_src[x]) : NULL;
            json_array_append_new(out->tokens, json_string(w ? w : s2s_vocab_token(tv, h->ids[x])));
            free(w);
        }
    }
    if (fclose(text) != 0) ok = false;
    if (!ok || !out->text) {
        free(out->text);
        json_decref(out->tokens);
        *out = (joined){0};
        return false;
    }
    return true;
}

// One JSON object for input k: its hypotheses, best first; its sentences
// when it was split; its unknown words.
static int print_json(const translator *t, int k, const s2s_hypothesis *hyps, const int *slot,
                      int total) {
    json_t *o = json_object(), *list = json_array(), *unk = json_array();
    json_object_set_new(o, "source", json_string(t->lines[k]));
    if (t->count[k] > 1) {
        json_t *sents = json_array();
        for (int i = t->first[k]; i < t->first[k] + t->count[k]; i++)
            json_array_append_new(sents, json_string(t->toks[i].text ? t->toks[i].text : ""));
        json_object_set_new(o, "sentences", sents);
    }
    for (int i = t->first[k]; i < t->first[k] + t->count[k]; i++) {
        int which[64], n = s2s_unknown_words(&t->toks[i], which, 64);
        for (int u = 0; u < n && u < 64; u++) {
            char *w = s2s_token_text(&t->toks[i], which[u]);
            json_array_append_new(unk, json_string(w ? w : ""));
            free(w);
        }
    }
    for (int j = 0; j < t->p.n_best && total > 0; j++) {
        joined h;
        if (!join_hypothesis(t, k, j, hyps, slot, &h)) continue;
        json_t *hj = json_object();
        json_object_set_new(hj, "text", json_string(h.text));
        json_object_set_new(hj, "tokens", h.tokens);
        json_object_set_new(hj, "score", json_real(h.score));
        json_object_set_new(hj, "logprob", json_real(h.logprob));
        json_array_append_new(list, hj);
        free(h.text);
    }
    json_object_set_new(o, "hypotheses", list);
    json_object_set_new(o, "unknown", unk);
    return s2s_cli_print_json(o, 7);
}

// Translates the chunk's pieces (every sentence of every line in one
// call) and prints, per input line: the translation, its sentences'
// translations joined; or with --n-best N > 1 N lines "INDEX ||| TEXT |||
// SCORE" (Moses n-best format; a split line's j-th is its sentences' j-th
// joined, with the sum of their scores); or with --json one object. A
// skipped line prints one empty line.
static int flush_chunk(translator *t) {
    const int **src = calloc((size_t)t->n_pieces + 1, sizeof *src);
    int *len = calloc((size_t)t->n_pieces + 1, sizeof *len);
    int *slot = calloc((size_t)t->n_pieces + 1, sizeof *slot);
    int m = 0, nb = t->p.n_best;
    if (!src || !len || !slot) {
        free(src), free(len), free(slot);
        return S2S_EXIT_FAILURE;
    }
    for (int k = 0; k < t->n; k++)
        for (int i = t->first[k]; i < t->first[k] + t->count[k]; i++) {
            slot[i] = -1;
            if (t->skipped[k] || t->toks[i].n == 0) continue;  // nothing to decode
            slot[i] = m;
            src[m] = t->toks[i].ids;
            len[m++] = t->toks[i].n;
        }
    size_t n_hyps = (size_t)m * (size_t)nb;  // nb <= S2S_MAX_BEAM, checked by the schema
    s2s_hypothesis *hyps = calloc(n_hyps + 1, sizeof *hyps);
    int rc = S2S_EXIT_OK;
    if (!hyps) {
        fprintf(stderr, "s2s translate: out of memory for %zu hypotheses\n", n_hyps);
        rc = S2S_EXIT_FAILURE;
    } else {
        s2s_status st = s2s_translate(t->st, &t->p, src, len, m, hyps);
        if (st != S2S_OK) rc = s2s_cli_fail(st);
    }
    for (int k = 0; k < t->n && rc == S2S_EXIT_OK; k++) {
        int total = 0;  // tokens in the line
        for (int i = t->first[k]; i < t->first[k] + t->count[k]; i++) total += t->toks[i].n;
        if (t->skipped[k]) {
            printf("\n");
        } else if (t->json) {
            rc = print_json(t, k, hyps, slot, total);
        } else if (total == 0) {  // an empty line stays empty: no translation, no score
            if (nb == 1) printf("\n");
            else printf("%d |||  ||| 0\n", t->line[k] - 1);
        } else {
            for (int j = 0; j < nb; j++) {
                joined h;
                if (!join_hypothesis(t, k, j, hyps, slot, &h)) {
                    if (j == 0) rc = S2S_EXIT_FAILURE;
                    continue;  // fewer hypotheses than asked for
                }
                if (nb == 1)
                    printf("%s\n", h.text);
                else
                    printf("%d ||| %s ||| %.6f\n", t->line[k] - 1, h.text, h.score);
                free(h.text);
            }
        }
    }
    for (size_t k = 0; hyps && k < n_hyps; k++) s2s_hypothesis_free(&hyps[k]);
    free(hyps), free(src), free(len), free(slot);
    if (!s2s_cli_flush_stdout()) rc = S2S_EXIT_FAILURE;
    t->n = 0;
    t->n_pieces = 0;
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
    // Chinese sentences join without a space, others with one.
    t.joiner = s2s_vocab_lang(s2s_model_tgt_vocab(t.m)) == S2S_LANG_ZH ? "" : " ";
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
    for (int k = 0; k < t.cap_pieces; k++) s2s_tokens_free(&t.toks[k]);
    free(t.toks);
    s2s_state_free(t.st);
    s2s_model_free(t.m);
    s2s_args_free(&a);
    return rc;
}
