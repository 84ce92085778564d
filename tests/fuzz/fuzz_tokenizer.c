// The tokenizer on raw bytes: the input tokenized with the shipped zh and
// en vocabularies and detokenized back; and the input read as a vocabulary
// file, which then tokenizes a fixed sentence and prints every token.
#include <stdlib.h>

#include "fuzz.h"
#include "s2s/tokenizer.h"

static s2s_vocab *zh, *en;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    s2s_fuzz_shipped_vocabs(&zh, &en);
    return 0;
}

static void round_trip(const s2s_vocab *v, const char *text) {
    s2s_tokens t = {0};
    if (s2s_tokenize(v, text, &t) == S2S_OK) {
        for (int i = 0; i < t.n; i++)
            if (t.ids[i] < 0 || t.ids[i] >= s2s_vocab_size(v)) abort();
        free(s2s_detokenize(v, t.ids, t.n));
        free(s2s_join_tokens(v, t.ids, t.n));
    }
    s2s_tokens_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = s2s_fuzz_string(data, size);
    round_trip(zh, text);
    round_trip(en, text);
    s2s_vocab *v;
    if (s2s_vocab_from_string(&v, text, "fuzz.vocab") == S2S_OK) {
        round_trip(v, "我爱吃苹果 , the cat <unk> </s>");
        int n = s2s_vocab_size(v);
        for (int id = 0; id < n; id++)
            if (s2s_vocab_id(v, s2s_vocab_token(v, id)) != id) abort();
        free(s2s_vocab_to_string(v));
        s2s_vocab_free(v);
    }
    free(text);
    return 0;
}
