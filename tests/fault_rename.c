// Fault injection for tests (LD_PRELOAD): with S2S_FAULT_KILL_AT_RENAME=N
// the process kills itself with SIGKILL just before its Nth rename (rename,
// renameat or renameat2, counted together), as a power cut or `kill -9`
// would land between two file replacements. Without the variable every
// call goes straight through. Built without sanitizers: it is preloaded
// into sanitized binaries too (with ASAN_OPTIONS=verify_asan_link_order=0).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static atomic_int calls;

static void maybe_die(void) {
    const char *at = getenv("S2S_FAULT_KILL_AT_RENAME");
    if (at && atoi(at) == atomic_fetch_add(&calls, 1) + 1) raise(SIGKILL);
}

int rename(const char *from, const char *to) {
    maybe_die();
    int (*real)(const char *, const char *) =
        (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
    return real(from, to);
}

int renameat(int fd1, const char *from, int fd2, const char *to) {
    maybe_die();
    int (*real)(int, const char *, int, const char *) =
        (int (*)(int, const char *, int, const char *))dlsym(RTLD_NEXT, "renameat");
    return real(fd1, from, fd2, to);
}

int renameat2(int fd1, const char *from, int fd2, const char *to, unsigned flags) {
    maybe_die();
    int (*real)(int, const char *, int, const char *, unsigned) =
        (int (*)(int, const char *, int, const char *, unsigned))dlsym(RTLD_NEXT, "renameat2");
    return real(fd1, from, fd2, to, flags);
}
