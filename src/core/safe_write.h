// Safe file writes (internal): a reader of the target sees the old file or
// the new one, never half of either, and no other file is touched.
//
//     s2s_safe_file f;
//     S2S_TRY(s2s_safe_open(&f, path));
//     s2s_safe_write(&f, data, len);        // as often as needed
//     S2S_TRY(s2s_safe_commit(&f));         // or s2s_safe_abort(&f)
//
// What happens depends on what is at the target path:
// - nothing, or a regular file: the data goes to a new temp file in the
//   target's folder, created exclusively (O_CREAT|O_EXCL, a random name, so a
//   file or symlink planted at any name is never followed or reused). Commit
//   flushes and fsyncs it, renames it over the target and fsyncs the folder.
//   An existing target keeps its permission bits.
// - a symlink: the write goes through to what the link points at (as the
//   shell's `>` does). A regular file there is replaced as above, in its own
//   folder, and the link stays; a device or FIFO (/dev/stdout) is written in
//   place as below. A dangling symlink or a loop is refused.
// - a character device or a FIFO (/dev/null, /dev/full, a named pipe): written
//   in place, as `>` would, with no temp file and no rename, so the device node
//   is never replaced. Commit flushes; an error such as ENOSPC is reported.
// - a directory, a block device or a socket: refused.
// Every failure (open, write, flush, fsync, rename) is an S2S_ERR_IO status
// naming the target, and the temp file is removed.
#ifndef S2S_CORE_SAFE_WRITE_H
#define S2S_CORE_SAFE_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "s2s/status.h"

typedef struct s2s_safe_file {
    FILE *fp;      // write the contents here between open and commit/abort
    char *path;    // the target as given (for messages)
    char *target;  // the file replaced: path, or where its symlink points
    char *tmp;     // the temp file; NULL when writing in place
    int err;       // errno of the first failed s2s_safe_write, 0 if none
} s2s_safe_file;

// Opens a write to path. On S2S_OK f->fp is ready and the caller must end
// with s2s_safe_commit or s2s_safe_abort; on failure f needs nothing.
s2s_status s2s_safe_open(s2s_safe_file *f, const char *path);

// Appends len bytes. Returns false on a write error, which commit then
// reports (with its errno). Writing to f->fp directly also works; an error
// there is caught at commit too, but may be reported only as EIO because
// stdio drops the errno of a failed buffered write.
bool s2s_safe_write(s2s_safe_file *f, const void *data, size_t len);

// Flushes, fsyncs and renames the temp file over the target (or flushes an
// in-place write) and releases f. A write error on f->fp earlier (ferror) is
// reported here too. On failure the target is unchanged (for a regular file)
// and the temp file is gone.
s2s_status s2s_safe_commit(s2s_safe_file *f);

// Drops the write: closes and removes the temp file, leaves the target as it
// was, and releases f. Safe to call on a zeroed f.
void s2s_safe_abort(s2s_safe_file *f);

// The whole write for a buffer already in memory: open, write, commit.
s2s_status s2s_safe_write_file(const char *path, const void *data, size_t len);

#endif
