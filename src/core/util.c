// Random numbers and file helpers.
#include "core/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/strbuf.h"

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void s2s_rng_seed(s2s_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t s2s_rng_next(s2s_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double s2s_rng_uniform(s2s_rng *r) { return (double)(s2s_rng_next(r) >> 11) * 0x1.0p-53; }

s2s_status s2s_read_file(char **out, size_t *len, const char *path) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return s2s_fail(S2S_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    s2s_buf b = {0};
    size_t got = 1;
    while (got > 0 && s2s_buf_reserve(&b, 1 << 16)) {
        got = fread(b.s + b.len, 1, b.cap - 1 - b.len, f);
        b.len += got;
    }
    int err = ferror(f);
    fclose(f);
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
