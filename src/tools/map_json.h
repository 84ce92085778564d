// Attention maps as JSON, the one shape that `s2s align --format json`,
// `s2s probe` and the server's /v1/align reply share (a tool of the
// command, not the library's API: src/tools/).
#ifndef S2S_TOOLS_MAP_JSON_H
#define S2S_TOOLS_MAP_JSON_H

#include <jansson.h>

#include "align/align.h"

// A layer or head index, or "avg" for -1 (the average).
json_t *s2s_json_sel(int x);

// Strings as a JSON array (NULL gives "").
json_t *s2s_json_strings(const char *const *s, int n);

// The pattern a head runs: {"type": "local", "window": 3, "causal": false}
// (the parameter's key is the type's: window, block or stride; full and
// linear have none).
json_t *s2s_pattern_json(const s2s_head_pattern *p);

// The Pharaoh text of a as a JSON string.
json_t *s2s_json_links(const s2s_alignment *a);

// One map: {"type", "layer", "head", "rows", "cols", "weights"}, the rows x
// cols weights w rounded to 6 decimals; the caller adds its pattern(s).
json_t *s2s_map_json(const char *type, int layer, int head, const char *const *rl, int rows,
                     const char *const *cl, int cols, const float *w);

#endif
