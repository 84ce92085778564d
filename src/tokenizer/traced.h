// Normalising with a trace back to the typed text (internal to the
// tokenizer): what lets s2s_tokens name each token as it was typed.
#ifndef S2S_TOKENIZER_TRACED_H
#define S2S_TOKENIZER_TRACED_H

#include "s2s/normalize.h"

// s2s_normalize, and with origin non-NULL, *origin (strlen(*out) entries,
// the caller frees) gives for each byte of *out the bytes of text it was
// written for: [start, end), empty for what normalising added (a question
// mark). *origin is NULL when OpenCC's conversion changed the number of
// characters, whose offsets it does not keep.
s2s_status s2s_normalize_traced(s2s_lang lang, const char *text, char **out, s2s_span **origin);

#endif
