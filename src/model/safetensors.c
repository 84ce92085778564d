// safetensors reading and writing.
//
// Reading loads the whole file: the header into a temporary buffer parsed by
// jansson, the data section into its own malloc'd block so that tensor data
// starts at an aligned address whenever its offset is a multiple of 4 (always
// true for files this module writes). Every size read from the file is
// checked for overflow before it is used: the file may be hostile.
#include "model/safetensors.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/checked.h"
#include "core/error.h"
#include "core/safe_write.h"
#include "core/util.h"

// Tensor data is copied to and from the file as raw bytes, so the host must
// store floats as little-endian IEEE 754 binary32, as the format does.
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "safetensors data is little-endian; this host is not");
#else
#error "cannot determine the byte order of this host"
#endif
_Static_assert(sizeof(float) == 4, "safetensors F32 needs a 4-byte float");

// A real header is a few kB per hundred tensors; anything larger than this is
// a corrupt length field, and believing it would mean a huge allocation.
#define S2S_ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000)

#define S2S_ST_META_KEY "__metadata__"

struct s2s_st_file {
    int n_tensors;
    s2s_st_tensor *tensors;  // (n_tensors), in header order
    int n_meta;
    s2s_st_meta *meta;       // (n_meta), in header order
    char *strings;           // one block holding every name, key and value
    unsigned char *data;     // the data section; tensors point into it
    void *map;               // the whole file mapped read-only (data points into
    size_t map_size;         // it), or NULL when data was read into a malloc'd block
    const s2s_st_tensor **by_name;  // (n_tensors) sorted by name, for s2s_st_index
};

// ---- helpers ----

static const char *const dtype_names[] = {
    [S2S_ST_F32] = "F32", [S2S_ST_I8] = "I8", [S2S_ST_BF16] = "BF16"};
static const int dtype_sizes[] = {[S2S_ST_F32] = 4, [S2S_ST_I8] = 1, [S2S_ST_BF16] = 2};

const char *s2s_st_dtype_name(s2s_st_dtype t) {
    return (unsigned)t < S2S_ST_DTYPE_COUNT ? dtype_names[t] : "?";
}

// Bytes of a tensor of this type and shape; false when they do not fit in size_t.
static bool tensor_bytes(uint64_t *out, s2s_st_dtype dtype, const int64_t *shape, int ndim) {
    int64_t factors[S2S_ST_MAX_DIMS + 1] = {dtype_sizes[dtype]};
    memcpy(factors + 1, shape, (size_t)ndim * sizeof *shape);
    size_t n = s2s_size_prod(ndim + 1, factors);
    *out = n;
    return n != SIZE_MAX;
}

// Quotes a name or value from the file in a one-line message (s2s_quote).
#define QUOTED(buf, s) s2s_quote(buf, sizeof buf, s, strlen(s))

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

// The first string that occurs twice in strs[0..n), or NULL. Sorts a copy so
// that a model with thousands of tensors is not checked in quadratic time.
static s2s_status find_duplicate(const char **dup, const char *const *strs, int n) {
    *dup = NULL;
    if (n < 2) return S2S_OK;
    const char **sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted) return S2S_ERR_NOMEM;
    memcpy(sorted, strs, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_str_ptr);
    for (int i = 1; i < n && !*dup; i++) {
        if (strcmp(sorted[i - 1], sorted[i]) == 0) *dup = sorted[i];
    }
    free(sorted);
    return S2S_OK;
}

// ---- writing ----

static s2s_status validate_write_args(const char *path, const s2s_st_tensor *tensors,
                                      int n_tensors, const s2s_st_meta *meta, int n_meta) {
    if (!path || !*path) return s2s_fail(S2S_ERR_INVALID, "safetensors write: empty path");
    if (n_tensors < 0 || (n_tensors > 0 && !tensors))
        return s2s_fail(S2S_ERR_INVALID, "%s: invalid tensor list (%d tensors)", path, n_tensors);
    if (n_meta < 0 || (n_meta > 0 && !meta))
        return s2s_fail(S2S_ERR_INVALID, "%s: invalid metadata list (%d entries)", path, n_meta);

    for (int i = 0; i < n_tensors; i++) {
        const s2s_st_tensor *t = &tensors[i];
        if (!t->name) return s2s_fail(S2S_ERR_INVALID, "%s: tensor %d has no name", path, i);
        if (strcmp(t->name, S2S_ST_META_KEY) == 0)
            return s2s_fail(S2S_ERR_INVALID, "%s: '%s' is reserved and cannot name a tensor",
                            path, S2S_ST_META_KEY);
        if (t->ndim < 1 || t->ndim > S2S_ST_MAX_DIMS)
            return s2s_fail(S2S_ERR_INVALID, "%s: tensor '%s' has %d dims; s2s writes 1..%d",
                            path, t->name, t->ndim, S2S_ST_MAX_DIMS);
        if ((unsigned)t->dtype >= S2S_ST_DTYPE_COUNT)
            return s2s_fail(S2S_ERR_INVALID, "%s: tensor '%s' has no dtype %d", path, t->name,
                            (int)t->dtype);
        uint64_t bytes;
        if (!tensor_bytes(&bytes, t->dtype, t->shape, t->ndim))
            return s2s_fail(S2S_ERR_INVALID, "%s: tensor '%s' has a negative or too large shape",
                            path, t->name);
        if (bytes > 0 && !t->data)
            return s2s_fail(S2S_ERR_INVALID, "%s: tensor '%s' has no data", path, t->name);
    }
    for (int i = 0; i < n_meta; i++) {
        if (!meta[i].key || !meta[i].value)
            return s2s_fail(S2S_ERR_INVALID, "%s: metadata entry %d has no key or value", path, i);
    }

    const char *dup;
    int n_names = n_tensors > n_meta ? n_tensors : n_meta;
    const char **names = malloc((size_t)(n_names > 0 ? n_names : 1) * sizeof *names);
    if (!names) return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    for (int i = 0; i < n_tensors; i++) names[i] = tensors[i].name;
    s2s_status st = find_duplicate(&dup, names, n_tensors);
    if (st == S2S_OK && dup) {
        st = s2s_fail(S2S_ERR_INVALID, "%s: duplicate tensor name '%s'", path, dup);
    } else if (st == S2S_OK) {
        for (int i = 0; i < n_meta; i++) names[i] = meta[i].key;
        st = find_duplicate(&dup, names, n_meta);
        if (st == S2S_OK && dup)
            st = s2s_fail(S2S_ERR_INVALID, "%s: duplicate metadata key '%s'", path, dup);
    }
    free(names);
    if (st == S2S_ERR_NOMEM) return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    return st;
}

// The JSON header, unpadded; *out is malloc'd (jansson's allocator is malloc).
static s2s_status build_header(char **out, const char *path, const s2s_st_tensor *tensors,
                               int n_tensors, const s2s_st_meta *meta, int n_meta) {
    *out = NULL;
    json_t *root = json_object();
    if (!root) return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);

    // json_string() refuses invalid UTF-8, which the format forbids, so a NULL
    // below is either that or out of memory; UTF-8 is the likelier cause.
    s2s_status st = S2S_OK;
    if (n_meta > 0) {
        json_t *m = json_object();
        if (!m || json_object_set_new(root, S2S_ST_META_KEY, m) != 0) {
            st = s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
            goto done;
        }
        for (int i = 0; i < n_meta; i++) {
            json_t *v = json_string(meta[i].value);
            if (!v || json_object_set_new(m, meta[i].key, v) != 0) {
                st = s2s_fail(S2S_ERR_INVALID, "%s: metadata '%s' is not valid UTF-8", path,
                              meta[i].key);
                goto done;
            }
        }
    }

    uint64_t offset = 0;
    for (int i = 0; i < n_tensors; i++) {
        const s2s_st_tensor *t = &tensors[i];
        uint64_t bytes;
        S2S_ASSERT(tensor_bytes(&bytes, t->dtype, t->shape, t->ndim));  // checked by validate
        if (bytes > (uint64_t)INT64_MAX - offset) {
            st = s2s_fail(S2S_ERR_INVALID, "%s: tensors total more than 2^63 bytes", path);
            goto done;
        }
        json_t *shape = json_array();
        bool ok = shape != NULL;
        for (int d = 0; d < t->ndim && ok; d++)
            ok = json_array_append_new(shape, json_integer((json_int_t)t->shape[d])) == 0;
        // "o" steals shape, also when json_pack fails.
        json_t *entry = NULL;
        if (ok)
            entry = json_pack("{s:s, s:o, s:[I,I]}", "dtype", dtype_names[t->dtype], "shape", shape,
                              "data_offsets", (json_int_t)offset, (json_int_t)(offset + bytes));
        else
            json_decref(shape);
        if (!entry) {
            st = s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
            goto done;
        }
        // set_new takes entry even on failure; the only failure besides out of
        // memory is a name that is not UTF-8.
        if (json_object_set_new(root, t->name, entry) != 0) {
            st = s2s_fail(S2S_ERR_INVALID, "%s: tensor name '%s' is not valid UTF-8", path,
                          t->name);
            goto done;
        }
        offset += bytes;
    }

    // Insertion order is kept by jansson >= 2.8, so tensors appear in the
    // header in the same order as their data.
    *out = json_dumps(root, JSON_COMPACT);
    if (!*out) st = s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
done:
    json_decref(root);
    return st;
}

s2s_status s2s_st_write(const char *path, const s2s_st_tensor *tensors, int n_tensors,
                        const s2s_st_meta *meta, int n_meta) {
    S2S_TRY(validate_write_args(path, tensors, n_tensors, meta, n_meta));

    char *header;
    S2S_TRY(build_header(&header, path, tensors, n_tensors, meta, n_meta));

    // Spaces after the JSON (allowed by the format) put the data section at a
    // multiple of 8 bytes, so mmap'd or page-aligned readers get aligned floats.
    size_t json_len = strlen(header);
    size_t pad = (8 - json_len % 8) % 8;
    uint64_t n = (uint64_t)(json_len + pad);
    unsigned char len_le[8];
    for (int i = 0; i < 8; i++) len_le[i] = (unsigned char)(n >> (8 * i));
    static const char spaces[8] = "        ";

    s2s_safe_file f;
    s2s_status st = s2s_safe_open(&f, path);
    if (st != S2S_OK) {
        free(header);
        return st;
    }
    s2s_safe_write(&f, len_le, 8);
    s2s_safe_write(&f, header, json_len);
    s2s_safe_write(&f, spaces, pad);
    free(header);
    for (int i = 0; i < n_tensors; i++) {
        uint64_t bytes;
        S2S_ASSERT(tensor_bytes(&bytes, tensors[i].dtype, tensors[i].shape, tensors[i].ndim));
        if (!s2s_safe_write(&f, tensors[i].raw, (size_t)bytes)) break;
    }
    return s2s_safe_commit(&f);
}

// ---- reading ----

// Reads the 8-byte length and the header; leaves fp at the data section.
static s2s_status read_header(char **out, uint64_t *header_len, FILE *fp, const char *path,
                              uint64_t file_size) {
    *out = NULL;
    if (file_size < 8)
        return s2s_fail(S2S_ERR_FORMAT, "%s: truncated: %llu bytes, not a safetensors file",
                        path, (unsigned long long)file_size);
    unsigned char len_le[8];
    if (fread(len_le, 1, 8, fp) != 8)
        return s2s_fail(S2S_ERR_IO, "%s: cannot read: %s", path,
                        ferror(fp) ? strerror(errno) : "unexpected end of file");
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | len_le[i];
    if (n > S2S_ST_MAX_HEADER)
        return s2s_fail(S2S_ERR_FORMAT,
                        "%s: not a safetensors file (its first 8 bytes, read as the header "
                        "length, give %llu, over the 100 MB limit)", path, (unsigned long long)n);
    if (n > file_size - 8)
        return s2s_fail(S2S_ERR_FORMAT,
                        "%s: truncated: header length %llu but only %llu bytes follow it", path,
                        (unsigned long long)n, (unsigned long long)(file_size - 8));
    char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf) return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory for the header", path);
    if (fread(buf, 1, (size_t)n, fp) != (size_t)n) {
        free(buf);
        return s2s_fail(S2S_ERR_IO, "%s: cannot read: %s", path,
                        ferror(fp) ? strerror(errno) : "unexpected end of file");
    }
    *out = buf;
    *header_len = n;
    return S2S_OK;
}

// A tensor's place in the data section, for the overlap check.
typedef struct {
    uint64_t begin, end;
    int index;
} span;

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

// Reads a non-negative JSON integer.
static bool get_u64(uint64_t *out, const json_t *v) {
    if (!json_is_integer(v) || json_integer_value(v) < 0) return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}

// Checks one tensor entry and fills t (except name and data) and sp.
static s2s_status parse_tensor(s2s_st_tensor *t, span *sp, const char *path, const char *name,
                               const json_t *entry, uint64_t data_size) {
    if (!json_is_object(entry))
        return s2s_fail(S2S_ERR_FORMAT, "%s: tensor '%s' is not a JSON object", path, name);
    const json_t *dtype = json_object_get(entry, "dtype");
    const json_t *shape = json_object_get(entry, "shape");
    const json_t *offs = json_object_get(entry, "data_offsets");
    if (!dtype || !shape || !offs)
        return s2s_fail(S2S_ERR_FORMAT, "%s: tensor '%s' lacks '%s'", path, name,
                        !dtype ? "dtype" : !shape ? "shape" : "data_offsets");
    if (!json_is_string(dtype))
        return s2s_fail(S2S_ERR_FORMAT, "%s: tensor '%s' has a dtype that is not a string",
                        path, name);
    t->dtype = S2S_ST_F32;
    while (t->dtype < S2S_ST_DTYPE_COUNT &&
           strcmp(json_string_value(dtype), dtype_names[t->dtype]) != 0)
        t->dtype++;
    if (t->dtype == S2S_ST_DTYPE_COUNT) {
        char d[S2S_QUOTE_SIZE];
        return s2s_fail(S2S_ERR_FORMAT, "%s: tensor '%s' has dtype %s; s2s reads F32, I8 and BF16",
                        path, name, QUOTED(d, json_string_value(dtype)));
    }
    if (!json_is_array(shape))
        return s2s_fail(S2S_ERR_FORMAT, "%s: tensor '%s' has a shape that is not an array",
                        path, name);
    size_t ndim = json_array_size(shape);
    if (ndim < 1 || ndim > S2S_ST_MAX_DIMS)
        return s2s_fail(S2S_ERR_FORMAT, "%s: tensor '%s' has %zu dims; s2s reads 1..%d", path,
                        name, ndim, S2S_ST_MAX_DIMS);
    t->ndim = (int)ndim;
    for (size_t d = 0; d < ndim; d++) {
        uint64_t dim;
        if (!get_u64(&dim, json_array_get(shape, d)))
            return s2s_fail(S2S_ERR_FORMAT,
                            "%s: tensor '%s' has a shape entry that is not a non-negative integer",
                            path, name);
        t->shape[d] = (int64_t)dim;  // fits: it came from a non-negative json_int_t
    }
    uint64_t bytes;
    if (!tensor_bytes(&bytes, t->dtype, t->shape, t->ndim))
        return s2s_fail(S2S_ERR_FORMAT, "%s: tensor '%s' has a shape too large to address",
                        path, name);

    uint64_t begin, end;
    if (!json_is_array(offs) || json_array_size(offs) != 2 ||
        !get_u64(&begin, json_array_get(offs, 0)) || !get_u64(&end, json_array_get(offs, 1)))
        return s2s_fail(S2S_ERR_FORMAT,
                        "%s: tensor '%s' has data_offsets that are not two non-negative integers",
                        path, name);
    if (begin > end)
        return s2s_fail(S2S_ERR_FORMAT, "%s: tensor '%s' has data_offsets [%llu, %llu] reversed",
                        path, name, (unsigned long long)begin, (unsigned long long)end);
    if (end > data_size)
        return s2s_fail(S2S_ERR_FORMAT,
                        "%s: truncated: tensor '%s' needs bytes %llu..%llu of the data but the "
                        "file has %llu",
                        path, name, (unsigned long long)begin, (unsigned long long)end,
                        (unsigned long long)data_size);
    if (end - begin != bytes)
        return s2s_fail(S2S_ERR_FORMAT,
                        "%s: tensor '%s' has %llu data bytes but its shape needs %llu", path,
                        name, (unsigned long long)(end - begin), (unsigned long long)bytes);
    sp->begin = begin;
    sp->end = end;
    return S2S_OK;
}

// The tensors must cover the data section exactly, back to back from its
// first byte to its last, as the safetensors reference requires: a hole or
// trailing bytes mean offsets that are off (a header length pointing into
// the JSON's padding shifts every tensor), and bytes that two tensors share
// mean one of them is wrong. Empty tensors sit between two others.
static s2s_status check_coverage(const char *path, span *spans, int n,
                                 const s2s_st_tensor *tensors, uint64_t data_size) {
    qsort(spans, (size_t)n, sizeof *spans, cmp_span);
    uint64_t at = 0;            // the end of the data covered so far
    const span *last = NULL;    // the span that ends there
    char a[S2S_QUOTE_SIZE], b[S2S_QUOTE_SIZE];
    for (int i = 0; i < n; i++) {
        const span *sp = &spans[i];
        if (sp->begin < at)
            return s2s_fail(S2S_ERR_FORMAT,
                            "%s: tensors '%s' (bytes %llu..%llu) and '%s' (bytes %llu..%llu) "
                            "overlap",
                            path, QUOTED(a, tensors[last->index].name),
                            (unsigned long long)last->begin, (unsigned long long)last->end,
                            QUOTED(b, tensors[sp->index].name), (unsigned long long)sp->begin,
                            (unsigned long long)sp->end);
        if (sp->begin > at)
            return s2s_fail(S2S_ERR_FORMAT,
                            "%s: bytes %llu..%llu of the data belong to no tensor (tensor '%s' "
                            "starts at %llu)",
                            path, (unsigned long long)at, (unsigned long long)sp->begin,
                            QUOTED(a, tensors[sp->index].name), (unsigned long long)sp->begin);
        at = sp->end;
        last = sp;
    }
    if (at != data_size)
        return s2s_fail(S2S_ERR_FORMAT,
                        "%s: bytes %llu..%llu at the end of the data belong to no tensor (a "
                        "wrong header length?)",
                        path, (unsigned long long)at, (unsigned long long)data_size);
    return S2S_OK;
}

static char *copy_string(char **cursor, const char *s) {
    size_t n = strlen(s) + 1;
    char *dst = *cursor;
    memcpy(dst, s, n);
    *cursor += n;
    return dst;
}

// Fills f's tensors and metadata from the parsed header.
static s2s_status parse_header(s2s_st_file *f, const char *path, const json_t *root,
                               uint64_t data_size) {
    if (!json_is_object(root))
        return s2s_fail(S2S_ERR_FORMAT, "%s: header is not a JSON object", path);

    const json_t *meta = json_object_get(root, S2S_ST_META_KEY);
    if (meta && !json_is_object(meta))
        return s2s_fail(S2S_ERR_FORMAT, "%s: %s is not a JSON object", path, S2S_ST_META_KEY);

    // One block for all strings: sized in a first pass over the header.
    size_t n_strings = 0, string_bytes = 0;
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)root, key, value) {
        if (value == meta) continue;
        n_strings++;
        string_bytes += strlen(key) + 1;
    }
    size_t n_tensors = n_strings;
    if (meta) {
        json_object_foreach((json_t *)meta, key, value) {
            char name[S2S_QUOTE_SIZE];
            if (!json_is_string(value))
                return s2s_fail(S2S_ERR_FORMAT, "%s: metadata '%s' is not a string", path,
                                QUOTED(name, key));
            string_bytes += strlen(key) + 1 + json_string_length(value) + 1;
        }
    }
    size_t n_meta = meta ? json_object_size(meta) : 0;
    // A 100 MB header cannot hold 2^31 entries, but stay safe if that changes.
    if (n_tensors > INT32_MAX || n_meta > INT32_MAX)
        return s2s_fail(S2S_ERR_FORMAT, "%s: too many header entries", path);

    f->tensors = calloc(n_tensors > 0 ? n_tensors : 1, sizeof *f->tensors);
    f->meta = calloc(n_meta > 0 ? n_meta : 1, sizeof *f->meta);
    f->strings = malloc(string_bytes > 0 ? string_bytes : 1);
    span *spans = malloc((n_tensors > 0 ? n_tensors : 1) * sizeof *spans);
    if (!f->tensors || !f->meta || !f->strings || !spans) {
        free(spans);
        return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    }

    char *cursor = f->strings;
    int i = 0;
    json_object_foreach((json_t *)root, key, value) {
        if (value == meta) continue;
        s2s_st_tensor *t = &f->tensors[i];
        char name[S2S_QUOTE_SIZE];
        s2s_status st = parse_tensor(t, &spans[i], path, QUOTED(name, key), value, data_size);
        if (st != S2S_OK) {
            free(spans);
            return st;
        }
        t->name = copy_string(&cursor, key);
        t->data = (const float *)(f->data + spans[i].begin);
        spans[i].index = i;
        i++;
    }
    f->n_tensors = i;
    s2s_status st = check_coverage(path, spans, f->n_tensors, f->tensors, data_size);
    free(spans);
    if (st != S2S_OK) return st;

    int m = 0;
    if (meta) {
        json_object_foreach((json_t *)meta, key, value) {
            f->meta[m].key = copy_string(&cursor, key);
            f->meta[m].value = copy_string(&cursor, json_string_value(value));
            m++;
        }
    }
    f->n_meta = m;
    return S2S_OK;
}

static int cmp_tensor_name(const void *a, const void *b) {
    return strcmp((*(const s2s_st_tensor *const *)a)->name,
                  (*(const s2s_st_tensor *const *)b)->name);
}

// Names are looked up once per tensor at load: sorted, that stays
// n log n for the largest header.
static s2s_status index_names(s2s_st_file *f, const char *path) {
    f->by_name = malloc((size_t)(f->n_tensors > 0 ? f->n_tensors : 1) * sizeof *f->by_name);
    if (!f->by_name) return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    for (int i = 0; i < f->n_tensors; i++) f->by_name[i] = &f->tensors[i];
    qsort(f->by_name, (size_t)f->n_tensors, sizeof *f->by_name, cmp_tensor_name);
    return S2S_OK;
}

s2s_status s2s_st_open(s2s_st_file **out, const char *path) {
    *out = NULL;
    // Not fopen: a FIFO with no writer blocked it forever, before the
    // regular-file check below.
    const char *why;
    FILE *fp = s2s_open_read(path, /*regular_only=*/true, &why);
    if (!fp && why) return s2s_fail(S2S_ERR_IO, "%s: cannot read: %s", path, why);
    if (!fp) {
        int err = errno;
        // `s2s serve` names a model "zh-en"; a path without the extension
        // of a file that has it is most likely that file.
        size_t n = strlen(path);
        char with[4096];
        bool near = err == ENOENT && (n < 12 || strcmp(path + n - 12, ".safetensors") != 0) &&
                    snprintf(with, sizeof with, "%s.safetensors", path) < (int)sizeof with &&
                    access(with, F_OK) == 0;
        if (near)
            return s2s_fail(S2S_ERR_IO, "%s: cannot open: %s (did you mean %s?)", path,
                            strerror(err), with);
        return s2s_fail(S2S_ERR_IO, "%s: cannot open: %s", path, strerror(err));
    }

    s2s_status st = S2S_OK;
    char *header = NULL;
    json_t *root = NULL;
    s2s_st_file *f = calloc(1, sizeof *f);
    if (!f) {
        st = s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }

    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0) {
        st = s2s_fail(S2S_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = s2s_fail(S2S_ERR_IO, "%s: cannot read: not a regular file", path);
        goto done;
    }
    uint64_t file_size = (uint64_t)sb.st_size;

    uint64_t header_len = 0;
    st = read_header(&header, &header_len, fp, path, file_size);
    if (st != S2S_OK) goto done;

    uint64_t data_size = file_size - 8 - header_len;
    if (data_size > SIZE_MAX) {
        st = s2s_fail(S2S_ERR_NOMEM, "%s: file too large for this machine", path);
        goto done;
    }
    // Mapped, the data is read from the page cache with no copy and no
    // fresh pages to fault in: a third of a small model's load time. Only
    // where that keeps it aligned (8-byte padded headers, as s2s writes);
    // a file from another writer may have any header length.
    if (data_size > 0 && (8 + header_len) % 8 == 0) {
        void *map = mmap(NULL, (size_t)file_size, PROT_READ, MAP_PRIVATE,
                         fileno(fp), 0);
        if (map != MAP_FAILED) {
            f->map = map, f->map_size = (size_t)file_size;
            f->data = (unsigned char *)map + 8 + header_len;
        }
    }
    if (!f->map && !(f->data = malloc(data_size > 0 ? (size_t)data_size : 1))) {
        st = s2s_fail(S2S_ERR_NOMEM, "%s: out of memory for %llu bytes of tensor data", path,
                      (unsigned long long)data_size);
        goto done;
    }
    if (!f->map && fread(f->data, 1, (size_t)data_size, fp) != (size_t)data_size) {
        st = s2s_fail(S2S_ERR_IO, "%s: cannot read: %s", path,
                      ferror(fp) ? strerror(errno) : "unexpected end of file");
        goto done;
    }

    // The format: one JSON object, then spaces up to the declared length.
    size_t json_len = (size_t)header_len;
    while (json_len > 0 && header[json_len - 1] == ' ') json_len--;
    if (header_len > 0 && header[0] != '{') {
        st = s2s_fail(S2S_ERR_FORMAT, "%s: header JSON does not start with '{'", path);
        goto done;
    }
    if (json_len > 0 && header[json_len - 1] != '}') {
        st = s2s_fail(S2S_ERR_FORMAT,
                      "%s: header JSON does not end in '}' and space padding at its declared "
                      "length %llu (a wrong header length?)",
                      path, (unsigned long long)header_len);
        goto done;
    }
    // Duplicate names would make s2s_st_find ambiguous; a NUL inside a name
    // (JSON_ALLOW_NUL not given) would silently shorten it.
    json_error_t jerr;
    root = json_loadb(header, json_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        char text[S2S_QUOTE_SIZE];  // jansson quotes the bytes near the error
        st = s2s_fail(S2S_ERR_FORMAT, "%s: header JSON, line %d column %d: %s", path, jerr.line,
                      jerr.column, QUOTED(text, jerr.text));
        goto done;
    }
    st = parse_header(f, path, root, data_size);
    if (st == S2S_OK) st = index_names(f, path);

done:
    json_decref(root);
    free(header);
    fclose(fp);
    if (st != S2S_OK) {
        s2s_st_close(f);
        return st;
    }
    *out = f;
    return S2S_OK;
}

void s2s_st_close(s2s_st_file *f) {
    if (!f) return;
    free(f->tensors);
    free(f->meta);
    free(f->strings);
    if (f->map) munmap(f->map, f->map_size);
    else free(f->data);
    free(f->by_name);
    free(f);
}

// ---- queries ----

int s2s_st_count(const s2s_st_file *f) { return f->n_tensors; }

const s2s_st_tensor *s2s_st_get(const s2s_st_file *f, int i) {
    if (i < 0 || i >= f->n_tensors) return NULL;
    return &f->tensors[i];
}

static int cmp_name_tensor(const void *key, const void *elem) {
    return strcmp(key, (*(const s2s_st_tensor *const *)elem)->name);
}

int s2s_st_index(const s2s_st_file *f, const char *name) {
    const s2s_st_tensor *const *t =
        bsearch(name, f->by_name, (size_t)f->n_tensors, sizeof *f->by_name, cmp_name_tensor);
    return t ? (int)(*t - f->tensors) : -1;
}

const s2s_st_tensor *s2s_st_find(const s2s_st_file *f, const char *name) {
    int i = s2s_st_index(f, name);
    return i < 0 ? NULL : &f->tensors[i];
}

const char *s2s_st_meta_get(const s2s_st_file *f, const char *key) {
    for (int i = 0; i < f->n_meta; i++) {
        if (strcmp(f->meta[i].key, key) == 0) return f->meta[i].value;
    }
    return NULL;
}
