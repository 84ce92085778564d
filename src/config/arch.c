// The description of the network: an encoder layer is self-attention and
// a feed-forward block; a decoder layer is causal self-attention,
// cross-attention and a feed-forward block.
#include "config/arch.h"

static const s2s_sublayer self_attn = {
    .kind = S2S_SUB_SELF_ATTN, .name = "self_attn", .norm = "norm1",
    .pattern = {.kind = S2S_ATTN_FULL},
};

s2s_arch s2s_arch_make(const s2s_model_config *c) {
    s2s_sublayer causal = self_attn;
    causal.pattern.causal = true;
    return (s2s_arch){
        .enc = {.name = "encoder", .layers = c->encoder_layers, .n_subs = 2,
                .subs = {self_attn, {.kind = S2S_SUB_FFN, .name = "ffn", .norm = "norm2"}}},
        .dec = {.name = "decoder", .layers = c->decoder_layers, .n_subs = 3,
                .subs = {causal,
                         {.kind = S2S_SUB_CROSS_ATTN, .name = "cross_attn", .norm = "norm2",
                          .pattern = {.kind = S2S_ATTN_FULL}},
                         {.kind = S2S_SUB_FFN, .name = "ffn", .norm = "norm3"}}},
    };
}

int s2s_stack_find(const s2s_stack *s, s2s_sub_kind kind) {
    for (int i = 0; i < s->n_subs; i++)
        if (s->subs[i].kind == kind) return i;
    return -1;
}

double s2s_stack_matrix_weights(const s2s_stack *s, double d, double f) {
    double n = 0;
    for (int i = 0; i < s->n_subs; i++)
        n += s2s_sub_is_attention(s->subs[i].kind) ? 4 * d * d : 2 * d * f;
    return n;
}
