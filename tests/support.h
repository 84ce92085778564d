// Helpers the test programs share (not references: see reference.h).
#ifndef S2S_TESTS_SUPPORT_H
#define S2S_TESTS_SUPPORT_H

#include <stddef.h>

// A fresh folder under /tmp for one test: make it in .init, remove it with
// everything inside in .fini.
extern char tmpdir[64];  // the folder itself
void tmpdir_make(void);
void tmpdir_remove(void);
// "<the folder>/name"; the last 8 results stay valid.
char *tmp_path(const char *name);

// A whole file, NUL-terminated (size excludes the NUL). Caller frees.
unsigned char *slurp(const char *path, size_t *size);
// Writes n bytes to path.
void spit(const char *path, const void *bytes, size_t n);

#endif
