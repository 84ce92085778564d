// Attention maps as JSON (map_json.h).
#include "tools/map_json.h"

#include <math.h>
#include <stdlib.h>

#include "config/command.h"

json_t *s2s_json_sel(int x) { return x < 0 ? json_string("avg") : json_integer(x); }

json_t *s2s_json_strings(const char *const *s, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_string(s[i] ? s[i] : ""));
    return a;
}

json_t *s2s_json_links(const s2s_alignment *a) {
    char *t = s2s_alignment_format(a);
    json_t *j = json_string(t ? t : "");
    free(t);
    return j;
}

json_t *s2s_pattern_json(const s2s_head_pattern *p) {
    json_t *o = json_object();
    const char *param = s2s_attn_type_param(p->type);
    json_object_set_new(o, "type", json_string(s2s_attn_type_name(p->type)));
    if (param) json_object_set_new(o, param, json_integer(p->span));
    json_object_set_new(o, "causal", json_boolean(p->causal));
    return o;
}

json_t *s2s_map_json(const char *type, int layer, int head, const char *const *rl, int rows,
                     const char *const *cl, int cols, const float *w) {
    json_t *m = json_object(), *ws = json_array();
    json_object_set_new(m, "type", json_string(type));
    json_object_set_new(m, "layer", s2s_json_sel(layer));
    json_object_set_new(m, "head", s2s_json_sel(head));
    json_object_set_new(m, "rows", s2s_json_strings(rl, rows));
    json_object_set_new(m, "cols", s2s_json_strings(cl, cols));
    for (int r = 0; r < rows; r++) {
        json_t *row = json_array();
        for (int c = 0; c < cols; c++)
            json_array_append_new(row, json_real(round(w[(size_t)r * cols + c] * 1e6) / 1e6));
        json_array_append_new(ws, row);
    }
    json_object_set_new(m, "weights", ws);
    return m;
}
