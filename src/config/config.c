// YAML config loading, overrides, validation and printing, all driven by
// the schema table in schema.c. The only file in s2s that reads YAML.
//
// libyaml's document API (yaml_parser_load) is used rather than events so
// that every node carries its start_mark: each problem is reported at the
// line and column of the value (or key) at fault, with the source line and
// a caret, and all problems in a file are collected before failing.
#include "s2s/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "config/schema.h"
#include "core/error.h"

// At most this many problems are listed; the rest are counted.
#define MAX_ERRORS 20
// s2s_last_error() keeps about 2 KiB (src/core/status.c); stop listing
// problems before the message would be cut in the middle of a line.
#define MSG_BUDGET 1900
// Source lines longer than this are shown as a window around the caret.
#define LINE_WINDOW 160
// libyaml's scanner takes time quadratic in the flow nesting depth ("[[[[";
// 40k levels take seconds), so deeper text is refused before parsing.
#define MAX_FLOW_DEPTH 100
// `base:` chains longer than this are refused (cycles are caught by file
// identity before that; this bounds the recursion whatever the file system does).
#define MAX_BASE_DEPTH 32

// ---- collecting problems ----

// Where the value of a key came from: the file (the top one or one of its
// bases) and the position of the value, so that cross-field problems found
// once every file is read still point at a line.
typedef struct cfg_origin {
    const char *name, *text;  // kept alive by the top context
    size_t len;
    yaml_mark_t mark;
    bool set;
} cfg_origin;

// One per file being read. A `base:` file gets its own context whose
// `root` is the context of the file that was asked for: problems from the
// whole chain are collected there, in the order they are found.
typedef struct cfg_ctx {
    const char *name;      // file name in messages
    const char *text;      // the source, to quote lines from (may be NULL)
    size_t len;
    const char *base_dir;  // relative paths resolve here; NULL: leave them
    bool check_paths;      // a path that is set must exist
    struct cfg_ctx *root;  // the top context (NULL: this one)
    struct cfg_ctx *parent;  // the file whose base this is; NULL at the top
    bool has_id;           // dev/ino identify the file, for cycles (not for text)
    dev_t dev;
    ino_t ino;
    int depth;             // number of base: links from the top
    // Top context only.
    s2s_buf msg;       // problems so far, joined with '\n'
    int n_errors;          // problems found, shown or not
    int n_omitted;
    bool oom;
    cfg_origin *origin;    // per schema key; NULL: positions not tracked
    char **kept;           // names and texts of base files origin points into
    size_t n_kept, cap_kept;
    // Per file: where this file set each schema key, for duplicates.
    yaml_mark_t *key_mark;
    bool *seen;
} cfg_ctx;

static cfg_ctx *top(cfg_ctx *c) { return c->root ? c->root : c; }

// Keeps p until the top context finishes; false (p freed) on out of memory.
static bool keep(cfg_ctx *c, char *p) {
    cfg_ctx *t = top(c);
    if (!p) {
        t->oom = true;
        return false;
    }
    if (t->n_kept == t->cap_kept) {
        size_t cap = t->cap_kept ? 2 * t->cap_kept : 8;
        char **k = realloc(t->kept, cap * sizeof *k);
        if (!k) {
            free(p);
            t->oom = true;
            return false;
        }
        t->kept = k;
        t->cap_kept = cap;
    }
    t->kept[t->n_kept++] = p;
    return true;
}

static bool is_break(const char *t, size_t len, size_t i, size_t *width) {
    unsigned char c = (unsigned char)t[i];
    if (c == '\n') { *width = 1; return true; }
    if (c == '\r') { *width = (i + 1 < len && t[i + 1] == '\n') ? 2 : 1; return true; }
    // libyaml also breaks lines at NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR.
    if (c == 0xC2 && i + 1 < len && (unsigned char)t[i + 1] == 0x85) { *width = 2; return true; }
    if (c == 0xE2 && i + 2 < len && (unsigned char)t[i + 1] == 0x80 &&
        ((unsigned char)t[i + 2] == 0xA8 || (unsigned char)t[i + 2] == 0xA9)) {
        *width = 3;
        return true;
    }
    return false;
}

static bool is_utf8_cont(char c) { return ((unsigned char)c & 0xC0) == 0x80; }

// Appends "\n<source line>\n<caret line>" for 0-based line and column (in
// characters, as libyaml counts them). Nothing when the line is not there.
static void quote_source(s2s_buf *b, const char *t, size_t len, size_t line,
                         size_t col) {
    if (!t) return;
    size_t i = 0, w;
    for (size_t l = 0; l < line; l++) {
        while (i < len && !is_break(t, len, i, &w)) i++;
        if (i >= len) return;
        i += w;
    }
    size_t start = i, end = i;
    while (end < len && !is_break(t, len, end, &w)) end++;
    size_t caret = start;
    for (size_t c = 0; c < col && caret < end;) {
        caret++;
        if (caret >= end || !is_utf8_cont(t[caret])) c++;
    }
    size_t from = start, to = end;
    if (end - start > LINE_WINDOW) {
        from = caret > start + LINE_WINDOW / 2 ? caret - LINE_WINDOW / 2 : start;
        while (from > start && is_utf8_cont(t[from])) from--;
        to = from + LINE_WINDOW < end ? from + LINE_WINDOW : end;
        while (to < end && is_utf8_cont(t[to])) to++;
    }
    s2s_buf_puts(b, "\n");
    if (from > start) s2s_buf_puts(b, "...");
    for (size_t j = from; j < to; j++) {
        unsigned char c = (unsigned char)t[j];
        char ch = ((c < 0x20 && c != '\t') || c == 0x7f) ? '?' : (char)c;
        s2s_buf_append(b, &ch, 1);
    }
    if (to < end) s2s_buf_puts(b, "...");
    s2s_buf_puts(b, "\n");
    if (from > start) s2s_buf_puts(b, "   ");
    for (size_t j = from; j < caret; j++) {
        if (t[j] == '\t') s2s_buf_puts(b, "\t");
        else if (!is_utf8_cont(t[j])) s2s_buf_puts(b, " ");
    }
    s2s_buf_puts(b, "^");
}

// Records one problem: "name:line:col: what" plus the quoted line of
// text, "name: what" when mark is NULL, or just "what" when name is NULL
// too (an override, which has no file).
static void report_in(cfg_ctx *ctx, const char *name, const char *text, size_t len,
                      const yaml_mark_t *mark, const char *what) {
    cfg_ctx *c = top(ctx);
    c->n_errors++;
    if (c->n_errors > MAX_ERRORS || (c->msg.len > 0 && c->msg.len >= MSG_BUDGET)) {
        c->n_omitted++;
        return;
    }
    s2s_buf one = {0};
    if (mark && name) {
        s2s_buf_printf(&one, "%s:%zu:%zu: %s", name, mark->line + 1,
                           mark->column + 1, what);
        quote_source(&one, text, len, mark->line, mark->column);
    } else if (name) {
        s2s_buf_printf(&one, "%s: %s", name, what);
    } else {
        s2s_buf_puts(&one, what);
    }
    if (one.oom) {
        c->oom = true;
    } else if (c->msg.len > 0 && c->msg.len + 1 + one.len > MSG_BUDGET) {
        c->n_omitted++;
    } else {
        if (c->msg.len > 0) s2s_buf_puts(&c->msg, "\n");
        s2s_buf_append(&c->msg, one.s, one.len);
    }
    s2s_buf_free(&one);
}

static void report(cfg_ctx *c, const yaml_mark_t *mark, const char *what) {
    report_in(c, c->name, c->text, c->len, mark, what);
}

// report_in with a printf-style message (cut at 511 bytes).
static void vreport_in(cfg_ctx *c, const char *name, const char *text, size_t len,
                       const yaml_mark_t *mark, const char *fmt, va_list ap) {
    char small[512];
    vsnprintf(small, sizeof small, fmt, ap);
    report_in(c, name, text, len, mark, small);
}

static void reportf(cfg_ctx *c, const yaml_mark_t *mark, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reportf(cfg_ctx *c, const yaml_mark_t *mark, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport_in(c, c->name, c->text, c->len, mark, fmt, ap);
    va_end(ap);
}

// Reports b's text (a message built piecewise) and empties b.
static void report_buf(cfg_ctx *c, const yaml_mark_t *mark, s2s_buf *b) {
    if (b->oom) top(c)->oom = true;
    else report(c, mark, b->s ? b->s : "");
    s2s_buf_free(b);
}

// Ends the top context: the status and s2s_last_error() for everything
// collected, then frees what it holds.
static s2s_status finish(cfg_ctx *c) {
    s2s_status st = S2S_OK;
    if (c->oom || c->msg.oom) {
        st = s2s_fail(S2S_ERR_NOMEM, "%s: out of memory while reading the config", c->name);
    } else if (c->n_errors > 0) {
        if (c->n_omitted > 0)
            s2s_buf_printf(&c->msg, "\n(%d more problem%s not shown)", c->n_omitted,
                               c->n_omitted == 1 ? "" : "s");
        st = c->msg.oom ? s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", c->name)
                        : s2s_fail(S2S_ERR_CONFIG, "%s", c->msg.s);
    }
    s2s_buf_free(&c->msg);
    for (size_t i = 0; i < c->n_kept; i++) free(c->kept[i]);
    free(c->kept);
    free(c->origin);
    return st;
}

// ---- values ----

// Joins a relative path to base_dir (unless base_dir is NULL or empty) and,
// when asked, checks that the file exists. Returns false with why filled.
static bool resolve_path(char *out, size_t size, const char *path,
                         const char *base_dir, bool check, s2s_buf *why) {
    if (!path[0]) {
        out[0] = '\0';
        return true;
    }
    int n;
    if (path[0] == '/' || !base_dir || !base_dir[0])
        n = snprintf(out, size, "%s", path);
    else
        n = snprintf(out, size, "%s%s%s", base_dir,
                     base_dir[strlen(base_dir) - 1] == '/' ? "" : "/", path);
    if (n < 0 || (size_t)n >= size) {
        s2s_buf_printf(why, "path is longer than %zu bytes once joined to '%s'",
                           size - 1, base_dir);
        return false;
    }
    if (!check) return true;
    struct stat st;
    if (stat(out, &st) != 0) {
        s2s_buf_printf(why, "cannot find '%s': %s", out, strerror(errno));
        return false;
    }
    if (S_ISDIR(st.st_mode)) {
        s2s_buf_printf(why, "'%s' is a folder, not a file", out);
        return false;
    }
    return true;
}

// Parses text into cfg's field for key k (resolving paths); false with why.
static bool apply_value(const cfg_ctx *c, s2s_config *cfg, const s2s_cfg_key *k,
                        const char *text, bool quoted, s2s_buf *why) {
    void *field = s2s_cfg_field(cfg, k);
    bool output = k->flags & S2S_CFG_OUTPUT;
    if (k->type != S2S_CFG_PATH && !output) return s2s_cfg_parse_value(k, text, quoted, field, why);
    // Paths go through scratch buffers so a failed check leaves the field.
    char *written = malloc(k->size), *resolved = malloc(k->size);
    bool ok = false;
    if (!written || !resolved) {
        why->oom = true;
    } else if (s2s_cfg_parse_value(k, text, quoted, written, why) &&
               resolve_path(resolved, k->size, written, c->base_dir, c->check_paths && !output,
                            why)) {
        memcpy(field, resolved, strlen(resolved) + 1);
        ok = true;
    }
    free(written);
    free(resolved);
    return ok;
}

// ---- walking the YAML document ----

static const char *node_kind(const yaml_node_t *n) {
    switch (n->type) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a sequence";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

// `key:` with nothing after it, `~` or `null`.
static bool is_null(const yaml_node_t *n) {
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    return len == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
           strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

// A flow or block sequence of plain scalars as the text "[a, b, ...]", for
// list-valued keys (S2S_CFG_FLOAT_PAIR), which parse that text. False when
// an item is not a plain scalar.
static bool sequence_text(yaml_document_t *doc, const yaml_node_t *vn, s2s_buf *out) {
    s2s_buf_puts(out, "[");
    for (yaml_node_item_t *it = vn->data.sequence.items.start;
         it < vn->data.sequence.items.top; it++) {
        const yaml_node_t *n = yaml_document_get_node(doc, *it);
        if (!n || n->type != YAML_SCALAR_NODE ||
            n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
            memchr(n->data.scalar.value, '\0', n->data.scalar.length))
            return false;
        if (it > vn->data.sequence.items.start) s2s_buf_puts(out, ", ");
        s2s_buf_append(out, (const char *)n->data.scalar.value, n->data.scalar.length);
    }
    s2s_buf_puts(out, "]");
    return true;
}

// A mapping-valued key (S2S_CFG_GUIDED) from a flow or block mapping of
// plain scalars, field by field so each problem is reported where it is
// (an unknown or repeated field at its name, a bad value at the value);
// fields left out keep their values. Reports the first problem and returns
// false; the key is then left as it was.
static bool load_fields(cfg_ctx *c, s2s_config *cfg, yaml_document_t *doc,
                        const s2s_cfg_key *k, const yaml_node_t *vn) {
    void *field = s2s_cfg_field(cfg, k);
    const char *const *names = s2s_cfg_field_names(k);
    enum { MAX_FIELDS = 8, MAX_SIZE = 64 };
    int n_names = 0;
    while (names[n_names]) n_names++;
    S2S_ASSERT(n_names <= MAX_FIELDS && k->size <= MAX_SIZE);
    size_t seen_line[MAX_FIELDS] = {0};
    bool seen[MAX_FIELDS] = {false};
    // Worked on a copy, so that a mapping with a bad field changes nothing.
    unsigned char value[MAX_SIZE], scratch[MAX_SIZE];
    memcpy(value, field, k->size);
    for (yaml_node_pair_t *p = vn->data.mapping.pairs.start; p < vn->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *fk = yaml_document_get_node(doc, p->key);
        const yaml_node_t *fv = yaml_document_get_node(doc, p->value);
        if (!fk || !fv) continue;
        s2s_buf why = {0};
        s2s_buf_printf(&why, "%s: ", k->key);
        const yaml_mark_t *at = &fk->start_mark;
        bool bad = true;
        if (fk->type != YAML_SCALAR_NODE) {
            s2s_buf_printf(&why, "expected a field name, got %s", node_kind(fk));
        } else {
            const char *name = (const char *)fk->data.scalar.value;
            size_t name_len = fk->data.scalar.length;
            int f = -1;
            for (int i = 0; i < n_names; i++)
                if (strlen(names[i]) == name_len && memcmp(names[i], name, name_len) == 0) f = i;
            if (f < 0) {
                // Unknown: parse_field words it (with a suggestion).
                memcpy(scratch, value, k->size);
                s2s_cfg_parse_field(k, name, name_len, "0", scratch, &why);
            } else if (seen[f]) {
                s2s_buf_printf(&why, "duplicate field '%s' (first given at line %zu)",
                                   names[f], seen_line[f]);
            } else if (fv->type != YAML_SCALAR_NODE || is_null(fv) ||
                       fv->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
                       memchr(fv->data.scalar.value, '\0', fv->data.scalar.length)) {
                at = &fv->start_mark;
                s2s_buf_printf(&why, "%s must be a number, got %s", names[f],
                                   fv->type != YAML_SCALAR_NODE ? node_kind(fv)
                                   : is_null(fv)                ? "nothing"
                                                                : "a quoted string");
            } else {
                at = &fv->start_mark;
                bad = s2s_cfg_parse_field(k, name, name_len,
                                          (const char *)fv->data.scalar.value, value, &why) < 0;
                seen[f] = true;
                seen_line[f] = fk->start_mark.line + 1;
            }
        }
        if (bad) {
            report_buf(c, at, &why);
            return false;
        }
        s2s_buf_free(&why);
    }
    memcpy(field, value, k->size);
    return true;
}

static void load_key(cfg_ctx *c, s2s_config *cfg, yaml_document_t *doc, int section,
                     const yaml_node_t *kn, const yaml_node_t *vn) {
    const char *sname = s2s_cfg_sections[section].name;
    if (kn->type != YAML_SCALAR_NODE) {
        reportf(c, &kn->start_mark, "expected a key name in '%s', got %s", sname,
                node_kind(kn));
        return;
    }
    const char *name = (const char *)kn->data.scalar.value;
    size_t name_len = kn->data.scalar.length;
    int ki = s2s_cfg_find_key(section, name, name_len);
    if (ki < 0) {
        s2s_buf b = {0};
        s2s_buf_puts(&b, "unknown key ");
        s2s_cfg_quote(&b, name, name_len, 60);
        s2s_buf_printf(&b, " in '%s'", sname);
        const char *hint = s2s_cfg_suggest(section, name, name_len);
        if (hint) s2s_buf_printf(&b, " (did you mean '%s'?)", hint);
        report_buf(c, &kn->start_mark, &b);
        return;
    }
    const s2s_cfg_key *k = &s2s_cfg_keys[ki];
    if (c->seen[ki]) {
        reportf(c, &kn->start_mark, "duplicate key '%s' in '%s' (first given at line %zu)",
                s2s_cfg_key_name(k), sname, c->key_mark[ki].line + 1);
        return;
    }
    c->seen[ki] = true;
    c->key_mark[ki] = kn->start_mark;

    s2s_buf why = {0};
    s2s_buf_printf(&why, "%s: ", k->key);
    size_t prefix = why.len;
    bool path_like = k->type == S2S_CFG_PATH || k->type == S2S_CFG_STRING;
    s2s_buf seq = {0};
    if (k->type == S2S_CFG_FLOAT_PAIR && vn->type == YAML_SEQUENCE_NODE) {
        if (sequence_text(doc, vn, &seq) && !seq.oom) {
            if (apply_value(c, cfg, k, seq.s, /*quoted=*/false, &why)) {
                cfg_ctx *t = top(c);
                if (t->origin)
                    t->origin[ki] = (cfg_origin){.name = c->name, .text = c->text,
                                                 .len = c->len, .mark = vn->start_mark,
                                                 .set = true};
                s2s_buf_free(&seq);
                s2s_buf_free(&why);
                return;
            }
        } else {
            s2s_buf_puts(&why, "expected a list of two numbers, such as [0.9, 0.98]");
        }
        s2s_buf_free(&seq);
    } else if (k->type == S2S_CFG_GUIDED && vn->type == YAML_MAPPING_NODE) {
        if (load_fields(c, cfg, doc, k, vn)) {
            cfg_ctx *t = top(c);
            if (t->origin)
                t->origin[ki] = (cfg_origin){.name = c->name, .text = c->text, .len = c->len,
                                             .mark = vn->start_mark, .set = true};
        }
        s2s_buf_free(&why);
        return;
    } else if (vn->type != YAML_SCALAR_NODE) {
        s2s_buf_puts(&why, "expected ");
        s2s_cfg_describe_type(&why, k);
        s2s_buf_printf(&why, ", got %s", node_kind(vn));
    } else if (is_null(vn) && !path_like) {
        s2s_buf_puts(&why, "expected ");
        s2s_cfg_describe_type(&why, k);
        s2s_buf_puts(&why, ", got nothing");
    } else if (memchr(vn->data.scalar.value, '\0', vn->data.scalar.length)) {
        s2s_buf_puts(&why, "value contains a NUL character");
    } else {
        const char *text = is_null(vn) ? "" : (const char *)vn->data.scalar.value;
        bool quoted = vn->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        if (apply_value(c, cfg, k, text, quoted, &why)) {
            cfg_ctx *t = top(c);
            if (t->origin)
                t->origin[ki] = (cfg_origin){.name = c->name, .text = c->text, .len = c->len,
                                             .mark = vn->start_mark, .set = true};
            s2s_buf_free(&why);
            return;
        }
    }
    if (why.len == prefix && !why.oom) s2s_buf_puts(&why, "invalid value");
    report_buf(c, &vn->start_mark, &why);
}

static void load_base(cfg_ctx *c, s2s_config *cfg, const yaml_node_t *vn);

static bool is_base_key(const yaml_node_t *kn) {
    return kn->type == YAML_SCALAR_NODE && kn->data.scalar.length == 4 &&
           memcmp(kn->data.scalar.value, "base", 4) == 0;
}

static void load_document(cfg_ctx *c, s2s_config *cfg, yaml_document_t *doc) {
    yaml_node_t *root = yaml_document_get_root_node(doc);
    if (!root || is_null(root)) return;  // an empty file keeps every value
    if (root->type != YAML_MAPPING_NODE) {
        reportf(c, &root->start_mark,
                "expected a mapping of sections (such as 'model:') at the top level, got %s",
                node_kind(root));
        return;
    }
    // `base:` is read first wherever it stands, so that every key of this
    // file overrides it.
    yaml_node_pair_t *base = NULL;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top && !base; p++) {
        yaml_node_t *kn = yaml_document_get_node(doc, p->key);
        yaml_node_t *vn = yaml_document_get_node(doc, p->value);
        if (kn && vn && is_base_key(kn)) {
            base = p;
            load_base(c, cfg, vn);
        }
    }
    bool section_seen[64] = {false};
    size_t section_line[64] = {0};
    S2S_ASSERT(s2s_cfg_n_sections <= 64);
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(doc, p->key);
        yaml_node_t *vn = yaml_document_get_node(doc, p->value);
        if (!kn || !vn) continue;
        if (kn->type != YAML_SCALAR_NODE) {
            reportf(c, &kn->start_mark, "expected a section name, got %s", node_kind(kn));
            continue;
        }
        if (is_base_key(kn)) {
            if (p != base)
                reportf(c, &kn->start_mark, "duplicate key 'base' (first given at line %zu)",
                        yaml_document_get_node(doc, base->key)->start_mark.line + 1);
            continue;
        }
        const char *name = (const char *)kn->data.scalar.value;
        size_t name_len = kn->data.scalar.length;
        int s = s2s_cfg_find_section(name, name_len);
        if (s < 0) {
            s2s_buf b = {0};
            s2s_buf_puts(&b, "unknown section ");
            s2s_cfg_quote(&b, name, name_len, 60);
            const char *hint = s2s_cfg_suggest(-1, name, name_len);
            if (hint) s2s_buf_printf(&b, " (did you mean '%s'?)", hint);
            report_buf(c, &kn->start_mark, &b);
            continue;
        }
        const char *sname = s2s_cfg_sections[s].name;
        if (section_seen[s]) {
            reportf(c, &kn->start_mark, "duplicate section '%s' (first given at line %zu)",
                    sname, section_line[s]);
            continue;
        }
        section_seen[s] = true;
        section_line[s] = kn->start_mark.line + 1;
        if (is_null(vn)) continue;  // `model:` alone: nothing to change
        if (vn->type != YAML_MAPPING_NODE) {
            reportf(c, &vn->start_mark, "section '%s' must be a mapping of keys, got %s",
                    sname, node_kind(vn));
            continue;
        }
        for (yaml_node_pair_t *q = vn->data.mapping.pairs.start;
             q < vn->data.mapping.pairs.top; q++) {
            yaml_node_t *k2 = yaml_document_get_node(doc, q->key);
            yaml_node_t *v2 = yaml_document_get_node(doc, q->value);
            if (k2 && v2) load_key(c, cfg, doc, s, k2, v2);
        }
    }
}

// The mark (0-based line, column in characters) of byte offset `at`.
static yaml_mark_t offset_to_mark(const char *t, size_t len, size_t at) {
    yaml_mark_t mark = {0};
    size_t w;
    for (size_t i = 0; i < at && i < len;) {
        if (is_break(t, len, i, &w)) {
            mark.line++;
            mark.column = 0;
            i += w;
        } else {
            if (!is_utf8_cont(t[i])) mark.column++;
            i++;
        }
    }
    return mark;
}

// Counts brackets everywhere, quoted or not: it overestimates the depth,
// which only matters for text no config needs, and an attacker cannot hide
// brackets from it behind quotes.
static bool flow_too_deep(cfg_ctx *c) {
    int depth = 0;
    for (size_t i = 0; i < c->len; i++) {
        char ch = c->text[i];
        if (ch == '[' || ch == '{') {
            if (++depth > MAX_FLOW_DEPTH) {
                yaml_mark_t mark = offset_to_mark(c->text, c->len, i);
                reportf(c, &mark, "brackets nested more than %d deep", MAX_FLOW_DEPTH);
                return true;
            }
        } else if ((ch == ']' || ch == '}') && depth > 0) {
            depth--;
        }
    }
    return false;
}

// Turns libyaml's parser error into "file:line:col: problem" + source.
static void report_syntax(cfg_ctx *c, const yaml_parser_t *p) {
    if (p->error == YAML_MEMORY_ERROR) {
        top(c)->oom = true;
        return;
    }
    s2s_buf b = {0};
    s2s_buf_puts(&b, p->problem ? p->problem : "invalid YAML");
    yaml_mark_t mark = p->problem_mark;
    if (p->error == YAML_READER_ERROR) {
        // Reader errors carry a byte offset instead of a mark.
        if (p->problem_value != -1) s2s_buf_printf(&b, " (0x%02x)", (unsigned)p->problem_value);
        mark = offset_to_mark(c->text, c->len, p->problem_offset);
    } else if (p->context) {
        s2s_buf_printf(&b, " (%s at line %zu)", p->context, p->context_mark.line + 1);
    }
    report_buf(c, &mark, &b);
}

static void validate_into(cfg_ctx *c, const s2s_config *cfg);

// Reads c's text into cfg, reporting problems into the top context; the
// base: files it names are read too. No cross-field checks: those wait
// until every file and override is in.
static void parse_into(cfg_ctx *c, s2s_config *cfg) {
    c->key_mark = calloc((size_t)s2s_cfg_n_keys, sizeof *c->key_mark);
    c->seen = calloc((size_t)s2s_cfg_n_keys, sizeof *c->seen);
    yaml_parser_t parser;
    if (!c->key_mark || !c->seen || !yaml_parser_initialize(&parser)) {
        top(c)->oom = true;
        goto done;
    }
    if (flow_too_deep(c)) {
        yaml_parser_delete(&parser);
        goto done;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)c->text, c->len);
    yaml_document_t doc;
    if (!yaml_parser_load(&parser, &doc)) {
        report_syntax(c, &parser);
    } else {
        load_document(c, cfg, &doc);
        yaml_document_delete(&doc);
        // Later documents would be silently ignored; say so instead.
        if (!yaml_parser_load(&parser, &doc)) {
            report_syntax(c, &parser);
        } else {
            yaml_node_t *root = yaml_document_get_root_node(&doc);
            if (root)
                report(c, &root->start_mark,
                       "a config holds one YAML document; this is a second one");
            yaml_document_delete(&doc);
        }
    }
    yaml_parser_delete(&parser);
done:
    free(c->key_mark);
    free(c->seen);
    c->key_mark = NULL;
    c->seen = NULL;
}

static s2s_status set_one(s2s_config *cfg, const char *assignment, int *key);

// Reads the text (and its bases), applies the overrides, then runs the
// cross-field checks on the result; all problems are reported together.
static s2s_status load_buffer(s2s_config *cfg, const char *text, size_t len,
                              const char *name, const char *base_dir, bool check_paths,
                              const struct stat *id, const char *const *sets, int n_sets) {
    cfg_ctx c = {.name = name ? name : "<string>", .text = text, .len = len,
                 .base_dir = base_dir, .check_paths = check_paths, .has_id = id != NULL,
                 .dev = id ? id->st_dev : 0, .ino = id ? id->st_ino : 0};
    c.origin = calloc((size_t)s2s_cfg_n_keys, sizeof *c.origin);
    if (!c.origin) {
        c.oom = true;
        return finish(&c);
    }
    parse_into(&c, cfg);
    for (int i = 0; i < n_sets && !c.oom; i++) {
        int ki = -1;
        s2s_status st = set_one(cfg, sets[i], &ki);
        if (st == S2S_ERR_NOMEM) c.oom = true;
        else if (st != S2S_OK) report_in(&c, NULL, NULL, 0, NULL, s2s_last_error());
        // Overridden: the file's position no longer explains the value.
        else c.origin[ki].set = false;
    }
    // Cross-field problems only make sense once every value read cleanly.
    if (c.n_errors == 0 && !c.oom) validate_into(&c, cfg);
    return finish(&c);
}

// Reads a whole file. On failure returns false with errno's value in *err
// and the step that failed ("open" or "read") in *step.
static bool read_file(const char *path, s2s_buf *text, int *err, const char **step) {
    *step = "open";
    FILE *f = fopen(path, "rb");
    if (!f) {
        *err = errno;
        return false;
    }
    *step = "read";
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) s2s_buf_append(text, chunk, n);
    bool read_error = ferror(f);
    *err = errno;
    fclose(f);
    if (read_error) {
        s2s_buf_free(text);
        return false;
    }
    if (!text->oom && !text->s) s2s_buf_append(text, "", 0);
    return true;
}

// The folder part of path ("" for a bare name, "/" for "/x.yaml"). Caller
// frees; NULL on out of memory.
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) : 0;
    if (slash && dir_len == 0) dir_len = 1;
    char *dir = malloc(dir_len + 1);
    if (!dir) return NULL;
    memcpy(dir, path, dir_len);
    dir[dir_len] = '\0';
    return dir;
}

// ---- base: files ----

// Reads the file named by `base: path` (vn) into cfg under c. The base's
// own relative paths resolve against its own folder; its problems are
// reported in its own name. A cycle is reported at the base: value that
// closes it, with the chain of files.
static void load_base(cfg_ctx *c, s2s_config *cfg, const yaml_node_t *vn) {
    const yaml_mark_t *at = &vn->start_mark;
    if (vn->type != YAML_SCALAR_NODE || is_null(vn)) {
        reportf(c, at, "base: expected the path of a config file, got %s",
                vn->type == YAML_SCALAR_NODE ? "nothing" : node_kind(vn));
        return;
    }
    const char *value = (const char *)vn->data.scalar.value;
    size_t value_len = vn->data.scalar.length;
    if (memchr(value, '\0', value_len)) {
        report(c, at, "base: value contains a NUL character");
        return;
    }
    if (!c->base_dir) {
        // Text with no folder (a model file's stored config) must not
        // pull in files from wherever the process happens to run.
        report(c, at, "base: not allowed here: this config is not read from a file");
        return;
    }
    if (c->depth >= MAX_BASE_DEPTH) {
        reportf(c, at, "base: more than %d levels of base files", MAX_BASE_DEPTH);
        return;
    }
    s2s_buf path = {0};
    if (value[0] != '/' && c->base_dir[0]) {
        s2s_buf_puts(&path, c->base_dir);
        if (c->base_dir[strlen(c->base_dir) - 1] != '/') s2s_buf_puts(&path, "/");
    }
    s2s_buf_append(&path, value, value_len);
    if (path.oom) {
        top(c)->oom = true;
        s2s_buf_free(&path);
        return;
    }
    s2s_buf why = {0};
    // Files are told apart by device and inode, so "a.yaml", "./a.yaml"
    // and a symbolic link to it are one file.
    struct stat id;
    if (stat(path.s, &id) != 0) {
        s2s_buf_puts(&why, "base: cannot open ");
        s2s_cfg_quote(&why, path.s, path.len, 200);
        s2s_buf_printf(&why, ": %s", strerror(errno));
        report_buf(c, at, &why);
        s2s_buf_free(&path);
        return;
    }
    if (!S_ISREG(id.st_mode)) {
        // Not a folder, and not /dev/zero or a pipe, which never end.
        s2s_buf_puts(&why, "base: ");
        s2s_cfg_quote(&why, path.s, path.len, 200);
        s2s_buf_puts(&why, S_ISDIR(id.st_mode) ? " is a folder, not a file"
                                                   : " is not a regular file");
        report_buf(c, at, &why);
        s2s_buf_free(&path);
        return;
    }
    for (const cfg_ctx *p = c; p; p = p->parent) {
        if (!p->has_id || p->dev != id.st_dev || p->ino != id.st_ino) continue;
        // The chain from the file that was read first down to here.
        s2s_buf_puts(&why, "base: the bases form a cycle: ");
        const cfg_ctx *chain[MAX_BASE_DEPTH + 1];
        int n = 0;
        for (const cfg_ctx *q = c; q != p->parent && n <= MAX_BASE_DEPTH; q = q->parent)
            chain[n++] = q;
        while (n > 0) s2s_buf_printf(&why, "%s -> ", chain[--n]->name);
        s2s_buf_puts(&why, path.s);
        report_buf(c, at, &why);
        s2s_buf_free(&path);
        return;
    }
    s2s_buf text = {0};
    int err = 0;
    const char *step;
    if (!read_file(path.s, &text, &err, &step)) {
        s2s_buf_printf(&why, "base: cannot %s ", step);
        s2s_cfg_quote(&why, path.s, path.len, 200);
        s2s_buf_printf(&why, ": %s", strerror(err));
        report_buf(c, at, &why);
        s2s_buf_free(&path);
        return;
    }
    size_t text_len = text.len;
    char *name = s2s_buf_take(&path), *body = s2s_buf_take(&text);
    // The name and text outlive this call: origins and messages point in.
    bool kept_name = keep(c, name);
    bool kept_body = keep(c, body);
    char *dir = kept_name ? dir_of(name) : NULL;
    if (kept_name && kept_body && dir) {
        cfg_ctx b = {.name = name, .text = body, .len = text_len, .base_dir = dir,
                     .check_paths = true, .root = top(c), .parent = c, .has_id = true,
                     .dev = id.st_dev, .ino = id.st_ino, .depth = c->depth + 1};
        parse_into(&b, cfg);
    } else {
        top(c)->oom = true;
    }
    free(dir);
}

// ---- public API ----

void s2s_config_default(s2s_config *cfg) {
    // Zero first so padding is zero too and whole structs compare with memcmp.
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < s2s_cfg_n_keys; i++) {
        const s2s_cfg_key *k = &s2s_cfg_keys[i];
        s2s_buf why = {0};
        bool ok = s2s_cfg_parse_value(k, k->def, false, s2s_cfg_field(cfg, k), &why);
        s2s_buf_free(&why);
        S2S_ASSERT(ok);  // a schema default that does not parse is a bug
    }
}

s2s_status s2s_config_load_string(s2s_config *cfg, const char *text, const char *name,
                                  const char *base_dir) {
    if (!cfg || !text) return s2s_fail(S2S_ERR_INVALID, "s2s_config_load_string: NULL argument");
    return load_buffer(cfg, text, strlen(text), name, base_dir,
                       /*check_paths=*/base_dir != NULL, /*id=*/NULL, NULL, 0);
}

s2s_status s2s_config_load_file_set(s2s_config *cfg, const char *path,
                                    const char *const *sets, int n_sets) {
    if (!cfg || !path || (n_sets > 0 && !sets))
        return s2s_fail(S2S_ERR_INVALID, "s2s_config_load_file: NULL argument");
    s2s_buf text = {0};
    int err = 0;
    const char *step;
    if (!read_file(path, &text, &err, &step))
        return s2s_fail(S2S_ERR_IO, "%s: cannot %s: %s", path, step, strerror(err));
    if (text.oom) {
        s2s_buf_free(&text);
        return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory reading the file", path);
    }
    // Relative paths in the file are relative to the file's folder.
    char *base_dir = dir_of(path);
    // Identifies the file for cycles through base: (none if stat fails).
    struct stat id;
    bool has_id = stat(path, &id) == 0;
    s2s_status st;
    if (!base_dir)
        st = s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    else
        st = load_buffer(cfg, text.s, text.len, path, base_dir, /*check_paths=*/true,
                         has_id ? &id : NULL, sets, n_sets);
    free(base_dir);
    s2s_buf_free(&text);
    return st;
}

s2s_status s2s_config_load_file(s2s_config *cfg, const char *path) {
    return s2s_config_load_file_set(cfg, path, NULL, 0);
}

static void trim(const char **s, const char **e) {
    while (*s < *e && (**s == ' ' || **s == '\t')) (*s)++;
    while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t')) (*e)--;
}

// --set section.key.field=value for a mapping-valued key k: the field
// name[0..n) gets value[0..vn); the other fields keep their values.
static s2s_status set_field(s2s_config *cfg, const char *assignment, int ki, const char *name,
                            size_t n, const char *value, size_t vn, int *key) {
    const s2s_cfg_key *k = &s2s_cfg_keys[ki];
    char *text = malloc(vn + 1);
    if (!text) return s2s_fail(S2S_ERR_NOMEM, "--set: out of memory");
    memcpy(text, value, vn);
    text[vn] = '\0';
    s2s_buf why = {0};
    int f = s2s_cfg_parse_field(k, name, n, text, s2s_cfg_field(cfg, k), &why);
    free(text);
    s2s_status st = S2S_OK;
    if (why.oom) st = s2s_fail(S2S_ERR_NOMEM, "--set: out of memory");
    else if (f < 0) st = s2s_fail(S2S_ERR_CONFIG, "--set %.200s: %s", assignment, why.s ? why.s : "invalid value");
    else *key = ki;
    s2s_buf_free(&why);
    return st;
}

// s2s_config_set, also saying which key it set (*key, on success).
static s2s_status set_one(s2s_config *cfg, const char *assignment, int *key) {
    const char *eq = strchr(assignment, '=');
    if (!eq)
        return s2s_fail(S2S_ERR_CONFIG, "--set %.200s: expected section.key=value", assignment);
    const char *ks = assignment, *ke = eq, *vs = eq + 1, *ve = eq + strlen(eq);
    trim(&ks, &ke);
    trim(&vs, &ve);
    const char *dot = memchr(ks, '.', (size_t)(ke - ks));
    if (!dot) {
        // "heads=4": say which section it lives in, if any.
        for (int s = 0; s < s2s_cfg_n_sections; s++) {
            int ki = s2s_cfg_find_key(s, ks, (size_t)(ke - ks));
            if (ki >= 0)
                return s2s_fail(S2S_ERR_CONFIG,
                                "--set %.200s: expected section.key=value (did you mean '%s'?)",
                                assignment, s2s_cfg_keys[ki].key);
        }
        return s2s_fail(S2S_ERR_CONFIG, "--set %.200s: expected section.key=value", assignment);
    }
    int s = s2s_cfg_find_section(ks, (size_t)(dot - ks));
    if (s < 0) {
        const char *hint = s2s_cfg_suggest(-1, ks, (size_t)(dot - ks));
        return s2s_fail(S2S_ERR_CONFIG, "--set %.200s: unknown section '%.*s'%s%s%s", assignment,
                        (int)(dot - ks > 60 ? 60 : dot - ks), ks, hint ? " (did you mean '" : "",
                        hint ? hint : "", hint ? "'?)" : "");
    }
    const char *name = dot + 1;
    size_t name_len = (size_t)(ke - name);
    int ki = s2s_cfg_find_key(s, name, name_len);
    // section.key.field=value sets one field of a mapping-valued key.
    const char *sub = ki < 0 ? memchr(name, '.', name_len) : NULL;
    if (sub) {
        int parent = s2s_cfg_find_key(s, name, (size_t)(sub - name));
        if (parent >= 0 && s2s_cfg_field_names(&s2s_cfg_keys[parent]))
            return set_field(cfg, assignment, parent, sub + 1, (size_t)(ke - sub - 1), vs,
                             (size_t)(ve - vs), key);
    }
    if (ki < 0) {
        const char *hint = s2s_cfg_suggest(s, name, name_len);
        return s2s_fail(S2S_ERR_CONFIG, "--set %.200s: unknown key '%.*s' in '%s'%s%s%s",
                        assignment, (int)(name_len > 60 ? 60 : name_len), name,
                        s2s_cfg_sections[s].name, hint ? " (did you mean '" : "",
                        hint ? hint : "", hint ? "'?)" : "");
    }
    char *value = malloc((size_t)(ve - vs) + 1);
    if (!value) return s2s_fail(S2S_ERR_NOMEM, "--set: out of memory");
    memcpy(value, vs, (size_t)(ve - vs));
    value[ve - vs] = '\0';
    // Command-line paths are relative to the working directory.
    cfg_ctx c = {.base_dir = NULL, .check_paths = true};
    s2s_buf why = {0};
    bool ok = apply_value(&c, cfg, &s2s_cfg_keys[ki], value, /*quoted=*/false, &why);
    free(value);
    s2s_status st = S2S_OK;
    if (why.oom) st = s2s_fail(S2S_ERR_NOMEM, "--set: out of memory");
    else if (!ok) st = s2s_fail(S2S_ERR_CONFIG, "--set %.200s: %s", assignment, why.s ? why.s : "invalid value");
    else *key = ki;
    s2s_buf_free(&why);
    return st;
}

s2s_status s2s_config_set(s2s_config *cfg, const char *assignment) {
    if (!cfg || !assignment) return s2s_fail(S2S_ERR_INVALID, "s2s_config_set: NULL argument");
    int key;
    return set_one(cfg, assignment, &key);
}

// ---- validation ----

// Where the value of `key` was read (this file or a base), or NULL: a
// default, an override, or positions not tracked.
static const cfg_origin *origin_of(const cfg_ctx *c, const char *key) {
    if (!c->origin) return NULL;
    for (int i = 0; i < s2s_cfg_n_keys; i++)
        if (strcmp(s2s_cfg_keys[i].key, key) == 0)
            return c->origin[i].set ? &c->origin[i] : NULL;
    return NULL;
}

// Reports at the value o points to, in the file it came from; without a
// position (in the top file's name) when o is NULL.
static void report_at(cfg_ctx *c, const cfg_origin *o, const char *what) {
    if (o) report_in(c, o->name, o->text, o->len, &o->mark, what);
    else report_in(c, c->name, NULL, 0, NULL, what);
}

static void report_atf(cfg_ctx *c, const cfg_origin *o, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report_atf(cfg_ctx *c, const cfg_origin *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (o) vreport_in(c, o->name, o->text, o->len, &o->mark, fmt, ap);
    else vreport_in(c, c->name, NULL, 0, NULL, fmt, ap);
    va_end(ap);
}

static void validate_into(cfg_ctx *c, const s2s_config *cfg) {
    int before = c->n_errors;
    for (int i = 0; i < s2s_cfg_n_keys; i++) {
        const s2s_cfg_key *k = &s2s_cfg_keys[i];
        s2s_buf why = {0};
        s2s_buf_printf(&why, "%s: ", k->key);
        if (s2s_cfg_check_value(k, s2s_cfg_field_const(cfg, k), &why)) {
            s2s_buf_free(&why);
        } else {
            if (why.oom) c->oom = true;
            else report_at(c, (c->origin && c->origin[i].set) ? &c->origin[i] : NULL, why.s);
            s2s_buf_free(&why);
        }
    }
    if (c->n_errors > before) return;  // e.g. heads == 0: no division below

    const cfg_origin *d_at = origin_of(c, "model.d_model");
    const cfg_origin *h_at = origin_of(c, "model.heads");
    int d = cfg->model.d_model, h = cfg->model.heads;
    if (d % 2 != 0)
        report_atf(c, d_at,
                   "model.d_model: %d must be even (sinusoidal positions come in sin/cos pairs)",
                   d);
    if (d % h != 0)
        report_atf(c, d_at ? d_at : h_at,
                   "model.d_model: %d is not divisible by model.heads (%d)", d, h);

    // Guided alignment names a head that must exist.
    const s2s_guided_alignment *ga = &cfg->train.guided_alignment;
    const cfg_origin *ga_at = origin_of(c, "train.guided_alignment");
    if (ga->layer >= cfg->model.decoder_layers)
        report_atf(c, ga_at ? ga_at : origin_of(c, "model.decoder_layers"),
                   "train.guided_alignment: layer %d is out of range; model.decoder_layers is "
                   "%d (layers count from 0)", ga->layer, cfg->model.decoder_layers);
    if (ga->layer >= 0 && ga->head >= h)
        report_atf(c, ga_at ? ga_at : h_at,
                   "train.guided_alignment: head %d is out of range; model.heads is %d (heads "
                   "count from 0)", ga->head, h);
}

s2s_status s2s_config_validate(const s2s_config *cfg, const char *name) {
    if (!cfg) return s2s_fail(S2S_ERR_INVALID, "s2s_config_validate: NULL config");
    cfg_ctx c = {.name = name ? name : "config"};
    validate_into(&c, cfg);
    return finish(&c);
}

// ---- printing ----

static void section_to_yaml(s2s_buf *b, const s2s_config *cfg, const s2s_config *def,
                            int s) {
    s2s_buf_printf(b, "%s:\n", s2s_cfg_sections[s].name);
    for (int i = 0; i < s2s_cfg_n_keys; i++) {
        const s2s_cfg_key *k = &s2s_cfg_keys[i];
        if (s2s_cfg_key_section(k) != s) continue;
        const void *v = s2s_cfg_field_const(cfg, k);
        s2s_buf_printf(b, "  %s: ", s2s_cfg_key_name(k));
        s2s_cfg_format_value(b, k, v);
        if (s2s_cfg_value_equal(k, v, s2s_cfg_field_const(def, k)))
            s2s_buf_puts(b, "  # default");
        s2s_buf_puts(b, "\n");
    }
}

char *s2s_config_to_yaml(const s2s_config *cfg) {
    s2s_config def;
    s2s_config_default(&def);
    s2s_buf b = {0};
    for (int s = 0; s < s2s_cfg_n_sections; s++) section_to_yaml(&b, cfg, &def, s);
    return s2s_buf_take(&b);
}

char *s2s_config_model_to_yaml(const s2s_config *cfg) {
    s2s_config def;
    s2s_config_default(&def);
    s2s_buf b = {0};
    section_to_yaml(&b, cfg, &def, s2s_cfg_find_section("model", 5));
    section_to_yaml(&b, cfg, &def, s2s_cfg_find_section("decode", 6));
    return s2s_buf_take(&b);
}

// ---- comparing ----

static bool is_arch_key(const s2s_cfg_key *k) {
    return s2s_cfg_key_section(k) == s2s_cfg_find_section("model", 5) &&
           !(k->flags & S2S_CFG_NOT_ARCH);
}

s2s_status s2s_config_diff(const s2s_config *a, const s2s_config *b, bool model_only,
                           char **out_text) {
    if (!out_text) return s2s_fail(S2S_ERR_INVALID, "s2s_config_diff: NULL argument");
    *out_text = NULL;
    if (!a || !b) return s2s_fail(S2S_ERR_INVALID, "s2s_config_diff: NULL argument");
    int model = s2s_cfg_find_section("model", 5);
    s2s_buf out = {0};
    for (int i = 0; i < s2s_cfg_n_keys; i++) {
        const s2s_cfg_key *k = &s2s_cfg_keys[i];
        if (model_only && s2s_cfg_key_section(k) != model) continue;
        const void *va = s2s_cfg_field_const(a, k), *vb = s2s_cfg_field_const(b, k);
        if (s2s_cfg_value_equal(k, va, vb)) continue;
        s2s_buf_printf(&out, "%s: ", k->key);
        s2s_cfg_format_value(&out, k, va);
        s2s_buf_puts(&out, " -> ");
        s2s_cfg_format_value(&out, k, vb);
        s2s_buf_puts(&out, "\n");
    }
    *out_text = s2s_buf_take(&out);
    return *out_text ? S2S_OK : s2s_fail(S2S_ERR_NOMEM, "config diff: out of memory");
}

bool s2s_config_same_arch(const s2s_config *a, const s2s_config *b) {
    for (int i = 0; i < s2s_cfg_n_keys; i++) {
        const s2s_cfg_key *k = &s2s_cfg_keys[i];
        if (is_arch_key(k) &&
            !s2s_cfg_value_equal(k, s2s_cfg_field_const(a, k), s2s_cfg_field_const(b, k)))
            return false;
    }
    return true;
}

s2s_status s2s_config_check_arch(const s2s_config *stored, const char *model_name,
                                 const s2s_config *wanted, const char *config_name) {
    if (!stored || !wanted)
        return s2s_fail(S2S_ERR_INVALID, "s2s_config_check_arch: NULL argument");
    if (s2s_config_same_arch(stored, wanted)) return S2S_OK;
    s2s_buf b = {0};
    s2s_buf_printf(&b, "%s: the model's architecture differs from %s:",
                       model_name ? model_name : "model", config_name ? config_name : "the config");
    for (int i = 0; i < s2s_cfg_n_keys; i++) {
        const s2s_cfg_key *k = &s2s_cfg_keys[i];
        const void *vs = s2s_cfg_field_const(stored, k), *vw = s2s_cfg_field_const(wanted, k);
        if (!is_arch_key(k) || s2s_cfg_value_equal(k, vs, vw)) continue;
        s2s_buf_printf(&b, "\n  %s: ", k->key);
        s2s_cfg_format_value(&b, k, vs);
        s2s_buf_puts(&b, " in the model, ");
        s2s_cfg_format_value(&b, k, vw);
        s2s_buf_puts(&b, " in the config");
    }
    if (b.oom) {
        s2s_buf_free(&b);
        return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", model_name ? model_name : "model");
    }
    s2s_status st = s2s_fail(S2S_ERR_CONFIG, "%s", b.s);
    s2s_buf_free(&b);
    return st;
}
