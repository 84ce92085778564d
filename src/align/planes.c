// The grid of attention planes shared by the AER and coreference tables.
#include "align/planes.h"

#include <stdlib.h>

#include "core/error.h"

s2s_status s2s_plane_grid_new(void **cells, int layers, int heads, size_t cell_size,
                              const char *what) {
    *cells = NULL;
    if (layers < 1 || heads < 1)
        return s2s_fail(S2S_ERR_INVALID, "%s: %d layers and %d heads (need at least 1)", what,
                        layers, heads);
    *cells = calloc((size_t)(layers + 1) * (size_t)(heads + 1), cell_size);
    return *cells ? S2S_OK : s2s_fail(S2S_ERR_NOMEM, "out of memory for the %s", what);
}

void s2s_plane_best(const void *t, int layers, int heads, s2s_plane_better better, int *layer,
                    int *head) {
    *layer = *head = -1;
    for (int l = -1; l < layers; l++)
        for (int h = -1; h < heads; h++)
            if ((l != -1 || h != -1) && better(t, l, h, *layer, *head)) {
                *layer = l;
                *head = h;
            }
}
