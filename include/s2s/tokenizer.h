// s2s/tokenizer.h — vocabularies, tokenization and detokenization.
//
// A vocab file has one token per line; the line number (from 0) is the id.
// The first four lines are the specials <pad> <unk> <s> </s>.
//
// Tokenizing: text with spaces (English) is lower-cased and split on
// whitespace and punctuation; runs of CJK characters are segmented by
// longest match against the vocab, falling back to single characters.
// Anything not in the vocab becomes <unk>: an English word each, and a
// run of Chinese characters where no vocab entry starts becomes ONE <unk>
// (巧克力 is one token), so that s2s_detokenize_replacing can copy the
// whole word back; against a vocab of the specials alone (as `vocab build`
// counts with) every character stays a piece of its own.
//
//     s2s_vocab *v;  s2s_tokens t = {0};
//     s2s_vocab_load(&v, "vocab/en.txt");
//     s2s_tokenize(v, "The cat sat.", &t);      // the cat sat .
//     char *s = s2s_detokenize(v, t.ids, t.n);  // "The cat sat."
#ifndef S2S_TOKENIZER_H
#define S2S_TOKENIZER_H

#include <stdbool.h>

#include "s2s/status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { S2S_PAD = 0, S2S_UNK = 1, S2S_BOS = 2, S2S_EOS = 3, S2S_NUM_SPECIALS = 4 };

typedef struct s2s_vocab s2s_vocab;

// The text of a special id: "<pad>", "<unk>", "<s>", "</s>" for S2S_PAD ..
// S2S_EOS (the first four lines of every vocab); NULL for any other id.
S2S_API const char *s2s_special_token(int id);

// Loads a vocab file. Fails (S2S_ERR_FORMAT, message naming the file and
// line) on a missing special, an empty or duplicate token.
S2S_API s2s_status s2s_vocab_load(s2s_vocab **out, const char *path);
// The same from tokens joined by "\n" (as stored in model files); `name`
// stands for the file in messages.
S2S_API s2s_status s2s_vocab_from_string(s2s_vocab **out, const char *text, const char *name);
S2S_API void s2s_vocab_free(s2s_vocab *v);

S2S_API int s2s_vocab_size(const s2s_vocab *v);
// The token of an id, or NULL when out of range.
S2S_API const char *s2s_vocab_token(const s2s_vocab *v, int id);
// The id of a token, or S2S_UNK when absent.
S2S_API int s2s_vocab_id(const s2s_vocab *v, const char *token);
// Tokens joined by "\n". Caller frees.
S2S_API char *s2s_vocab_to_string(const s2s_vocab *v);

typedef struct s2s_tokens {
    int n;          // number of tokens
    int *ids;       // (n) vocab ids, S2S_UNK for unknown pieces
    char **pieces;  // (n) the text of each token, cut from the normalised input
    int cap;
    // The normalised input, and each token's bytes in it: token j is
    // text[start[j] .. end[j]), as typed but for normalisation (case kept:
    // "Zebra" where pieces[j] is "zebra").
    char *text;
    int *start, *end;  // (n)
    // The input as typed, and the bytes of it each token stands for:
    // typed[typed_start[j] .. typed_end[j]) ("!" where text has "！",
    // "didnt" for the tokens of "didn't"); an empty span for a token that
    // normalising added (a question mark) or, rarely, for every token when
    // the traditional-to-simplified step changed the number of characters.
    char *typed;
    int *typed_start, *typed_end;  // (n)
} s2s_tokens;

// Splits UTF-8 text into tokens (no </s> added), after normalising it by
// the vocab's language (s2s/normalize.h: s2s_vocab_lang, s2s_normalize), so
// pieces are cut from the normalised text. Reuses t's buffers; free with
// s2s_tokens_free. Invalid UTF-8 gives S2S_ERR_INVALID; other failures are
// s2s_normalize's.
S2S_API s2s_status s2s_tokenize(const s2s_vocab *v, const char *text, s2s_tokens *t);
S2S_API void s2s_tokens_free(s2s_tokens *t);

// Joins ids into text: a space between two non-CJK words, none before
// punctuation or between CJK tokens, the first letter capitalised.
// Specials are skipped. Caller frees. NULL on out of memory.
S2S_API char *s2s_detokenize(const s2s_vocab *v, const int *ids, int n);
// Space-separated tokens, as printed by --tokens. Caller frees.
S2S_API char *s2s_join_tokens(const s2s_vocab *v, const int *ids, int n);

// The same two, printing each ids[t] == S2S_UNK with unk_src[t] >= 0 as
// source token unk_src[t] of src, as typed but normalised (s2s_token_text): the
// s2s_hypothesis.unk_src of a decode with replace_unknowns, and the
// tokens of its source. A copied word is spaced as a word of the target
// ("I want to eat 巧克力."), never capitalised. unk_src NULL: as above.
S2S_API char *s2s_detokenize_replacing(const s2s_vocab *v, const int *ids, int n,
                                       const int *unk_src, const s2s_tokens *src);
S2S_API char *s2s_join_tokens_replacing(const s2s_vocab *v, const int *ids, int n,
                                        const int *unk_src, const s2s_tokens *src);

// Token j of t as normalised (its span of t->text), or NULL when j is out
// of range or out of memory. Caller frees. The words a decode copies.
S2S_API char *s2s_token_text(const s2s_tokens *t, int j);
// Token j of t as the user typed it (its span of t->typed; the normalised
// text when that span is empty), or NULL as above: the words to name in a
// message about the input. Caller frees.
S2S_API char *s2s_token_typed(const s2s_tokens *t, int j);
// The tokens of t outside the vocab (ids S2S_UNK): writes the first cap
// indexes to which (may be NULL) and returns how many there are.
S2S_API int s2s_unknown_words(const s2s_tokens *t, int *which, int cap);

// Byte range [start, end) of a text.
typedef struct s2s_span {
    size_t start, end;
} s2s_span;

// Splits a line into sentences, so that a long line can be translated
// sentence by sentence. A sentence ends after a run of 。！？ or ASCII
// . ! ? (and any closing quotes or brackets after it) when more text
// follows; spaces between sentences belong to neither. An ASCII mark ends
// one only before a space or a Chinese character (3.5, a.m. and
// www.x.org stay whole), and a single ASCII full stop not before a
// lower-case letter nor after an abbreviation (one letter, as in U.S. or
// J. Smith; Mr Mrs Ms Dr Prof St Jr Sr vs etc Mt Fig approx). A line with
// no such boundary is one sentence, the empty line one empty sentence.
// *out (caller frees) gets *n >= 1 spans in order. S2S_ERR_INVALID on
// invalid UTF-8 or NULL text.
S2S_API s2s_status s2s_split_sentences(const char *text, s2s_span **out, int *n);

#ifdef __cplusplus
}
#endif
#endif
