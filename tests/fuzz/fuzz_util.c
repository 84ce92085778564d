// Helpers for the fuzz targets: inputs as strings and as files.
#define _GNU_SOURCE
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

char *s2s_fuzz_string(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) abort();
    if (size) memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

const char *s2s_fuzz_file(const uint8_t *data, size_t size) {
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("s2s-fuzz", 0);
        if (fd < 0) abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0) abort();
    for (size_t done = 0; done < size;) {
        ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
        if (n <= 0) abort();
        done += (size_t)n;
    }
    return path;
}

void s2s_fuzz_shipped_vocabs(s2s_vocab **zh, s2s_vocab **en) {
    if (s2s_vocab_load(zh, S2S_SOURCE_DIR "/vocab/zh.txt") != S2S_OK ||
        s2s_vocab_load(en, S2S_SOURCE_DIR "/vocab/en.txt") != S2S_OK)
        abort();
}
