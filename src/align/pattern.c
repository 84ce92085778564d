// Each head's attention pattern, as the maps of a hypothesis show it: read
// from the network's description (config/arch.h) and asked of the mask's
// own definition (layers/mask.h), so that what is drawn as hidden is what
// the engine hid.
#include <stdio.h>
#include <string.h>

#include "config/arch.h"
#include "core/error.h"
#include "layers/mask.h"
#include "s2s/align.h"
#include "align/align.h"
#include "config/command.h"

// The sublayer behind map type `map`, and the number of its layers.
static const s2s_sublayer *map_sub(const s2s_arch *a, s2s_attn_map map, int *layers) {
    int k;
    const s2s_stack *s = s2s_arch_map_stack(a, map, &k);
    *layers = s->layers;
    return k < 0 ? NULL : &s->subs[k];
}

s2s_head_pattern s2s_model_head_pattern(const s2s_model *m, s2s_attn_map map, int layer,
                                        int head) {
    const s2s_model_config *mc = &s2s_model_get_config(m)->model;
    s2s_arch a = s2s_arch_make(mc);
    int layers;
    const s2s_sublayer *sub = map_sub(&a, map, &layers);
    s2s_head_pattern out = {.type = S2S_ATTN_FULL, .causal = map == S2S_ATTN_MAP_SELF};
    if (!sub || layer < 0 || layer >= layers || head < 0 || head >= mc->heads) return out;
    s2s_attn_pattern p = s2s_sub_pattern(sub, layer);
    out.type = s2s_pattern_head(&p, head);
    out.span = out.type == S2S_ATTN_FULL || out.type == S2S_ATTN_LINEAR ? 0 : p.span;
    out.causal = p.causal;
    return out;
}

bool s2s_model_attn_varies(const s2s_model *m, s2s_attn_map map) {
    const s2s_model_config *mc = &s2s_model_get_config(m)->model;
    for (int l = 0; l < (map == S2S_ATTN_MAP_ENC ? mc->encoder_layers : mc->decoder_layers); l++)
        for (int h = 0; h < mc->heads; h++)
            if (s2s_model_head_pattern(m, map, l, h).type != S2S_ATTN_FULL) return true;
    return false;
}

bool s2s_head_pattern_sees(const s2s_head_pattern *p, int i, int j) {
    if (i < 0 || j < 0) return false;
    // A masked type without a span is one the config refuses: no key is
    // hidden rather than a division by 0.
    if (p->type != S2S_ATTN_FULL && p->type != S2S_ATTN_LINEAR && p->span < 1) return true;
    // One head (head 0 of a mask whose only head follows p), no padding,
    // query rows from position 0: the maps' own coordinates.
    s2s_attn_mask mask = {
        .pattern = {.kind = p->type, .span = p->span, .heads = 1, .causal = p->causal},
        .k_len = NULL,
        .q_pos0 = 0,
    };
    return s2s_attn_mask_sees(&mask, /*tk=*/(int64_t)j + 1, /*b=*/0, /*h=*/0, i, j);
}

char *s2s_head_pattern_text(const s2s_head_pattern *p, char *buf, size_t n) {
    const char *name = s2s_attn_type_name(p->type), *param = s2s_attn_type_param(p->type);
    if (!n) return buf;
    if (!name)
        snprintf(buf, n, "?");
    else if (param)
        snprintf(buf, n, "%s, %s %d", name, param, p->span);
    else
        snprintf(buf, n, "%s", name);
    return buf;
}

s2s_status s2s_attn_select_seen(bool *out, const s2s_model *m, s2s_attn_map map, int rows,
                                int cols, int layer, int head) {
    const s2s_model_config *mc = &s2s_model_get_config(m)->model;
    int L = map == S2S_ATTN_MAP_ENC ? mc->encoder_layers : mc->decoder_layers, H = mc->heads;
    if (layer < S2S_ALIGN_AVG || layer >= L)
        return s2s_fail(S2S_ERR_INVALID, "layer %d out of range (the model has %d layers: 0-%d)",
                        layer, L, L - 1);
    if (head < S2S_ALIGN_AVG || head >= H)
        return s2s_fail(S2S_ERR_INVALID, "head %d out of range (the model has %d heads: 0-%d)",
                        head, H, H - 1);
    memset(out, 0, (size_t)rows * (size_t)cols * sizeof *out);
    for (int l = 0; l < L; l++) {
        if (layer >= 0 && l != layer) continue;
        for (int h = 0; h < H; h++) {
            if (head >= 0 && h != head) continue;
            s2s_head_pattern p = s2s_model_head_pattern(m, map, l, h);
            for (int i = 0; i < rows; i++)
                for (int j = 0; j < cols; j++)
                    out[(size_t)i * cols + j] |= s2s_head_pattern_sees(&p, i, j);
        }
    }
    return S2S_OK;
}
