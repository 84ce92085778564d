// s2s — Transformer sequence-to-sequence translation in C11 on oneDNN.
//
// Load a model, tokenize, translate, detokenize:
//
//     s2s_model *m;  s2s_model_load(&m, "models/zh-en.safetensors");
//     s2s_tokens t = {0};
//     s2s_tokenize(s2s_model_src_vocab(m), "我爱吃苹果", &t);
//     s2s_state *st;  s2s_state_new(&st, m);
//     s2s_decode_params p = s2s_decode_default_params(m);
//     s2s_hypothesis h;
//     const int *src[1] = {t.ids};
//     s2s_translate(st, &p, src, &t.n, 1, &h);
//     // each <unk> printed as the source word it attends to (replace_unknowns)
//     char *text = s2s_detokenize_replacing(s2s_model_tgt_vocab(m), h.ids, h.n,
//                                           h.unk_src, &t);
//     ...
//
// A line of text, one sentence or several: s2s_line_prepare and
// s2s_translate_lines (s2s/decode.h) split, translate and join it as
// `s2s translate` does.
//     s2s_shutdown();  // optional, at exit: frees oneDNN's engine and caches
//
// Every call returns an s2s_status; s2s_last_error() says what went wrong.
//
// This header includes the API for translating, scoring and aligning:
// config.h, model.h, tokenizer.h, normalize.h, decode.h, align.h,
// status.h and version.h. Training (s2s_train, s2s_evaluate, vocab
// building) is in s2s/train.h, which a program that trains includes
// itself. Only what these headers mark S2S_API is exported from libs2s.
#ifndef S2S_S2S_H
#define S2S_S2S_H

#include <stddef.h>
#include <stdint.h>

#include "s2s/config.h"
#include "s2s/decode.h"
#include "s2s/model.h"
#include "s2s/normalize.h"
#include "s2s/status.h"
#include "s2s/tokenizer.h"
#include "s2s/version.h"
#include "s2s/align.h"
#include "s2s/probe.h"

#ifdef __cplusplus
extern "C" {
#endif

// Releases what the library holds for the whole process: the oneDNN engine,
// its cached matmul primitives, and every thread's stream and memory-object
// cache. For leak checkers and for programs that unload the library.
// Preconditions: no other thread is inside a library call; models and
// states may stay alive. Safe to call twice. The library stays usable
// afterwards: the next call that multiplies makes a new engine (and pays
// the primitive creation again).
S2S_API void s2s_shutdown(void);

// y (M, N) = x (M, K) · w (K, N) + bias (N), all row-major floats: the
// product decoding runs (on oneDNN, with the threads of s2s_set_threads).
// bias may be NULL. For benchmarks and for checking the backend. Returns
// S2S_ERR_INVALID for negative sizes, S2S_ERR_BACKEND when oneDNN fails.
S2S_API s2s_status s2s_matmul(float *y, const float *x, const float *w, const float *bias,
                              int64_t m, int64_t k, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
