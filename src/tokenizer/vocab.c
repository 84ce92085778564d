// Vocabularies: one token per line, the line index is the id.
//
// The file's bytes are kept in one block with each line NUL-terminated in
// place, so tokens cost no allocation of their own. Lookup goes through an
// open-addressing hash table (linear probing, FNV-1a) sized to at most half
// full. The CJK longest match does not probe it once per candidate length
// (each candidate hashed from its start: the longest token's length squared
// per position); it walks the CJK tokens in sorted order instead
// (s2s_vocab_cjk_prefix): the text as far as it follows tokens, plus two
// binary searches wherever tokens part.
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "core/io.h"
#include "s2s/normalize.h"
#include "s2s/tokenizer.h"
#include "tokenizer/utf8.h"

struct s2s_vocab {
    int n;          // number of tokens
    int max_cjk;    // longest token made only of CJK characters, in code points
    int n_cjk;      // tokens made only of CJK characters (specials aside)
    char *text;     // all tokens, each NUL-terminated
    char **tok;     // (n) token strings, pointing into text
    int *len;       // (n) byte lengths
    int *slots;     // (nslots) ids, -1 where empty
    size_t nslots;  // a power of two >= 2n
    char **cjk;     // (n_cjk) the tokens made only of CJK characters, sorted by bytes
    int *cjk_len;   // (n_cjk) their byte lengths
};

static const char *const specials[S2S_NUM_SPECIALS] = {"<pad>", "<unk>", "<s>", "</s>"};

const char *s2s_special_token(int id) {
    return id >= 0 && id < S2S_NUM_SPECIALS ? specials[id] : NULL;
}

// Longest token text quoted in an error message; vocab lines can be huge.
enum { QUOTE_MAX = 60 };

// The slot holding s[0..n), or the empty slot where it would go.
static size_t probe(const s2s_vocab *v, const char *s, size_t n) {
    size_t mask = v->nslots - 1;
    size_t i = (size_t)s2s_fnv1a(S2S_FNV1A_INIT, s, n) & mask;
    for (;;) {
        int id = v->slots[i];
        if (id < 0) return i;
        if ((size_t)v->len[id] == n && memcmp(v->tok[id], s, n) == 0) return i;
        i = (i + 1) & mask;
    }
}

int s2s_vocab_find(const s2s_vocab *v, const char *s, size_t len) {
    if (!v || !s) return -1;
    return v->slots[probe(v, s, len)];
}

int s2s_vocab_max_cjk_chars(const s2s_vocab *v) { return v ? v->max_cjk : 0; }

int s2s_vocab_cjk_tokens(const s2s_vocab *v) { return v ? v->n_cjk : 0; }

// The vocab's language: Chinese when most of its words are CJK, English
// when it holds "the" (how s2s_tokenize picks its normalisation).
s2s_lang s2s_vocab_lang(const s2s_vocab *v) {
    int words = s2s_vocab_size(v) - S2S_NUM_SPECIALS;
    if (words <= 0) return S2S_LANG_NONE;
    if (2 * s2s_vocab_cjk_tokens(v) > words) return S2S_LANG_ZH;
    return s2s_vocab_find(v, "the", 3) >= 0 ? S2S_LANG_EN : S2S_LANG_NONE;
}

// How many bytes s[0..n), a[0..n) and b[0..n) agree on from the start:
// memcmp over blocks, so that a long stretch costs little more than its
// bytes read, and never more than one block past where they part.
static size_t agree(const char *s, const char *a, const char *b, size_t n) {
    size_t i = 0;
    while (n - i >= 32 && memcmp(s + i, a + i, 32) == 0 && memcmp(a + i, b + i, 32) == 0)
        i += 32;
    while (i < n && s[i] == a[i] && a[i] == b[i]) i++;
    return i;
}

// A walk down a trie whose nodes are ranges of v->cjk: the tokens that
// start with s[0..d) are a range [lo, hi), along which byte d does not
// decrease (the one token of length d, if any, comes first). The tokens of
// a range share their bytes up to the common prefix of its first and last
// (sorted, all between share it too), and none ends before it, so the walk
// crosses as much of that stretch as s follows in one comparison; where s
// or the tokens part, two binary searches on the next byte of s narrow
// the range. The cost is the bytes s follows tokens for, plus a block
// compared and the binary searches at each parting, with no trie built (12
// bytes a token, not a node a byte).
size_t s2s_vocab_cjk_prefix(const s2s_vocab *v, const char *s, size_t n) {
    size_t lo = 0, hi = v ? (size_t)v->n_cjk : 0, best = 0, d = 0;
    while (lo < hi) {
        // as far as s, the first token and the last agree: there every
        // token of the range follows s
        const char *first = v->cjk[lo], *last = v->cjk[hi - 1];
        size_t lf = (size_t)v->cjk_len[lo], ll = (size_t)v->cjk_len[hi - 1];
        size_t bound = n < lf ? n : lf;
        d += agree(s + d, first + d, last + d, (bound < ll ? bound : ll) - d);
        if (lf == d) {  // the first ends here: the longest match so far
            best = d;
            if (++lo == hi) break;
        }
        if (d == n) break;
        unsigned char ch = (unsigned char)s[d];
        size_t a = lo, b = hi;
        while (a < b) {  // the first token whose byte d is >= ch
            size_t m = a + (b - a) / 2;
            if ((unsigned char)v->cjk[m][d] < ch) a = m + 1; else b = m;
        }
        lo = a;
        for (b = hi; a < b;) {  // the first one whose byte d is > ch
            size_t m = a + (b - a) / 2;
            if ((unsigned char)v->cjk[m][d] <= ch) a = m + 1; else b = m;
        }
        hi = a;
    }
    return best;
}

void s2s_vocab_free(s2s_vocab *v) {
    if (!v) return;
    free(v->text);
    free(v->tok);
    free(v->len);
    free(v->slots);
    free(v->cjk);
    free(v->cjk_len);
    free(v);
}

// ---- parsing ----

// Checks one line (already split off, without its newline) and adds it as
// the next id. `lineno` is 1-based for messages.
static s2s_status add_line(s2s_vocab *v, char *line, size_t n, const char *name,
                           size_t lineno) {
    char q[QUOTE_MAX + 4];  // a token quoted in a message (s2s_quote)
    if (memchr(line, '\0', n))
        return s2s_fail(S2S_ERR_FORMAT, "%s:%zu: NUL byte in token", name, lineno);
    size_t bad = s2s_utf8_check(line, n);
    if (bad < n)
        return s2s_fail(S2S_ERR_FORMAT, "%s:%zu:%zu: invalid UTF-8 (byte 0x%02x)",
                        name, lineno, bad + 1, (unsigned char)line[bad]);
    if (n == 0) return s2s_fail(S2S_ERR_FORMAT, "%s:%zu: empty line", name, lineno);
    if (n > INT_MAX)
        return s2s_fail(S2S_ERR_FORMAT, "%s:%zu: token too long", name, lineno);
    // The tokenizer splits on whitespace, so such a token could never be
    // produced; it is almost always a stray space or a bad join.
    size_t chars = 0;
    bool all_cjk = true;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += (size_t)s2s_utf8_decode(line + i, n - i, &cp);
        chars++;
        all_cjk = all_cjk && s2s_is_cjk(cp);
        if (s2s_is_space(cp))
            return s2s_fail(S2S_ERR_FORMAT, "%s:%zu: token '%s' contains whitespace",
                            name, lineno, s2s_quote(q, sizeof q, line, n));
    }
    int id = v->n;
    if (id < S2S_NUM_SPECIALS && strcmp(line, specials[id]) != 0)
        return s2s_fail(S2S_ERR_FORMAT,
                        "%s:%zu: expected special token '%s', found '%s' (the first "
                        "four lines must be <pad> <unk> <s> </s>)",
                        name, lineno, specials[id], s2s_quote(q, sizeof q, line, n));
    size_t slot = probe(v, line, n);
    if (v->slots[slot] >= 0)
        return s2s_fail(S2S_ERR_FORMAT, "%s:%zu: duplicate token '%s' (first on line %d)",
                        name, lineno, s2s_quote(q, sizeof q, line, n), v->slots[slot] + 1);
    v->tok[id] = line;
    v->len[id] = (int)n;
    v->slots[slot] = id;
    if (all_cjk && chars > (size_t)v->max_cjk) v->max_cjk = (int)chars;
    if (all_cjk) v->n_cjk++;
    v->n++;
    return S2S_OK;
}

static bool is_cjk_token(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += (size_t)s2s_utf8_decode(s + i, n - i, &cp);
        if (!s2s_is_cjk(cp)) return false;
    }
    return n > 0;
}

static int by_bytes(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);  // strcmp compares unsigned bytes
}

// Sorts the CJK tokens for s2s_vocab_cjk_prefix.
static s2s_status index_cjk(s2s_vocab *v, const char *name) {
    size_t n = v->n_cjk ? (size_t)v->n_cjk : 1;
    v->cjk = malloc(n * sizeof *v->cjk);
    v->cjk_len = malloc(n * sizeof *v->cjk_len);
    if (!v->cjk || !v->cjk_len) return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", name);
    int k = 0;
    for (int id = 0; id < v->n; id++)
        if (is_cjk_token(v->tok[id], (size_t)v->len[id])) v->cjk[k++] = v->tok[id];
    S2S_ASSERT(k == v->n_cjk);
    qsort(v->cjk, (size_t)k, sizeof *v->cjk, by_bytes);
    for (int i = 0; i < k; i++) v->cjk_len[i] = (int)strlen(v->cjk[i]);
    return S2S_OK;
}

// Parses text[0..size) (taking ownership of text, which has room for a
// terminating NUL at text[size]) into *out.
static s2s_status parse(s2s_vocab **out, char *text, size_t size, const char *name) {
    *out = NULL;
    s2s_vocab *v = calloc(1, sizeof *v);
    if (!v) {
        free(text);
        return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", name);
    }
    v->text = text;
    text[size] = '\0';

    // A final newline ends the last line rather than starting an empty one.
    size_t lines = 0;
    for (size_t i = 0; i < size; i++) lines += text[i] == '\n';
    if (size > 0 && text[size - 1] != '\n') lines++;
    if (lines > INT_MAX) {
        s2s_vocab_free(v);
        return s2s_fail(S2S_ERR_FORMAT, "%s: too many lines", name);
    }
    size_t nslots = 16;
    while (nslots < 2 * lines) nslots *= 2;
    v->nslots = nslots;
    v->tok = malloc((lines ? lines : 1) * sizeof *v->tok);
    v->len = malloc((lines ? lines : 1) * sizeof *v->len);
    v->slots = malloc(nslots * sizeof *v->slots);
    if (!v->tok || !v->len || !v->slots) {
        s2s_vocab_free(v);
        return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", name);
    }
    memset(v->slots, 0xFF, nslots * sizeof *v->slots);  // all -1

    size_t pos = 0;
    // Editors on Windows like to start UTF-8 files with a byte order mark.
    if (size >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) pos = 3;
    for (size_t lineno = 1; lineno <= lines; lineno++) {
        char *line = text + pos;
        char *nl = memchr(line, '\n', size - pos);
        size_t n = nl ? (size_t)(nl - line) : size - pos;
        pos += n + 1;
        if (n > 0 && line[n - 1] == '\r') n--;  // CRLF
        line[n] = '\0';
        s2s_status st = add_line(v, line, n, name, lineno);
        if (st != S2S_OK) {
            s2s_vocab_free(v);
            return st;
        }
    }
    if (v->n >= S2S_NUM_SPECIALS) {
        s2s_status st = index_cjk(v, name);
        if (st != S2S_OK) {
            s2s_vocab_free(v);
            return st;
        }
    }
    if (v->n < S2S_NUM_SPECIALS) {
        s2s_status st = s2s_fail(S2S_ERR_FORMAT,
                                 "%s:%d: missing special token '%s' (the first four "
                                 "lines must be <pad> <unk> <s> </s>)",
                                 name, v->n + 1, specials[v->n]);
        s2s_vocab_free(v);
        return st;
    }
    *out = v;
    return S2S_OK;
}

s2s_status s2s_vocab_from_string(s2s_vocab **out, const char *text, const char *name) {
    if (!out || !text) return s2s_fail(S2S_ERR_INVALID, "s2s_vocab_from_string: NULL argument");
    if (!name) name = "<vocab>";
    size_t n = strlen(text);
    char *copy = malloc(n + 1);
    if (!copy) return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", name);
    memcpy(copy, text, n);
    return parse(out, copy, n, name);
}

s2s_status s2s_vocab_load(s2s_vocab **out, const char *path) {
    if (!out || !path) return s2s_fail(S2S_ERR_INVALID, "s2s_vocab_load: NULL argument");
    *out = NULL;
    char *buf;
    size_t size;
    S2S_TRY(s2s_read_file_max(&buf, &size, path, S2S_VOCAB_MAX_BYTES, "a vocab file (64 MiB)"));
    return parse(out, buf, size, path);
}

// ---- queries ----

int s2s_vocab_size(const s2s_vocab *v) { return v ? v->n : 0; }

const char *s2s_vocab_token(const s2s_vocab *v, int id) {
    if (!v || id < 0 || id >= v->n) return NULL;
    return v->tok[id];
}

int s2s_vocab_id(const s2s_vocab *v, const char *token) {
    if (!v || !token) return S2S_UNK;
    int id = s2s_vocab_find(v, token, strlen(token));
    return id < 0 ? S2S_UNK : id;
}

char *s2s_vocab_to_string(const s2s_vocab *v) {
    if (!v) return NULL;
    size_t total = 1;
    for (int i = 0; i < v->n; i++) total += (size_t)v->len[i] + 1;
    char *s = malloc(total), *p = s;
    if (!s) return NULL;
    for (int i = 0; i < v->n; i++) {
        if (i > 0) *p++ = '\n';
        memcpy(p, v->tok[i], (size_t)v->len[i]);
        p += v->len[i];
    }
    *p = '\0';
    return s;
}
