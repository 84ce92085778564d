// s2s/normalize.h — rewriting what a person types into the corpus's spelling.
//
// The shipped models learnt one spelling of each sentence (docs/toy-corpus.md,
// "Text format"); a person types others: ASCII punctuation in Chinese,
// full-width letters, digits, traditional characters, "didnt". Normalising
// maps those onto the corpus's spelling before tokenization. s2s_tokenize
// does it by itself, choosing the rules by the vocab's language, so most
// callers never call this header; `translate --verbose` does, to show the
// rewritten input.
//
//     char *norm;
//     s2s_normalize(S2S_LANG_ZH, "我有2只貓?", &norm);   // "我有两只猫？"
//     free(norm);
//
// The rules (listed in docs/toy-corpus.md, "Normalisation") are idempotent
// and leave every sentence of the corpus unchanged.
#ifndef S2S_NORMALIZE_H
#define S2S_NORMALIZE_H

#include "s2s/status.h"
#include "s2s/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

// Which rules apply. NONE leaves text as it is.
typedef enum s2s_lang {
    S2S_LANG_NONE = 0,
    S2S_LANG_EN,
    S2S_LANG_ZH,
    S2S_LANG_COUNT
} s2s_lang;

// "none", "en", "zh"; "?" out of range.
S2S_API const char *s2s_lang_name(s2s_lang lang);

// The language of the text a vocab was built from: ZH when most of its
// tokens (specials aside) are Chinese words, else EN when it holds "the",
// else NONE (another language, or synthetic tokens). NONE for NULL.
S2S_API s2s_lang s2s_vocab_lang(const s2s_vocab *v);

// Normalises UTF-8 `text` by the rules of `lang` into a new string *out
// (the caller frees it; a copy of text when nothing applies). Chinese uses
// OpenCC's t2s conversion, loaded on first use. Returns S2S_ERR_INVALID on
// invalid UTF-8, a NULL argument or a lang out of range, S2S_ERR_IO when
// OpenCC's data cannot be loaded, S2S_ERR_NOMEM; *out is NULL on failure.
S2S_API s2s_status s2s_normalize(s2s_lang lang, const char *text, char **out);

#ifdef __cplusplus
}
#endif
#endif
