// The gradient norm of each attention and feed-forward matrix (grad_norms.h).
#include "train/grad_norms.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "train/optim.h"

static bool is_layer_matrix(const s2s_param *p) {
    return p->kind == S2S_PARAM_MATRIX && strstr(p->name, ".layers.") != NULL;
}

s2s_status s2s_grad_norms_init(s2s_grad_norms *g, const s2s_model *m) {
    *g = (s2s_grad_norms){0};
    int n = 0;
    for (int i = 0; i < m->n_tensors; i++) n += is_layer_matrix(&m->tensors[i]);
    size_t k = n > 0 ? (size_t)n : 1;
    g->name = malloc(k * sizeof *g->name);
    g->off = malloc(k * sizeof *g->off);
    g->size = malloc(k * sizeof *g->size);
    g->norm = calloc(k, sizeof *g->norm);
    if (!g->name || !g->off || !g->size || !g->norm) {
        s2s_grad_norms_free(g);
        return s2s_fail(S2S_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < m->n_tensors; i++) {
        const s2s_param *p = &m->tensors[i];
        if (!is_layer_matrix(p)) continue;
        g->name[g->n] = p->name;
        g->off[g->n] = (size_t)(p->data - m->params);
        g->size[g->n] = (size_t)p->shape[0] * (size_t)p->shape[1];
        g->n++;
    }
    return S2S_OK;
}

void s2s_grad_norms_fill(s2s_grad_norms *g, const float *grads) {
    for (int i = 0; i < g->n; i++) g->norm[i] = s2s_grad_norm(grads + g->off[i], g->size[i]);
}

void s2s_grad_norms_free(s2s_grad_norms *g) {
    free(g->name);
    free(g->off);
    free(g->size);
    free(g->norm);
    *g = (s2s_grad_norms){0};
}
