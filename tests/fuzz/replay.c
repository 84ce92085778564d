// Runs a fuzz target's LLVMFuzzerTestOneInput once on each file named, or
// on each file of each folder named, without libFuzzer: the committed seed
// corpus and reproducers become ctest tests in any build (gcc, ASan, UBSan).
//   fuzz_TARGET_replay PATH...
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) return 1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    LLVMFuzzerInitialize(&argc, &argv);
    int inputs = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat s;
        if (stat(argv[i], &s) != 0) continue;  // no reproducers yet
        if (!S_ISDIR(s.st_mode)) {
            bad += replay_file(argv[i]), inputs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        for (struct dirent *e; d && (e = readdir(d));) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            bad += replay_file(path), inputs++;
        }
        if (d) closedir(d);
    }
    // Every input returned (a finding aborts before this line).
    printf("replay: %d passed, %d failed\n", inputs - bad, bad);
    return bad != 0 || inputs == 0;
}
