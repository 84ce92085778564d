// safetensors reading and writing (internal).
//
// Layout: 8-byte little-endian header length N, N bytes of JSON header,
// then raw little-endian tensor data. The header maps each tensor name to
// {"dtype":"F32","shape":[...],"data_offsets":[begin,end]} (offsets relative
// to the start of the data) and may hold "__metadata__": {string: string}.
#ifndef S2S_SAFETENSORS_H
#define S2S_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "s2s/status.h"

#define S2S_ST_MAX_DIMS 4

// Element types: F32, and the I8 and BF16 of quantised models
// (docs/model-format.md). The zero value is F32.
typedef enum s2s_st_dtype { S2S_ST_F32, S2S_ST_I8, S2S_ST_BF16, S2S_ST_DTYPE_COUNT } s2s_st_dtype;

typedef struct s2s_st_tensor {
    const char *name;
    int ndim;
    int64_t shape[S2S_ST_MAX_DIMS];
    union {
        const float *data;  // F32: ndim product floats; may be unaligned on read
        const void *raw;    // any dtype: the elements (int8_t, bf16 as uint16_t)
    };
    s2s_st_dtype dtype;
} s2s_st_tensor;

// "F32", "I8" or "BF16".
const char *s2s_st_dtype_name(s2s_st_dtype t);

typedef struct s2s_st_meta {
    const char *key;
    const char *value;
} s2s_st_meta;

// Writes tensors (in the given order) and metadata atomically: a temp file
// beside path, fsync, rename. On failure nothing is left at path or beside it.
s2s_status s2s_st_write(const char *path, const s2s_st_tensor *tensors, int n_tensors,
                        const s2s_st_meta *meta, int n_meta);

typedef struct s2s_st_file s2s_st_file;

// Reads and validates a whole file: header length within the file, the
// header one JSON object ('{' to '}', then only space padding), every
// tensor F32, I8 or BF16 with 1..4 dims, offsets matching its shape, and the tensors
// covering the data section exactly (no overlap, no hole, no trailing
// bytes), as the safetensors reference requires. Messages name the file
// and the problem, with text from the file quoted safely (s2s_quote).
s2s_status s2s_st_open(s2s_st_file **out, const char *path);
void s2s_st_close(s2s_st_file *f);

int s2s_st_count(const s2s_st_file *f);
const s2s_st_tensor *s2s_st_get(const s2s_st_file *f, int i);
// The index (for s2s_st_get) of the tensor of that name, or -1.
int s2s_st_index(const s2s_st_file *f, const char *name);
// NULL when absent.
const s2s_st_tensor *s2s_st_find(const s2s_st_file *f, const char *name);
// NULL when absent.
const char *s2s_st_meta_get(const s2s_st_file *f, const char *key);

#endif
