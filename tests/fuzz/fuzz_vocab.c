// Vocabulary files from disk: the input written to a file and read by
// s2s_vocab_load, the path `s2s init` and `s2s train` read vocab files
// through (the 64 MiB limit, the BOM, CRLF, the specials). A file that is
// refused must be refused with one line naming the file. A vocab that
// loads must give each token its line's id, survive s2s_vocab_to_string and
// s2s_vocab_from_string unchanged, and tokenize text made of its own
// tokens: the CJK longest match is checked against the loop it replaced
// (every candidate length, longest first, by hash lookup) at every
// position, and a CJK token alone is one piece with its id.
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "s2s/normalize.h"
#include "s2s/tokenizer.h"
#include "tokenizer/utf8.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    return 0;
}

// A broken promise is a finding: abort, so libFuzzer keeps the input.
#define CHECK(x)           \
    do {                   \
        if (!(x)) abort(); \
    } while (0)

static size_t seq_len(unsigned char c) {
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

// The longest CJK token at r[0..n) as the tokenizer found it until 9f2c0a5:
// every length up to the longest CJK token, longest first. 0 when none.
static size_t old_prefix(const s2s_vocab *v, const char *r, size_t n) {
    int maxc = s2s_vocab_max_cjk_chars(v);
    size_t end = 0;
    int chars = 0;
    while (end < n && chars < maxc) {
        end += seq_len((unsigned char)r[end]);
        chars++;
    }
    for (; chars > 0; chars--) {
        uint32_t c = 0;
        bool cjk = true;  // only a CJK token can match inside a CJK run
        for (size_t i = 0; i < end;) {
            i += (size_t)s2s_utf8_decode(r + i, end - i, &c);
            cjk = cjk && s2s_is_cjk(c);
        }
        if (cjk && s2s_vocab_find(v, r, end) >= 0) return end;
        do end--;
        while (end > 0 && ((unsigned char)r[end] & 0xC0) == 0x80);
    }
    return 0;
}

// Both matches at every character of text (valid UTF-8); at its first 16
// only when the old loop's cost, the longest CJK token squared, is large.
static void compare_prefixes(const s2s_vocab *v, const char *text) {
    size_t n = strlen(text);
    int chars = s2s_vocab_max_cjk_chars(v) <= 64 ? -1 : 16;
    for (size_t p = 0; p < n && chars-- != 0; p += seq_len((unsigned char)text[p]))
        CHECK(s2s_vocab_cjk_prefix(v, text + p, n - p) == old_prefix(v, text + p, n - p));
}

static void round_trip(const s2s_vocab *v, const char *text) {
    s2s_tokens t = {0};
    compare_prefixes(v, text);
    if (s2s_tokenize(v, text, &t) == S2S_OK) {
        for (int i = 0; i < t.n; i++) {
            CHECK(t.ids[i] >= 0 && t.ids[i] < s2s_vocab_size(v));
            CHECK(t.start[i] >= 0 && t.start[i] <= t.end[i]);
            CHECK((size_t)t.end[i] <= strlen(t.text));
            CHECK(t.typed_start[i] >= 0 && t.typed_start[i] <= t.typed_end[i]);
            CHECK((size_t)t.typed_end[i] <= strlen(t.typed));
            free(s2s_token_typed(&t, i));
        }
        free(s2s_detokenize(v, t.ids, t.n));
        free(s2s_join_tokens(v, t.ids, t.n));
    }
    s2s_tokens_free(&t);
}

static bool all_cjk(const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        uint32_t c;
        i += (size_t)s2s_utf8_decode(s + i, n - i, &c);
        if (!s2s_is_cjk(c)) return false;
    }
    return n > 0;
}

// A CJK token alone, when normalising keeps it, is one piece: itself.
static void alone(const s2s_vocab *v, int id) {
    const char *tok = s2s_vocab_token(v, id);
    if (!all_cjk(tok)) return;
    char *norm = NULL;
    s2s_lang lang = s2s_vocab_lang(v);
    if (lang != S2S_LANG_NONE &&
        (s2s_normalize(lang, tok, &norm) != S2S_OK || strcmp(norm, tok) != 0)) {
        free(norm);
        return;
    }
    free(norm);
    s2s_tokens t = {0};
    CHECK(s2s_tokenize(v, tok, &t) == S2S_OK);
    CHECK(t.n == 1 && t.ids[0] == id);
    s2s_tokens_free(&t);
}

static void check_loaded(const s2s_vocab *v) {
    int n = s2s_vocab_size(v);
    CHECK(n >= S2S_NUM_SPECIALS);
    for (int id = 0; id < n; id++) {
        CHECK(s2s_vocab_id(v, s2s_vocab_token(v, id)) == id);
        if (id < S2S_NUM_SPECIALS) CHECK(!strcmp(s2s_vocab_token(v, id), s2s_special_token(id)));
    }
    char *text = s2s_vocab_to_string(v);
    CHECK(text);
    s2s_vocab *again;
    CHECK(s2s_vocab_from_string(&again, text, "again") == S2S_OK);
    CHECK(s2s_vocab_size(again) == n);
    for (int id = 0; id < n; id++)
        CHECK(!strcmp(s2s_vocab_token(again, id), s2s_vocab_token(v, id)));
    s2s_vocab_free(again);

    // Text made of the vocab's own tokens: all of them run together, then
    // back to front with a space every third, then fixed sentences.
    size_t len = strlen(text);
    char *joined = malloc(len + 1), *back = malloc(2 * len + 2);
    CHECK(joined && back);
    size_t a = 0, b = 0;
    for (int id = S2S_NUM_SPECIALS; id < n; id++) {
        const char *tok = s2s_vocab_token(v, id);
        size_t k = strlen(tok);
        memcpy(joined + a, tok, k);
        a += k;
        const char *rt = s2s_vocab_token(v, n - 1 - (id - S2S_NUM_SPECIALS));
        size_t rk = strlen(rt);
        memcpy(back + b, rt, rk);
        b += rk;
        if (id % 3 == 0) back[b++] = ' ';
    }
    joined[a] = back[b] = '\0';
    round_trip(v, joined);
    round_trip(v, back);
    round_trip(v, "我爱吃苹果。The cat sat, didn't it? 看起来很好 <unk> </s>");
    free(joined);
    free(back);
    free(text);
    for (int id = S2S_NUM_SPECIALS; id < n && id < 200; id++) alone(v, id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = s2s_fuzz_file(data, size);
    s2s_vocab *v = NULL;
    s2s_status st = s2s_vocab_load(&v, path);
    if (st == S2S_OK) {
        check_loaded(v);
        s2s_vocab_free(v);
    } else {
        // one line, naming the file
        const char *msg = s2s_last_error();
        CHECK(v == NULL && (st == S2S_ERR_FORMAT || st == S2S_ERR_NOMEM || st == S2S_ERR_IO));
        CHECK(strstr(msg, path) != NULL && strchr(msg, '\n') == NULL);
    }
    return 0;
}
