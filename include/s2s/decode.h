// s2s/decode.h — translating and scoring with a model.
//
// An s2s_state holds everything a decode writes (activations, KV caches,
// attention maps); make one per thread. Inputs are token ids without </s>
// (the engine appends it to the source and predicts it on the target).
//
//     s2s_state *st;  s2s_state_new(&st, model);
//     s2s_decode_params p = s2s_decode_default_params(model);
//     s2s_hypothesis h[2];
//     s2s_translate(st, &p, src_ids, src_lens, 2, h);
//     ... h[i].ids, h[i].n ...
//     s2s_hypothesis_free(&h[0]);  s2s_hypothesis_free(&h[1]);
#ifndef S2S_DECODE_H
#define S2S_DECODE_H

#include <stdbool.h>
#include <stddef.h>

#include "s2s/model.h"
#include "s2s/normalize.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct s2s_state s2s_state;

S2S_API s2s_status s2s_state_new(s2s_state **out, const s2s_model *m);
S2S_API void s2s_state_free(s2s_state *st);

// Bytes a state takes to translate one sentence of src_len source tokens
// into up to tgt_len target tokens (</s> included) with a beam of `beam`
// (1: greedy or sampling), without attention maps: activations, the
// encoder's output, cross-attention K/V and the decoder's self-attention
// state, which grows with tgt_len in layers that keep every position and
// not in those whose self-attention is local or linear on every head
// (docs/attention.md, "Decoding state"). SIZE_MAX when too large to
// address.
S2S_API size_t s2s_state_bytes_per_sentence(const s2s_model *m, int src_len, int tgt_len, int beam);

typedef struct s2s_decode_params {
    // The decode: section of a config (s2s/config.h: the search, its limits,
    // sampling, the repetition guard, <unk> replacement), beam_size raised
    // to n_best. Its compute_type is the model's, applied when the model is
    // loaded (s2s_model_set_compute_type), not per call.
    s2s_decode_config decode;
    // How this call runs and what it returns besides the hypotheses:
    int max_batch;        // sentences decoded together (sorted by length)
    int threads;          // 0: as s2s_set_threads; a batch splits across threads by sentence
    bool want_attention;  // fill s2s_hypothesis.cross_attn
    bool want_self_attention;  // also self_attn and enc_attn (greedy, sampling, score)
} s2s_decode_params;

// The decode section of the model's config; batches of 32, no attention.
S2S_API s2s_decode_params s2s_decode_default_params(const s2s_model *m);
// The same from any config's decode section. An n_best above beam_size
// raises beam_size to n_best (the one place this rule lives).
S2S_API s2s_decode_params s2s_decode_params_from_config(const s2s_config *cfg);

typedef struct s2s_hypothesis {
    int n;               // tokens in ids, </s> excluded
    int *ids;            // (n)
    float logprob;       // sum of log-probs of ids and the final </s> (if reached)
    float score;         // logprob / n_out^length_penalty (beam search's ranking)
    float *token_logprobs;  // (n_out) log-prob of each output, </s> included
    int n_out;           // n + 1 when </s> was produced, else n
    // With want_attention: cross-attention weights of every decoder layer
    // and head, (layers, heads, n_out, n_src) with n_src = source length
    // + 1 (the source </s>). Row t is the distribution used to predict
    // output t.
    float *cross_attn;
    // With want_self_attention: decoder self-attention (layers, heads,
    // n_out, n_out), row t over the decoder inputs <s>, ids[0..t-1] (zero
    // above the diagonal); encoder self-attention (enc_layers, heads, n_src,
    // n_src) over the source tokens and </s>.
    float *self_attn;
    float *enc_attn;
    int layers, enc_layers, heads, n_src;
    // With replace_unknowns, when ids holds a <unk>: (n) for each t with
    // ids[t] == S2S_UNK the source token (from 0, the source </s> never)
    // with the most attention at that step, else -1. NULL otherwise. Print
    // with s2s_detokenize_replacing (s2s/tokenizer.h).
    int *unk_src;
} s2s_hypothesis;

S2S_API void s2s_hypothesis_free(s2s_hypothesis *h);

// Translates n sentences: greedy, sampling or beam search as p says.
// out has n * p->n_best entries: out[i * n_best + j] is the j-th best
// translation of src[i]. A source longer than the model's max_len - 1
// gives S2S_ERR_INVALID. st is used by the calling thread; with
// p->threads > 1 extra states are made for the other threads.
//
// Non-finite numbers: a NaN log-prob is never chosen (it counts as -inf).
// When a step leaves a sentence no finite log-prob at all, as a model
// with a NaN or Inf weight does, the call fails with S2S_ERR_INVALID
// ("sentence I: no finite log-prob at output T ..."). On any failure every
// entry of out is left empty (zeroed), so out may be freed either way.
S2S_API s2s_status s2s_translate(s2s_state *st, const s2s_decode_params *p, const int *const *src,
                                 const int *src_len, int n, s2s_hypothesis *out);

// Forced decoding: the log-prob of each tgt token and of the final </s>.
// out[i].ids is a copy of tgt[i]; n_out = tgt_len[i] + 1. Batches and
// threads as for s2s_translate; a NaN log-prob fails the same way.
S2S_API s2s_status s2s_score(s2s_state *st, const s2s_decode_params *p, const int *const *src,
                             const int *src_len, const int *const *tgt, const int *tgt_len, int n,
                             s2s_hypothesis *out);

// ---- text in, text out ----
//
// A line of text, which may hold several sentences, translated as `s2s
// translate` and `s2s serve` translate it: split into sentences
// (s2s_split_sentences), each normalised and tokenized (s2s_tokenize),
// the sentences of every line decoded in one s2s_translate call, each
// <unk> printed as the source word it copies (p->replace_unknowns), and
// the sentences' translations joined: without a space when the target
// language is Chinese, with one otherwise.
//
//     s2s_line l;
//     s2s_line_prepare(model, "我爱吃苹果。他明天看书吗？", /*split=*/true, &l);
//     s2s_translate_lines(st, &p, &l, 1);
//     ... l.out[0].text: "I love to eat apples. Will he read books tomorrow?" ...
//     ... l.sentences[i]: each sentence's tokens, hypotheses and attention ...
//     s2s_line_free(&l);
//
// The n-best list of a line of several sentences: its j-th hypothesis is
// its sentences' j-th, joined, scored by the sum of their scores (as
// `s2s translate --n-best` prints it).

// One hypothesis as text.
typedef struct s2s_translation {
    char *text;           // detokenized, each copied <unk> as its source word
    int n;                // target tokens, </s> excluded
    char **tokens;        // (n) vocab tokens, each copied <unk> as its source word
    double score, logprob;  // s2s_hypothesis's (a line's: the sum of its sentences')
} s2s_translation;

// One sentence of a line.
typedef struct s2s_line_sentence {
    s2s_span span;          // its bytes in the line as given
    s2s_tokens src;         // normalised (src.text) and tokenized
    int n_hyps;             // hypotheses, best first: n_best, fewer, or 0 when src.n is 0
    s2s_hypothesis *hyps;   // (n_hyps) as s2s_translate gave them: ids, attention
    s2s_translation *out;   // (n_hyps) the same as text
} s2s_line_sentence;

typedef struct s2s_line {
    int n_sentences;               // >= 1 (an empty line is one empty sentence)
    s2s_line_sentence *sentences;  // (n_sentences) in order
    int n_hyps;                    // 0 when no sentence has a token, else the fewest any has
    s2s_translation *out;          // (n_hyps) the line's: out[j] joins the sentences' j-th;
                                   // its tokens point into the sentences'
    // Input in the model's other language (s2s_line_prepare): the target
    // vocab's language when at least half of the line's words (tokens
    // with a letter, digit or CJK character) are unknown to the source
    // vocab and at least half of those unknown words tokenize with no
    // <unk> in the target vocab; S2S_LANG_NONE otherwise, and always
    // when the two vocabs' languages are not two known, different ones.
    s2s_lang looks_like;
    char *language_warning;  // NULL, or when looks_like is set, e.g. "this looks like
                             // English; the model translates Chinese → English"
    int n_words, n_unknown;  // the line's words, and those unknown to the source vocab
} s2s_line;

// Splits text (UTF-8, one line) into sentences (one, the whole text,
// without split) and tokenizes each with the model's source vocab,
// filling *out (free with s2s_line_free, also after a failure). Nothing
// is decoded yet: the caller may check the sentences first, against the
// model's length (s2s_model_get_config(m)->model.max_len - 1 tokens: a
// longer sentence makes s2s_translate_lines fail; cut it by lowering
// src.n, or refuse it) and for unknown words (s2s_unknown_words).
// It also says whether the line looks like the other language
// (looks_like, language_warning), for the caller to report once instead
// of one unknown word at a time.
// S2S_ERR_INVALID on invalid UTF-8 or a NULL argument; else
// s2s_tokenize's failures.
S2S_API s2s_status s2s_line_prepare(const s2s_model *m, const char *text, bool split,
                                    s2s_line *out);

// Translates the sentences of lines[0..n) (prepared for st's model) in
// one s2s_translate call with p, and fills each sentence's and each
// line's hypotheses (results of an earlier call are replaced). Returns
// s2s_translate's status; on failure no line has hypotheses.
S2S_API s2s_status s2s_translate_lines(s2s_state *st, const s2s_decode_params *p, s2s_line *lines,
                                       int n);

S2S_API void s2s_line_free(s2s_line *l);

// Threads used by matrix products (<= 0: all cores).
S2S_API void s2s_set_threads(int n);

#ifdef __cplusplus
}
#endif
#endif
