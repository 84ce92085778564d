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
#ifndef S2S_S2S_H
#define S2S_S2S_H

#include <stddef.h>
#include <stdint.h>

#include "s2s/config.h"
#include "s2s/decode.h"
#include "s2s/io.h"
#include "s2s/model.h"
#include "s2s/normalize.h"
#include "s2s/status.h"
#include "s2s/tokenizer.h"
#include "s2s/train.h"
#include "s2s/align.h"
#include "s2s/probe.h"
#include "s2s/serve.h"

#ifdef __cplusplus
extern "C" {
#endif

// The version of these headers. CMakeLists.txt reads its project version
// from these three lines, so they are the only place it is written.
#define S2S_VERSION_MAJOR 0
#define S2S_VERSION_MINOR 1
#define S2S_VERSION_PATCH 0

#define S2S_STRINGIFY_(x) #x
#define S2S_STRINGIFY(x) S2S_STRINGIFY_(x)
// "MAJOR.MINOR.PATCH"
#define S2S_VERSION                                                          \
    S2S_STRINGIFY(S2S_VERSION_MAJOR) "." S2S_STRINGIFY(S2S_VERSION_MINOR) "." \
    S2S_STRINGIFY(S2S_VERSION_PATCH)

// The version of the library linked in, "MAJOR.MINOR.PATCH": S2S_VERSION as
// the library was built. Compare it with S2S_VERSION to detect a program
// built against other headers. Never NULL.
const char *s2s_version(void);

// "Did you mean": the closest of several candidate names to a mistyped one
// (a config key, a command-line option), by optimal string alignment
// distance (Levenshtein plus adjacent swaps: "hedas" is one edit from
// "heads"), within 1 + len/4 edits (at most 3) of the candidate and fewer
// edits than it has characters:
//
//     s2s_suggest s = s2s_suggest_start(name, strlen(name));
//     for (...) s2s_suggest_offer(&s, candidate);
//     if (s.best) ... "did you mean '%s'?", s.best
typedef struct s2s_suggest {
    const char *name;  // the mistyped name, name[0..n)
    size_t n;
    const char *best;  // the closest candidate so far, or NULL
    int best_d;
} s2s_suggest;

s2s_suggest s2s_suggest_start(const char *name, size_t n);
// Considers cand (NUL-terminated); an earlier candidate wins a tie.
void s2s_suggest_offer(s2s_suggest *s, const char *cand);

// Releases what the library holds for the whole process: the oneDNN engine,
// its cached matmul primitives, and every thread's stream and memory-object
// cache. For leak checkers and for programs that unload the library.
// Preconditions: no other thread is inside a library call; models and
// states may stay alive. Safe to call twice. The library stays usable
// afterwards: the next call that multiplies makes a new engine (and pays
// the primitive creation again).
void s2s_shutdown(void);

// y (M, N) = x (M, K) · w (K, N) + bias (N), all row-major floats: the
// product decoding runs (on oneDNN, with the threads of s2s_set_threads).
// bias may be NULL. For benchmarks and for checking the backend. Returns
// S2S_ERR_INVALID for negative sizes, S2S_ERR_BACKEND when oneDNN fails.
s2s_status s2s_matmul(float *y, const float *x, const float *w, const float *bias, int64_t m,
                      int64_t k, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
