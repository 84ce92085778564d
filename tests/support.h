// Helpers the test programs share (not references: see reference.h).
#ifndef S2S_TESTS_SUPPORT_H
#define S2S_TESTS_SUPPORT_H

#include <stddef.h>

#include "s2s/model.h"

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

// Changes weights the public way: a copy of the i-th tensor's values goes
// to edit(values, n, arg), then back with s2s_model_set_tensor (asserted).
void tensor_edit(s2s_model *m, int i, void (*edit)(float *values, size_t n, void *arg),
                 void *arg);
// values[index] += delta in the tensor of that name (asserted to exist).
void tensor_add(s2s_model *m, const char *name, size_t index, float delta);

#endif
