// Reading input lines with a byte limit, checking an output path before a
// long run writes to it, and writing a file all or nothing.
//
//     char *buf = NULL;  size_t cap = 0, len;  bool too_long;
//     int r;
//     while ((r = s2s_read_line(f, &buf, &cap, S2S_LINE_MAX_BYTES, &len, &too_long)) > 0) {
//         if (too_long) { ... skip the line, or refuse the file ... }
//         ... buf holds len bytes ...
//     }
//     free(buf);   // r < 0: a read error, s2s_last_error() says which
//
//     if (s2s_check_writable("out.html") != S2S_OK) ... // before decoding
//     if (s2s_write_file("out.html", text, strlen(text)) != S2S_OK) ...
#ifndef S2S_IO_H
#define S2S_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "s2s/status.h"

#ifdef __cplusplus
extern "C" {
#endif

// The longest input line s2s reads (1 MiB), without its line end: every
// command reading lines (translate, score, eval, align, eval-align) skips
// a longer one with a warning, and training and `vocab build` refuse a
// training file holding one.
#define S2S_LINE_MAX_BYTES (1 << 20)
// The longest line s2s_read_line reads through (64 MiB, or max if larger):
// a longer one, or a stream that never ends a line (/dev/zero, a pipe with
// no newline), stops the input with an error instead of running forever.
#define S2S_LINE_SKIP_MAX_BYTES ((size_t)64 << 20)
// The largest vocab file s2s_vocab_load reads (64 MiB; the shipped ones
// are under 100 kB). A larger file, or an endless stream, is refused.
#define S2S_VOCAB_MAX_BYTES (64 << 20)

// Reads one line of f into *buf (grown as needed, at most max + 2 bytes;
// the caller frees it), without its line end ("\n", "\r\n"), NUL-ended.
// *len is the line's bytes (a NUL byte inside counts, so strlen may be
// less). A line longer than max bytes is read through to its end without
// being stored: *too_long is set and *len is 0. Preconditions: f open for
// reading; *buf NULL or from an earlier call, with *cap its size.
// Returns 1 when a line was read, 0 at the end of input, -1 on a read
// error or out of memory, -2 for a line with no end within
// S2S_LINE_SKIP_MAX_BYTES, where reading stops (bad input, not a failure of
// the machine); s2s_last_error() says which.
int s2s_read_line(FILE *f, char **buf, size_t *cap, size_t max, size_t *len, bool *too_long);

// Checks, without writing anything, that the library's safe writer
// (s2s_model_save, s2s_align_html_write, `s2s init -o`, ...) could write
// path now, so that a command refuses a bad output path before a long
// run rather than after it. The writer's rules: a character device or a
// FIFO (/dev/null, /dev/stdout) is written in place; nothing there or a
// regular file (also through a symlink) is replaced by a temp file in its
// folder, which must be writable; a directory, a dangling symlink or any
// other kind of file is refused. Returns S2S_OK, or S2S_ERR_IO with the
// writer's message ("PATH: cannot write: a directory").
s2s_status s2s_check_writable(const char *path);

// Writes len bytes of data to path as the library's safe writer does (the
// rules above): a reader of path sees the old file or the new one, never
// half of either. Returns S2S_OK, or S2S_ERR_IO naming path and the reason
// (nothing changed at path then).
s2s_status s2s_write_file(const char *path, const void *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
