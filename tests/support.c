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
