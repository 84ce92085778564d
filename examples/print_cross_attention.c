// Translates one sentence and prints the cross-attention of one decoder
// layer, averaged over heads (a row per target token, a column per source
// token and </s>), then its hard alignment: the source token each target
// token looked at most, from one call, s2s_hard_align.
//
//   print_cross_attention MODEL SENTENCE [LAYER]
//   print_cross_attention models/zh-en.safetensors 我爱吃苹果 1
#include <stdio.h>
#include <stdlib.h>

#include "s2s/s2s.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL SENTENCE [LAYER]\n", argv[0]);
        return 2;
    }
    s2s_model *m;
    s2s_state *st;
    if (s2s_model_load(&m, argv[1]) != S2S_OK || s2s_state_new(&st, m) != S2S_OK) {
        fprintf(stderr, "%s\n", s2s_last_error());
        return 2;
    }
    const s2s_vocab *sv = s2s_model_src_vocab(m), *tv = s2s_model_tgt_vocab(m);
    s2s_tokens t = {0};
    s2s_hypothesis h = {0};
    s2s_decode_params p = s2s_decode_default_params(m);
    p.want_attention = true;
    const int *src[1];
    int rc = 0;
    if (s2s_tokenize(sv, argv[2], &t) != S2S_OK) rc = 2;
    src[0] = t.ids;
    if (rc == 0 && s2s_translate(st, &p, src, &t.n, 1, &h) != S2S_OK) rc = 1;
    if (rc != 0) fprintf(stderr, "%s\n", s2s_last_error());
    int layer = argc > 3 ? atoi(argv[3]) : h.layers - 1;
    if (rc == 0 && (layer < 0 || layer >= h.layers)) {
        fprintf(stderr, "layer must be in 0..%d\n", h.layers - 1);
        rc = 2;
    }
    if (rc == 0) {
        printf("%-12s", "");
        for (int j = 0; j < h.n_src; j++) printf(" %8.8s", j < t.n ? t.pieces[j] : "</s>");
        printf("\n");
        for (int i = 0; i < h.n_out; i++) {
            printf("%-12.12s", i < h.n ? s2s_vocab_token(tv, h.ids[i]) : "</s>");
            for (int j = 0; j < h.n_src; j++) {
                // cross_attn is (layers, heads, n_out, n_src)
                float avg = 0;
                for (int k = 0; k < h.heads; k++)
                    avg += h.cross_attn[(((size_t)layer * h.heads + k) * h.n_out + i) * h.n_src + j];
                printf(" %8.3f", avg / h.heads);
            }
            printf("\n");
        }
    }
    // The hard alignment of the same plane: each token's most attended
    // source token, and those with at least the model's calibrated share
    // of that weight (1 when not calibrated: the largest alone); a token
    // that looks most at </s> stays unaligned (pass no_eos = true to leave
    // </s> out instead).
    s2s_alignment a = {0};
    if (rc == 0 && s2s_hard_align(&a, &h, layer, S2S_ALIGN_AVG, s2s_model_alignment_share(m),
                                  /*no_eos=*/false) != S2S_OK) {
        fprintf(stderr, "%s\n", s2s_last_error());
        rc = 1;
    }
    char *pharaoh = rc == 0 ? s2s_alignment_format(&a) : NULL;
    if (pharaoh) printf("alignment (source-target): %s\n", pharaoh);
    for (int k = 0; k < a.n; k++)
        printf("  %s -> %s\n", s2s_vocab_token(tv, h.ids[a.links[k].tgt]), t.pieces[a.links[k].src]);
    free(pharaoh);
    s2s_alignment_free(&a);
    s2s_tokens_free(&t);
    s2s_hypothesis_free(&h);
    s2s_state_free(st);
    s2s_model_free(m);
    return rc;
}
