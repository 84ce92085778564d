// Random numbers and file helpers.
#include "core/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/strbuf.h"
#include "core/io.h"

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void s2s_rng_seed(s2s_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

int s2s_read_line(FILE *f, char **buf, size_t *cap, size_t max, size_t *len, bool *too_long) {
    size_t n = 0, total = 0;
    // Reading through has a bound too: past it, an endless stream
    // (/dev/zero, a pipe with no newline) cannot be told from a line.
    size_t through = max > S2S_LINE_SKIP_MAX_BYTES ? max : S2S_LINE_SKIP_MAX_BYTES;
    bool any = false, over = false;
    int c;
    // getc keeps NUL bytes (fgets cannot say where the line ends with one).
    // One byte past max is stored, so that a "\r\n" line of max bytes fits.
    while ((c = getc_unlocked(f)) != EOF) {
        any = true;
        if (c == '\n') break;
        if (++total > through)
            return s2s_fail(S2S_ERR_FORMAT, "line longer than %zu bytes, the most s2s reads "
                            "through; the rest of the input is not read", through), -2;
        if (n > max) {
            over = true;  // read through, not stored
            continue;
        }
        if (n + 2 > *cap) {
            size_t want = *cap < 128 ? 256 : *cap * 2;
            if (want > max + 2) want = max + 2;
            char *grown = realloc(*buf, want);
            if (!grown) return s2s_fail(S2S_ERR_NOMEM, "out of memory reading a line"), -1;
            *buf = grown, *cap = want;
        }
        (*buf)[n++] = (char)c;
    }
    if (ferror(f)) return s2s_fail(S2S_ERR_IO, "read error: %s", strerror(errno)), -1;
    if (!any) return 0;
    if (!*buf && !(*buf = malloc(*cap = 1)))
        return s2s_fail(S2S_ERR_NOMEM, "out of memory reading a line"), -1;
    if (!over && n > 0 && (*buf)[n - 1] == '\r') n--;
    over = over || n > max;
    *too_long = over;
    *len = over ? 0 : n;
    (*buf)[*len] = '\0';
    return 1;
}

s2s_status s2s_read_line_fail(const char *path, int line, int r) {
    if (r == -2) return s2s_fail(S2S_ERR_FORMAT, "%s:%d: %s", path, line + 1, s2s_last_error());
    return s2s_fail(S2S_ERR_IO, "%s: %s", path, s2s_last_error());
}

FILE *s2s_open_read(const char *path, bool regular_only, const char **why) {
    *why = NULL;
    // O_NONBLOCK: open(2) of a FIFO waits for a writer otherwise.
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat sb;
    int err = 0;
    unsigned char first;
    ssize_t got = 0;
    if (fstat(fd, &sb) != 0) {
        err = errno;
    } else if (regular_only && !S_ISREG(sb.st_mode)) {
        err = EINVAL, *why = "not a regular file";
    } else if (S_ISFIFO(sb.st_mode)) {
        // A writer, even one still waiting in its own open(2), makes this
        // EAGAIN or a byte; none makes it 0 (end of file) at once.
        got = read(fd, &first, 1);
        if (got == 0) err = ENXIO, *why = "a FIFO with no writer";
        else if (got < 0 && errno != EAGAIN) err = errno;
    }
    int flags = err ? 0 : fcntl(fd, F_GETFL);
    if (!err && (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)) err = errno;
    FILE *f = err ? NULL : fdopen(fd, "rb");
    if (!f && !err) err = errno;
    if (f && got == 1) ungetc(first, f);  // one byte of push-back is always there
    if (!f) {
        close(fd);
        errno = err;
    }
    return f;
}

s2s_status s2s_read_file(char **out, size_t *len, const char *path) {
    return s2s_read_file_max(out, len, path, SIZE_MAX - 1, "a file");
}

s2s_status s2s_read_file_max(char **out, size_t *len, const char *path, size_t max,
                             const char *what) {
    *out = NULL;
    const char *why;
    FILE *f = s2s_open_read(path, /*regular_only=*/false, &why);
    if (!f) return s2s_fail(S2S_ERR_IO, "%s: cannot open: %s", path, why ? why : strerror(errno));
    s2s_buf b = {0};
    size_t got = 1;
    while (got > 0 && b.len <= max && s2s_buf_reserve(&b, 1 << 16)) {
        got = fread(b.s + b.len, 1, b.cap - 1 - b.len, f);
        b.len += got;
    }
    int err = ferror(f);
    fclose(f);
    if (b.len > max) {
        s2s_buf_free(&b);
        return s2s_fail(S2S_ERR_FORMAT, "%s: larger than %zu bytes, the limit for %s", path, max, what);
    }
    if (b.oom || err) {
        s2s_buf_free(&b);
        return err ? s2s_fail(S2S_ERR_IO, "%s: read error", path)
                   : s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    }
    b.s[b.len] = '\0';  // fread bypasses s2s_buf_append, which ends the string
    if (len) *len = b.len;
    *out = s2s_buf_take(&b);
    return S2S_OK;
}

void *s2s_calloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) s2s_fail(S2S_ERR_NOMEM, "out of memory (%zu x %zu bytes)", n, size);
    return p;
}

// ---- did you mean ----

// Optimal string alignment distance between a[0..n) and b[0..m), or
// INT_MAX when b is too long to be a name.
static int edit_distance(const char *a, size_t n, const char *b, size_t m) {
    enum { MAXLEN = 64 };
    if (m >= MAXLEN) return INT_MAX;
    int rows[3][MAXLEN + 1];
    int *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= m; j++) prev[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int cost = a[i - 1] != b[j - 1];
            int d = prev[j] + 1;
            if (cur[j - 1] + 1 < d) d = cur[j - 1] + 1;
            if (prev[j - 1] + cost < d) d = prev[j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < d)
                d = prev2[j - 2] + 1;
            cur[j] = d;
        }
        int *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[m];
}

s2s_suggest s2s_suggest_start(const char *name, size_t n) {
    return (s2s_suggest){.name = name, .n = n, .best_d = INT_MAX};
}

void s2s_suggest_offer(s2s_suggest *s, const char *cand) {
    size_t m = strlen(cand);
    int limit = 1 + (int)m / 4;
    if (limit > 3) limit = 3;
    // Skips huge names cheaply: they cannot be within `limit` edits.
    if ((s->n > m ? s->n - m : m - s->n) > (size_t)limit) return;
    int d = edit_distance(s->name, s->n, cand, m);
    if (d <= limit && d < (int)m && d < s->best_d) {
        s->best = cand;
        s->best_d = d;
    }
}
