// Decoding state (internal): every buffer a forward pass writes, each
// sized for the most the passes so far needed of it (a product of their
// sizes, never one pass's batch times another's beam), grown in one block
// when needed and released whole by s2s_state_trim.
#ifndef S2S_DECODING_STATE_H
#define S2S_DECODING_STATE_H

#include <stdatomic.h>

#include "layers/transformer.h"
#include "s2s/decode.h"

// Buffers of the state's two blocks (s2s_state_reserve's table).
enum { S2S_STATE_BUFFERS = 16 };

typedef enum s2s_fold_mode { S2S_FOLD_AUTO, S2S_FOLD_NEVER, S2S_FOLD_ALWAYS } s2s_fold_mode;

// Test hooks (tests/test_decoding.c): the reference paths a test forces and
// the counters it reads. A state from s2s_state_new has none (debug NULL):
// production pays a pointer test. The states translate.c makes for its
// worker threads share their caller's, so a forced path reaches every
// thread and the counters sum every thread's work.
typedef struct s2s_state_debug {
    s2s_fold_mode fold_mode;  // cross-attention folded ahead: S2S_FOLD_AUTO, or forced
    // Greedy and beam search keep finished rows, and beam search runs all
    // K beams at step 0 (no s2s_state_spread).
    bool no_shrink;
    // Every decoder layer keeps the full self-attention cache in steps too
    // (no ring buffers or linear states).
    bool full_self_cache;
    _Atomic int64_t row_steps;     // decoder rows run by greedy and beam steps
    _Atomic int64_t reorder_rows;  // cache positions s2s_state_reorder copied
} s2s_state_debug;

// Dimension letters: B sentences, K sequences per sentence (beams), S
// source rows, T target rows, L decoder layers, D width, H heads, V vocab.
struct s2s_state {
    const s2s_model *m;
    const s2s_decode_weights *w;  // m's decoding copy, as of the last s2s_encode
    // Floats each buffer below has room for, in the order of s2s_state_reserve's
    // table (S2S_STATE_BUFFERS), then the ints of ids and of src_len.
    size_t cap[S2S_STATE_BUFFERS + 2];
    int64_t res_b, res_k, res_t, res_tq;  // the last reservation's sizes (the asserts')

    float *block;        // every buffer below but the caches (s2s_big_alloc)
    size_t block_n;      // floats in block
    float *cache_block;  // self_kv and kv_tmp
    float *x;          // (B*K*Tq or B*S, D) residual stream
    s2s_scratch scratch;
    float *memory;     // (B, S, D) encoder output
    float *cross_kv;   // (L, B, S, 2D)
    s2s_state_debug *debug;  // NULL but in tests
    // A probe's (s2s_probe_equivariance): the encoder's input without the
    // positional encoding, E[ids] * sqrt(D) alone.
    bool no_positions;
    // Whether the last reservation's steps keep the bounded self-attention
    // states (layers/transformer.h, s2s_self_state): steps of one row
    // without self-attention maps, unless debug->full_self_cache.
    bool bounded;
    // cross-attention folded ahead (layers/transformer.h), when it pays
    bool folded;                   // whether the last s2s_encode folded
    s2s_cross_folded *fold;        // (L) views into fold_block
    float *fold_block;
    int64_t fold_cap;              // floats in fold_block
    // Layer l's self-attention state, (B*K, F_l) after the states of the
    // layers before it, with F_l = T*2D (its K/V cache) or, when bounded,
    // s2s_self_state_floats of its s2s_self_state_of (a ring or a linear state).
    float *self_kv;    // (B*K, sum_l F_l)
    float *kv_tmp;     // (B*K, max_l F_l) for reordering states between beams (K > 1)
    // attention maps, allocated only when asked for (s2s_state_reserve)
    float *enc_probs;    // (L_enc, B, H, S, S)
    float *self_probs;   // (L, B*K, H, Tq, t0+Tq) of the last decoder pass
    float *cross_probs;  // (L, B, H, K*Tq, S) of the last decoder pass
    float *logits;     // (B*K*Tq, V)

    int *ids;          // (B*K*Tq or B*S) token ids of the rows being computed
    int *src_len;      // (B) source lengths with </s>
};

// Which attention maps a pass keeps.
enum { S2S_MAPS_CROSS = 1, S2S_MAPS_SELF = 2 };

// Makes room for B sentences of S source rows, each decoded as K
// sequences of up to T target rows, Tq of them in one decoder pass (1 for
// a search's steps, T for forced scoring); with maps, for the attention
// maps too. Steps (Tq = 1) without the self-attention maps keep bounded
// states in the layers that have them (st->bounded): a pass then takes
// one row at positions 0, 1, 2, ... in order. Only what such passes touch is allocated: a search's state
// holds one row of logits per sequence, not T.
// Room that fits (each buffer as large as these sizes need) is kept
// as it is: nothing is allocated or cleared.
s2s_status s2s_state_reserve(s2s_state *st, int64_t B, int64_t K, int64_t S, int64_t T,
                             int64_t Tq, bool maps);
// The same with room for the maps of the S2S_MAPS_* bits in maps only
// (S2S_MAPS_SELF: the encoder's too): what a search that reads the
// cross-attention of its steps needs, without the others' memory.
s2s_status s2s_state_reserve_maps(s2s_state *st, int64_t B, int64_t K, int64_t S, int64_t T,
                                  int64_t Tq, unsigned maps);

// Bytes a fresh state holds after s2s_state_reserve(B, K, S, T, Tq, maps)
// and an encoder pass over B sentences of S rows (with its folded
// cross-attention, when that pays); SIZE_MAX when that is too large to
// address.
size_t s2s_state_bytes_for(const s2s_model *m, int64_t B, int64_t K, int64_t S, int64_t T,
                           int64_t Tq, bool maps);
// Bytes st holds now.
size_t s2s_state_bytes(const s2s_state *st);
// Frees every buffer of st when it holds more than max_bytes, so that one
// outsized batch does not keep its memory: the next reservation then
// allocates what that batch needs. Returns whether it freed them.
bool s2s_state_trim(s2s_state *st, size_t max_bytes);

// Runs the encoder over st->ids (B, S) with st->src_len, fills st->memory
// and every layer's cross-attention K/V (folded too when that pays); with
// maps, st->enc_probs.
s2s_status s2s_encode(s2s_state *st, int64_t B, int64_t S, bool maps);
// Its first part, the encoder stack alone: st->memory (the embedding, the
// layers and the final LayerNorm) and, with maps, st->enc_probs; no
// cross-attention K/V (bench/internal/bench_attention_cost.c times it).
s2s_status s2s_encode_stack(s2s_state *st, int64_t B, int64_t S, bool maps);

// Runs the decoder for rows t0..t0+Tq-1 of each of the B*K sequences
// (K = pos.beams), whose input ids are st->ids (B*K, Tq), and leaves the
// logits (B*K, Tq, V) in st->logits. The self-attention states (st->self_kv,
// with T = T_alloc) must hold positions < t0; pos.bounded is taken from
// st->bounded.
// maps: S2S_MAPS_* bits, which of st->self_probs / cross_probs to fill.
s2s_status s2s_decode_rows(s2s_state *st, int64_t B, int64_t S, s2s_dec_pos pos, unsigned maps);

// Reorders the self-attention states (caches of rows 0..t-1, rings, linear
// states): sequence i takes the state of sequence parent[i] (n_seqs entries, each < n_seqs), as beam
// search needs. Copies only the sequences with parent[i] != i (and, via
// kv_tmp, the sources among them that are overwritten).
void s2s_state_reorder(s2s_state *st, const int *parent, int64_t n_seqs, int64_t t,
                       int64_t t_alloc);

// Turns the self-attention states of one sequence per sentence (caches:
// positions < t of T_alloc), laid out (B, F_l) per layer, into K copies of
// each, laid out (B*K, F_l) per layer: beam search's step 0 runs one beam.
void s2s_state_spread(s2s_state *st, int64_t B, int64_t K, int64_t t, int64_t t_alloc);

// Keeps sentences keep[0..n) (increasing) of the B in the state, each of
// K sequences, as sentences 0..n: the self-attention states of their K
// sequences (caches: positions < t of t_alloc), cross-attention K/V (folded too)
// and source lengths move down in place, so that later passes run on n
// sentences.
void s2s_state_keep(s2s_state *st, const int *keep, int64_t n, int64_t B, int64_t K, int64_t S,
                    int64_t t, int64_t t_alloc);

// Finished sentences leave the state once they are a quarter of its n
// rows (unless st->no_shrink): live[k] is the sentence row k holds,
// done[b] whether sentence b is finished, `remaining` how many are not;
// keep (n) is scratch. Returns the rows left (n when nothing moved).
int s2s_state_drop_done(s2s_state *st, const bool *done, int *live, int *keep, int n,
                        int remaining, int64_t K, int64_t S, int64_t t, int64_t t_alloc);

// The test hooks' reads and counts (s2s_state_debug), for a state with or
// without them.
static inline bool s2s_state_no_shrink(const s2s_state *st) {
    return st->debug && st->debug->no_shrink;
}
static inline void s2s_state_count_rows(s2s_state *st, int64_t n) {
    if (st->debug) atomic_fetch_add_explicit(&st->debug->row_steps, n, memory_order_relaxed);
}

#endif
