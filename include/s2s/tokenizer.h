// s2s/tokenizer.h — vocabularies, tokenization and detokenization.
//
// A vocab file has one token per line; the line number (from 0) is the id.
// The first four lines are the specials <pad> <unk> <s> </s>.
//
// Tokenizing: text with spaces (English) is lower-cased and split on
// whitespace and punctuation; runs of CJK characters are segmented by
// longest match against the vocab, falling back to single characters.
// Anything not in the vocab becomes <unk>.
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
const char *s2s_special_token(int id);

// Loads a vocab file. Fails (S2S_ERR_FORMAT, message naming the file and
// line) on a missing special, an empty or duplicate token.
s2s_status s2s_vocab_load(s2s_vocab **out, const char *path);
// The same from tokens joined by "\n" (as stored in model files); `name`
// stands for the file in messages.
s2s_status s2s_vocab_from_string(s2s_vocab **out, const char *text, const char *name);
void s2s_vocab_free(s2s_vocab *v);

int s2s_vocab_size(const s2s_vocab *v);
// The token of an id, or NULL when out of range.
const char *s2s_vocab_token(const s2s_vocab *v, int id);
// The id of a token, or S2S_UNK when absent.
int s2s_vocab_id(const s2s_vocab *v, const char *token);
// Tokens joined by "\n". Caller frees.
char *s2s_vocab_to_string(const s2s_vocab *v);

typedef struct s2s_tokens {
    int n;          // number of tokens
    int *ids;       // (n) vocab ids, S2S_UNK for unknown pieces
    char **pieces;  // (n) the text of each token, cut from the normalised input
    int cap;
} s2s_tokens;

// Splits UTF-8 text into tokens (no </s> added), after normalising it by
// the vocab's language (s2s/normalize.h: s2s_vocab_lang, s2s_normalize), so
// pieces are cut from the normalised text. Reuses t's buffers; free with
// s2s_tokens_free. Invalid UTF-8 gives S2S_ERR_INVALID; other failures are
// s2s_normalize's.
s2s_status s2s_tokenize(const s2s_vocab *v, const char *text, s2s_tokens *t);
void s2s_tokens_free(s2s_tokens *t);

// Joins ids into text: a space between two non-CJK words, none before
// punctuation or between CJK tokens, the first letter capitalised.
// Specials are skipped. Caller frees. NULL on out of memory.
char *s2s_detokenize(const s2s_vocab *v, const int *ids, int n);
// Space-separated tokens, as printed by --tokens. Caller frees.
char *s2s_join_tokens(const s2s_vocab *v, const int *ids, int n);

// Splits one line of a source<TAB>target[<TAB>third] file in place: strips
// the line end (len bytes, as getline read them, NULs included), and points
// *target at the target and *third at what follows the second tab (NULL
// when there is none; further tabs stay in it). A NUL byte or a missing tab
// is S2S_ERR_FORMAT, with the message "name:lineno: problem" (the problem
// alone when name is NULL).
s2s_status s2s_tsv_split(char *line, size_t len, const char *name, int lineno, char **target,
                         char **third);
// Ends the column col at its first tab and returns what follows it (the next
// column, further tabs still in it), or NULL when col is NULL or has no tab.
// Reads a fourth column after s2s_tsv_split: fourth = s2s_tsv_next(third).
char *s2s_tsv_next(char *col);

#ifdef __cplusplus
}
#endif
#endif
