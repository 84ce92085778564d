// Tokenizing UTF-8 text into vocab ids, and joining ids back into text.
//
// Pieces live in one block: all piece strings back to back, each
// NUL-terminated, so t->pieces[0] is the start of the block whenever
// t->cap > 0 (it may then hold no piece when t->n == 0). One tokenize call
// therefore makes a handful of reallocations however long the line, and
// s2s_tokens_free releases the block through pieces[0].
#include <stdint.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/strbuf.h"
#include "s2s/normalize.h"
#include "s2s/tokenizer.h"
#include "tokenizer/traced.h"
#include "tokenizer/utf8.h"
#include "tokenizer/tsv.h"

static void put_cp(s2s_buf *b, uint32_t cp) {
    char tmp[4];
    s2s_buf_append(b, tmp, (size_t)s2s_utf8_encode(tmp, cp));
}

// Length of the (valid) UTF-8 sequence starting with byte c.
static size_t seq_len(unsigned char c) {
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

// ---- tokenizing ----

typedef struct {
    const s2s_vocab *v;
    s2s_tokens *t;
    s2s_buf store;     // piece bytes, NUL-separated
    const char *base;  // the normalised text, which spans count in
} tok_state;

// Ends the piece that starts at store offset `start` (its bytes already
// appended), cut from base[from..to): looks it up and records its id and
// span. The store's out-of-memory flag is checked here, for every append
// since the last piece.
static s2s_status end_piece(tok_state *s, size_t start, size_t from, size_t to) {
    s2s_tokens *t = s->t;
    if (s->store.oom) return s2s_fail(S2S_ERR_NOMEM, "tokenize: out of memory");
    int id = s2s_vocab_find(s->v, s->store.s + start, s->store.len - start);
    s2s_buf_append(&s->store, "", 1);  // checked by the next piece and at the end
    if (t->n == t->cap) {
        if (t->cap > (1 << 29)) return s2s_fail(S2S_ERR_NOMEM, "tokenize: too many tokens");
        int cap = t->cap ? 2 * t->cap : 64;
        int *ids = realloc(t->ids, (size_t)cap * sizeof *ids);
        if (!ids) return s2s_fail(S2S_ERR_NOMEM, "tokenize: out of memory");
        t->ids = ids;
        char **pieces = realloc(t->pieces, (size_t)cap * sizeof *pieces);
        if (!pieces) return s2s_fail(S2S_ERR_NOMEM, "tokenize: out of memory");
        if (t->cap == 0) pieces[0] = NULL;  // the store is attached at the end
        t->pieces = pieces;
        int **spans[] = {&t->start, &t->end, &t->typed_start, &t->typed_end};
        for (size_t k = 0; k < sizeof spans / sizeof *spans; k++) {
            int *p = realloc(*spans[k], (size_t)cap * sizeof *p);
            if (!p) return s2s_fail(S2S_ERR_NOMEM, "tokenize: out of memory");
            *spans[k] = p;
        }
        t->cap = cap;
    }
    t->start[t->n] = (int)from;
    t->end[t->n] = (int)to;
    t->ids[t->n++] = id < 0 ? S2S_UNK : id;
    return S2S_OK;
}

// A piece cut from the normalised text as it stands: p[0..n).
static s2s_status add_piece(tok_state *s, const char *p, size_t n) {
    size_t start = s->store.len, from = (size_t)(p - s->base);
    s2s_buf_append(&s->store, p, n);
    return end_piece(s, start, from, from + n);
}

static bool is_word_char(uint32_t c) {
    return !s2s_is_space(c) && !s2s_is_cjk(c) && !s2s_is_punct(c);
}

static bool is_letter(uint32_t c) {
    uint32_t f = s2s_fold_width(c);
    return is_word_char(c) && !(f >= '0' && f <= '9');
}

// The end of the longest vocab entry at r[p..n), or of the single
// character there when none matches (*known then false). Only a token made
// of CJK characters can match inside a CJK run.
static size_t longest_match(const tok_state *s, const char *r, size_t p, size_t n, bool *known) {
    size_t len = s2s_vocab_cjk_prefix(s->v, r + p, n - p);
    *known = len > 0;
    return p + (len ? len : seq_len((unsigned char)r[p]));
}

// Greedy longest match over a run of CJK characters r[0..n): at each
// position the longest vocab entry wins. Characters where no entry starts
// form one unknown word together (巧克力 is one <unk>, not three), so the
// model sees one token for it and replace_unknowns copies it back whole.
// A vocab of the specials alone, which `vocab build` counts characters
// with, keeps one piece per character.
static s2s_status segment_cjk(tok_state *s, const char *r, size_t n) {
    bool merge = s2s_vocab_size(s->v) > S2S_NUM_SPECIALS;
    size_t p = 0;
    while (p < n) {
        bool known;
        size_t end = longest_match(s, r, p, n, &known);
        while (merge && !known && end < n) {  // extend the unknown word over unknown characters
            bool next_known;
            size_t next = longest_match(s, r, end, n, &next_known);
            if (next_known) break;
            end = next;
        }
        S2S_TRY(add_piece(s, r + p, end - p));
        p = end;
    }
    return S2S_OK;
}

// One word starting at text[i]: letters, digits and other non-CJK,
// non-punctuation characters, lower-cased, with apostrophes kept between
// letters. Returns the offset after the word in *next.
static s2s_status scan_word(tok_state *s, const char *text, size_t len, size_t i,
                            size_t *next) {
    size_t start = s->store.len, from = i;
    bool prev_letter = false;
    while (i < len) {
        uint32_t c;
        int k = s2s_utf8_decode(text + i, len - i, &c);
        if (is_word_char(c)) {
            c = s2s_to_lower(s2s_fold_width(c));
            put_cp(&s->store, c);
            prev_letter = !(c >= '0' && c <= '9');
            i += (size_t)k;
            continue;
        }
        // didn't, it's, o'clock: the apostrophe (straight or curly) stays
        // in the word, normalised so both spellings find the same token.
        if ((c == '\'' || c == 0x2019) && prev_letter && i + (size_t)k < len) {
            uint32_t d;
            s2s_utf8_decode(text + i + k, len - i - (size_t)k, &d);
            if (is_letter(d)) {
                s2s_buf_putc(&s->store, '\'');
                prev_letter = false;
                i += (size_t)k;
                continue;
            }
        }
        break;
    }
    *next = i;
    return end_piece(s, start, from, i);
}

static s2s_status tokenize_into(tok_state *s, const char *text, size_t len) {
    size_t i = 0;
    while (i < len) {
        uint32_t c;
        int k = s2s_utf8_decode(text + i, len - i, &c);
        if (s2s_is_space(c)) {
            i += (size_t)k;
        } else if (s2s_is_cjk(c)) {
            size_t end = i + (size_t)k;
            while (end < len) {
                uint32_t d;
                int kd = s2s_utf8_decode(text + end, len - end, &d);
                if (!s2s_is_cjk(d)) break;
                end += (size_t)kd;
            }
            S2S_TRY(segment_cjk(s, text + i, end - i));
            i = end;
        } else if (s2s_is_punct(c)) {
            S2S_TRY(add_piece(s, text + i, (size_t)k));
            i += (size_t)k;
        } else {
            S2S_TRY(scan_word(s, text, len, i, &i));
        }
    }
    return S2S_OK;
}

// Each token's span of the typed text: the union of its bytes' origins
// (normalised: the origin of normalising, NULL when untraced; otherwise the
// same bytes). A token that normalising wrote from nothing gets an empty
// span.
static void trace_tokens(s2s_tokens *t, const s2s_span *origin, bool normalised) {
    for (int j = 0; j < t->n; j++) {
        size_t lo = (size_t)t->start[j], hi = (size_t)t->end[j];
        if (normalised) {
            size_t a = SIZE_MAX, b = 0;
            for (size_t k = lo; origin && k < hi; k++) {
                if (origin[k].start == origin[k].end) continue;
                a = origin[k].start < a ? origin[k].start : a;
                b = origin[k].end > b ? origin[k].end : b;
            }
            lo = a < b ? a : 0;
            hi = a < b ? b : 0;
        }
        t->typed_start[j] = (int)lo;
        t->typed_end[j] = (int)hi;
    }
}

s2s_status s2s_tokenize(const s2s_vocab *v, const char *text, s2s_tokens *t) {
    if (!v || !text || !t) return s2s_fail(S2S_ERR_INVALID, "s2s_tokenize: NULL argument");
    t->n = 0;
    size_t len = strlen(text);
    S2S_TRY(s2s_utf8_validate(text, len));
    // Typed spellings become the corpus's (a no-op on corpus text, so
    // training and translating see the same tokens).
    char *norm = NULL, *typed = strdup(text);
    s2s_span *origin = NULL;
    s2s_lang lang = s2s_vocab_lang(v);
    if (!typed) return s2s_fail(S2S_ERR_NOMEM, "tokenize: out of memory");
    free(t->typed);
    t->typed = typed;
    if (lang != S2S_LANG_NONE) {
        S2S_TRY(s2s_normalize_traced(lang, text, &norm, &origin));
        text = norm;
        len = strlen(text);
    }

    // Pieces never outgrow the input (lower-casing keeps or shortens the
    // bytes) except for their NULs, so len + len/4 rarely needs to grow.
    // The old block's capacity is unknown, so it is resized every call.
    tok_state s = {.v = v, .t = t, .base = text};
    s.store.s = t->cap > 0 ? t->pieces[0] : NULL;
    s2s_status st = S2S_OK;
    if (!s2s_buf_reserve(&s.store, len + len / 4 + 16))
        st = s2s_fail(S2S_ERR_NOMEM, "tokenize: out of memory");
    if (st == S2S_OK) st = tokenize_into(&s, text, len);
    if (st == S2S_OK && s.store.oom) st = s2s_fail(S2S_ERR_NOMEM, "tokenize: out of memory");
    if (st == S2S_OK) trace_tokens(t, origin, lang != S2S_LANG_NONE);
    free(origin);
    // the spans point into the normalised text, which t keeps
    free(t->text);
    t->text = norm ? norm : strdup(text);
    if (st == S2S_OK && !t->text) st = s2s_fail(S2S_ERR_NOMEM, "tokenize: out of memory");

    // Attach the store to pieces[0] (or drop it when there is no array),
    // then point each piece into it.
    if (t->cap > 0) {
        t->pieces[0] = s.store.s;
    } else {
        s2s_buf_free(&s.store);
    }
    if (st != S2S_OK) {
        t->n = 0;
        return st;
    }
    char *p = s.store.s;
    for (int j = 0; j < t->n; j++) {
        t->pieces[j] = p;
        p += strlen(p) + 1;
    }
    return S2S_OK;
}

void s2s_tokens_free(s2s_tokens *t) {
    if (!t) return;
    if (t->cap > 0 && t->pieces) free(t->pieces[0]);
    free(t->pieces);
    free(t->ids);
    free(t->start);
    free(t->end);
    free(t->typed_start);
    free(t->typed_end);
    free(t->text);
    free(t->typed);
    memset(t, 0, sizeof *t);
}

// ---- detokenizing ----

static uint32_t first_cp(const char *s) {
    uint32_t c = 0;
    size_t n = strlen(s);
    if (n) s2s_utf8_decode(s, n, &c);
    return c;
}

static uint32_t last_cp(const char *s) {
    size_t n = strlen(s);
    if (n == 0) return 0;
    size_t i = n - 1;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
    uint32_t c = 0;
    s2s_utf8_decode(s + i, n - i, &c);
    return c;
}

// No space before these. The ASCII double quote is decided by parity.
static bool is_closing(uint32_t c) {
    return c == '.' || c == ',' || c == '!' || c == '?' || c == ';' || c == ':' ||
           c == ')' || c == ']' || c == '}' || c == '\'' || c == '"' || c == '%' ||
           c == 0x2019 || c == 0x201D || c == 0xBB || c == 0x2026 || s2s_is_cjk_punct(c);
}

// No space after these.
static bool is_opening(uint32_t c) {
    return c == '(' || c == '[' || c == '{' || c == 0x2018 || c == 0x201C || c == 0xAB ||
           c == 0xBF || c == 0xA1;
}

static bool ends_sentence(uint32_t c) {
    return c == '.' || c == '!' || c == '?' || c == ';' || c == 0x3002 || c == 0xFF01 ||
           c == 0xFF1F || c == 0xFF1B;
}

// The text printed for an id, or NULL for ids that print nothing.
static const char *printed(const s2s_vocab *v, int id) {
    if (id == S2S_PAD || id == S2S_BOS || id == S2S_EOS) return NULL;
    const char *tok = s2s_vocab_token(v, id);
    return tok ? tok : s2s_special_token(S2S_UNK);  // out of range: shown, not dropped
}

// The source word a replaced <unk> at i prints, into buf; NULL when ids[i]
// is not a replaced <unk>.
static const char *replacement(const int *ids, int i, const int *unk_src, const s2s_tokens *src,
                               s2s_buf *buf) {
    if (ids[i] != S2S_UNK || !unk_src || !src || !src->text) return NULL;
    int j = unk_src[i];
    if (j < 0 || j >= src->n) return NULL;
    buf->len = 0;
    s2s_buf_append(buf, src->text + src->start[j], (size_t)(src->end[j] - src->start[j]));
    s2s_buf_append(buf, "", 1);
    return buf->oom ? NULL : buf->s;
}

static char *detokenize(const s2s_vocab *v, const int *ids, int n, const int *unk_src,
                        const s2s_tokens *src) {
    s2s_buf out = {0}, word = {0};
    // A copied source word spaces as a word of the target: Latin in
    // English (eat 巧克力.), CJK in Chinese (我爱pizza。).
    uint32_t word_cp = s2s_vocab_lang(v) == S2S_LANG_ZH ? 0x4E00 : 'a';
    bool cap_next = true;     // at the start of a sentence
    bool have_prev = false;
    uint32_t prev_last = 0;
    bool prev_opening = false;
    long quotes = 0;          // ASCII " seen so far: odd ones open
    for (int i = 0; i < n && ids; i++) {
        const char *copied = replacement(ids, i, unk_src, src, &word);
        const char *tok = copied ? copied : printed(v, ids[i]);
        if (!tok || !*tok) continue;
        uint32_t first = copied ? word_cp : first_cp(tok), last = copied ? word_cp : last_cp(tok);
        bool quote = strcmp(tok, "\"") == 0;
        bool open_quote = quote && quotes % 2 == 0;
        bool closing = is_closing(first) && !open_quote;
        bool opening = is_opening(last) || open_quote;
        if (quote) quotes++;

        if (have_prev && !s2s_is_cjk_any(prev_last) && !s2s_is_cjk_any(first) && !closing &&
            !prev_opening)
            s2s_buf_putc(&out, ' ');

        bool is_word = ids[i] == S2S_UNK || !s2s_is_punct(first);
        size_t skip = 0;
        if (is_word && ids[i] != S2S_UNK) {
            uint32_t up = first;
            if (cap_next)
                up = s2s_to_upper(first);
            else if (tok[0] == 'i' && (tok[1] == '\0' || tok[1] == '\''))
                up = 'I';  // i, i'm, i've
            if (up != first) {
                put_cp(&out, up);
                skip = seq_len((unsigned char)tok[0]);
            }
        }
        s2s_buf_puts(&out, tok + skip);
        if (is_word) cap_next = false;
        if (ends_sentence(last)) cap_next = true;
        have_prev = true;
        prev_last = last;
        prev_opening = opening;
    }
    s2s_buf_free(&word);
    return s2s_buf_take(&out);
}

char *s2s_detokenize(const s2s_vocab *v, const int *ids, int n) {
    return detokenize(v, ids, n, NULL, NULL);
}

char *s2s_detokenize_replacing(const s2s_vocab *v, const int *ids, int n, const int *unk_src,
                               const s2s_tokens *src) {
    return detokenize(v, ids, n, unk_src, src);
}

static char *join_tokens(const s2s_vocab *v, const int *ids, int n, const int *unk_src,
                         const s2s_tokens *src) {
    s2s_buf out = {0}, word = {0};
    bool first = true;
    for (int i = 0; i < n && ids; i++) {
        const char *tok = replacement(ids, i, unk_src, src, &word);
        if (!tok) tok = printed(v, ids[i]);
        if (!tok) continue;
        if (!first) s2s_buf_putc(&out, ' ');
        s2s_buf_puts(&out, tok);
        first = false;
    }
    s2s_buf_free(&word);
    return s2s_buf_take(&out);
}

char *s2s_join_tokens(const s2s_vocab *v, const int *ids, int n) {
    return join_tokens(v, ids, n, NULL, NULL);
}

char *s2s_join_tokens_replacing(const s2s_vocab *v, const int *ids, int n, const int *unk_src,
                                const s2s_tokens *src) {
    return join_tokens(v, ids, n, unk_src, src);
}

// ---- unknown words ----

char *s2s_token_text(const s2s_tokens *t, int j) {
    if (!t || !t->text || j < 0 || j >= t->n) return NULL;
    return strndup(t->text + t->start[j], (size_t)(t->end[j] - t->start[j]));
}

char *s2s_token_typed(const s2s_tokens *t, int j) {
    if (!t || !t->typed || j < 0 || j >= t->n || t->typed_start[j] == t->typed_end[j])
        return s2s_token_text(t, j);
    return strndup(t->typed + t->typed_start[j], (size_t)(t->typed_end[j] - t->typed_start[j]));
}

int s2s_unknown_words(const s2s_tokens *t, int *which, int cap) {
    int n = 0;
    for (int j = 0; t && j < t->n; j++)
        if (t->ids[j] == S2S_UNK) {
            if (n < cap && which) which[n] = j;
            n++;
        }
    return n;
}

// ---- sentences ----

// Marks that end a sentence: 。！？ and ASCII . ! ? (full-width ．！？ too).
static bool sentence_mark(uint32_t c) {
    return c == '.' || c == '!' || c == '?' || c == 0x3002 || c == 0xFF01 || c == 0xFF1F ||
           c == 0xFF0E || c == 0xFF61;
}

// Closing quotes and brackets that stay with the sentence before them.
static bool closer(uint32_t c) {
    return c == '"' || c == '\'' || c == ')' || c == ']' || c == 0x2019 || c == 0x201D ||
           c == 0xFF09 || c == 0x300D || c == 0x300F || c == 0x3011;
}

// English abbreviations a full stop does not end: a single letter (U.S.,
// e.g., J. Smith) or one of these, whatever the case.
static const char *const abbreviations[] = {"mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr",
                                            "vs", "etc", "mt", "fig", "approx"};

static bool abbreviation(const char *text, size_t dot) {
    size_t b = dot;
    while (b > 0 && ((text[b - 1] | 0x20) >= 'a' && (text[b - 1] | 0x20) <= 'z')) b--;
    size_t n = dot - b;
    if (n == 1) return true;
    for (size_t k = 0; k < sizeof abbreviations / sizeof *abbreviations; k++)
        if (strlen(abbreviations[k]) == n && strncasecmp(text + b, abbreviations[k], n) == 0)
            return true;
    return false;
}

s2s_status s2s_split_sentences(const char *text, s2s_span **out, int *n) {
    *out = NULL;
    *n = 0;
    if (!text) return s2s_fail(S2S_ERR_INVALID, "s2s_split_sentences: NULL argument");
    size_t len = strlen(text);
    S2S_TRY(s2s_utf8_validate(text, len));
    int cap = 4, count = 0;
    s2s_span *sp = malloc((size_t)cap * sizeof *sp);
    if (!sp) return s2s_fail(S2S_ERR_NOMEM, "split: out of memory");
    size_t start = 0, i = 0;
    while (i < len) {
        uint32_t c;
        size_t k = (size_t)s2s_utf8_decode(text + i, len - i, &c);
        if (!sentence_mark(c)) {
            i += k;
            continue;
        }
        size_t mark = i, end = i + k;
        bool ascii = c < 0x80, ascii_dot = c == '.';
        for (;;) {  // the whole run of marks, then closing quotes and brackets
            uint32_t d = 0;
            if (end >= len) break;
            size_t kd = (size_t)s2s_utf8_decode(text + end, len - end, &d);
            if (!sentence_mark(d) && !closer(d)) break;
            end += kd;
        }
        size_t next = end;
        while (next < len && (text[next] == ' ' || text[next] == '\t')) next++;
        bool split = next < len;  // more text follows
        if (split && ascii) {
            uint32_t d;
            s2s_utf8_decode(text + next, len - next, &d);
            // ASCII marks end a sentence before a space (not 3.5, a.m.) or
            // a Chinese character (你好?我很好); a full stop not before a
            // lower-case word nor after an abbreviation (Mr. Smith).
            split = next > end || s2s_is_cjk_any(d);
            if (split && ascii_dot && end == mark + 1)
                split = !(d >= 'a' && d <= 'z') && !abbreviation(text, mark);
        }
        if (split) {
            if (count == cap) {
                s2s_span *g = realloc(sp, (size_t)(cap *= 2) * sizeof *sp);
                if (!g) return free(sp), s2s_fail(S2S_ERR_NOMEM, "split: out of memory");
                sp = g;
            }
            sp[count++] = (s2s_span){start, end};
            start = next;
        }
        i = end;
    }
    if (count == cap) {
        s2s_span *g = realloc(sp, (size_t)(cap + 1) * sizeof *sp);
        if (!g) return free(sp), s2s_fail(S2S_ERR_NOMEM, "split: out of memory");
        sp = g;
    }
    sp[count++] = (s2s_span){start, len};
    *out = sp;
    *n = count;
    return S2S_OK;
}

// ---- TSV lines ----

s2s_status s2s_tsv_split(char *line, size_t len, const char *name, int lineno, char **target,
                         char **third) {
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
    const char *problem = NULL;
    char *tab = NULL;
    if (strlen(line) != len)
        problem = "NUL byte in the line";
    else if (!(tab = strchr(line, '\t')))
        problem = "expected source<TAB>target, found no tab";
    if (problem) {
        if (!name) return s2s_fail(S2S_ERR_FORMAT, "%s", problem);
        return s2s_fail(S2S_ERR_FORMAT, "%s:%d: %s", name, lineno, problem);
    }
    *tab = '\0';
    *target = tab + 1;
    *third = s2s_tsv_next(*target);
    return S2S_OK;
}

char *s2s_tsv_next(char *col) {
    char *tab = col ? strchr(col, '\t') : NULL;
    if (!tab) return NULL;
    *tab = '\0';
    return tab + 1;
}
