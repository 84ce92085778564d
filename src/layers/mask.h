// Which keys each query row of an attention sees (internal): the mask as
// data. An attention's pattern (config/arch.h: its kind and parameters)
// plus what each batch brings (key lengths, the position of the first
// query) make an s2s_attn_mask; s2s_attn_mask_keys gives a query row its
// key range [lo, hi), which the softmax and its backward take
// (ops/ops.h). s2s_attn_mask_sees is the definition, key by key, from
// which tests/reference.c computes attention; every kind so far sees
// exactly one range of keys, and tests/test_attention.c checks that the
// range and the definition agree. (A kind that is not one range, a
// stride, would also hide the keys of its range it does not see with
// -inf before the softmax, which gives them no weight.)
#ifndef S2S_LAYERS_MASK_H
#define S2S_LAYERS_MASK_H

#include <stdbool.h>
#include <stdint.h>

#include "config/arch.h"

typedef struct s2s_attn_mask {
    s2s_attn_pattern pattern;  // from the network's description
    const int *k_len;          // (B) keys per sentence (key padding); NULL: all Tk
    int64_t q_pos0;            // position of query row 0 (row i sits at q_pos0 + i);
                               // keys sit at 0..Tk-1
} s2s_attn_mask;

typedef struct s2s_key_range {
    int64_t lo, hi;  // keys lo..hi-1; empty when lo >= hi
} s2s_key_range;

// Keys that query row i of sentence b may see, of tk held.
s2s_key_range s2s_attn_mask_keys(const s2s_attn_mask *m, int64_t tk, int64_t b, int64_t i);

// Whether query row i of sentence b sees key j (< tk).
bool s2s_attn_mask_sees(const s2s_attn_mask *m, int64_t tk, int64_t b, int64_t i, int64_t j);

#endif
