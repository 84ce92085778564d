// Internal: what the config loader's parts share — the context that collects
// problems (report.c), the YAML walk (walk.c) and the public API (config.c).
//
// One s2s_cfg_ctx per file being read. A `base:` file gets its own context
// whose `root` is the context of the file that was asked for: problems from
// the whole chain are collected there, in the order they are found, and
// s2s_cfg_finish turns them into the status and s2s_last_error().
#ifndef S2S_CONFIG_LOAD_H
#define S2S_CONFIG_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <yaml.h>

#include "config/schema.h"

// Where the value of a leaf came from: the file (the top one or one of its
// bases) and the position of the value, so that cross-field problems found
// once every file is read still point at a line.
typedef struct s2s_cfg_origin {
    const char *name, *text;  // kept alive by the top context
    size_t len;
    yaml_mark_t mark;
    bool set;
} s2s_cfg_origin;

typedef struct s2s_cfg_ctx {
    const char *name;      // file name in messages
    const char *text;      // the source, to quote lines from (may be NULL)
    size_t len;
    const char *base_dir;  // relative paths resolve here; NULL: leave them
    bool check_paths;      // a path that is set must exist
    struct s2s_cfg_ctx *root;    // the top context (NULL: this one)
    struct s2s_cfg_ctx *parent;  // the file whose base this is; NULL at the top
    bool has_id;           // dev/ino identify the file, for cycles (not for text)
    dev_t dev;
    ino_t ino;
    int depth;             // number of base: links from the top
    // Top context only.
    s2s_buf msg;           // problems so far, joined with '\n'
    int n_errors;          // problems found, shown or not
    int n_omitted;
    bool oom;
    s2s_cfg_origin *origin;  // per leaf; NULL: positions not tracked
    char **kept;           // names and texts of base files origin points into
    size_t n_kept, cap_kept;
} s2s_cfg_ctx;

// ---- report.c ----

s2s_cfg_ctx *s2s_cfg_top(s2s_cfg_ctx *c);
// Keeps p until the top context finishes; false (p freed) on out of memory.
bool s2s_cfg_keep(s2s_cfg_ctx *c, char *p);
// Records one problem: "name:line:col: what" plus the quoted line of text,
// "name: what" when mark is NULL, or just "what" when name is NULL too (an
// override, which has no file).
void s2s_cfg_report_in(s2s_cfg_ctx *c, const char *name, const char *text, size_t len,
                       const yaml_mark_t *mark, const char *what);
// The same in c's own file.
void s2s_cfg_report(s2s_cfg_ctx *c, const yaml_mark_t *mark, const char *what);
void s2s_cfg_reportf(s2s_cfg_ctx *c, const yaml_mark_t *mark, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
// Reports b's text (a message built piecewise) and empties b.
void s2s_cfg_report_buf(s2s_cfg_ctx *c, const yaml_mark_t *mark, s2s_buf *b);
// Ends the top context: the status and s2s_last_error() for everything
// collected, then frees what it holds.
s2s_status s2s_cfg_finish(s2s_cfg_ctx *c);
// The mark (0-based line, column in characters) of byte offset `at`.
yaml_mark_t s2s_cfg_offset_to_mark(const char *t, size_t len, size_t at);

// ---- walk.c ----

// Reads c's text into cfg, reporting problems into the top context; the
// base: files it names are read too. No cross-field checks: those wait
// until every file and override is in.
void s2s_cfg_parse_into(s2s_cfg_ctx *c, s2s_config *cfg);

// Parses text into cfg's field for leaf l; paths are joined to base_dir
// (unless NULL), cleaned, and when check_paths is set must name an existing
// file. On failure leaves the field alone and returns false with why filled.
bool s2s_cfg_apply_value(const char *base_dir, bool check_paths, s2s_config *cfg,
                         const s2s_cfg_leaf *l, const char *text, bool quoted, s2s_buf *why);

// Reads a whole file of at most S2S_CONFIG_MAX_BYTES. On failure returns
// false with errno's value in *err (EFBIG: too large) and the step that
// failed ("open" or "read") in *step.
bool s2s_cfg_read_file(const char *path, s2s_buf *text, int *err, const char **step);

// The folder part of path ("" for a bare name, "/" for "/x.yaml"). Caller
// frees; NULL on out of memory.
char *s2s_cfg_dir_of(const char *path);

// Cleans a path in place: drops "." components and repeated slashes, and
// folds "dir/.." unless dir is a symbolic link (where ".." leads elsewhere).
// "" stays "", and a path that folds away entirely becomes ".".
void s2s_cfg_clean_path(char *path);

#endif
