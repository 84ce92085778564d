// The oneDNN backend: the only file that calls oneDNN (2.x C API).
//
// Every product is a 4-D matmul (B0, B1, M, K) x (B0, B1, K, N) with all
// sizes and strides given at run time (DNNL_RUNTIME_DIM_VAL), so one
// primitive per combination of fused extras serves every shape; on this
// machine that costs nothing against fixed shapes, but for many small
// products in one batch: oneDNN 2.6 runs those on its brgemm kernels only
// with fixed sizes and dense operands, else one gemm after another at
// less than half the speed, so a caller may ask for a fixed shape
// (s2s_mm_args.fixed: the local attention's chunks). A port to oneDNN 3.x
// changes this file only (memory and matmul descriptors, output scales).
#include "ops/matmul.h"

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "core/checked.h"
#include "core/error.h"
#include "core/util.h"
#include "ops/ops.h"
#include "s2s/s2s.h"

#define DNNL_CHECK(call)                                                     \
    do {                                                                     \
        dnnl_status_t s_ = (call);                                           \
        if (s_ != dnnl_success) {                                            \
            st = s2s_fail(S2S_ERR_BACKEND, "oneDNN: %s failed: %s", #call,   \
                          dnnl_status2str(s_));                              \
            goto done;                                                       \
        }                                                                    \
    } while (0)

#define RT DNNL_RUNTIME_DIM_VAL
#define MAX_PRIMS 80   // of run-time shapes: one per combination of extras
#define MAX_FIXED 1024 // of fixed shapes (s2s_mm_args.fixed), in a hash table
#define FIXED_SLOTS (2 * MAX_FIXED)

// ---- primitive cache ----

typedef struct prim_key {
    int ndims;  // 2 for single products (bias allowed), 4 for batched ones
    bool a_trans;  // A is read m-contiguous (dY^T, P^T in backward passes), else k-contiguous
    bool b_trans;  // B is read k-contiguous (weights, K^T), else n-contiguous
    bool bias, accumulate;
    s2s_mm_act act;
    float alpha;
    dnnl_data_type_t src, wei, dst;  // f32, f32, f32; s8, s8, s32 (int8); bf16, bf16, f32
    // OpenMP threads: oneDNN fixes them when the primitive is made (its
    // gemm forks that many on every call, however small the product), so
    // the one-thread products get primitives of their own.
    int threads;
    // s2s_mm_args.fixed: the sizes and strides of A, B and C (shape[i][0]
    // and shape[i][1]) made into the primitive; else zeros.
    bool fixed;
    int64_t shape[3][2][4];
} prim_key;

typedef struct prim_entry {
    prim_key key;
    dnnl_primitive_t prim;
    size_t pad;  // bytes of scratchpad its calls take (the caller's: thread_cache.pad)
} prim_entry;

struct thread_cache;

static struct {
    pthread_mutex_t lock;
    dnnl_engine_t engine;
    prim_entry prims[MAX_PRIMS];
    prim_entry *fixed;  // (FIXED_SLOTS) open addressing; prim NULL: empty
    int n_prims, n_fixed;
    struct thread_cache *threads;  // every thread's stream and memory objects
} be = {.lock = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int tl_threads;  // s2s_set_num_threads; 0 = all cores

// Below this many flops a product runs on one thread: OpenMP's fork/join
// costs more than it saves (measured: 32x64x192 runs at 61 GFLOP/s on one
// thread, 42 on two; 512x64x256 at 79 on one, 128 on two).
#define PARALLEL_MIN_FLOPS 4e6

static bool key_eq(const prim_key *a, const prim_key *b) {
    return a->ndims == b->ndims && a->a_trans == b->a_trans && a->b_trans == b->b_trans &&
           a->bias == b->bias && a->accumulate == b->accumulate && a->act == b->act &&
           a->alpha == b->alpha && a->src == b->src && a->wei == b->wei && a->dst == b->dst &&
           a->threads == b->threads && a->fixed == b->fixed &&
           !memcmp(a->shape, b->shape, sizeof a->shape);
}

static void md_dims(int64_t d[4], int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    d[0] = d0, d[1] = d1, d[2] = d2, d[3] = d3;
}

// The memory descriptor of operand i (0: A, 1: B, 2: C) of key's
// primitive, of type dt, read transposed (trans) or not. A fixed key gives
// its sizes and strides. Else they are given at run time but for the
// innermost stride (1), which is fixed: with every stride at run time
// oneDNN falls back to its reference loops.
static dnnl_status_t operand_md(dnnl_memory_desc_t *md, const prim_key *key, int i, bool trans,
                                dnnl_data_type_t dt) {
    int nd = key->ndims;
    dnnl_dims_t d, s;
    md_dims(d, RT, RT, RT, RT);
    md_dims(s, RT, RT, RT, 1);
    if (trans) md_dims(s, RT, RT, 1, RT);
    if (key->fixed) {
        memcpy(d, key->shape[i][0], sizeof key->shape[i][0]);
        memcpy(s, key->shape[i][1], sizeof key->shape[i][1]);
    }
    return dnnl_memory_desc_init_by_strides(md, nd, d + 4 - nd, dt, s + 4 - nd);
}

// The scratchpad a primitive's kernels need comes from its caller (this
// thread's thread_cache.pad, grown to the largest asked for): one buffer
// a thread, however many primitives (training makes hundreds of fixed
// shapes).
static s2s_status create_prim(prim_entry *out, const prim_key *key) {
    s2s_status st = S2S_OK;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_memory_desc_t a, b, c, bias;
    dnnl_dims_t d, s;

    // oneDNN 2.6 takes a bias, or broadcast weights, only when no batch dim
    // is a runtime one: so bias goes with 2-D products only.
    DNNL_CHECK(operand_md(&a, key, 0, key->a_trans, key->src));
    DNNL_CHECK(operand_md(&b, key, 1, key->b_trans, key->wei));
    DNNL_CHECK(operand_md(&c, key, 2, false, key->dst));
    md_dims(d, 1, RT, 0, 0);
    md_dims(s, RT, 1, 0, 0);
    DNNL_CHECK(dnnl_memory_desc_init_by_strides(&bias, 2, d, dnnl_f32, s));

    DNNL_CHECK(dnnl_primitive_attr_create(&attr));
    DNNL_CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    if (key->alpha != 1.0f) {
        float scale = key->alpha;
        DNNL_CHECK(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale));
    }
    DNNL_CHECK(dnnl_post_ops_create(&ops));
    if (key->accumulate) DNNL_CHECK(dnnl_post_ops_append_sum(ops, 1.0f));
    if (key->act == S2S_MM_RELU)
        DNNL_CHECK(dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu, 0.f, 0.f));
    if (key->act == S2S_MM_GELU)
        DNNL_CHECK(dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_gelu_erf, 0.f, 0.f));
    DNNL_CHECK(dnnl_primitive_attr_set_post_ops(attr, ops));

    dnnl_matmul_desc_t md;
    DNNL_CHECK(dnnl_matmul_desc_init(&md, &a, &b, key->bias ? &bias : NULL, &c));
    DNNL_CHECK(dnnl_primitive_desc_create(&pd, &md, attr, be.engine, NULL));
    DNNL_CHECK(dnnl_primitive_create(&out->prim, pd));
    out->key = *key;
    out->pad =
        dnnl_memory_desc_get_size(dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0));
done:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (ops) dnnl_post_ops_destroy(ops);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return st;
}

// A fixed key's hash, field by field (never the struct's bytes, whose
// padding is not set).
static uint64_t key_hash(const prim_key *k) {
    uint32_t alpha;
    memcpy(&alpha, &k->alpha, sizeof alpha);
    uint64_t fields[] = {(uint64_t)k->ndims, k->a_trans, k->b_trans, k->bias, k->accumulate,
                         (uint64_t)k->act, alpha, (uint64_t)k->src, (uint64_t)k->wei,
                         (uint64_t)k->dst, (uint64_t)k->threads};
    uint64_t h = S2S_FNV1A_INIT;
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) h = s2s_fnv1a_word(h, fields[i]);
    const int64_t *sh = &k->shape[0][0][0];
    for (size_t i = 0; i < sizeof k->shape / sizeof *sh; i++) h = s2s_fnv1a_word(h, (uint64_t)sh[i]);
    return h ^ (h >> 29);
}

// The slot of fixed key k in be.fixed: its own, or the empty one where it
// would go.
static prim_entry *fixed_slot(const prim_key *k) {
    size_t i = key_hash(k) % FIXED_SLOTS;
    while (be.fixed[i].prim && !key_eq(&be.fixed[i].key, k)) i = (i + 1) % FIXED_SLOTS;
    return &be.fixed[i];
}

// The primitive for key, created on first use; a fixed key becomes a
// run-time one once MAX_FIXED fixed shapes are made (or their table
// cannot be had). Thread-safe.
static s2s_status get_prim(prim_entry *out, prim_key *key) {
    s2s_status st = S2S_OK;
    pthread_mutex_lock(&be.lock);
    if (!be.engine) DNNL_CHECK(dnnl_engine_create(&be.engine, dnnl_cpu, 0));
    if (key->fixed && !be.fixed) be.fixed = calloc(FIXED_SLOTS, sizeof *be.fixed);
    if (key->fixed && be.fixed) {
        prim_entry *e = fixed_slot(key);
        if (e->prim) {
            *out = *e;
            goto done;
        }
        if (be.n_fixed < MAX_FIXED) {
            st = create_prim(out, key);
            if (st == S2S_OK) {
                *e = *out;
                be.n_fixed++;
            }
            goto done;
        }
    }
    // a run-time key, or a fixed one with no room left: sizes at run time
    key->fixed = false;
    memset(key->shape, 0, sizeof key->shape);
    for (int i = 0; i < be.n_prims; i++) {
        if (key_eq(&be.prims[i].key, key)) {
            *out = be.prims[i];
            goto done;
        }
    }
    S2S_ASSERT(be.n_prims < MAX_PRIMS);
    st = create_prim(out, key);
    if (st == S2S_OK) be.prims[be.n_prims++] = *out;
done:
    pthread_mutex_unlock(&be.lock);
    return st;
}

// ---- execution ----

// Memory objects are cached per thread and argument slot (A, B, C, bias,
// scratchpad)
// by dims and strides: a decoding step repeats the shapes of the step
// before, so most calls only swap data pointers instead of creating and
// destroying descriptors (a miss costs about as much as a small product).
// One table per slot, so that a call never evicts the object another of
// its arguments is using; each is 4-way set-associative with LRU order.
#define MEM_SLOTS 5
#define MEM_SETS 128
#define MEM_WAYS 4

typedef struct mem_entry {
    dnnl_memory_t mem;
    int nd;
    dnnl_data_type_t dt;
    int64_t dims[4], strides[4];
} mem_entry;

typedef mem_entry mem_cache[MEM_SLOTS][MEM_SETS][MEM_WAYS];

// A thread's stream and memory objects. Each is listed in be.threads, so
// that s2s_shutdown releases every thread's and not just its caller's, and
// is freed when its thread exits (a pthread key's destructor).
typedef struct thread_cache {
    dnnl_stream_t stream;  // on be.engine, made on first use
    mem_cache *mems;       // allocated on first use
    void *scratch;         // quantised activations and int32 sums (s2s_linear_w)
    size_t scratch_size;
    void *operands;        // s2s_bf16_scratch's, kept apart from scratch
    size_t operands_size;
    void *pad;             // the primitives' scratchpad (create_prim)
    size_t pad_size;
    struct thread_cache *prev, *next;
} thread_cache;

static _Thread_local thread_cache *tl;
static pthread_key_t exit_key;
static bool exit_key_made;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void release_thread_cache(thread_cache *c) {
    if (c->mems) {
        mem_entry *e = &(*c->mems)[0][0][0];
        for (size_t i = 0; i < sizeof *c->mems / sizeof *e; i++)
            if (e[i].mem) dnnl_memory_destroy(e[i].mem);
        free(c->mems);
        c->mems = NULL;
    }
    if (c->stream) dnnl_stream_destroy(c->stream);
    c->stream = NULL;
    free(c->scratch);
    c->scratch = NULL;
    c->scratch_size = 0;
    free(c->operands);
    c->operands = NULL;
    c->operands_size = 0;
    free(c->pad);
    c->pad = NULL;
    c->pad_size = 0;
}

static void thread_exit(void *p) {
    thread_cache *c = p;
    pthread_mutex_lock(&be.lock);
    if (c->prev) c->prev->next = c->next;
    else be.threads = c->next;
    if (c->next) c->next->prev = c->prev;
    release_thread_cache(c);
    pthread_mutex_unlock(&be.lock);
    free(c);
}

static void make_exit_key(void) { exit_key_made = pthread_key_create(&exit_key, thread_exit) == 0; }

// This thread's cache, registered on first use.
static thread_cache *thread_cache_get(void) {
    if (tl) return tl;
    thread_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    pthread_mutex_lock(&be.lock);
    c->next = be.threads;
    if (be.threads) be.threads->prev = c;
    be.threads = c;
    pthread_mutex_unlock(&be.lock);
    pthread_once(&exit_key_once, make_exit_key);
    // Without the key (pthread_key_create failed) the cache lives until
    // s2s_shutdown, still listed and so still reachable.
    if (exit_key_made) pthread_setspecific(exit_key, c);
    return tl = c;
}

static uint64_t mem_hash(const int64_t *dims, const int64_t *strides) {
    uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < 4; i++) h = s2s_fnv1a_word(h, (uint64_t)dims[i]);
    for (int i = 0; i < 4; i++) h = s2s_fnv1a_word(h, (uint64_t)strides[i]);
    // The products above leave the low bits depending on the low bits of
    // the sizes only (strides 128, 384 and 512 alike): mix the high ones in.
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 29);
}

// A memory object for the last nd of the four dims given, pointing at p.
static s2s_status get_mem(dnnl_memory_t *m, int slot, int nd, dnnl_data_type_t dt,
                          const int64_t dims4[4], const int64_t strides4[4], const void *p) {
    s2s_status st = S2S_OK;
    if (!tl->mems && !(tl->mems = calloc(1, sizeof *tl->mems)))
        return s2s_fail(S2S_ERR_NOMEM, "out of memory (oneDNN memory cache)");
    mem_entry *set = (*tl->mems)[slot][mem_hash(dims4, strides4) % MEM_SETS];
    int w = 0;
    while (w < MEM_WAYS && !(set[w].mem && set[w].nd == nd && set[w].dt == dt &&
                             !memcmp(set[w].dims, dims4, sizeof set[w].dims) &&
                             !memcmp(set[w].strides, strides4, sizeof set[w].strides)))
        w++;
    mem_entry hit;
    if (w < MEM_WAYS) {
        hit = set[w];
        DNNL_CHECK(dnnl_memory_set_data_handle(hit.mem, (void *)p));
    } else {
        w = MEM_WAYS - 1;  // evict the least recently used
        if (set[w].mem) dnnl_memory_destroy(set[w].mem);
        set[w].mem = NULL;
        hit = (mem_entry){.nd = nd, .dt = dt};
        memcpy(hit.dims, dims4, sizeof hit.dims);
        memcpy(hit.strides, strides4, sizeof hit.strides);
        dnnl_memory_desc_t md;
        dnnl_dims_t d, str;
        memcpy(d, dims4 + 4 - nd, (size_t)nd * sizeof *d);
        memcpy(str, strides4 + 4 - nd, (size_t)nd * sizeof *str);
        DNNL_CHECK(dnnl_memory_desc_init_by_strides(&md, nd, d, dt, str));
        DNNL_CHECK(dnnl_memory_create(&hit.mem, &md, be.engine, (void *)p));
    }
    memmove(set + 1, set, (size_t)w * sizeof *set);  // most recent first
    set[0] = hit;
    *m = hit.mem;
done:
    return st;
}

// shape[0] = sizes (d0, d1, d2, d3), shape[1] = strides str. A stride of
// a size-1 dim is never used; it gets a harmless value, as callers pass 0
// there (broadcast weights, single blocks).
static void operand_shape(int64_t shape[2][4], int64_t d0, int64_t d1, int64_t d2, int64_t d3,
                          const int64_t str[4]) {
    md_dims(shape[0], d0, d1, d2, d3);
    memcpy(shape[1], str, sizeof shape[1]);
    for (int i = 2; i >= 0; i--)
        if (shape[0][i] == 1 && shape[1][i] == 0)
            shape[1][i] = shape[1][i + 1] * (shape[0][i + 1] > 0 ? shape[0][i + 1] : 1);
}

// *buf, grown to at least `bytes` (contents not kept), or NULL.
static void *grow(void **buf, size_t *size, size_t bytes) {
    if (*size < bytes) {
        free(*buf);
        *buf = malloc(bytes);
        *size = *buf ? bytes : 0;
    }
    return *buf;
}

typedef struct mm_types {
    dnnl_data_type_t src, wei, dst;
} mm_types;

static const mm_types f32_types = {dnnl_f32, dnnl_f32, dnnl_f32};

// s2s_mm on operands of the given types (bias, when given, is f32).
static s2s_status mm_typed(void *c, const void *a, const void *b, const s2s_mm_args *p,
                           mm_types t) {
    s2s_status st = S2S_OK;
    if (p->b0 == 0 || p->b1 == 0 || p->m == 0 || p->n == 0) return S2S_OK;
    S2S_ASSERT(p->k > 0);
    prim_key key = {
        .ndims = p->b0 == 1 && p->b1 == 1 ? 2 : 4,
        .a_trans = p->sa[3] != 1,
        .b_trans = p->sb[3] != 1,
        .bias = p->bias != NULL,
        .accumulate = p->accumulate,
        .act = p->act,
        .alpha = p->alpha,
        .src = t.src, .wei = t.wei, .dst = t.dst,
    };
    int64_t shape[3][2][4];
    operand_shape(shape[0], p->b0, p->b1, p->m, p->k, p->sa);
    operand_shape(shape[1], p->b0, p->b1, p->k, p->n, p->sb);
    operand_shape(shape[2], p->b0, p->b1, p->m, p->n, p->sc);
    if (p->fixed) {  // else the key keeps zeros
        key.fixed = true;
        memcpy(key.shape, shape, sizeof shape);
    }
    double flops = 2.0 * (double)(p->b0 * p->b1) * (double)(p->m * p->n) * (double)p->k;
    key.threads = flops < PARALLEL_MIN_FLOPS ? 1 : s2s_get_num_threads();
    if (omp_get_max_threads() != key.threads) omp_set_num_threads(key.threads);
    S2S_ASSERT(key.ndims == 2 || !key.bias);
    S2S_ASSERT((p->sa[3] == 1 || p->sa[2] == 1) && p->sc[3] == 1 &&
               (p->sb[3] == 1 || p->sb[2] == 1));
    prim_entry prim;
    S2S_TRY(get_prim(&prim, &key));
    if (!thread_cache_get()) return s2s_fail(S2S_ERR_NOMEM, "out of memory (oneDNN stream)");
    if (!tl->stream)
        DNNL_CHECK(dnnl_stream_create(&tl->stream, be.engine, dnnl_stream_default_flags));

    dnnl_memory_t ma, mb, mc, mbias;
    dnnl_dims_t d, s;
    int nd = key.ndims;
    S2S_TRY(get_mem(&ma, 0, nd, t.src, shape[0][0], shape[0][1], a));
    S2S_TRY(get_mem(&mb, 1, nd, t.wei, shape[1][0], shape[1][1], b));
    S2S_TRY(get_mem(&mc, 2, nd, t.dst, shape[2][0], shape[2][1], c));
    dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
    int n_args = 3;
    if (p->bias) {
        md_dims(d, 1, 1, 1, p->n);
        md_dims(s, p->n, p->n, p->n, 1);
        S2S_TRY(get_mem(&mbias, 3, 2, dnnl_f32, d, s, p->bias));
        args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, mbias};
    }
    if (prim.pad > 0) {
        void *pad = grow(&tl->pad, &tl->pad_size, prim.pad);
        if (!pad) return s2s_fail(S2S_ERR_NOMEM, "out of memory (oneDNN scratchpad)");
        dnnl_memory_t mpad;
        int64_t n = (int64_t)prim.pad;
        md_dims(d, 1, 1, 1, n);
        md_dims(s, n, n, n, 1);
        S2S_TRY(get_mem(&mpad, 4, 1, dnnl_u8, d, s, pad));
        args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, mpad};
    }
    DNNL_CHECK(dnnl_primitive_execute(prim.prim, tl->stream, n_args, args));
done:
    return st;
}

// dst = src (B0, B1, R, C) read through strides s, rounded to bf16 and
// dense in the same orientation: row-major when s[3] is 1, else (a
// transposed view, s[2] == 1) column-major. Its strides go to d.
static void pack_bf16(uint16_t *dst, const float *src, int64_t b0, int64_t b1, int64_t r,
                      int64_t c, const int64_t s[4], int64_t d[4]) {
    bool rows = s[3] == 1;
    int64_t runs = rows ? r : c, len = rows ? c : r, step = rows ? s[2] : s[3];
    for (int64_t i = 0; i < b0; i++)
        for (int64_t j = 0; j < b1; j++)
            for (int64_t k = 0; k < runs; k++, dst += len)
                s2s_to_bf16(dst, src + i * s[0] + j * s[1] + k * step, (size_t)len);
    int64_t dense[4] = {b1 * r * c, r * c, rows ? c : 1, rows ? 1 : r};
    memcpy(d, dense, sizeof dense);
}

// This thread's scratch, at least `bytes` long (contents not kept).
static void *scratch_get(size_t bytes) {
    thread_cache *c = thread_cache_get();
    return c ? grow(&c->scratch, &c->scratch_size, bytes) : NULL;
}

uint16_t *s2s_bf16_scratch(size_t n) {
    thread_cache *c = thread_cache_get();
    return c ? grow(&c->operands, &c->operands_size, s2s_size_mul(n, sizeof(uint16_t))) : NULL;
}

s2s_status s2s_mm(float *c, const float *a, const float *b, const s2s_mm_args *p) {
    S2S_ASSERT(p->bf16 || (!p->a_is_bf16 && !p->b_is_bf16));
    if (!p->bf16 || p->b0 == 0 || p->b1 == 0 || p->m == 0 || p->n == 0)
        return mm_typed(c, a, b, p, f32_types);
    size_t na = p->a_is_bf16 ? 0 : S2S_SIZE(p->b0, p->b1, p->m, p->k);
    size_t nb = p->b_is_bf16 ? 0 : S2S_SIZE(p->b0, p->b1, p->k, p->n);
    s2s_mm_args d = *p;
    const void *qa = a, *qb = b;
    if (na + nb > 0) {
        uint16_t *q = scratch_get(s2s_size_mul(s2s_size_add(na, nb), sizeof(uint16_t)));
        if (!q) return s2s_fail(S2S_ERR_NOMEM, "out of memory (bf16 product scratch)");
        if (na) {
            pack_bf16(q, a, p->b0, p->b1, p->m, p->k, p->sa, d.sa);
            qa = q;
        }
        if (nb) {
            pack_bf16(q + na, b, p->b0, p->b1, p->k, p->n, p->sb, d.sb);
            qb = q + na;
        }
    }
    return mm_typed(c, qa, qb, &d, (mm_types){dnnl_bf16, dnnl_bf16, dnnl_f32});
}

s2s_status s2s_linear(float *y, const float *x, const float *w, bool transposed, const float *bias,
                      int64_t rows, int64_t k, int64_t n, s2s_mm_act act, bool accumulate) {
    s2s_mm_args a = {
        .b0 = 1, .b1 = 1, .m = rows, .k = k, .n = n,
        .sa = {0, 0, k, 1},
        .sb = {0, 0, transposed ? n : 1, transposed ? 1 : k},  // W^T read in place, or given
        .sc = {0, 0, n, 1},
        .alpha = 1.0f, .bias = bias, .accumulate = accumulate, .act = act,
    };
    return s2s_mm(y, x, w, &a);
}

s2s_status s2s_matmul(float *y, const float *x, const float *w, const float *bias, int64_t m,
                      int64_t k, int64_t n) {
    if (m < 0 || k < 0 || n < 0)
        return s2s_fail(S2S_ERR_INVALID, "s2s_matmul: negative size (%lld x %lld -> %lld)",
                        (long long)m, (long long)k, (long long)n);
    if (k == 0) {  // an empty sum: oneDNN takes no zero K
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) y[i * n + j] = bias ? bias[j] : 0.0f;
        return S2S_OK;
    }
    return s2s_linear(y, x, w, /*transposed=*/true, bias, m, k, n, S2S_MM_NONE,
                      /*accumulate=*/false);
}

// ---- low-precision products ----

static inline float act_apply(float v, s2s_mm_act act) {
    if (act == S2S_MM_RELU) return v > 0 ? v : 0;
    if (act == S2S_MM_GELU) return 0.5f * v * (1.0f + erff(v * 0.70710678f));
    return v;
}

// y (R, N) (+)= act(x · W + bias) with W int8: each row of x quantised to
// s8 with its own scale (max |x| / 127) and shifted to u8 (+128), the
// u8 x s8 product summed in s32 by oneDNN (VNNI's vpdpbusd where the CPU
// has it), then the shift's share (w->comp, made with the weights) taken
// off and the sums dequantised here. With s8 activations oneDNN shifts
// them itself and sums the weights' columns on every call: as much work
// as a one-row product (K = 512 at one row took twice as long).
static s2s_status linear_int8(float *y, const float *x, const s2s_wmat *w, const float *bias,
                              int64_t rows, int64_t k, int64_t n, s2s_mm_act act,
                              bool accumulate) {
    size_t sums = S2S_SIZE(rows, n, sizeof(int32_t)), scales = S2S_SIZE(rows, sizeof(float));
    char *buf = scratch_get(s2s_size_add(s2s_size_add(sums, scales), S2S_SIZE(rows, k)));
    if (!buf) return s2s_fail(S2S_ERR_NOMEM, "out of memory (int8 product scratch)");
    int32_t *acc = (int32_t *)buf;
    float *row_scale = (float *)(buf + sums);
    S2S_ASSERT(w->scale && w->comp);
    int8_t *qx = (int8_t *)(buf + sums + scales);
    uint8_t *ux = (uint8_t *)qx;
    for (int64_t r = 0; r < rows; r++) {
        row_scale[r] = s2s_quantize_row_int8(qx + r * k, x + r * k, k);
        for (int64_t i = 0; i < k; i++) ux[r * k + i] = (uint8_t)(qx[r * k + i] + 128);
    }
    s2s_mm_args a = {
        .b0 = 1, .b1 = 1, .m = rows, .k = k, .n = n,
        .sa = {0, 0, k, 1}, .sb = {0, 0, n, 1}, .sc = {0, 0, n, 1}, .alpha = 1.0f,
    };
    S2S_TRY(mm_typed(acc, ux, w->w, &a, (mm_types){dnnl_u8, dnnl_s8, dnnl_s32}));
    const float *ws = w->scale;
    for (int64_t r = 0; r < rows; r++) {
        const int32_t *ar = acc + r * n;
        float *yr = y + r * n, rs = row_scale[r];
        for (int64_t j = 0; j < n; j++) {
            float v = (float)(ar[j] - w->comp[j]) * (rs * ws[j]) + (bias ? bias[j] : 0.0f);
            if (accumulate) v += yr[j];
            yr[j] = act_apply(v, act);
        }
    }
    return S2S_OK;
}

// y (R, N) (+)= act(xb · W + bias) with xb (R, K) and W bf16, summed in
// f32; y in f32, or bf16 (rounded to nearest even) when y_type says so.
static s2s_status bf16_product(void *y, dnnl_data_type_t y_type, const uint16_t *xb,
                               const s2s_wmat *w, const float *bias, int64_t rows, int64_t k,
                               int64_t n, s2s_mm_act act, bool accumulate) {
    s2s_mm_args a = {
        .b0 = 1, .b1 = 1, .m = rows, .k = k, .n = n,
        .sa = {0, 0, k, 1}, .sb = {0, 0, n, 1}, .sc = {0, 0, n, 1},
        .alpha = 1.0f, .bias = bias, .accumulate = accumulate, .act = act,
    };
    return mm_typed(y, xb, w->w, &a, (mm_types){dnnl_bf16, dnnl_bf16, y_type});
}

// x (R, K) rounded to bf16 in this thread's scratch, or NULL (out of memory).
static uint16_t *rounded_rows(const float *x, int64_t rows, int64_t k) {
    uint16_t *xb = scratch_get(S2S_SIZE(rows, k, sizeof(uint16_t)));
    if (!xb) s2s_fail(S2S_ERR_NOMEM, "out of memory (bf16 product scratch)");
    else s2s_to_bf16(xb, x, (size_t)(rows * k));
    return xb;
}

// The same with W bf16: x rounded to bf16, the product summed in f32.
static s2s_status linear_bf16(float *y, const float *x, const s2s_wmat *w, const float *bias,
                              int64_t rows, int64_t k, int64_t n, s2s_mm_act act,
                              bool accumulate) {
    const uint16_t *xb = rounded_rows(x, rows, k);
    if (!xb) return S2S_ERR_NOMEM;
    return bf16_product(y, dnnl_f32, xb, w, bias, rows, k, n, act, accumulate);
}

s2s_status s2s_linear_pair_w(float *y, float *h, const float *x, const s2s_wmat *w1,
                             const float *b1, const s2s_wmat *w2, const float *b2, int64_t rows,
                             int64_t k, int64_t f, int64_t n, s2s_mm_act act) {
    if (w1->type != S2S_COMPUTE_BF16 || w2->type != S2S_COMPUTE_BF16 || rows == 0 || f == 0) {
        S2S_TRY(s2s_linear_w(h, x, w1, b1, rows, k, f, act, false));
        return s2s_linear_w(y, h, w2, b2, rows, f, n, S2S_MM_NONE, true);
    }
    const uint16_t *xb = rounded_rows(x, rows, k);
    if (!xb) return S2S_ERR_NOMEM;
    uint16_t *hb = (uint16_t *)h;
    S2S_TRY(bf16_product(hb, dnnl_bf16, xb, w1, b1, rows, k, f, act, false));
    return bf16_product(y, dnnl_f32, hb, w2, b2, rows, f, n, S2S_MM_NONE, true);
}

s2s_status s2s_linear_w(float *y, const float *x, const s2s_wmat *w, const float *bias,
                        int64_t rows, int64_t k, int64_t n, s2s_mm_act act, bool accumulate) {
    if (rows == 0 || n == 0) return S2S_OK;
    switch (w->type) {
    case S2S_COMPUTE_INT8: return linear_int8(y, x, w, bias, rows, k, n, act, accumulate);
    case S2S_COMPUTE_BF16: return linear_bf16(y, x, w, bias, rows, k, n, act, accumulate);
    default:
        return s2s_linear(y, x, w->w, /*transposed=*/true, bias, rows, k, n, act, accumulate);
    }
}

bool s2s_cpu_has(s2s_compute_type t) {
    // ISA values are bit sets: each includes the ones below it.
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
#define HAS(x) ((isa & (unsigned)(x)) == (unsigned)(x))
    switch (t) {
    case S2S_COMPUTE_INT8:  // VNNI: four s8 products summed per instruction
        return HAS(dnnl_cpu_isa_avx512_core_vnni) || HAS(dnnl_cpu_isa_avx2_vnni);
    case S2S_COMPUTE_BF16: return HAS(dnnl_cpu_isa_avx512_core_bf16);
    default: return true;
    }
#undef HAS
}

// ---- threads and shutdown ----

void s2s_set_num_threads(int n) {
    tl_threads = n > 0 ? n : 0;
    omp_set_num_threads(s2s_get_num_threads());
}

int s2s_get_num_threads(void) { return tl_threads > 0 ? tl_threads : omp_get_num_procs(); }

void s2s_shutdown(void) {
    pthread_mutex_lock(&be.lock);
    // Threads keep their (now empty) cache: tl still points at it.
    for (thread_cache *c = be.threads; c; c = c->next) release_thread_cache(c);
    for (int i = 0; i < be.n_prims; i++) dnnl_primitive_destroy(be.prims[i].prim);
    for (int i = 0; be.fixed && i < FIXED_SLOTS; i++)
        if (be.fixed[i].prim) dnnl_primitive_destroy(be.fixed[i].prim);
    free(be.fixed);
    be.fixed = NULL;
    be.n_prims = be.n_fixed = 0;
    if (be.engine) dnnl_engine_destroy(be.engine);
    be.engine = NULL;
    pthread_mutex_unlock(&be.lock);
}
