// The description of the network: an encoder layer is self-attention and
// a feed-forward block; a decoder layer is causal self-attention,
// cross-attention and a feed-forward block.
#include "config/arch.h"

static uint64_t index_bits(const s2s_index_list *l) {
    if (l->n == 0) return ~(uint64_t)0;
    uint64_t bits = 0;
    for (int i = 0; i < l->n; i++) bits |= (uint64_t)1 << l->v[i];
    return bits;
}

static s2s_sublayer attention(s2s_sub_kind kind, const char *name, const char *norm,
                              const s2s_attention_config *a, bool causal) {
    int span = a->type == S2S_ATTN_LOCAL   ? a->window
               : a->type == S2S_ATTN_BLOCK ? a->block
               : a->type == S2S_ATTN_STRIDED ? a->stride
                                             : 0;
    return (s2s_sublayer){
        .kind = kind, .name = name, .norm = norm,
        .pattern = {.kind = a->type, .span = span, .heads = index_bits(&a->heads),
                    .causal = causal},
        .layers = index_bits(&a->layers),
    };
}

s2s_arch s2s_arch_make(const s2s_model_config *c) {
    const s2s_sublayer ffn2 = {.kind = S2S_SUB_FFN, .name = "ffn", .norm = "norm2"};
    const s2s_sublayer ffn3 = {.kind = S2S_SUB_FFN, .name = "ffn", .norm = "norm3"};
    return (s2s_arch){
        .enc = {.name = "encoder", .layers = c->encoder_layers, .n_subs = 2,
                .subs = {attention(S2S_SUB_SELF_ATTN, "self_attn", "norm1",
                                   &c->encoder_attention, false),
                         ffn2}},
        .dec = {.name = "decoder", .layers = c->decoder_layers, .n_subs = 3,
                .subs = {attention(S2S_SUB_SELF_ATTN, "self_attn", "norm1",
                                   &c->decoder_attention, true),
                         attention(S2S_SUB_CROSS_ATTN, "cross_attn", "norm2",
                                   &c->cross_attention, false),
                         ffn3}},
    };
}

s2s_attn_pattern s2s_sub_pattern(const s2s_sublayer *sub, int l) {
    s2s_attn_pattern p = sub->pattern;
    if (p.kind == S2S_ATTN_FULL || l >= 64 || !(sub->layers >> l & 1))
        p = (s2s_attn_pattern){.kind = S2S_ATTN_FULL, .causal = p.causal};
    return p;
}
int s2s_stack_find(const s2s_stack *s, s2s_sub_kind kind) {
    for (int i = 0; i < s->n_subs; i++)
        if (s->subs[i].kind == kind) return i;
    return -1;
}

const s2s_stack *s2s_arch_map_stack(const s2s_arch *a, s2s_attn_map map, int *sub) {
    const s2s_stack *s = map == S2S_ATTN_MAP_ENC ? &a->enc : &a->dec;
    *sub = s2s_stack_find(s, map == S2S_ATTN_MAP_CROSS ? S2S_SUB_CROSS_ATTN : S2S_SUB_SELF_ATTN);
    return s;
}

const s2s_role s2s_roles[S2S_HEAD_ROLE_COUNT] = {
    [S2S_HEAD_ALIGN] = {S2S_ATTN_MAP_CROSS, "alignment", "train.guided_alignment", "guided",
                        "s2s.alignment"},
    [S2S_HEAD_COREF] = {S2S_ATTN_MAP_ENC, "coreference", "train.guided_coref", "coref",
                        "s2s.coref"},
};

// The three input projections are laid out weight, weight, weight, bias,
// bias, bias, so that the stacked (3D, D) matrix and (3D) bias are
// contiguous.
static const s2s_sub_weight attention_weights[] = {
    {".q_proj.weight", S2S_DIM_D, S2S_DIM_D}, {".k_proj.weight", S2S_DIM_D, S2S_DIM_D},
    {".v_proj.weight", S2S_DIM_D, S2S_DIM_D}, {".q_proj.bias", S2S_DIM_D, S2S_DIM_NONE},
    {".k_proj.bias", S2S_DIM_D, S2S_DIM_NONE}, {".v_proj.bias", S2S_DIM_D, S2S_DIM_NONE},
    {".out_proj.weight", S2S_DIM_D, S2S_DIM_D}, {".out_proj.bias", S2S_DIM_D, S2S_DIM_NONE}};
static const s2s_sub_weight ffn_weights[] = {
    {".ffn.fc1.weight", S2S_DIM_F, S2S_DIM_D}, {".ffn.fc1.bias", S2S_DIM_F, S2S_DIM_NONE},
    {".ffn.fc2.weight", S2S_DIM_D, S2S_DIM_F}, {".ffn.fc2.bias", S2S_DIM_D, S2S_DIM_NONE}};

const s2s_sub_weight *s2s_sub_weight_list(s2s_sub_kind k, int *n) {
    if (s2s_sub_is_attention(k)) {
        *n = (int)(sizeof attention_weights / sizeof attention_weights[0]);
        return attention_weights;
    }
    *n = (int)(sizeof ffn_weights / sizeof ffn_weights[0]);
    return ffn_weights;
}

double s2s_stack_matrix_weights(const s2s_stack *s, double d, double f) {
    double n = 0;
    for (int i = 0; i < s->n_subs; i++) {
        int nw;
        const s2s_sub_weight *w = s2s_sub_weight_list(s->subs[i].kind, &nw);
        for (int j = 0; j < nw; j++)
            if (w[j].cols != S2S_DIM_NONE)
                n += (w[j].rows == S2S_DIM_D ? d : f) * (w[j].cols == S2S_DIM_D ? d : f);
    }
    return n;
}
