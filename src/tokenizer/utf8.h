// Internal: UTF-8 decoding, character classes and case mapping shared by
// vocab.c, tokenizer.c and normalize.c (the decoder also by the layers above, e.g. the
// heatmap's display widths), plus the vocab lookup that tokenizer.c needs
// without a NUL-terminated copy of each candidate.
//
// The character classes are deliberately small tables of ranges rather than
// full Unicode properties: they only have to agree between tokenizing and
// detokenizing, and with the script that builds vocab files.
#ifndef S2S_TOKENIZER_UTF8_H
#define S2S_TOKENIZER_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "s2s/tokenizer.h"

// ---- decoding ----

// Decodes one code point from s[0..n). Returns its length in bytes (1-4), or
// 0 when the bytes are not well-formed UTF-8 (truncated, overlong, a
// surrogate, above U+10FFFF, or a stray continuation byte), leaving
// U+FFFD in *cp.
static inline int s2s_utf8_decode(const char *s, size_t n, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    *cp = 0xFFFD;
    if (n == 0) return 0;
    unsigned char c = u[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;  // continuation byte, 0xC0/0xC1 (always overlong), 0xF5+
    }
    if ((size_t)len > n) return 0;
    for (int i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (u[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

// Writes cp as UTF-8 into out (room for 4 bytes); returns the length.
static inline int s2s_utf8_encode(char *out, uint32_t cp) {
    unsigned char *u = (unsigned char *)out;
    if (cp < 0x80) {
        u[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        u[0] = (unsigned char)(0xC0 | (cp >> 6));
        u[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        u[0] = (unsigned char)(0xE0 | (cp >> 12));
        u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    u[0] = (unsigned char)(0xF0 | (cp >> 18));
    u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    u[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

// Byte offset of the first malformed sequence in s[0..n), or n if none.
static inline size_t s2s_utf8_check(const char *s, size_t n) {
    size_t i = 0;
    uint32_t cp;
    while (i < n) {
        if ((unsigned char)s[i] < 0x80) {  // ASCII fast path
            i++;
            continue;
        }
        int k = s2s_utf8_decode(s + i, n - i, &cp);
        if (k == 0) return i;
        i += (size_t)k;
    }
    return n;
}

// S2S_OK, or S2S_ERR_INVALID with a message naming the first malformed
// byte of s[0..n).
static inline s2s_status s2s_utf8_validate(const char *s, size_t n) {
    size_t bad = s2s_utf8_check(s, n);
    if (bad < n)
        return s2s_fail(S2S_ERR_INVALID, "invalid UTF-8 at byte %zu (0x%02x)", bad,
                        (unsigned char)s[bad]);
    return S2S_OK;
}

// ---- character classes ----

// Separators: ASCII whitespace and controls, Unicode spaces, zero-width
// space and the BOM (which otherwise glue onto the next word invisibly).
static inline bool s2s_is_space(uint32_t c) {
    return c <= 0x20 || c == 0x7F || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200B) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000 || c == 0xFEFF;
}

// CJK punctuation and fullwidth forms: never spaced in output.
static inline bool s2s_is_cjk_punct(uint32_t c) {
    return (c >= 0x3001 && c <= 0x3004) || (c >= 0x3008 && c <= 0x3020) ||
           c == 0x3030 || c == 0x303D || c == 0x30FB ||
           (c >= 0xFE10 && c <= 0xFE19) || (c >= 0xFE30 && c <= 0xFE6B) ||
           (c >= 0xFF01 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20) ||
           (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65);
}

// Every character that is a token on its own (the apostrophe exception is
// handled by the tokenizer, which knows the neighbours).
static inline bool s2s_is_punct(uint32_t c) {
    if (c < 0x80)
        return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) ||
               (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
    return c == 0xA1 || c == 0xA7 || c == 0xAB || c == 0xB6 || c == 0xB7 ||
           c == 0xBB || c == 0xBF || (c >= 0x2010 && c <= 0x2027) ||
           (c >= 0x2030 && c <= 0x205E) || s2s_is_cjk_punct(c);
}

// Characters segmented by longest match rather than by spaces: Han (with
// extension A, the supplementary-plane extensions and compatibility
// ideographs), the ideographic iteration/number marks, kana and Hangul
// syllables.
static inline bool s2s_is_cjk(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x3005 && c <= 0x3007) ||
           (c >= 0x3040 && c <= 0x309F) ||
           (c >= 0x30A0 && c <= 0x30FF && c != 0x30FB) ||
           (c >= 0x31F0 && c <= 0x31FF) || (c >= 0xFF66 && c <= 0xFF9F) ||
           (c >= 0xAC00 && c <= 0xD7AF) || (c >= 0x20000 && c <= 0x2FA1F);
}

// Both kinds of CJK character, for the "no spaces around CJK" rule.
static inline bool s2s_is_cjk_any(uint32_t c) {
    return s2s_is_cjk(c) || s2s_is_cjk_punct(c);
}

// ---- case ----

// Lower case for ASCII, Latin-1, Latin Extended-A, basic Greek and Cyrillic.
// Every mapping keeps or shortens the UTF-8 length, which the tokenizer
// relies on when sizing its piece storage.
static inline uint32_t s2s_to_lower(uint32_t c) {
    if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
    if (c >= 0x100 && c <= 0x17F) {
        if (c == 0x130) return 'i';  // dotted capital I
        if (c == 0x178) return 0xFF;
        if ((c <= 0x137) || (c >= 0x14A && c <= 0x177))
            return (c % 2 == 0) ? c + 1 : c;
        if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E))
            return (c % 2 == 1) ? c + 1 : c;
        return c;
    }
    if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
    return c;
}

// The inverse of s2s_to_lower on the same ranges (used to capitalise).
static inline uint32_t s2s_to_upper(uint32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
    if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
    if (c == 0xFF) return 0x178;
    if (c >= 0x100 && c <= 0x17F) {
        if (c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17F) return c;
        if ((c <= 0x137) || (c >= 0x14A && c <= 0x177))
            return (c % 2 == 1) ? c - 1 : c;
        if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E))
            return (c % 2 == 0) ? c - 1 : c;
        return c;
    }
    if (c == 0x3C2) return 0x3A3;  // final sigma
    if (c >= 0x3B1 && c <= 0x3C9) return c - 32;
    if (c >= 0x430 && c <= 0x44F) return c - 32;
    if (c >= 0x450 && c <= 0x45F) return c - 80;
    return c;
}

// Fullwidth ASCII letters and digits (Ａ, ０) fold to ASCII so that "ＮＬＰ"
// and "NLP" are the same word. Returns c unchanged otherwise.
static inline uint32_t s2s_fold_width(uint32_t c) {
    if ((c >= 0xFF10 && c <= 0xFF19) || (c >= 0xFF21 && c <= 0xFF3A) ||
        (c >= 0xFF41 && c <= 0xFF5A))
        return c - 0xFF00 + 0x20;
    return c;
}

// ---- vocab lookup shared with tokenizer.c (defined in vocab.c) ----

// The id of the token s[0..len), or -1 when absent (s need not be
// NUL-terminated).
int s2s_vocab_find(const s2s_vocab *v, const char *s, size_t len);
// The longest token made only of CJK characters, in code points: the most a
// match inside a CJK run can span (the bound of the old segmenting loop,
// which the tests and fuzz_vocab keep as a reference).
int s2s_vocab_max_cjk_chars(const s2s_vocab *v);
// How many tokens are made only of CJK characters: how s2s_vocab_lang
// tells a Chinese vocab.
int s2s_vocab_cjk_tokens(const s2s_vocab *v);
// The length in bytes of the longest token made only of CJK characters
// that s[0..n) starts with, or 0 when none does (s stops early at a NUL).
// The greedy segmenter calls it at every position, so its cost follows how
// far s goes along tokens (plus a binary search over the CJK tokens where
// they part), never the longest token's length squared.
size_t s2s_vocab_cjk_prefix(const s2s_vocab *v, const char *s, size_t n);

#endif
