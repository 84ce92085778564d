// The safetensors model loader on arbitrary bytes; a model that loads then
// translates a short sentence, greedy and beam 2, so that whatever weights
// the loader accepts reach the kernels.
#include <stdlib.h>

#include "fuzz.h"
#include "s2s/s2s.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    s2s_set_threads(1);
    return 0;
}

static void translate(s2s_model *m, int beam) {
    s2s_state *st;
    if (s2s_state_new(&st, m) != S2S_OK) return;
    s2s_tokens t = {0};
    if (s2s_tokenize(s2s_model_src_vocab(m), "我爱吃苹果 the cat", &t) == S2S_OK) {
        s2s_decode_params p = s2s_decode_default_params(m);
        if (p.decode.max_len > 8) p.decode.max_len = 8;  // enough steps to use the KV cache
        p.decode.beam_size = beam;
        if (p.decode.n_best > beam) p.decode.n_best = beam;
        p.threads = 1;
        s2s_hypothesis h[2] = {{0}};
        const int *src[1] = {t.ids};
        if (s2s_translate(st, &p, src, &t.n, 1, h) == S2S_OK) {
            free(s2s_detokenize(s2s_model_tgt_vocab(m), h[0].ids, h[0].n));
            for (int i = 0; i < p.decode.n_best; i++) s2s_hypothesis_free(&h[i]);
        }
    }
    s2s_tokens_free(&t);
    s2s_state_free(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    s2s_model *m;
    if (s2s_model_load(&m, s2s_fuzz_file(data, size)) != S2S_OK) return 0;
    translate(m, 1);
    translate(m, 2);
    s2s_model_free(m);
    return 0;
}
