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

// ---- collecting problems ----

typedef struct cfg_ctx {
    const char *name;      // file name in messages
    const char *text;      // the source, to quote lines from (may be NULL)
    size_t len;
    const char *base_dir;  // relative paths resolve here; NULL: leave them
    bool check_paths;      // a path that is set must exist
    s2s_cfg_buf msg;       // problems so far, joined with '\n'
    int n_errors;          // problems found, shown or not
    int n_omitted;
    bool oom;
    // Per schema key: where this load last set it, for duplicates and for
    // placing cross-field problems. line < 0: not set by this load.
    yaml_mark_t *key_mark;
    yaml_mark_t *value_mark;
    bool *seen;
} cfg_ctx;

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
static void quote_source(s2s_cfg_buf *b, const char *t, size_t len, size_t line,
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
    s2s_cfg_buf_puts(b, "\n");
    if (from > start) s2s_cfg_buf_puts(b, "...");
    for (size_t j = from; j < to; j++) {
        unsigned char c = (unsigned char)t[j];
        char ch = ((c < 0x20 && c != '\t') || c == 0x7f) ? '?' : (char)c;
        s2s_cfg_buf_append(b, &ch, 1);
    }
    if (to < end) s2s_cfg_buf_puts(b, "...");
    s2s_cfg_buf_puts(b, "\n");
    if (from > start) s2s_cfg_buf_puts(b, "   ");
    for (size_t j = from; j < caret; j++) {
        if (t[j] == '\t') s2s_cfg_buf_puts(b, "\t");
        else if (!is_utf8_cont(t[j])) s2s_cfg_buf_puts(b, " ");
    }
    s2s_cfg_buf_puts(b, "^");
}

// Records one problem: "name:line:col: what" plus the quoted source line,
// or "name: what" when mark is NULL.
static void report(cfg_ctx *c, const yaml_mark_t *mark, const char *what) {
    c->n_errors++;
    if (c->n_errors > MAX_ERRORS || (c->msg.len > 0 && c->msg.len >= MSG_BUDGET)) {
        c->n_omitted++;
        return;
    }
    s2s_cfg_buf one = {0};
    if (mark) {
        s2s_cfg_buf_printf(&one, "%s:%zu:%zu: %s", c->name, mark->line + 1,
                           mark->column + 1, what);
        quote_source(&one, c->text, c->len, mark->line, mark->column);
    } else {
        s2s_cfg_buf_printf(&one, "%s: %s", c->name, what);
    }
    if (one.oom) {
        c->oom = true;
    } else if (c->msg.len > 0 && c->msg.len + 1 + one.len > MSG_BUDGET) {
        c->n_omitted++;
    } else {
        if (c->msg.len > 0) s2s_cfg_buf_puts(&c->msg, "\n");
        s2s_cfg_buf_append(&c->msg, one.s, one.len);
    }
    s2s_cfg_buf_free(&one);
}

static void reportf(cfg_ctx *c, const yaml_mark_t *mark, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reportf(cfg_ctx *c, const yaml_mark_t *mark, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    report(c, mark, small);
}

// Reports b's text (a message built piecewise) and empties b.
static void report_buf(cfg_ctx *c, const yaml_mark_t *mark, s2s_cfg_buf *b) {
    if (b->oom) c->oom = true;
    else report(c, mark, b->s ? b->s : "");
    s2s_cfg_buf_free(b);
}

static s2s_status finish(cfg_ctx *c) {
    s2s_status st = S2S_OK;
    if (c->oom || c->msg.oom) {
        st = s2s_fail(S2S_ERR_NOMEM, "%s: out of memory while reading the config", c->name);
    } else if (c->n_errors > 0) {
        if (c->n_omitted > 0)
            s2s_cfg_buf_printf(&c->msg, "\n(%d more problem%s not shown)", c->n_omitted,
                               c->n_omitted == 1 ? "" : "s");
        st = c->msg.oom ? s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", c->name)
                        : s2s_fail(S2S_ERR_CONFIG, "%s", c->msg.s);
    }
    s2s_cfg_buf_free(&c->msg);
    free(c->key_mark);
    free(c->value_mark);
    free(c->seen);
    return st;
}

// ---- values ----

// Joins a relative path to base_dir (unless base_dir is NULL or empty) and,
// when asked, checks that the file exists. Returns false with why filled.
static bool resolve_path(char *out, size_t size, const char *path,
                         const char *base_dir, bool check, s2s_cfg_buf *why) {
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
        s2s_cfg_buf_printf(why, "path is longer than %zu bytes once joined to '%s'",
                           size - 1, base_dir);
        return false;
    }
    if (!check) return true;
    struct stat st;
    if (stat(out, &st) != 0) {
        s2s_cfg_buf_printf(why, "cannot find '%s': %s", out, strerror(errno));
        return false;
    }
    if (S_ISDIR(st.st_mode)) {
        s2s_cfg_buf_printf(why, "'%s' is a folder, not a file", out);
        return false;
    }
    return true;
}

// Parses text into cfg's field for key k (resolving paths); false with why.
static bool apply_value(const cfg_ctx *c, s2s_config *cfg, const s2s_cfg_key *k,
                        const char *text, bool quoted, s2s_cfg_buf *why) {
    void *field = s2s_cfg_field(cfg, k);
    if (k->type != S2S_CFG_PATH) return s2s_cfg_parse_value(k, text, quoted, field, why);
    // Paths go through scratch buffers so a failed check leaves the field.
    char *written = malloc(k->size), *resolved = malloc(k->size);
    bool ok = false;
    if (!written || !resolved) {
        why->oom = true;
    } else if (s2s_cfg_parse_value(k, text, quoted, written, why) &&
               resolve_path(resolved, k->size, written, c->base_dir, c->check_paths, why)) {
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

static void load_key(cfg_ctx *c, s2s_config *cfg, int section, const yaml_node_t *kn,
                     const yaml_node_t *vn) {
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
        s2s_cfg_buf b = {0};
        s2s_cfg_buf_puts(&b, "unknown key ");
        s2s_cfg_buf_quote(&b, name, name_len, 60);
        s2s_cfg_buf_printf(&b, " in '%s'", sname);
        const char *hint = s2s_cfg_suggest(section, name, name_len);
        if (hint) s2s_cfg_buf_printf(&b, " (did you mean '%s'?)", hint);
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

    s2s_cfg_buf why = {0};
    s2s_cfg_buf_printf(&why, "%s: ", k->key);
    size_t prefix = why.len;
    bool path_like = k->type == S2S_CFG_PATH || k->type == S2S_CFG_STRING;
    if (vn->type != YAML_SCALAR_NODE) {
        s2s_cfg_buf_puts(&why, "expected ");
        s2s_cfg_describe_type(&why, k);
        s2s_cfg_buf_printf(&why, ", got %s", node_kind(vn));
    } else if (is_null(vn) && !path_like) {
        s2s_cfg_buf_puts(&why, "expected ");
        s2s_cfg_describe_type(&why, k);
        s2s_cfg_buf_puts(&why, ", got nothing");
    } else if (memchr(vn->data.scalar.value, '\0', vn->data.scalar.length)) {
        s2s_cfg_buf_puts(&why, "value contains a NUL character");
    } else {
        const char *text = is_null(vn) ? "" : (const char *)vn->data.scalar.value;
        bool quoted = vn->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        if (apply_value(c, cfg, k, text, quoted, &why)) {
            c->value_mark[ki] = vn->start_mark;
            s2s_cfg_buf_free(&why);
            return;
        }
    }
    if (why.len == prefix && !why.oom) s2s_cfg_buf_puts(&why, "invalid value");
    report_buf(c, &vn->start_mark, &why);
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
        const char *name = (const char *)kn->data.scalar.value;
        size_t name_len = kn->data.scalar.length;
        int s = s2s_cfg_find_section(name, name_len);
        if (s < 0) {
            s2s_cfg_buf b = {0};
            s2s_cfg_buf_puts(&b, "unknown section ");
            s2s_cfg_buf_quote(&b, name, name_len, 60);
            const char *hint = s2s_cfg_suggest(-1, name, name_len);
            if (hint) s2s_cfg_buf_printf(&b, " (did you mean '%s'?)", hint);
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
            if (k2 && v2) load_key(c, cfg, s, k2, v2);
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
        c->oom = true;
        return;
    }
    s2s_cfg_buf b = {0};
    s2s_cfg_buf_puts(&b, p->problem ? p->problem : "invalid YAML");
    yaml_mark_t mark = p->problem_mark;
    if (p->error == YAML_READER_ERROR) {
        // Reader errors carry a byte offset instead of a mark.
        if (p->problem_value != -1) s2s_cfg_buf_printf(&b, " (0x%02x)", (unsigned)p->problem_value);
        mark = offset_to_mark(c->text, c->len, p->problem_offset);
    } else if (p->context) {
        s2s_cfg_buf_printf(&b, " (%s at line %zu)", p->context, p->context_mark.line + 1);
    }
    report_buf(c, &mark, &b);
}

static void validate_into(cfg_ctx *c, const s2s_config *cfg);

static s2s_status load_buffer(s2s_config *cfg, const char *text, size_t len,
                              const char *name, const char *base_dir, bool check_paths) {
    cfg_ctx c = {.name = name ? name : "<string>", .text = text, .len = len,
                 .base_dir = base_dir, .check_paths = check_paths};
    c.key_mark = calloc((size_t)s2s_cfg_n_keys, sizeof *c.key_mark);
    c.value_mark = calloc((size_t)s2s_cfg_n_keys, sizeof *c.value_mark);
    c.seen = calloc((size_t)s2s_cfg_n_keys, sizeof *c.seen);
    yaml_parser_t parser;
    if (!c.key_mark || !c.value_mark || !c.seen) {
        c.oom = true;
        return finish(&c);
    }
    if (flow_too_deep(&c)) return finish(&c);
    if (!yaml_parser_initialize(&parser)) {
        c.oom = true;
        return finish(&c);
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    yaml_document_t doc;
    if (!yaml_parser_load(&parser, &doc)) {
        report_syntax(&c, &parser);
    } else {
        load_document(&c, cfg, &doc);
        yaml_document_delete(&doc);
        // Later documents would be silently ignored; say so instead.
        if (!yaml_parser_load(&parser, &doc)) {
            report_syntax(&c, &parser);
        } else {
            yaml_node_t *root = yaml_document_get_root_node(&doc);
            if (root)
                report(&c, &root->start_mark,
                       "a config holds one YAML document; this is a second one");
            yaml_document_delete(&doc);
        }
    }
    yaml_parser_delete(&parser);
    // Cross-field problems only make sense once every value read cleanly.
    if (c.n_errors == 0 && !c.oom) validate_into(&c, cfg);
    return finish(&c);
}

// ---- public API ----

void s2s_config_default(s2s_config *cfg) {
    // Zero first so padding is zero too and whole structs compare with memcmp.
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < s2s_cfg_n_keys; i++) {
        const s2s_cfg_key *k = &s2s_cfg_keys[i];
        s2s_cfg_buf why = {0};
        bool ok = s2s_cfg_parse_value(k, k->def, false, s2s_cfg_field(cfg, k), &why);
        s2s_cfg_buf_free(&why);
        S2S_ASSERT(ok);  // a schema default that does not parse is a bug
    }
}

s2s_status s2s_config_load_string(s2s_config *cfg, const char *text, const char *name,
                                  const char *base_dir) {
    if (!cfg || !text) return s2s_fail(S2S_ERR_INVALID, "s2s_config_load_string: NULL argument");
    return load_buffer(cfg, text, strlen(text), name, base_dir, /*check_paths=*/base_dir != NULL);
}

s2s_status s2s_config_load_file(s2s_config *cfg, const char *path) {
    if (!cfg || !path) return s2s_fail(S2S_ERR_INVALID, "s2s_config_load_file: NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f) return s2s_fail(S2S_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    s2s_cfg_buf text = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) s2s_cfg_buf_append(&text, chunk, n);
    bool read_error = ferror(f);
    int err = errno;
    fclose(f);
    if (read_error) {
        s2s_cfg_buf_free(&text);
        return s2s_fail(S2S_ERR_IO, "%s: cannot read: %s", path, strerror(err));
    }
    if (text.oom) {
        s2s_cfg_buf_free(&text);
        return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory reading the file", path);
    }
    // Relative paths in the file are relative to the file's folder.
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) : 0;
    if (slash && dir_len == 0) dir_len = 1;  // "/x.yaml": the root
    char *base_dir = malloc(dir_len + 1);
    if (!base_dir) {
        s2s_cfg_buf_free(&text);
        return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    }
    memcpy(base_dir, path, dir_len);
    base_dir[dir_len] = '\0';
    s2s_status st = load_buffer(cfg, text.s ? text.s : "", text.len, path, base_dir,
                                /*check_paths=*/true);
    free(base_dir);
    s2s_cfg_buf_free(&text);
    return st;
}

static void trim(const char **s, const char **e) {
    while (*s < *e && (**s == ' ' || **s == '\t')) (*s)++;
    while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t')) (*e)--;
}

s2s_status s2s_config_set(s2s_config *cfg, const char *assignment) {
    if (!cfg || !assignment) return s2s_fail(S2S_ERR_INVALID, "s2s_config_set: NULL argument");
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
    s2s_cfg_buf why = {0};
    bool ok = apply_value(&c, cfg, &s2s_cfg_keys[ki], value, /*quoted=*/false, &why);
    free(value);
    s2s_status st = S2S_OK;
    if (why.oom) st = s2s_fail(S2S_ERR_NOMEM, "--set: out of memory");
    else if (!ok) st = s2s_fail(S2S_ERR_CONFIG, "--set %.200s: %s", assignment, why.s ? why.s : "invalid value");
    s2s_cfg_buf_free(&why);
    return st;
}

// ---- validation ----

static const yaml_mark_t *mark_of(const cfg_ctx *c, const char *key) {
    if (!c->seen) return NULL;
    for (int i = 0; i < s2s_cfg_n_keys; i++)
        if (strcmp(s2s_cfg_keys[i].key, key) == 0)
            return c->seen[i] ? &c->value_mark[i] : NULL;
    return NULL;
}

static void validate_into(cfg_ctx *c, const s2s_config *cfg) {
    int before = c->n_errors;
    for (int i = 0; i < s2s_cfg_n_keys; i++) {
        const s2s_cfg_key *k = &s2s_cfg_keys[i];
        s2s_cfg_buf why = {0};
        s2s_cfg_buf_printf(&why, "%s: ", k->key);
        if (s2s_cfg_check_value(k, s2s_cfg_field_const(cfg, k), &why))
            s2s_cfg_buf_free(&why);
        else
            report_buf(c, (c->seen && c->seen[i]) ? &c->value_mark[i] : NULL, &why);
    }
    if (c->n_errors > before) return;  // e.g. heads == 0: no division below

    const yaml_mark_t *d_mark = mark_of(c, "model.d_model");
    const yaml_mark_t *h_mark = mark_of(c, "model.heads");
    int d = cfg->model.d_model, h = cfg->model.heads;
    if (d % 2 != 0)
        reportf(c, d_mark,
                "model.d_model: %d must be even (sinusoidal positions come in sin/cos pairs)", d);
    if (d % h != 0)
        reportf(c, d_mark ? d_mark : h_mark,
                "model.d_model: %d is not divisible by model.heads (%d)", d, h);
}

s2s_status s2s_config_validate(const s2s_config *cfg, const char *name) {
    if (!cfg) return s2s_fail(S2S_ERR_INVALID, "s2s_config_validate: NULL config");
    cfg_ctx c = {.name = name ? name : "config"};
    validate_into(&c, cfg);
    return finish(&c);
}

// ---- printing ----

static void section_to_yaml(s2s_cfg_buf *b, const s2s_config *cfg, const s2s_config *def,
                            int s) {
    s2s_cfg_buf_printf(b, "%s:\n", s2s_cfg_sections[s].name);
    for (int i = 0; i < s2s_cfg_n_keys; i++) {
        const s2s_cfg_key *k = &s2s_cfg_keys[i];
        if (s2s_cfg_key_section(k) != s) continue;
        const void *v = s2s_cfg_field_const(cfg, k);
        s2s_cfg_buf_printf(b, "  %s: ", s2s_cfg_key_name(k));
        s2s_cfg_format_value(b, k, v);
        if (s2s_cfg_value_equal(k, v, s2s_cfg_field_const(def, k)))
            s2s_cfg_buf_puts(b, "  # default");
        s2s_cfg_buf_puts(b, "\n");
    }
}

char *s2s_config_to_yaml(const s2s_config *cfg) {
    s2s_config def;
    s2s_config_default(&def);
    s2s_cfg_buf b = {0};
    for (int s = 0; s < s2s_cfg_n_sections; s++) section_to_yaml(&b, cfg, &def, s);
    return s2s_cfg_buf_take(&b);
}

char *s2s_config_model_to_yaml(const s2s_config *cfg) {
    s2s_config def;
    s2s_config_default(&def);
    s2s_cfg_buf b = {0};
    section_to_yaml(&b, cfg, &def, s2s_cfg_find_section("model", 5));
    return s2s_cfg_buf_take(&b);
}
