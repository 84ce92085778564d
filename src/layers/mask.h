// Which keys each query row of an attention sees (internal): the mask as
// data. An attention's pattern in one layer (config/arch.h: each head's
// kind and span, the causal cut) plus what each batch brings (key
// lengths, the position of the first query) make an s2s_attn_mask.
//
// s2s_attn_mask_sees is the definition, key by key (docs/attention.md),
// from which tests/reference.c computes attention. s2s_attn_mask_keys
// gives a query row of a head the range [lo, hi) of keys that holds all it
// sees, which the softmax and its backward take (ops/ops.h); for every
// kind but strided the range is exactly what it sees, and a strided row
// also hides the keys of its range it does not see with -inf before the
// softmax (s2s_attn_mask_exact). tests/test_attention.c checks that the
// ranges and the definition agree.
#ifndef S2S_LAYERS_MASK_H
#define S2S_LAYERS_MASK_H

#include <stdbool.h>
#include <stdint.h>

#include "config/arch.h"
#include "ops/ops.h"

typedef struct s2s_attn_mask {
    s2s_attn_pattern pattern;  // the layer's, from the network's description
    const int *k_len;          // (B) keys per sentence (key padding); NULL: all Tk
    int64_t q_pos0;            // position of query row 0 (row i sits at q_pos0 + i);
                               // keys sit at 0..Tk-1
} s2s_attn_mask;

// Keys lo..hi-1; empty when lo >= hi (the softmax's s2s_key_span).
typedef s2s_key_span s2s_key_range;

// Keys that query row i of head h of sentence b may see, of tk held: all
// it sees, and when s2s_attn_mask_exact, only those.
s2s_key_range s2s_attn_mask_keys(const s2s_attn_mask *m, int64_t tk, int64_t b, int64_t h,
                                 int64_t i);

// Whether s2s_attn_mask_keys gives head h exactly the keys it sees.
bool s2s_attn_mask_exact(const s2s_attn_mask *m, int64_t h);

// Whether query row i of head h of sentence b sees key j (< tk).
bool s2s_attn_mask_sees(const s2s_attn_mask *m, int64_t tk, int64_t b, int64_t h, int64_t i,
                        int64_t j);

#endif
