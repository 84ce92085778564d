// Text in, text out (s2s/decode.h, "text in, text out"): lines split into
// sentences, every sentence of every line decoded in one s2s_translate
// call, each <unk> copied back, the sentences' translations joined. The
// one path of `s2s translate`, `s2s serve` and a program on the library.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "decoding/state.h"
#include "s2s/decode.h"
#include "s2s/normalize.h"
#include "tokenizer/utf8.h"

// ---- the line's language ----

// A word: a token with a letter, digit or CJK character (punctuation and
// symbols are not evidence of a language).
static bool is_word(const char *piece) {
    size_t n = strlen(piece);
    for (size_t i = 0; i < n;) {
        uint32_t c;
        int k = s2s_utf8_decode(piece + i, n - i, &c);
        if (k == 0) return false;
        i += (size_t)k;
        if (c < 0x80 ? (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
                     : s2s_is_cjk(c) || (!s2s_is_punct(c) && !s2s_is_cjk_punct(c) &&
                                             !s2s_is_space(c)))
            return true;
    }
    return false;
}

static const char *lang_title(s2s_lang l) {
    return l == S2S_LANG_EN ? "English" : l == S2S_LANG_ZH ? "Chinese" : NULL;
}

// Counts the line's words and unknown words and sets looks_like and
// language_warning by the rule of s2s/decode.h: at least half of the words
// unknown to the source vocab, and at least half of those whole in the
// target vocab (each retokenized there, with no <unk>).
static s2s_status check_language(const s2s_model *m, s2s_line *l) {
    const s2s_vocab *sv = s2s_model_src_vocab(m), *tv = s2s_model_tgt_vocab(m);
    s2s_lang from = s2s_vocab_lang(sv), to = s2s_vocab_lang(tv);
    int known_there = 0;
    s2s_tokens t = {0};
    s2s_status st = S2S_OK;
    for (int i = 0; i < l->n_sentences && st == S2S_OK; i++) {
        const s2s_tokens *src = &l->sentences[i].src;
        for (int j = 0; j < src->n && st == S2S_OK; j++) {
            if (!is_word(src->pieces[j])) continue;
            l->n_words++;
            if (src->ids[j] != S2S_UNK) continue;
            l->n_unknown++;
            if (!lang_title(from) || !lang_title(to) || from == to) continue;
            char *w = s2s_token_text(src, j);
            if (!w) {
                st = s2s_fail(S2S_ERR_NOMEM, "out of memory for a word");
                break;
            }
            st = s2s_tokenize(tv, w, &t);
            free(w);
            if (st != S2S_OK) break;
            bool whole = t.n > 0;
            for (int x = 0; x < t.n; x++) whole = whole && t.ids[x] != S2S_UNK;
            known_there += whole;
        }
    }
    s2s_tokens_free(&t);
    if (st != S2S_OK) return st;
    if (l->n_words == 0 || 2 * l->n_unknown < l->n_words || 2 * known_there < l->n_unknown ||
        known_there == 0)
        return S2S_OK;
    char buf[128];
    snprintf(buf, sizeof buf, "this looks like %s; the model translates %s \xE2\x86\x92 %s",
             lang_title(to), lang_title(from), lang_title(to));
    char *msg = strdup(buf);
    if (!msg) return s2s_fail(S2S_ERR_NOMEM, "out of memory for a warning");
    l->looks_like = to;
    l->language_warning = msg;
    return S2S_OK;
}

// ---- preparing a line ----

s2s_status s2s_line_prepare(const s2s_model *m, const char *text, bool split, s2s_line *out) {
    if (!out) return s2s_fail(S2S_ERR_INVALID, "s2s_line_prepare: NULL line");
    *out = (s2s_line){0};
    if (!m || !text) return s2s_fail(S2S_ERR_INVALID, "s2s_line_prepare: NULL model or text");
    s2s_span *sp = NULL, whole = {0, strlen(text)};
    int n = 1;
    s2s_status st = split ? s2s_split_sentences(text, &sp, &n) : S2S_OK;
    if (st != S2S_OK) return st;
    out->sentences = calloc((size_t)n, sizeof *out->sentences);
    if (!out->sentences) st = s2s_fail(S2S_ERR_NOMEM, "out of memory for %d sentences", n);
    else out->n_sentences = n;
    for (int i = 0; i < out->n_sentences && st == S2S_OK; i++) {
        s2s_line_sentence *s = &out->sentences[i];
        s->span = sp ? sp[i] : whole;
        char *piece = strndup(text + s->span.start, s->span.end - s->span.start);
        st = piece ? s2s_tokenize(s2s_model_src_vocab(m), piece, &s->src)
                   : s2s_fail(S2S_ERR_NOMEM, "out of memory for a sentence");
        free(piece);
    }
    free(sp);
    return st == S2S_OK ? check_language(m, out) : st;
}

// ---- results ----

static void translation_free(s2s_translation *t, bool owns_tokens) {
    for (int k = 0; owns_tokens && t->tokens && k < t->n; k++) free(t->tokens[k]);
    free(t->tokens);
    free(t->text);
    *t = (s2s_translation){0};
}

// Drops the hypotheses of l and its sentences, keeping the sentences.
static void clear_results(s2s_line *l) {
    for (int i = 0; i < l->n_sentences; i++) {
        s2s_line_sentence *s = &l->sentences[i];
        for (int j = 0; j < s->n_hyps; j++) {
            s2s_hypothesis_free(&s->hyps[j]);
            translation_free(&s->out[j], /*owns_tokens=*/true);
        }
        free(s->hyps);
        free(s->out);
        s->hyps = NULL;
        s->out = NULL;
        s->n_hyps = 0;
    }
    for (int j = 0; j < l->n_hyps; j++) translation_free(&l->out[j], /*owns_tokens=*/false);
    free(l->out);
    l->out = NULL;
    l->n_hyps = 0;
}

void s2s_line_free(s2s_line *l) {
    if (!l) return;
    clear_results(l);
    for (int i = 0; i < l->n_sentences; i++) s2s_tokens_free(&l->sentences[i].src);
    free(l->sentences);
    free(l->language_warning);
    *l = (s2s_line){0};
}

// h as text and tokens, each copied <unk> as the source word of src it
// copies. false when out of memory.
static bool render(const s2s_vocab *tv, const s2s_hypothesis *h, const s2s_tokens *src,
                   s2s_translation *out) {
    out->text = s2s_detokenize_replacing(tv, h->ids, h->n, h->unk_src, src);
    out->tokens = calloc((size_t)h->n + 1, sizeof *out->tokens);
    if (!out->text || !out->tokens) return false;
    out->score = h->score;
    out->logprob = h->logprob;
    for (; out->n < h->n; out->n++) {
        int x = out->n, u = h->unk_src ? h->unk_src[x] : -1;
        char *w = u >= 0 ? s2s_token_text(src, u) : NULL;
        const char *tok = s2s_vocab_token(tv, h->ids[x]);
        if (!w) w = strdup(tok ? tok : s2s_special_token(S2S_UNK));
        if (!w) return false;
        out->tokens[x] = w;
    }
    return true;
}

// The j-th hypothesis of line l: its sentences' j-th joined (joiner
// between two non-empty texts), scores summed. false when out of memory.
static bool join(s2s_line *l, int j, const char *joiner, s2s_translation *out) {
    size_t size = 0;
    int n = 0;
    for (int i = 0; i < l->n_sentences; i++)
        if (l->sentences[i].n_hyps > 0) {
            size += strlen(l->sentences[i].out[j].text) + strlen(joiner);
            n += l->sentences[i].out[j].n;
        }
    out->text = malloc(size + 1);
    out->tokens = calloc((size_t)n + 1, sizeof *out->tokens);
    if (!out->text || !out->tokens) return false;
    char *p = out->text;
    *p = '\0';
    for (int i = 0; i < l->n_sentences; i++) {
        if (l->sentences[i].n_hyps == 0) continue;
        const s2s_translation *t = &l->sentences[i].out[j];
        if (p > out->text && *t->text) p = stpcpy(p, joiner);
        p = stpcpy(p, t->text);
        memcpy(out->tokens + out->n, t->tokens, (size_t)t->n * sizeof *t->tokens);
        out->n += t->n;
        out->score += t->score;
        out->logprob += t->logprob;
    }
    return true;
}

// ---- translating lines ----

// Renders the sentences' hypotheses and joins them into each line's.
static s2s_status finish(const s2s_model *m, s2s_line *lines, int n, int nb) {
    const s2s_vocab *tv = s2s_model_tgt_vocab(m);
    const char *joiner = s2s_vocab_lang(tv) == S2S_LANG_ZH ? "" : " ";
    for (int k = 0; k < n; k++) {
        s2s_line *l = &lines[k];
        int fewest = nb, decoded = 0;
        for (int i = 0; i < l->n_sentences; i++) {
            s2s_line_sentence *s = &l->sentences[i];
            if (!s->hyps) continue;
            int have = 0;
            while (have < nb && s->hyps[have].ids) have++;  // fewer than asked for: the rest empty
            for (int j = have; j < nb; j++) s2s_hypothesis_free(&s->hyps[j]);
            s->n_hyps = have;
            for (int j = 0; j < have; j++)
                if (!render(tv, &s->hyps[j], &s->src, &s->out[j]))
                    return s2s_fail(S2S_ERR_NOMEM, "out of memory for a translation");
            fewest = have < fewest ? have : fewest;
            decoded++;
        }
        if (!decoded) continue;  // no tokens: no translation, no hypotheses
        if (!(l->out = calloc((size_t)fewest + 1, sizeof *l->out)))
            return s2s_fail(S2S_ERR_NOMEM, "out of memory for a translation");
        for (; l->n_hyps < fewest; l->n_hyps++)
            if (!join(l, l->n_hyps, joiner, &l->out[l->n_hyps])) {
                l->n_hyps++;  // freed with the rest
                return s2s_fail(S2S_ERR_NOMEM, "out of memory for a translation");
            }
    }
    return S2S_OK;
}

s2s_status s2s_translate_lines(s2s_state *st, const s2s_decode_params *p, s2s_line *lines,
                               int n) {
    if (!st || !p || (n > 0 && !lines) || n < 0)
        return s2s_fail(S2S_ERR_INVALID, "s2s_translate_lines: NULL argument or n < 0");
    int total = 0, nb = p->decode.n_best;
    for (int k = 0; k < n; k++) {
        clear_results(&lines[k]);
        for (int i = 0; i < lines[k].n_sentences; i++) total += lines[k].sentences[i].src.n > 0;
    }
    if (nb < 1) return s2s_fail(S2S_ERR_INVALID, "n_best %d: must be >= 1", nb);
    const int **src = calloc((size_t)total + 1, sizeof *src);
    int *len = calloc((size_t)total + 1, sizeof *len);
    s2s_hypothesis *hyps = calloc((size_t)total * (size_t)nb + 1, sizeof *hyps);
    s2s_status status = S2S_OK;
    if (!src || !len || !hyps) status = s2s_fail(S2S_ERR_NOMEM, "out of memory for %d sentences", total);
    int m = 0;
    for (int k = 0; k < n && status == S2S_OK; k++)
        for (int i = 0; i < lines[k].n_sentences; i++) {
            const s2s_tokens *t = &lines[k].sentences[i].src;
            if (t->n == 0) continue;  // nothing to decode
            src[m] = t->ids;
            len[m++] = t->n;
        }
    if (status == S2S_OK) status = s2s_translate(st, p, src, len, m, hyps);
    // Each decoded sentence takes its n_best hypotheses.
    m = 0;
    for (int k = 0; k < n && status == S2S_OK; k++)
        for (int i = 0; i < lines[k].n_sentences && status == S2S_OK; i++) {
            s2s_line_sentence *s = &lines[k].sentences[i];
            if (s->src.n == 0) continue;
            s->hyps = calloc((size_t)nb, sizeof *s->hyps);
            s->out = calloc((size_t)nb, sizeof *s->out);
            if (!s->hyps || !s->out) {
                status = s2s_fail(S2S_ERR_NOMEM, "out of memory for %d hypotheses", nb);
                break;
            }
            memcpy(s->hyps, hyps + (size_t)m * nb, (size_t)nb * sizeof *hyps);
            memset(hyps + (size_t)m * nb, 0, (size_t)nb * sizeof *hyps);
            s->n_hyps = nb;
            m++;
        }
    if (status == S2S_OK) status = finish(st->m, lines, n, nb);
    for (size_t x = 0; hyps && x < (size_t)total * (size_t)nb; x++) s2s_hypothesis_free(&hyps[x]);
    if (status != S2S_OK)
        for (int k = 0; k < n; k++) clear_results(&lines[k]);
    free(src);
    free(len);
    free(hyps);
    return status;
}
