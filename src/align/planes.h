// The planes of a model's attention as a grid of per-plane cells, the
// s2s_plane_table of both probes (planes.c): (layers + 1) x (heads + 1)
// cells, layer and head each S2S_ALIGN_AVG (-1, the mean) or an index.
#ifndef S2S_ALIGN_PLANES_H
#define S2S_ALIGN_PLANES_H

#include <stdbool.h>
#include <stddef.h>

#include "s2s/align.h"

// The cell of (layer, head) in a grid of `heads` heads.
static inline size_t s2s_plane_cell(int heads, int layer, int head) {
    return (size_t)(layer + 1) * (size_t)(heads + 1) + (size_t)(head + 1);
}

// Whether (layer, head) is a plane of the grid (an index or -1 each).
static inline bool s2s_plane_in_range(int layers, int heads, int layer, int head) {
    return layer >= -1 && layer < layers && head >= -1 && head < heads;
}

// Adds one sentence to every plane's counts (the S2S_HEAD_ALIGN and
// S2S_HEAD_COREF sides of s2s_plane_table_add, with its errors).
s2s_status s2s_aer_planes_add(s2s_plane_counts *cells, int layers, int heads, float share,
                              bool no_eos, const s2s_hypothesis *h, const s2s_alignment *gold);
s2s_status s2s_coref_planes_add(s2s_plane_counts *cells, int layers, int heads,
                                const s2s_hypothesis *h, const char *const *tokens,
                                const s2s_alignment *links, const char *where);

#endif
