// Safe file writes: exclusive temp file, fsync, rename, fsync the folder.
// See safe_write.h for what happens with each kind of target.
#define _XOPEN_SOURCE 700  // realpath (XSI; the build sets only _POSIX_C_SOURCE)
#include "core/safe_write.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/util.h"
#include "core/io.h"

// O_CREAT|O_EXCL fails on an existing name, so a collision only costs a
// retry; the name is random so that nobody can block every attempt.
enum { TEMP_ATTEMPTS = 64 };

static s2s_status io_fail(const char *path, int err) {
    return s2s_fail(S2S_ERR_IO, "%s: cannot write: %s", path, strerror(err ? err : EIO));
}

static void release(s2s_safe_file *f) {
    free(f->path);
    free(f->target);
    free(f->tmp);
    f->path = f->target = f->tmp = NULL;
    f->fp = NULL;
}

// Creates TARGET.tmp.XXXXXXXXXXXX exclusively; returns the fd or -1 (errno set).
static int create_temp(char **tmp_out, const char *target) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    static unsigned counter;  // distinct seeds for calls within one clock tick
    s2s_rng rng;
    s2s_rng_seed(&rng, ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)ts.tv_nsec ^
                           ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)&rng ^
                           ((uint64_t)__atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED) << 20));
    size_t size = strlen(target) + 32;
    char *tmp = malloc(size);
    if (!tmp) {
        errno = ENOMEM;
        return -1;
    }
    for (int i = 0; i < TEMP_ATTEMPTS; i++) {
        snprintf(tmp, size, "%s.tmp.%012llx", target,
                 (unsigned long long)(s2s_rng_next(&rng) >> 16));
        // 0666 less the umask, as fopen would; never follows a symlink.
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            *tmp_out = tmp;
            return fd;
        }
        if (errno != EEXIST) break;
    }
    int err = errno;
    free(tmp);
    errno = err;
    return -1;
}

// The folder of target ("." for a bare name); NULL on out of memory.
static char *folder_of(const char *target) {
    const char *slash = strrchr(target, '/');
    return slash ? strndup(target, slash == target ? 1 : (size_t)(slash - target)) : strdup(".");
}

// fsync of the folder makes the rename itself durable. Filesystems that
// cannot sync a folder say EINVAL; that is not a failure of the write.
static int sync_folder(const char *target) {
    char *dir = folder_of(target);
    if (!dir) return ENOMEM;
    int err = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        if (fsync(fd) != 0 && errno != EINVAL) err = errno;
        close(fd);
    }
    free(dir);
    return err;
}

// What is at path, through any symlink: *exists false for nothing there.
// Sets f->target to the file a rename replaces (path, or where its symlink
// points).
static s2s_status find_target(s2s_safe_file *f, const char *path, struct stat *st,
                              bool *exists) {
    struct stat lst;
    *exists = lstat(path, &lst) == 0;
    if (!*exists && errno != ENOENT) return io_fail(path, errno);
    if (*exists && stat(path, st) != 0) {  // a dangling symlink or a loop
        if (errno == ENOENT)
            return s2s_fail(S2S_ERR_IO, "%s: cannot write: a symlink to a missing file", path);
        return io_fail(path, errno);
    }
    // A symlink to a regular file: replace that file, in its folder, and keep
    // the link. (A symlink to a device, /dev/stdout say, is written in place.)
    bool through = *exists && S_ISLNK(lst.st_mode) && S_ISREG(st->st_mode);
    f->target = through ? realpath(path, NULL) : strdup(path);
    if (!f->target && through) return io_fail(path, errno);
    if (!f->target) return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    return S2S_OK;
}

// Opens a device or FIFO for writing in place, as the shell's `>` would
// (truncation means nothing there). -1 with errno on failure.
static int open_in_place(const char *path) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    struct stat now;
    if (fd >= 0 && (fstat(fd, &now) != 0 || S_ISREG(now.st_mode))) {
        close(fd);  // became a regular file since the stat: never write one in place
        errno = EAGAIN;
        return -1;
    }
    return fd;
}

// A directory, a block device or a socket: what the writer refuses.
static s2s_status refuse_kind(const char *path, const struct stat *st) {
    return s2s_fail(S2S_ERR_IO, "%s: cannot write: %s", path,
                    S_ISDIR(st->st_mode) ? "a directory" : "not a regular file, device or FIFO");
}

s2s_status s2s_check_writable(const char *path) {
    s2s_safe_file f = {0};
    struct stat st;
    bool exists;
    s2s_status s = find_target(&f, path, &st, &exists);
    if (s == S2S_OK && exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        if (access(path, W_OK) != 0) s = io_fail(path, errno);
    } else if (s == S2S_OK && exists && !S_ISREG(st.st_mode)) {
        s = refuse_kind(path, &st);
    } else if (s == S2S_OK) {  // the temp file goes into the target's folder
        char *dir = folder_of(f.target);
        if (!dir) s = s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
        else if (access(dir, W_OK | X_OK) != 0) s = io_fail(path, errno);
        free(dir);
    }
    release(&f);
    return s;
}

s2s_status s2s_safe_open(s2s_safe_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    f->path = strdup(path);
    if (!f->path) return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    struct stat st;
    bool exists;
    s2s_status s = find_target(f, path, &st, &exists);
    if (s != S2S_OK) {
        release(f);
        return s;
    }
    int fd;
    if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        fd = open_in_place(path);
    } else if (exists && !S_ISREG(st.st_mode)) {
        s = refuse_kind(path, &st);
        release(f);
        return s;
    } else {
        fd = create_temp(&f->tmp, f->target);
        // An overwritten file keeps its permissions (the temp has 0666 & ~umask).
        if (fd >= 0 && exists) (void)fchmod(fd, st.st_mode & 07777);
    }
    if (fd < 0) {
        s = io_fail(path, errno);
        release(f);
        return s;
    }
    f->fp = fdopen(fd, "wb");
    if (!f->fp) {
        int err = errno;
        close(fd);
        if (f->tmp) unlink(f->tmp);
        release(f);
        return io_fail(path, err);
    }
    return S2S_OK;
}

bool s2s_safe_write(s2s_safe_file *f, const void *data, size_t len) {
    if (f->err) return false;
    errno = 0;
    if (len > 0 && fwrite(data, 1, len, f->fp) != len) {
        f->err = errno ? errno : EIO;
        return false;
    }
    return true;
}

s2s_status s2s_safe_commit(s2s_safe_file *f) {
    int err = f->err;
    // fflush + fsync before rename: otherwise a crash can leave a renamed but
    // empty file in place of the old, good one.
    if (fflush(f->fp) != 0 && !err) err = errno;
    if (ferror(f->fp) && !err) err = EIO;  // stdio dropped the errno of an earlier write
    // fsync on a device or FIFO is EINVAL and means nothing; only the temp needs it.
    if (f->tmp && !err && fsync(fileno(f->fp)) != 0) err = errno;
    if (fclose(f->fp) != 0 && !err) err = errno;
    f->fp = NULL;
    if (f->tmp && !err && rename(f->tmp, f->target) != 0) err = errno;
    if (err) {
        if (f->tmp) unlink(f->tmp);
        s2s_status s = io_fail(f->path, err);
        release(f);
        return s;
    }
    if (f->tmp && (err = sync_folder(f->target)) != 0) {
        s2s_status s = s2s_fail(S2S_ERR_IO, "%s: written, but syncing its folder failed: %s",
                                f->path, strerror(err));
        release(f);
        return s;
    }
    release(f);
    return S2S_OK;
}

void s2s_safe_abort(s2s_safe_file *f) {
    if (f->fp) fclose(f->fp);
    if (f->tmp) unlink(f->tmp);
    release(f);
}

s2s_status s2s_safe_write_file(const char *path, const void *data, size_t len) {
    s2s_safe_file f;
    S2S_TRY(s2s_safe_open(&f, path));
    s2s_safe_write(&f, data, len);
    return s2s_safe_commit(&f);
}

s2s_status s2s_write_file(const char *path, const void *data, size_t len) {
    return s2s_safe_write_file(path, data, len);
}
