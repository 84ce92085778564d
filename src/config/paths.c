// s2s_config_absolute_paths (s2s/config.h): every path-valued key, found
// through the schema table.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/schema.h"
#include "core/error.h"

// The working directory, malloc'd.
static s2s_status working_dir(char **out) {
    for (size_t cap = 256; cap <= ((size_t)1 << 20); cap *= 2) {
        char *cwd = malloc(cap);
        if (!cwd) return s2s_fail(S2S_ERR_NOMEM, "out of memory");
        if (getcwd(cwd, cap)) {
            *out = cwd;
            return S2S_OK;
        }
        int err = errno;
        free(cwd);
        if (err != ERANGE)
            return s2s_fail(S2S_ERR_IO, "cannot find the working directory: %s", strerror(err));
    }
    return s2s_fail(S2S_ERR_IO, "cannot find the working directory: its name is too long");
}

s2s_status s2s_config_absolute_paths(s2s_config *cfg) {
    char *cwd = NULL;
    S2S_TRY(working_dir(&cwd));
    size_t n_cwd = strlen(cwd);
    s2s_status st = S2S_OK;
    for (int i = 0; i < s2s_cfg_n_keys && st == S2S_OK; i++) {
        const s2s_cfg_key *k = &s2s_cfg_keys[i];
        if (k->type != S2S_CFG_PATH && !(k->flags & S2S_CFG_OUTPUT)) continue;
        char *path = s2s_cfg_field(cfg, k);
        if (path[0] == '\0' || path[0] == '/') continue;
        size_t n_path = strlen(path);
        if (n_cwd + 1 + n_path + 1 > k->size) {
            st = s2s_fail(S2S_ERR_CONFIG, "%s: '%s/%s' is longer than %zu bytes", k->key, cwd,
                          path, k->size - 1);
            break;
        }
        memmove(path + n_cwd + 1, path, n_path + 1);
        memcpy(path, cwd, n_cwd);
        path[n_cwd] = '/';
    }
    free(cwd);
    return st;
}
