// Large zeroed blocks on transparent huge pages (core/util.h).
#define _DEFAULT_SOURCE  // MAP_ANONYMOUS, MADV_HUGEPAGE (the build sets only _POSIX_C_SOURCE)
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/checked.h"
#include "core/error.h"
#include "core/util.h"

#define HUGE_PAGE ((size_t)2 << 20)

// Sanitizer builds keep every block on malloc, whose leaks they report.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define S2S_PLAIN_ALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define S2S_PLAIN_ALLOC 1
#endif
#endif

static bool big(size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE) && !defined(S2S_PLAIN_ALLOC)
    return bytes >= HUGE_PAGE;
#else
    (void)bytes;
    return false;
#endif
}

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

// The mapping's length for a block of `bytes`: whole small pages.
static size_t mapped(size_t bytes) { return round_up(bytes, (size_t)sysconf(_SC_PAGESIZE)); }

static void *out_of_memory(size_t n, size_t size) {
    s2s_fail(S2S_ERR_NOMEM, "out of memory (%zu x %zu bytes)", n, size);
    return NULL;
}

void *s2s_big_alloc(size_t n, size_t size) {
    size_t bytes = s2s_size_mul(n, size);
    if (bytes > SIZE_MAX - 2 * HUGE_PAGE) return out_of_memory(n, size);
    if (!big(bytes)) return s2s_calloc(n, size);
    // A mapping one huge page longer than needed, trimmed to start on a
    // huge-page boundary; its whole huge pages are asked to be huge. The
    // part past the last of them stays on small pages, so that a partly
    // used last huge page is not made whole. Fresh anonymous pages read as
    // zeros.
    size_t len = mapped(bytes);
    char *base = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return out_of_memory(n, size);
    char *p = (char *)round_up((uintptr_t)base, HUGE_PAGE);
    if (p > base) munmap(base, (size_t)(p - base));
    munmap(p + len, (size_t)(base + len + HUGE_PAGE - (p + len)));
    // Advice only: without transparent huge pages the block stays on small
    // ones, which is how malloc would have given it.
    madvise(p, bytes / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE);
    return p;
}

void s2s_big_free(void *p, size_t n, size_t size) {
    if (!p) return;
    size_t bytes = n * size;  // s2s_big_alloc checked the product
    if (!big(bytes)) {
        free(p);
        return;
    }
    munmap(p, mapped(bytes));
}
