// The JSON-lines training log, through jansson.
#include "train/train_log.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/util.h"
#include "config/arch.h"
#include "train/grad_norms.h"

// The step of one log line, -1 when it is not a log object; *saved tells
// whether the line carries "checkpoint": true.
static long long line_step(const char *line, size_t n, bool *saved) {
    json_t *o = json_loadb(line, n, JSON_DISABLE_EOF_CHECK, NULL);
    json_t *s = o ? json_object_get(o, "step") : NULL;
    long long step = json_is_integer(s) ? (long long)json_integer_value(s) : -1;
    if (saved) *saved = step >= 0 && json_is_true(json_object_get(o, "checkpoint"));
    json_decref(o);
    return step;
}

// Where the last run's lines begin in text; *end: where the whole lines end
// (a cut-off last line goes).
static size_t last_run(const char *text, size_t len, size_t *end) {
    size_t run = 0;
    long long prev = -1;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) + 1 : len - at;
        long long step = nl ? line_step(text + at, n, NULL) : -1;
        if (step < 0 && !nl) {
            *end = at;
            return run;
        }
        if (step >= 0 && step <= prev) run = at;
        if (step >= 0) prev = step;
        at += n;
    }
    *end = len;
    return run;
}

// Byte length of text to keep so that the last run stops at resume_step
// (resume_step >= 0), or at its last checkpoint (resume_step < 0: a new
// run; a last run that never wrote a checkpoint goes whole). *last: the
// step of the last line kept in the last run, 0 when none is.
static size_t keep_bytes(const char *text, size_t len, int resume_step, long long *last) {
    size_t end, run = last_run(text, len, &end), keep = run;
    *last = 0;
    for (size_t at = run; at < end;) {
        const char *nl = memchr(text + at, '\n', end - at);
        size_t n = nl ? (size_t)(nl - (text + at)) + 1 : end - at;
        bool saved;
        long long step = line_step(text + at, n, &saved);
        at += n;
        if (resume_step >= 0 ? step > resume_step : !saved) continue;
        if (resume_step >= 0 && at - n != keep) break;  // lines after a cut stay cut
        keep = at;
        if (step >= 0) *last = step;
    }
    return keep;
}

static s2s_status io_error(const char *path, const char *what) {
    return s2s_fail(S2S_ERR_IO, "%s: cannot %s: %s", path, what, strerror(errno ? errno : EIO));
}

s2s_status s2s_train_log_open(s2s_train_log *log, const char *path, int resume_step,
                              const char *resume_line) {
    log->f = NULL;
    log->path = path;
    log->wrote = false;
    long long last = 0;
    struct stat sb;  // a device (/dev/full, /dev/null) is only written to
    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
        char *text = NULL;
        size_t len = 0;
        S2S_TRY(s2s_read_file(&text, &len, path));
        size_t keep = keep_bytes(text, len, resume_step, &last);
        free(text);
        // Only the tail goes: a kill here loses nothing the resumed run needs.
        if (keep < len && truncate(path, (off_t)keep) != 0) return io_error(path, "truncate");
    }
    errno = 0;
    log->f = fopen(path, "a");
    if (!log->f) return io_error(path, "open for appending");
    // Killed after the checkpoint's rename, before its line: the line it stored.
    if (resume_step >= 0 && resume_line && resume_line[0] && last < resume_step) {
        S2S_TRY(s2s_train_log_write(log, resume_line));
        log->wrote = false;  // the resumed run's first line is still its first
    }
    return S2S_OK;
}

// A JSON number, or null for NaN and infinities (JSON has neither).
static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

// {"<tensor name without .weight>": norm, ...} in the model's order.
static json_t *norms_object(const s2s_grad_norms *gn) {
    json_t *o = json_object();
    for (int i = 0; o && i < gn->n; i++) {
        char key[sizeof ((s2s_param *)0)->name];
        size_t n = strlen(gn->name[i]), w = strlen(".weight");
        if (n >= w && strcmp(gn->name[i] + n - w, ".weight") == 0) n -= w;
        snprintf(key, sizeof key, "%.*s", (int)n, gn->name[i]);
        if (json_object_set_new(o, key, num(gn->norm[i])) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

static json_t *step_object(const s2s_train_progress *p, const s2s_train_log_guided *g,
                           const s2s_grad_norms *gn, bool first, bool checkpoint) {
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "step", json_integer(p->step));
    if (p->ranks > 1 && first) json_object_set_new(o, "ranks", json_integer(p->ranks));
    json_object_set_new(o, "loss", num(p->loss));
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++)
        if (g->on[r]) json_object_set_new(o, s2s_roles[r].log, num(g->term[r]));
    json_object_set_new(o, "lr", num(p->lr));
    json_object_set_new(o, "tokens", json_integer(p->tokens));
    json_object_set_new(o, "grad_norm", num(p->grad_norm));
    if (gn) {
        json_t *no = norms_object(gn);
        if (!no) {
            json_decref(o);
            return NULL;
        }
        json_object_set_new(o, "grad_norms", no);
    }
    if (p->ranks > 1) {
        json_object_set_new(o, "rank_tokens", json_pack("[ii]", p->rank_tokens_min,
                                                        p->rank_tokens_max));
        json_object_set_new(o, "allreduce_ms", num(1e3 * p->allreduce_sec));
    }
    if (p->valid) {
        const s2s_valid_result *v = p->valid;
        json_t *vo = json_object();
        if (!vo) {
            json_decref(o);
            return NULL;
        }
        json_object_set_new(vo, "loss", num(v->loss));
        json_object_set_new(vo, "nll", num(v->nll));
        json_object_set_new(vo, "token_accuracy", num(v->token_accuracy));
        json_object_set_new(vo, "bleu", num(v->bleu));
        json_object_set_new(vo, "exact_match", num(v->exact_match));
        json_object_set_new(vo, "sentences", json_integer(v->sentences));
        json_object_set_new(vo, "best", json_boolean(p->best));
        json_object_set_new(o, "valid", vo);
    }
    if (checkpoint) json_object_set_new(o, "checkpoint", json_true());
    return o;
}

char *s2s_train_log_line(const s2s_train_log *log, const s2s_train_progress *p,
                         const s2s_train_log_guided *g, const s2s_grad_norms *gn,
                         bool checkpoint) {
    json_t *o = step_object(p, g, gn, !log->wrote, checkpoint);
    // One line, ", " and ": " separators, 9 significant digits.
    char *text = o ? json_dumps(o, JSON_REAL_PRECISION(9)) : NULL;
    json_decref(o);
    if (!text) s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", log->path);
    return text;
}

s2s_status s2s_train_log_write(s2s_train_log *log, const char *line) {
    if (!log->f) return S2S_OK;  // not rank 0
    log->wrote = true;
    size_t n = strlen(line);
    errno = 0;
    bool ok = fwrite(line, 1, n, log->f) == n && fputc('\n', log->f) != EOF &&
              fflush(log->f) == 0;
    return ok ? S2S_OK : io_error(log->path, "write");
}

s2s_status s2s_train_log_close(s2s_train_log *log) {
    if (!log->f) return S2S_OK;
    errno = 0;
    bool ok = fclose(log->f) == 0;
    log->f = NULL;
    return ok ? S2S_OK : io_error(log->path, "write");
}
