// The worker pool of s2s_server (internal): a bounded FIFO of decode jobs
// and a fixed set of threads, each with one s2s_state per model, that take
// the oldest job plus every queued job it can share a batch with.
#ifndef S2S_SERVE_POOL_H
#define S2S_SERVE_POOL_H

#include <stdbool.h>

#include "s2s/decode.h"
#include "s2s/tokenizer.h"

typedef struct s2s_pool s2s_pool;

// One request's decode. The submitter fills the inputs; the pool fills
// out, status and error. The job owns src and tgt (freed with it).
typedef struct s2s_job {
    int model;
    char *key;            // batching key: jobs with equal keys share batches (NULL: never)
    s2s_decode_params p;
    int n;                // texts (lines to translate, or pairs to score)
    int sentences;        // sentences to decode: what a batch counts up to max_batch
    s2s_line *lines;      // (n) to translate (s2s_translate_lines), or NULL to score
    // forced decoding (s2s_score)
    s2s_tokens *src;      // (n)
    s2s_tokens *tgt;      // (n)
    s2s_hypothesis *out;  // (n)
    s2s_status status;
    char error[512];
    // pool-owned
    bool started, done;
    bool abandoned;       // the submitter timed out: the worker frees it
    struct s2s_job *next;
} s2s_job;

typedef struct s2s_pool_stats {
    long long jobs, batches, sentences;  // done so far
    int queued;                          // waiting now
} s2s_pool_stats;

s2s_status s2s_pool_new(s2s_pool **out, const s2s_model *const *models, int n_models,
                        int workers, int queue, int max_batch);
// Finishes the queued jobs, joins the workers, frees the pool.
void s2s_pool_free(s2s_pool *p);

// A new job with room for n lines to translate, or n pairs to score
// (forced); NULL on out of memory. Give it to s2s_pool_run, or free it with s2s_job_free.
s2s_job *s2s_job_new(int n, bool forced);
void s2s_job_free(s2s_job *j);

typedef enum { S2S_POOL_DONE, S2S_POOL_FULL, S2S_POOL_TIMEOUT } s2s_pool_result;
// Queues j and waits until it is done or `timeout` seconds pass. FULL: not
// queued (j is still the caller's). DONE: j's results are the caller's.
// TIMEOUT: j was dropped from the queue, or is left to the worker that
// runs it; either way it is no longer the caller's.
s2s_pool_result s2s_pool_run(s2s_pool *p, s2s_job *j, double timeout);

s2s_pool_stats s2s_pool_get_stats(s2s_pool *p);

#endif
