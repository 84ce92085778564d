// Output paths of a training run and the checks made before its first step.
#define _DEFAULT_SOURCE  // realpath (XSI)
#include "train/outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

char *s2s_train_sibling(const char *path, const char *suffix) {
    const char *ext = ".safetensors";
    size_t n = strlen(path), e = strlen(ext);
    size_t base = n >= e && strcmp(path + n - e, ext) == 0 ? n - e : n;
    char *s = malloc(base + strlen(suffix) + 1);
    if (!s) return NULL;
    memcpy(s, path, base);
    memcpy(s + base, suffix, strlen(suffix) + 1);
    return s;
}

char *s2s_checkpoint_path(const char *path) {
    static const char suffix[] = ".ckpt.safetensors";
    size_t n = strlen(path), k = strlen(suffix);
    if (n >= k && strcmp(path + n - k, suffix) == 0) return strdup(path);
    return s2s_train_sibling(path, suffix);
}

// The folder of path ("." when it has none). Caller frees.
static char *folder_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

// Whether path (which need not exist; its folder must) lies inside dir,
// symbolic links followed. *ok false when a folder cannot be resolved.
static bool inside(const char *path, const char *dir, bool *ok) {
    char d[PATH_MAX], f[PATH_MAX];
    char *pf = folder_of(path);
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    *ok = pf && realpath(dir, d) && (realpath(path, f) || realpath(pf, f));
    if (*ok && access(path, F_OK) != 0) {  // a new file: its folder + its name
        size_t n = strlen(f);
        snprintf(f + n, sizeof f - n, "/%s", name);
    }
    free(pf);
    if (!*ok) return false;
    size_t n = strlen(d);
    if (n == 1) return true;  // dir is "/"
    return strncmp(f, d, n) == 0 && f[n] == '/';
}

static s2s_status check_inside(const char *key, const char *path, const s2s_train_params *p) {
    if (p->allow_outside || !p->config_dir || !path[0]) return S2S_OK;
    bool ok;
    if (inside(path, p->config_dir, &ok)) return S2S_OK;
    if (!ok)
        return s2s_fail(S2S_ERR_IO, "%s '%s': cannot resolve its folder: %s", key, path,
                        strerror(errno));
    return s2s_fail(S2S_ERR_CONFIG, "%s '%s' is outside the config's folder '%s' (pass "
                    "--allow-outside, or -o)", key, path, p->config_dir);
}

// Whether a and b name one existing file.
static bool same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

// That path's folder exists and takes a new file (a probe created
// exclusively and removed: access(2) says yes to root for any folder).
static s2s_status check_writable_folder(const char *path, const char *what) {
    char *dir = folder_of(path);
    if (!dir) return s2s_fail(S2S_ERR_NOMEM, "out of memory");
    size_t n = strlen(dir) + 32;
    char *probe = malloc(n);
    int fd = -1;
    if (probe) {
        snprintf(probe, n, "%s/.s2s-probe-XXXXXX", dir);
        fd = mkstemp(probe);
    }
    s2s_status st = S2S_OK;
    if (!probe) st = s2s_fail(S2S_ERR_NOMEM, "out of memory");
    else if (fd < 0)
        st = s2s_fail(S2S_ERR_IO, "%s: cannot write the %s there: %s", path, what,
                      strerror(errno));
    if (fd >= 0) {
        close(fd);
        unlink(probe);
    }
    free(probe);
    free(dir);
    return st;
}

char *s2s_train_log_path(const s2s_config *cfg, const s2s_train_params *p) {
    const char *out = p->output ? p->output : cfg->train.output;
    const char *log = p->log ? p->log : cfg->train.log;
    if (log[0]) return strdup(log);
    return out && out[0] ? s2s_train_sibling(out, ".train.log") : NULL;
}

s2s_status s2s_train_outputs_make(s2s_train_outputs *o, const s2s_config *cfg,
                                  const s2s_train_params *p) {
    *o = (s2s_train_outputs){0};
    const char *out = p->output ? p->output : cfg->train.output;
    if (!out || !out[0])
        return s2s_fail(S2S_ERR_CONFIG, "no output model: set train.output or pass -o OUT");
    o->out = strdup(out);
    o->ckpt = s2s_checkpoint_path(out);
    o->best = s2s_train_sibling(out, ".best.safetensors");
    o->log = s2s_train_log_path(cfg, p);
    if (!o->out || !o->ckpt || !o->best || !o->log)
        return s2s_fail(S2S_ERR_NOMEM, "out of memory");

    if (!p->output) S2S_TRY(check_inside("train.output", out, p));
    if (!p->log) S2S_TRY(check_inside("train.log", cfg->train.log, p));
    if (p->init && !p->overwrite && same_file(p->init, out))
        return s2s_fail(S2S_ERR_CONFIG, "%s: the output is the --init model; training would "
                        "overwrite it (pass --overwrite, or -o another file)", out);
    struct stat sb;
    if (stat(out, &sb) == 0 && S_ISDIR(sb.st_mode))
        return s2s_fail(S2S_ERR_IO, "%s: is a folder, not a model file", out);
    // The log needs no probe: s2s_train opens it before the first step.
    return check_writable_folder(out, "model");
}

void s2s_train_outputs_free(s2s_train_outputs *o) {
    free(o->out);
    free(o->ckpt);
    free(o->best);
    free(o->log);
    *o = (s2s_train_outputs){0};
}
