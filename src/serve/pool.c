// The worker pool of s2s_server: a bounded FIFO of jobs under one mutex,
// workers that each take the oldest job and every later one with the same
// batching key (up to max_batch sentences), decode them in one call, and
// wake the submitters.
#include "serve/pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "decoding/state.h"

// What one worker owns: a state per model (made on first use) and room
// for the jobs of one batch.
typedef struct worker_slot {
    struct s2s_pool *pool;
    s2s_state **states;  // (n_models)
    s2s_job **batch;     // (max_batch)
} worker_slot;

struct s2s_pool {
    const s2s_model *const *models;
    size_t *keep_bytes;  // (n_models) the most a worker's state keeps between batches
    int n_models, n_workers, queue_cap, max_batch;
    pthread_t *threads;
    worker_slot *slots;  // (n_workers)
    int started_threads;
    pthread_mutex_t mu;
    pthread_cond_t work;  // a job was queued, or stopping
    pthread_cond_t done;  // a batch finished (broadcast)
    s2s_job *head, *tail;
    int queued;
    bool stopping;
    s2s_pool_stats stats;
};

// ---- jobs ----

s2s_job *s2s_job_new(int n, bool forced) {
    s2s_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->n = n;
    if (forced) {
        j->src = calloc((size_t)n + 1, sizeof *j->src);
        j->tgt = calloc((size_t)n + 1, sizeof *j->tgt);
        j->out = calloc((size_t)n + 1, sizeof *j->out);
    } else {
        j->lines = calloc((size_t)n + 1, sizeof *j->lines);
    }
    if (forced ? !j->src || !j->tgt || !j->out : !j->lines) {
        s2s_job_free(j);
        return NULL;
    }
    return j;
}

void s2s_job_free(s2s_job *j) {
    if (!j) return;
    for (int i = 0; i < j->n; i++) {
        if (j->lines) s2s_line_free(&j->lines[i]);
        if (j->src) s2s_tokens_free(&j->src[i]);
        if (j->tgt) s2s_tokens_free(&j->tgt[i]);
        if (j->out) s2s_hypothesis_free(&j->out[i]);
    }
    free(j->lines);
    free(j->src);
    free(j->tgt);
    free(j->out);
    free(j->key);
    free(j);
}

// ---- one batch ----

// Translates the lines of jobs b[0..nb) (same model, same key) in one
// s2s_translate_lines call with st: the library's one translation path.
static s2s_status translate_batch(s2s_state *st, s2s_job **b, int nb) {
    int total = 0, n = 0;
    for (int k = 0; k < nb; k++) total += b[k]->n;
    s2s_line *lines = malloc((size_t)total * sizeof *lines + 1);
    if (!lines) return s2s_fail(S2S_ERR_NOMEM, "out of memory for a batch of %d texts", total);
    for (int k = 0; k < nb; k++) {  // the jobs' lines side by side, moved back after
        memcpy(lines + n, b[k]->lines, (size_t)b[k]->n * sizeof *lines);
        n += b[k]->n;
    }
    s2s_decode_params p = b[0]->p;
    p.threads = 1;  // the pool's parallelism is its workers
    s2s_status status = s2s_translate_lines(st, &p, lines, n);
    n = 0;
    for (int k = 0; k < nb; k++) {
        memcpy(b[k]->lines, lines + n, (size_t)b[k]->n * sizeof *lines);
        n += b[k]->n;
    }
    free(lines);
    return status;
}

// Scores the pairs of jobs b[0..nb) in one s2s_score call with st. A pair
// of no source tokens is not decoded: its hypothesis stays empty.
static s2s_status score_batch(s2s_state *st, s2s_job **b, int nb) {
    int total = 0, n = 0;
    for (int k = 0; k < nb; k++) total += b[k]->n;
    const int **src = malloc((size_t)total * sizeof *src + 1), **tgt = malloc((size_t)total * sizeof *tgt + 1);
    int *src_len = malloc((size_t)total * sizeof *src_len + 1);
    int *tgt_len = malloc((size_t)total * sizeof *tgt_len + 1);
    s2s_hypothesis **dest = malloc((size_t)total * sizeof *dest + 1);  // where each result goes
    s2s_hypothesis *out = calloc((size_t)total + 1, sizeof *out);
    s2s_status status = S2S_ERR_NOMEM;
    if (src && tgt && src_len && tgt_len && dest && out) {
        for (int k = 0; k < nb; k++)
            for (int s = 0; s < b[k]->n; s++) {
                if (b[k]->src[s].n == 0) continue;
                src[n] = b[k]->src[s].ids;
                src_len[n] = b[k]->src[s].n;
                tgt[n] = b[k]->tgt[s].ids;
                tgt_len[n] = b[k]->tgt[s].n;
                dest[n++] = &b[k]->out[s];
            }
        s2s_decode_params p = b[0]->p;
        p.threads = 1;
        status = s2s_score(st, &p, src, src_len, tgt, tgt_len, n, out);
        if (status == S2S_OK)
            for (int i = 0; i < n; i++) *dest[i] = out[i];
    } else {
        status = s2s_fail(S2S_ERR_NOMEM, "out of memory for a batch of %d pairs", total);
    }
    free(src);
    free(tgt);
    free(src_len);
    free(tgt_len);
    free(dest);
    free(out);
    return status;
}

// Decodes the jobs b[0..nb) (same model, same key) in one call with st.
static s2s_status decode(s2s_state *st, s2s_job **b, int nb, char *err, size_t err_size) {
    s2s_status status = b[0]->lines ? translate_batch(st, b, nb) : score_batch(st, b, nb);
    if (status != S2S_OK) snprintf(err, err_size, "%s", s2s_last_error());
    return status;
}

// The key holds the request's options; the maps asked for are compared
// here too, so that no caller's key can make a batch drop them.
static bool same_batch(const s2s_job *a, const s2s_job *b) {
    return a->model == b->model && a->key && b->key && !strcmp(a->key, b->key) &&
           (a->lines != NULL) == (b->lines != NULL) && a->p.want_attention == b->p.want_attention &&
           a->p.want_self_attention == b->p.want_self_attention;
}

// Unlinks the oldest job and the later ones that share its batch. Under mu.
static int take_batch(s2s_pool *p, s2s_job **b) {
    s2s_job *first = p->head;
    int nb = 0, sentences = 0;
    s2s_job **link = &p->head, *prev = NULL;
    while (*link) {
        s2s_job *j = *link;
        bool take = j == first || (same_batch(first, j) && sentences + j->sentences <= p->max_batch);
        if (take) {
            *link = j->next;
            if (p->tail == j) p->tail = prev;
            j->next = NULL;
            j->started = true;
            b[nb++] = j;
            sentences += j->sentences;
            p->queued--;
            if (!first->key || sentences >= p->max_batch) break;
        } else {
            prev = j;
            link = &j->next;
        }
    }
    return nb;
}

static void *worker(void *arg) {
    worker_slot *w = arg;
    s2s_pool *p = w->pool;
    s2s_state **states = w->states;
    s2s_job **b = w->batch;
    s2s_set_threads(1);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stopping) pthread_cond_wait(&p->work, &p->mu);
        if (!p->head) break;  // stopping, and nothing left
        int nb = take_batch(p, b);
        pthread_mutex_unlock(&p->mu);

        int m = b[0]->model;
        s2s_status st = S2S_OK;
        if (!states[m]) st = s2s_state_new(&states[m], p->models[m]);
        char err[512] = "out of memory";
        if (st == S2S_OK) st = decode(states[m], b, nb, err, sizeof err);
        if (st != S2S_OK && nb > 1) {  // one bad job must not fail the others: each alone
            for (int k = 0; k < nb; k++) {
                s2s_state_trim(states[m], p->keep_bytes[m]);  // the failed batch's room
                b[k]->status = decode(states[m], b + k, 1, b[k]->error, sizeof b[k]->error);
            }
        } else {
            for (int k = 0; k < nb; k++) {
                b[k]->status = st;
                if (st != S2S_OK) snprintf(b[k]->error, sizeof b[k]->error, "%s", err);
            }
        }

        // An outsized batch (a long beam, many texts) leaves the worker with
        // its memory: given back here, so that the next batches run in what
        // a normal one needs, as on a fresh server (issue 27).
        if (states[m]) s2s_state_trim(states[m], p->keep_bytes[m]);
        pthread_mutex_lock(&p->mu);
        p->stats.batches++;
        for (int k = 0; k < nb; k++) {
            p->stats.jobs++;
            p->stats.sentences += b[k]->sentences;
            if (b[k]->abandoned) s2s_job_free(b[k]);
            else b[k]->done = true;
        }
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

// ---- the pool ----

s2s_status s2s_pool_new(s2s_pool **out, const s2s_model *const *models, int n_models,
                        int workers, int queue, int max_batch) {
    *out = NULL;
    s2s_pool *p = calloc(1, sizeof *p);
    if (!p) return s2s_fail(S2S_ERR_NOMEM, "out of memory for the worker pool");
    p->models = models;
    p->n_models = n_models;
    p->n_workers = workers;
    p->queue_cap = queue;
    p->max_batch = max_batch;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, &ca);
    pthread_condattr_destroy(&ca);
    bool ok = (p->threads = calloc((size_t)workers, sizeof *p->threads)) &&
              (p->slots = calloc((size_t)workers, sizeof *p->slots)) &&
              (p->keep_bytes = calloc((size_t)n_models, sizeof *p->keep_bytes));
    // What a worker keeps: the state of a full batch of the model's longest
    // sentences at its own decoding options, with attention maps. Batches
    // within it reuse the state as it is; larger ones free it after.
    for (int m = 0; ok && m < n_models; m++) {
        s2s_decode_params d = s2s_decode_default_params(models[m]);
        int64_t S = models[m]->cfg.model.max_len;
        const s2s_decode_config *dc = &d.decode;
        p->keep_bytes[m] = s2s_state_bytes_for(models[m], max_batch, dc->beam_size, S,
                                               dc->max_len < S ? dc->max_len : S, 1, true);
    }
    for (int k = 0; ok && k < workers; k++) {
        p->slots[k].pool = p;
        ok = (p->slots[k].states = calloc((size_t)n_models, sizeof(s2s_state *))) &&
             (p->slots[k].batch = calloc((size_t)max_batch, sizeof(s2s_job *)));
    }
    if (!ok) {
        s2s_pool_free(p);
        return s2s_fail(S2S_ERR_NOMEM, "out of memory for the worker pool");
    }
    for (; p->started_threads < workers; p->started_threads++) {
        int e = pthread_create(&p->threads[p->started_threads], NULL, worker,
                               &p->slots[p->started_threads]);
        if (e) {
            s2s_pool_free(p);
            return s2s_fail(S2S_ERR_NOMEM, "cannot start a worker thread: %s", strerror(e));
        }
    }
    *out = p;
    return S2S_OK;
}

void s2s_pool_free(s2s_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int k = 0; k < p->started_threads; k++) pthread_join(p->threads[k], NULL);
    for (int k = 0; p->slots && k < p->n_workers; k++) {
        for (int m = 0; p->slots[k].states && m < p->n_models; m++)
            s2s_state_free(p->slots[k].states[m]);
        free(p->slots[k].states);
        free(p->slots[k].batch);
    }
    free(p->slots);
    free(p->keep_bytes);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    free(p->threads);
    free(p);
}

s2s_pool_result s2s_pool_run(s2s_pool *p, s2s_job *j, double timeout) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    double whole = (double)(long long)timeout;
    until.tv_sec += (time_t)whole;
    until.tv_nsec += (long)((timeout - whole) * 1e9);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&p->mu);
    if (p->queued >= p->queue_cap || p->stopping) {
        pthread_mutex_unlock(&p->mu);
        return S2S_POOL_FULL;
    }
    j->next = NULL;
    if (p->tail) p->tail->next = j;
    else p->head = j;
    p->tail = j;
    p->queued++;
    pthread_cond_signal(&p->work);
    int e = 0;
    while (!j->done && e != ETIMEDOUT) e = pthread_cond_timedwait(&p->done, &p->mu, &until);
    s2s_pool_result r = S2S_POOL_DONE;
    if (!j->done) {
        r = S2S_POOL_TIMEOUT;
        if (j->started) {
            j->abandoned = true;  // its worker frees it
        } else {                  // still queued: unlink and free it here
            s2s_job **link = &p->head, *prev = NULL;
            while (*link != j) prev = *link, link = &(*link)->next;
            *link = j->next;
            if (p->tail == j) p->tail = prev;
            p->queued--;
            s2s_job_free(j);
        }
    }
    pthread_mutex_unlock(&p->mu);
    return r;
}

s2s_pool_stats s2s_pool_get_stats(s2s_pool *p) {
    pthread_mutex_lock(&p->mu);
    s2s_pool_stats s = p->stats;
    s.queued = p->queued;
    pthread_mutex_unlock(&p->mu);
    return s;
}
