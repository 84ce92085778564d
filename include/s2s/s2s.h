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
//     char *text = s2s_detokenize(s2s_model_tgt_vocab(m), h.ids, h.n);
//
// Every call returns an s2s_status; s2s_last_error() says what went wrong.
#ifndef S2S_S2S_H
#define S2S_S2S_H

#include "s2s/config.h"
#include "s2s/decode.h"
#include "s2s/model.h"
#include "s2s/normalize.h"
#include "s2s/status.h"
#include "s2s/tokenizer.h"
#include "s2s/train.h"
#include "s2s/align.h"

#endif
