// Temp-folder fixture for the tests (support.h).
#include "support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char tmpdir[64];

static void rm_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            rm_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

void tmpdir_make(void) {
    strcpy(tmpdir, "/tmp/s2s_test_XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

void tmpdir_remove(void) { rm_tree(tmpdir); }

char *tmp_path(const char *name) {
    static char buf[8][256];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", tmpdir, name);
    return p;
}

unsigned char *slurp(const char *path, size_t *size) {
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp, "cannot open %s", path);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n + 1 : 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
    buf[n > 0 ? n : 0] = 0;
    fclose(fp);
    *size = (size_t)n;
    return buf;
}

void spit(const char *path, const void *bytes, size_t n) {
    FILE *fp = fopen(path, "wb");
    cr_assert_not_null(fp, "cannot write %s", path);
    cr_assert_eq(fwrite(bytes, 1, n, fp), n);
    fclose(fp);
}

void tensor_edit(s2s_model *m, int i, void (*edit)(float *values, size_t n, void *arg),
                 void *arg) {
    s2s_tensor_info t = s2s_model_tensor(m, i);
    size_t n = (size_t)t.shape[0] * (size_t)(t.ndim == 2 ? t.shape[1] : 1);
    float *v = malloc(n * sizeof *v);
    cr_assert_not_null(v);
    memcpy(v, t.data, n * sizeof *v);
    edit(v, n, arg);
    cr_assert_eq(s2s_model_set_tensor(m, t.name, v, n), S2S_OK, "%s", s2s_last_error());
    free(v);
}

typedef struct add_arg {
    size_t index;
    float delta;
} add_arg;

static void add_at(float *values, size_t n, void *arg) {
    const add_arg *a = arg;
    cr_assert_lt(a->index, n);
    values[a->index] += a->delta;
}

void tensor_add(s2s_model *m, const char *name, size_t index, float delta) {
    for (int i = 0; i < s2s_model_tensor_count(m); i++)
        if (!strcmp(s2s_model_tensor(m, i).name, name)) {
            tensor_edit(m, i, add_at, &(add_arg){index, delta});
            return;
        }
    cr_assert_fail("no tensor '%s'", name);
}
