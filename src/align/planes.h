// The planes of a model's attention as a grid of per-plane cells, shared by
// the AER table and the coreference table: (layers + 1) x (heads + 1)
// cells, layer and head each S2S_ALIGN_AVG (-1, the mean) or an index.
#ifndef S2S_ALIGN_PLANES_H
#define S2S_ALIGN_PLANES_H

#include <stdbool.h>
#include <stddef.h>

#include "s2s/status.h"

// The cell of (layer, head) in a grid of `heads` heads.
static inline size_t s2s_plane_cell(int heads, int layer, int head) {
    return (size_t)(layer + 1) * (size_t)(heads + 1) + (size_t)(head + 1);
}

// Whether (layer, head) is a plane of the grid (an index or -1 each).
static inline bool s2s_plane_in_range(int layers, int heads, int layer, int head) {
    return layer >= -1 && layer < layers && head >= -1 && head < heads;
}

// Zeroed cells of cell_size bytes for every plane into *cells; `what`
// names the table in messages. S2S_ERR_INVALID when layers or heads < 1,
// S2S_ERR_NOMEM.
s2s_status s2s_plane_grid_new(void **cells, int layers, int heads, size_t cell_size,
                              const char *what);

// Whether plane (l, h) of table t beats plane (bl, bh).
typedef bool (*s2s_plane_better)(const void *t, int l, int h, int bl, int bh);

// The best plane: planes are visited layer avg, 0, 1, ..., and within a
// layer head avg, 0, 1, ...; a later plane wins only when `better`, so the
// plainer average wins a tie.
void s2s_plane_best(const void *t, int layers, int heads, s2s_plane_better better, int *layer,
                    int *head);

#endif
