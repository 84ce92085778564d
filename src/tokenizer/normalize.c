// Normalising typed input into the toy corpus's spelling (s2s/normalize.h).
//
// Text is decoded once into code points and sent through the passes of its
// language (the `pipelines` table at the end), each pass reading one array
// and writing the next, so a pass can look at both neighbours of a
// character. What each pass rewrites lives in a table next to it. Chinese
// first goes through OpenCC's t2s, which has its own dictionaries.
//
// What a rule writes, the pipeline leaves as it is on a second run (a digit
// becomes a numeral no rule matches; the full-width comma zh_punct writes is
// folded to ASCII and written back the same), which makes normalising
// idempotent; and what a rule rewrites never occurs in the corpus, which
// makes it a no-op there. tests/test_normalize.c checks both.
#include <opencc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "s2s/normalize.h"
#include "tokenizer/traced.h"
#include "tokenizer/utf8.h"

// ---- code point arrays ----

// Each code point keeps where it came from: the bytes [lo, hi) of the
// typed text it was written for. A pass sets the origin of what it writes
// next (from_in), so a rewritten run carries the whole run it replaces and
// an inserted mark an empty range at its place.
typedef struct {
    uint32_t *c;
    size_t *lo, *hi;    // (n) origins in the typed text
    size_t n, cap;
    size_t at_lo, at_hi;  // the origin of the next push
    bool oom;  // a failed push leaves the array short; checked once per pass
} cpvec;

static bool grow(void **p, size_t cap, size_t size) {
    void *q = realloc(*p, cap * size);
    if (q) *p = q;
    return q != NULL;
}

static void push(cpvec *v, uint32_t c) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 64;
        if (v->oom || !grow((void **)&v->c, cap, sizeof *v->c) ||
            !grow((void **)&v->lo, cap, sizeof *v->lo) || !grow((void **)&v->hi, cap, sizeof *v->hi)) {
            v->oom = true;
            return;
        }
        v->cap = cap;
    }
    v->lo[v->n] = v->at_lo;
    v->hi[v->n] = v->at_hi;
    v->c[v->n++] = c;
}

// What out writes next stands for in[i..j); for i == j, nothing typed, at
// the place of in[i].
static void from_in(cpvec *out, const cpvec *in, size_t i, size_t j) {
    size_t end = in->n ? in->hi[in->n - 1] : 0;
    out->at_lo = i < in->n ? in->lo[i] : end;
    out->at_hi = j > i ? in->hi[j - 1] : out->at_lo;
}

// Appends valid UTF-8 text, all of it standing for the current origin.
static void push_utf8(cpvec *v, const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        uint32_t c;
        i += (size_t)s2s_utf8_decode(s + i, n - i, &c);
        push(v, c);
    }
}

static void cpvec_free(cpvec *v) {
    free(v->c);
    free(v->lo);
    free(v->hi);
}

// Copies in[i] with its origin.
static void copy(cpvec *out, const cpvec *in, size_t i) {
    from_in(out, in, i, i + 1);
    push(out, in->c[i]);
}

// Decodes typed text, each code point standing for its own bytes.
static void push_typed(cpvec *v, const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        uint32_t c;
        int k = s2s_utf8_decode(s + i, n - i, &c);
        v->at_lo = i;
        v->at_hi = i += (size_t)k;
        push(v, c);
    }
}

// The code point at i, or 0 outside the array (0 never occurs in text).
static uint32_t at(const cpvec *v, size_t i) { return i < v->n ? v->c[i] : 0; }

static bool is_digit(uint32_t c) { return c >= '0' && c <= '9'; }
static bool is_alpha(uint32_t c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
static bool is_alnum(uint32_t c) { return is_digit(c) || is_alpha(c); }
static uint32_t lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// ---- characters: width, spaces, variants ----

#define EN (1u << S2S_LANG_EN)
#define ZH (1u << S2S_LANG_ZH)

// lo..hi become to..to+(hi-lo), in the languages of `langs`. Chinese folds
// its own full-width punctuation too: zh_punct writes it back, so that
// "，" and "," end up as the same character with the same context rule.
static const struct {
    uint32_t lo, hi, to;
    unsigned langs;
} char_rules[] = {
    {0xFF01, 0xFF5E, 0x21, EN | ZH},    // full-width ASCII: ！ … ～, Ａ, ０
    {0x3000, 0x3000, ' ', EN | ZH},     // ideographic space
    {0xFF61, 0xFF61, '.', EN | ZH},     // half-width ideographic full stop ｡
    {0xFF64, 0xFF64, ',', EN},          // half-width ideographic comma ､
    {0xFF64, 0xFF64, 0x3001, ZH},       //   … which in Chinese is 、
    {0x3002, 0x3002, '.', EN},          // 。 in English
    {0x3001, 0x3001, ',', EN},          // 、 in English
    {0x2018, 0x2018, '\'', EN},         // curly apostrophes: ‘, didn’t
    {0x2019, 0x2019, '\'', EN},
    {0x02BC, 0x02BC, '\'', EN},         // modifier letter apostrophe
    {0x7260, 0x7260, 0x5B83, ZH},       // 牠 → 它: a variant t2s keeps
};

static void fold_chars(cpvec *out, const cpvec *in, s2s_lang lang) {
    for (size_t i = 0; i < in->n; i++) {
        uint32_t c = in->c[i];
        for (size_t r = 0; r < sizeof char_rules / sizeof *char_rules; r++)
            if ((char_rules[r].langs & (1u << lang)) && c >= char_rules[r].lo &&
                c <= char_rules[r].hi) {
                c = char_rules[r].to + (c - char_rules[r].lo);
                break;
            }
        from_in(out, in, i, i + 1);
        push(out, c);
    }
}

// ---- numbers ----

// The numerals of the lexicon (data/lexicon.tsv, pos `num`). English 1 is
// "a"/"an", chosen by the next word.
static const struct {
    const char *digits, *en, *zh;
} numerals[] = {
    {"1", "a", "一"},  {"2", "two", "两"},   {"3", "three", "三"}, {"4", "four", "四"},
    {"5", "five", "五"}, {"6", "six", "六"},  {"7", "seven", "七"}, {"8", "eight", "八"},
    {"9", "nine", "九"}, {"10", "ten", "十"},
};

// Chinese numbers stand before a measure word (lexicon pos `mw`, and the
// `mw=` of every noun); 2 before one is 两, not 二.
static const char zh_measure_words[] = "只本个辆张把条件头匹根块封份台部扇支朵棵座顶列杯碗瓶";

static bool ascii_in(const char *set, uint32_t c) {
    return c > 0 && c < 0x80 && strchr(set, (int)c) != NULL;
}

// Characters that make a digit run part of a larger expression: 2.5, 1,000,
// 10:30, 2-3, 1/2, 50%, $5, #1.
static bool joins_number(uint32_t c) { return ascii_in(".,:/-+$#%&@_", c); }

static bool in_utf8_list(const char *list, uint32_t c) {
    if (c == 0) return false;
    char s[5] = {0};
    s2s_utf8_encode(s, c);
    return strstr(list, s) != NULL;
}

// The numeral index for the digits in[i..j), or -1.
static int numeral_of(const cpvec *in, size_t i, size_t j) {
    for (size_t k = 0; k < sizeof numerals / sizeof *numerals; k++) {
        const char *d = numerals[k].digits;
        if (strlen(d) != j - i) continue;
        size_t m = 0;
        while (m < j - i && in->c[i + m] == (uint32_t)d[m]) m++;
        if (m == j - i) return (int)k;
    }
    return -1;
}

// Whether the digit run in[i..j) stands alone: not glued to letters, digits
// or the characters of a larger number on either side, nor to 's. 2. and 2,
// at the end of a clause are alone; 2.5 and 1,000 are not.
static bool standalone(const cpvec *in, size_t i, size_t j) {
    uint32_t prev = i > 0 ? in->c[i - 1] : 0, next = at(in, j);
    if (is_alnum(prev) || joins_number(prev)) return false;
    if (is_alnum(next) || (next == '\'' && is_alpha(at(in, j + 1)))) return false;  // 3's
    if (joins_number(next)) return ascii_in(".,:", next) && !is_alnum(at(in, j + 1));
    return true;
}

// I have 2 cats → I have two cats; 1 apple → an apple (1 with no word after
// it stays). The word for in[i..j), or NULL.
static const char *en_numeral(const cpvec *in, size_t i, size_t j) {
    int k = standalone(in, i, j) ? numeral_of(in, i, j) : -1;
    if (k < 0) return NULL;
    if (strcmp(numerals[k].en, "a") != 0) return numerals[k].en;
    size_t w = j;
    while (w < in->n && s2s_is_space(in->c[w])) w++;
    if (w == j || !is_alpha(at(in, w))) return NULL;
    return ascii_in("aeiou", lower(in->c[w])) ? "an" : "a";
}

// 我有2只猫 → 我有两只猫: digits 1–10 right before a measure word, except
// after 第 (第2只 is "the second", 第二只). The numeral for in[i..j), or NULL.
static const char *zh_numeral(const cpvec *in, size_t i, size_t j) {
    uint32_t prev = i > 0 ? in->c[i - 1] : 0;
    if (is_alnum(prev) || joins_number(prev) || prev == 0x7B2C /* 第 */ ||
        !in_utf8_list(zh_measure_words, at(in, j)))
        return NULL;
    int k = numeral_of(in, i, j);
    return k >= 0 ? numerals[k].zh : NULL;
}

// Each run of ASCII digits becomes its numeral or stays. The corpus has no
// digits.
static void numbers(cpvec *out, const cpvec *in, s2s_lang lang) {
    for (size_t i = 0; i < in->n;) {
        if (!is_digit(in->c[i])) {
            copy(out, in, i++);
            continue;
        }
        size_t j = i;
        while (j < in->n && is_digit(in->c[j])) j++;
        const char *w = lang == S2S_LANG_ZH ? zh_numeral(in, i, j) : en_numeral(in, i, j);
        if (w) {
            from_in(out, in, i, j);
            push_utf8(out, w);
        } else {
            for (size_t m = i; m < j; m++) copy(out, in, m);
        }
        i = j;
    }
}

// ---- Chinese punctuation and spaces ----

static const struct {
    uint32_t ascii, cjk;
} zh_punct_rules[] = {
    {'?', 0xFF1F}, {'!', 0xFF01}, {',', 0xFF0C}, {'.', 0x3002}, {':', 0xFF1A}, {';', 0xFF1B},
};

// 你喜欢猫吗? → 你喜欢猫吗？ Left alone between two ASCII letters or digits
// (2.5, 1,000, 10:30, www.example.com) and in runs of dots (...).
static void zh_punct(cpvec *out, const cpvec *in, s2s_lang lang) {
    for (size_t i = 0; i < in->n; i++) {
        uint32_t c = in->c[i], prev = i > 0 ? in->c[i - 1] : 0, next = at(in, i + 1);
        bool inside = is_alnum(prev) && is_alnum(next);
        bool dots = c == '.' && (prev == '.' || next == '.');
        for (size_t r = 0; r < sizeof zh_punct_rules / sizeof *zh_punct_rules; r++)
            if (c == zh_punct_rules[r].ascii && !inside && !dots) {
                c = zh_punct_rules[r].cjk;
                break;
            }
        from_in(out, in, i, i + 1);
        push(out, c);
    }
}

// Chinese is written without spaces, and a space inside a run of Chinese
// characters would split a word for the longest-match segmenter (看 起来).
// Spaces next to Latin words stay.
static void zh_spaces(cpvec *out, const cpvec *in, s2s_lang lang) {
    for (size_t i = 0; i < in->n;) {
        if (!s2s_is_space(in->c[i])) {
            copy(out, in, i++);
            continue;
        }
        size_t j = i;
        while (j < in->n && s2s_is_space(in->c[j])) j++;
        bool between = i > 0 && j < in->n && s2s_is_cjk_any(in->c[i - 1]) &&
                       s2s_is_cjk_any(in->c[j]);
        if (!between)
            for (size_t m = i; m < j; m++) copy(out, in, m);
        i = j;
    }
}

// ---- English contractions ----

// Each spelling of a negation a person may type, and the corpus's: it
// contracts do/does/did/will + not (didn't don't doesn't won't) and spells
// out is/are/was/were not (docs/toy-corpus.md). A space in `from` matches
// any run of spaces; letters match either case. Only whole words match, so
// "wont" is rewritten and "wonton" is not. Other contractions (i'm, it's)
// are left alone: the corpus has no negation-free ones, and a vocab that
// holds them as tokens (tests/data/vocab/en.txt) must keep finding them.
static const struct {
    const char *from, *to;
} en_rules[] = {
    {"did not", "didn't"},   {"didnt", "didn't"},     {"did n't", "didn't"},
    {"do not", "don't"},     {"dont", "don't"},       {"do n't", "don't"},
    {"does not", "doesn't"}, {"doesnt", "doesn't"},   {"does n't", "doesn't"},
    {"will not", "won't"},   {"wont", "won't"},       {"wo n't", "won't"},
    {"isn't", "is not"},     {"isnt", "is not"},      {"is n't", "is not"},
    {"aren't", "are not"},   {"arent", "are not"},    {"are n't", "are not"},
    {"wasn't", "was not"},   {"wasnt", "was not"},    {"was n't", "was not"},
    {"weren't", "were not"}, {"werent", "were not"}, {"were n't", "were not"},
};

static bool word_char(uint32_t c) { return is_alnum(c) || c == '\''; }

// The end of a match of `pat` at in[i], or 0.
static size_t match_at(const cpvec *in, size_t i, const char *pat) {
    for (const char *p = pat; *p; p++) {
        if (*p == ' ') {
            // at() is 0 past the end, which is_space counts as a space: bound i.
            if (i >= in->n || !s2s_is_space(in->c[i])) return 0;
            while (i < in->n && s2s_is_space(in->c[i])) i++;
        } else if (lower(at(in, i)) == (uint32_t)*p) {
            i++;
        } else {
            return 0;
        }
    }
    // a whole word: not followed by a letter, digit or "'s"-like suffix
    if (is_alnum(at(in, i)) || (at(in, i) == '\'' && is_alpha(at(in, i + 1)))) return 0;
    return i;
}

// Writes `to` in the case of in[i..end): DIDNT → DIDN'T, Didnt → Didn't.
static void push_cased(cpvec *out, const cpvec *in, size_t i, size_t end, const char *to) {
    int letters = 0, upper = 0;
    for (size_t m = i; m < end; m++)
        if (is_alpha(in->c[m])) letters++, upper += in->c[m] < 'a';
    bool all = letters > 1 && upper == letters, first = in->c[i] < 'a';
    for (const char *p = to; *p; p++) {
        uint32_t c = (uint32_t)(unsigned char)*p;
        if (is_alpha(c) && (all || (first && p == to))) c -= 32;
        push(out, c);
    }
}

static void en_contractions(cpvec *out, const cpvec *in, s2s_lang lang) {
    for (size_t i = 0; i < in->n;) {
        size_t end = 0, r = 0;
        if (is_alpha(in->c[i]) && !(i > 0 && word_char(in->c[i - 1])))
            for (; r < sizeof en_rules / sizeof *en_rules; r++)
                if ((end = match_at(in, i, en_rules[r].from))) break;
        if (end) {
            from_in(out, in, i, end);
            push_cased(out, in, i, end, en_rules[r].to);
            i = end;
        } else {
            copy(out, in, i++);
        }
    }
}

// ---- the end of a sentence ----

// Auxiliaries that open an English question (docs/toy-corpus.md, Questions).
static const char *const en_question_words[] = {"do", "does", "did", "will", "is",
                                                "are", "am", "was", "were"};
// Chinese question particles.
static const char zh_question_marks[] = "吗呢";

static bool en_is_question(const cpvec *in) {
    size_t i = 0;
    while (i < in->n && !is_alpha(in->c[i])) i++;
    for (size_t q = 0; q < sizeof en_question_words / sizeof *en_question_words; q++) {
        const char *w = en_question_words[q];
        size_t k = 0;
        while (w[k] && lower(at(in, i + k)) == (uint32_t)w[k]) k++;
        if (!w[k] && !is_alpha(at(in, i + k))) return true;
    }
    return false;
}

// A question typed without its mark reads as a statement to the models:
// 你喜欢猫吗 → 你喜欢猫吗？, did you eat → did you eat?. Statements are left
// as typed, since the training data holds them with and without their full
// stop (docs/toy-corpus.md). English needs a word at the end, so
// "do you :)" keeps its ending.
static void question_mark(cpvec *out, const cpvec *in, s2s_lang lang) {
    size_t last = in->n;
    while (last > 0 && s2s_is_space(in->c[last - 1])) last--;
    uint32_t c = last > 0 ? in->c[last - 1] : 0, mark = 0;
    if (lang == S2S_LANG_ZH && in_utf8_list(zh_question_marks, c)) mark = 0xFF1F;
    if (lang == S2S_LANG_EN && is_alnum(c) && en_is_question(in)) mark = '?';
    for (size_t i = 0; i <= in->n; i++) {
        if (i == last && mark) {
            from_in(out, in, i, i);  // typed by no one
            push(out, mark);
        }
        if (i < in->n) copy(out, in, i);
    }
}

// ---- traditional to simplified (OpenCC) ----

static pthread_once_t t2s_once = PTHREAD_ONCE_INIT;
static opencc_t t2s = (opencc_t)-1;
static char t2s_error[256];

static void t2s_open(void) {
    t2s = opencc_open(OPENCC_DEFAULT_CONFIG_TRAD_TO_SIMP);
    if (t2s == (opencc_t)-1) {
        const char *e = opencc_error();
        snprintf(t2s_error, sizeof t2s_error, "%s", e ? e : "unknown error");
    }
}

// Converts text into *out (valid UTF-8, NUL-terminated); the caller frees
// it with free().
static s2s_status to_simplified(const char *text, char **out) {
    pthread_once(&t2s_once, t2s_open);
    if (t2s == (opencc_t)-1)
        return s2s_fail(S2S_ERR_IO,
                        "normalize: cannot load OpenCC's %s (%s); is libopencc-data installed?",
                        OPENCC_DEFAULT_CONFIG_TRAD_TO_SIMP, t2s_error);
    char *r = opencc_convert_utf8(t2s, text, strlen(text));
    if (!r) return s2s_fail(S2S_ERR_INVALID, "normalize: OpenCC could not convert the text");
    *out = strdup(r);  // OpenCC's string must go back through its own free
    opencc_convert_utf8_free(r);
    if (!*out) return s2s_fail(S2S_ERR_NOMEM, "normalize: out of memory");
    return S2S_OK;
}

// ---- the pipelines ----

typedef void (*pass_fn)(cpvec *out, const cpvec *in, s2s_lang lang);

enum { MAX_PASSES = 6 };

static const pass_fn pipelines[S2S_LANG_COUNT][MAX_PASSES] = {
    [S2S_LANG_EN] = {fold_chars, numbers, en_contractions, question_mark},
    [S2S_LANG_ZH] = {fold_chars, numbers, zh_punct, zh_spaces, question_mark},
};

const char *s2s_lang_name(s2s_lang lang) {
    static const char *const names[S2S_LANG_COUNT] = {"none", "en", "zh"};
    return (unsigned)lang < S2S_LANG_COUNT ? names[lang] : "?";
}

static bool has_non_ascii(const char *s) {
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80) return true;
    return false;
}

// Decodes the text to normalise into a, each code point standing for its
// typed bytes. OpenCC's conversion keeps no offsets: when it keeps the
// number of code points (character by character, as t2s nearly always
// does), the k-th converted one stands for the k-th typed one; else *traced
// is false.
static s2s_status decode_input(cpvec *a, s2s_lang lang, const char *text, bool *traced) {
    *traced = true;
    if (lang != S2S_LANG_ZH || !has_non_ascii(text)) {
        push_typed(a, text);
        return S2S_OK;
    }
    char *simple = NULL;
    S2S_TRY(to_simplified(text, &simple));
    cpvec typed = {0};
    push_typed(&typed, text);
    push_utf8(a, simple);
    free(simple);
    *traced = !typed.oom && typed.n == a->n;
    for (size_t k = 0; k < a->n; k++) {
        a->lo[k] = *traced ? typed.lo[k] : 0;
        a->hi[k] = *traced ? typed.hi[k] : 0;
    }
    cpvec_free(&typed);
    return S2S_OK;
}

// The bytes of a's text, and with origin, each byte's origin (that of its
// code point).
static char *encode(const cpvec *a, s2s_span **origin) {
    char *s = NULL;
    if (!a->oom && a->n < SIZE_MAX / 4 - 1) s = malloc(4 * a->n + 1);
    s2s_span *o = s && origin ? malloc((4 * a->n + 1) * sizeof *o) : NULL;
    if (!s || (origin && !o)) {
        free(s);
        free(o);
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < a->n; i++) {
        int k = s2s_utf8_encode(s + n, a->c[i]);
        for (int b = 0; o && b < k; b++) o[n + (size_t)b] = (s2s_span){a->lo[i], a->hi[i]};
        n += (size_t)k;
    }
    s[n] = '\0';
    if (origin) *origin = o;
    return s;
}

s2s_status s2s_normalize_traced(s2s_lang lang, const char *text, char **out, s2s_span **origin) {
    if (!out) return s2s_fail(S2S_ERR_INVALID, "s2s_normalize: NULL argument");
    *out = NULL;
    if (origin) *origin = NULL;
    if (!text) return s2s_fail(S2S_ERR_INVALID, "s2s_normalize: NULL argument");
    if ((unsigned)lang >= S2S_LANG_COUNT)
        return s2s_fail(S2S_ERR_INVALID, "s2s_normalize: language %d out of range", (int)lang);
    S2S_TRY(s2s_utf8_validate(text, strlen(text)));

    cpvec a = {0}, b = {0};
    bool traced;
    s2s_status st = decode_input(&a, lang, text, &traced);
    for (int p = 0; st == S2S_OK && p < MAX_PASSES && pipelines[lang][p] && !a.oom; p++) {
        b.n = 0;
        pipelines[lang][p](&b, &a, lang);
        cpvec t = a;
        a = b;
        b = t;
    }
    char *s = st == S2S_OK ? encode(&a, traced ? origin : NULL) : NULL;
    cpvec_free(&a);
    cpvec_free(&b);
    if (st != S2S_OK) return st;
    if (!s) return s2s_fail(S2S_ERR_NOMEM, "normalize: out of memory");
    *out = s;
    return S2S_OK;
}

s2s_status s2s_normalize(s2s_lang lang, const char *text, char **out) {
    return s2s_normalize_traced(lang, text, out, NULL);
}
