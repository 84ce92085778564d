// Optimizer pieces (internal): Adam/AdamW, global-norm clipping and the
// learning-rate schedules. Plain loops over the parameter block; each
// function says which reference definition it follows.
#ifndef S2S_TRAIN_OPTIM_H
#define S2S_TRAIN_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "s2s/config.h"  // s2s_schedule (train.schedule)

typedef struct s2s_adam_params {
    float beta1, beta2;   // train.adam_betas
    float eps;            // train.adam_eps
    float weight_decay;   // train.weight_decay; decoupled (AdamW) when > 0
} s2s_adam_params;

// One Adam step at step t (counting from 1) over n parameters, as
// torch.optim.Adam / AdamW (non-amsgrad) compute it:
//   p <- p - lr*wd*p                       (only when wd > 0)
//   m <- b1*m + (1-b1)*g;  v <- b2*v + (1-b2)*g*g
//   p <- p - lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
void s2s_adam_step(float *p, float *m, float *v, const float *g, size_t n, double lr,
                   const s2s_adam_params *a, int64_t t);

// The global L2 norm of g (n floats), summed in double.
double s2s_grad_norm(const float *g, size_t n);

// torch.nn.utils.clip_grad_norm_: when clip > 0 and norm > clip, scales g
// by clip / (norm + 1e-6). Returns the norm before clipping.
double s2s_clip_grad_norm(float *g, size_t n, double clip);

// The learning rate of step t (from 1):
//   constant      lr
//   noam          lr * d_model^-0.5 * min(t^-0.5, t * warmup^-1.5)
//   inverse_sqrt  lr * t/warmup while t < warmup, then lr * sqrt(warmup/t) (fairseq)
//   cosine        lr * t/warmup while t < warmup, then
//                 lr * 0.5 * (1 + cos(pi * (t-warmup)/(max_steps-warmup)))
// warmup 0 counts as 1 for noam and inverse_sqrt (no warmup phase).
double s2s_lr_at(s2s_schedule kind, double lr, int64_t t, int warmup, int d_model,
                 int64_t max_steps);

#endif
