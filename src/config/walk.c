// The YAML walk: a config file (and its `base:` files) read into s2s_config
// through the nested schema tables. The only place in s2s that reads YAML.
//
// libyaml's document API (yaml_parser_load) is used rather than events so
// that every node carries its start_mark: each problem is reported at the
// line and column of the value (or key) at fault. Input is bounded before
// libyaml sees it: at most S2S_CONFIG_MAX_BYTES, read from a string, so a
// parse always ends.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/load.h"
#include "core/error.h"
#include "core/util.h"

// libyaml's scanner takes time quadratic in the flow nesting depth ("[[[[";
// 40k levels take seconds), so deeper text is refused before parsing.
#define MAX_FLOW_DEPTH 100
// `base:` chains longer than this are refused (cycles are caught by file
// identity before that; this bounds the recursion whatever the file system does).
#define MAX_BASE_DEPTH 32
// Keys per table, for the duplicate checks' stack arrays.
#define MAX_TABLE_KEYS 64

// ---- paths ----

void s2s_cfg_clean_path(char *path) {
    size_t n = strlen(path);
    if (n == 0 || n >= S2S_PATH_MAX) return;
    bool absolute = path[0] == '/';
    size_t top = absolute ? 1 : 0;  // length of the part no ".." can remove
    size_t len = top;               // of the cleaned text, built in place (len <= read point)
    size_t comps[S2S_PATH_MAX / 2 + 1];  // where each kept component starts
    bool up[S2S_PATH_MAX / 2 + 1];       // whether it is ".."
    int depth = 0;
    for (size_t i = 0; i < n;) {
        while (i < n && path[i] == '/') i++;
        size_t start = i;
        while (i < n && path[i] != '/') i++;
        size_t w = i - start;
        if (w == 0 || (w == 1 && path[start] == '.')) continue;
        bool is_up = w == 2 && path[start] == '.' && path[start + 1] == '.';
        if (is_up && depth > 0 && !up[depth - 1]) {
            // Fold "dir/.." unless dir is a link: then ".." is its target's parent.
            char saved = path[len];
            path[len] = '\0';
            struct stat st;
            bool link = lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
            path[len] = saved;
            if (!link) {
                len = comps[--depth];
                if (len > top) len--;  // the slash before it
                continue;
            }
        } else if (is_up && absolute && depth == 0) {
            continue;  // "/.." is "/"
        }
        if (len > top) path[len++] = '/';
        comps[depth] = len;
        up[depth++] = is_up;
        memmove(path + len, path + start, w);
        len += w;
    }
    if (len == 0) path[len++] = '.';
    path[len] = '\0';
}

// Joins a relative path to base_dir (unless base_dir is NULL or empty),
// cleans it and, when asked, checks that the file exists. False with why.
static bool resolve_path(char *out, size_t size, const char *path, const char *base_dir,
                         bool check, s2s_buf *why) {
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
        s2s_buf_printf(why, "path is longer than %zu bytes once joined to '%s'", size - 1,
                       base_dir);
        return false;
    }
    s2s_cfg_clean_path(out);
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

bool s2s_cfg_apply_value(const char *base_dir, bool check_paths, s2s_config *cfg,
                         const s2s_cfg_leaf *l, const char *text, bool quoted, s2s_buf *why) {
    const s2s_cfg_key *k = l->key;
    const s2s_cfg_ops *ops = s2s_cfg_ops_of(k);
    void *field = s2s_cfg_field(cfg, l);
    bool output = k->flags & S2S_CFG_OUTPUT;
    if (k->type != S2S_CFG_PATH && !output) return ops->parse(k, text, quoted, field, why);
    // Paths go through scratch buffers so a failed check leaves the field.
    char *written = malloc(k->size), *resolved = malloc(k->size);
    bool ok = false;
    if (!written || !resolved) {
        why->oom = true;
    } else if (ops->parse(k, text, quoted, written, why) &&
               resolve_path(resolved, k->size, written, base_dir, check_paths && !output,
                            why)) {
        memcpy(field, resolved, strlen(resolved) + 1);
        ok = true;
    }
    free(written);
    free(resolved);
    return ok;
}

// ---- nodes ----

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
// S2S_CFG_FLOAT_PAIR, which parses that text (index lists are read entry
// by entry instead: load_index_list). False when
// an item is not a plain scalar.
static bool sequence_text(yaml_document_t *doc, const yaml_node_t *vn, s2s_buf *out) {
    s2s_buf_puts(out, "[");
    for (yaml_node_item_t *it = vn->data.sequence.items.start; it < vn->data.sequence.items.top;
         it++) {
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

// ---- walking the tables ----

// Records that leaf l's value came from node vn, for the cross-field checks.
static void set_origin(s2s_cfg_ctx *c, const s2s_cfg_leaf *l, const yaml_node_t *vn) {
    s2s_cfg_ctx *t = s2s_cfg_top(c);
    if (t->origin)
        t->origin[l - s2s_cfg_leaf_get(0)] = (s2s_cfg_origin){
            .name = c->name, .text = c->text, .len = c->len, .mark = vn->start_mark,
            .set = true};
}

// A YAML sequence (flow or block) for an index list, read entry by entry
// so that each bad entry is reported at its own line and column; every bad
// entry is reported, and the field changes only when all are good.
static void load_index_list(s2s_cfg_ctx *c, s2s_config *cfg, yaml_document_t *doc,
                            const s2s_cfg_leaf *l, const yaml_node_t *vn) {
    s2s_index_list list = {0};
    bool ok = true;
    for (yaml_node_item_t *it = vn->data.sequence.items.start; it < vn->data.sequence.items.top;
         it++) {
        const yaml_node_t *n = yaml_document_get_node(doc, *it);
        if (!n) continue;
        s2s_buf why = {0};
        s2s_buf_printf(&why, "%s: ", l->path);
        if (n->type != YAML_SCALAR_NODE || is_null(n))
            s2s_buf_printf(&why, "expected an integer, got %s",
                           n->type == YAML_SCALAR_NODE ? "nothing" : node_kind(n));
        else if (memchr(n->data.scalar.value, '\0', n->data.scalar.length))
            s2s_buf_puts(&why, "value contains a NUL character");
        else if (s2s_cfg_index_add(l->key, &list, (const char *)n->data.scalar.value,
                                   n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE, &why)) {
            s2s_buf_free(&why);
            continue;
        }
        ok = false;
        s2s_cfg_report_buf(c, &n->start_mark, &why);
    }
    if (!ok) return;
    memcpy(s2s_cfg_field(cfg, l), &list, sizeof list);
    set_origin(c, l, vn);
}

// The value vn of leaf l, reported at vn when it is bad; on success the
// leaf's origin is vn.
static void load_leaf(s2s_cfg_ctx *c, s2s_config *cfg, yaml_document_t *doc,
                      const s2s_cfg_leaf *l, const yaml_node_t *vn) {
    const s2s_cfg_key *k = l->key;
    if (k->type == S2S_CFG_INDEX_LIST && vn->type == YAML_SEQUENCE_NODE) {
        load_index_list(c, cfg, doc, l, vn);
        return;
    }
    s2s_buf why = {0}, seq = {0};
    s2s_buf_printf(&why, "%s: ", l->path);
    size_t prefix = why.len;
    bool path_like = k->type == S2S_CFG_PATH || k->type == S2S_CFG_STRING;
    const char *text = NULL;
    bool quoted = false;
    if (k->type == S2S_CFG_FLOAT_PAIR && vn->type == YAML_SEQUENCE_NODE) {
        if (sequence_text(doc, vn, &seq) && !seq.oom) text = seq.s;
        else s2s_buf_puts(&why, "expected a list of two numbers, such as [0.9, 0.98]");
    } else if (vn->type != YAML_SCALAR_NODE || (is_null(vn) && !path_like)) {
        s2s_buf_puts(&why, "expected ");
        s2s_cfg_ops_of(k)->describe(&why, k);
        s2s_buf_printf(&why, ", got %s", vn->type == YAML_SCALAR_NODE ? "nothing" : node_kind(vn));
    } else if (memchr(vn->data.scalar.value, '\0', vn->data.scalar.length)) {
        s2s_buf_puts(&why, "value contains a NUL character");
    } else {
        text = is_null(vn) ? "" : (const char *)vn->data.scalar.value;
        quoted = vn->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
    }
    if (text && s2s_cfg_apply_value(c->base_dir, c->check_paths, cfg, l, text, quoted, &why)) {
        set_origin(c, l, vn);
        s2s_buf_free(&seq);
        s2s_buf_free(&why);
        return;
    }
    if (why.len == prefix && !why.oom) s2s_buf_puts(&why, "invalid value");
    s2s_buf_free(&seq);
    s2s_cfg_report_buf(c, &vn->start_mark, &why);
}

static bool is_base_key(const yaml_node_t *kn) {
    return kn->type == YAML_SCALAR_NODE && kn->data.scalar.length == 4 &&
           memcmp(kn->data.scalar.value, "base", 4) == 0;
}

// The mapping mn read into table t, whose struct starts at `offset` in
// s2s_config; `where` is t's path ("" for the root, whose keys are the
// sections, "train.guided_alignment" for a nested table). Unknown and
// repeated keys are reported at the key; nested tables are walked the same
// way, at any depth.
static void walk_table(s2s_cfg_ctx *c, s2s_config *cfg, yaml_document_t *doc,
                       const s2s_cfg_table *t, const char *where, size_t offset,
                       const yaml_node_t *mn) {
    bool root = where[0] == '\0';
    const char *what = root ? "section" : "key";
    size_t first_line[MAX_TABLE_KEYS] = {0};  // 1-based; 0: not seen in this mapping
    S2S_ASSERT(t->n_keys <= MAX_TABLE_KEYS);
    for (yaml_node_pair_t *p = mn->data.mapping.pairs.start; p < mn->data.mapping.pairs.top;
         p++) {
        yaml_node_t *kn = yaml_document_get_node(doc, p->key);
        yaml_node_t *vn = yaml_document_get_node(doc, p->value);
        if (!kn || !vn) continue;
        if (kn->type != YAML_SCALAR_NODE) {
            if (root) s2s_cfg_reportf(c, &kn->start_mark, "expected a section name, got %s",
                                      node_kind(kn));
            else s2s_cfg_reportf(c, &kn->start_mark, "expected a key name in '%s', got %s",
                                 where, node_kind(kn));
            continue;
        }
        if (root && is_base_key(kn)) continue;  // read before the walk
        const char *name = (const char *)kn->data.scalar.value;
        size_t name_len = kn->data.scalar.length;
        int i = s2s_cfg_find(t, name, name_len);
        if (i < 0) {
            s2s_buf b = {0};
            s2s_buf_printf(&b, "unknown %s ", what);
            s2s_cfg_quote(&b, name, name_len, 60);
            if (!root) s2s_buf_printf(&b, " in '%s'", where);
            const char *hint = s2s_cfg_suggest(t, name, name_len);
            if (hint) s2s_buf_printf(&b, " (did you mean '%s'?)", hint);
            s2s_cfg_report_buf(c, &kn->start_mark, &b);
            continue;
        }
        const s2s_cfg_key *k = &t->keys[i];
        if (first_line[i]) {
            if (root) s2s_cfg_reportf(c, &kn->start_mark,
                                      "duplicate section '%s' (first given at line %zu)",
                                      k->name, first_line[i]);
            else s2s_cfg_reportf(c, &kn->start_mark,
                                 "duplicate key '%s' in '%s' (first given at line %zu)",
                                 k->name, where, first_line[i]);
            continue;
        }
        first_line[i] = kn->start_mark.line + 1;
        if (k->type != S2S_CFG_TABLE) {
            int li = s2s_cfg_leaf_at(offset + k->offset);
            S2S_ASSERT(li >= 0);
            load_leaf(c, cfg, doc, s2s_cfg_leaf_get(li), vn);
            continue;
        }
        s2s_buf path = {0};
        s2s_buf_printf(&path, "%s%s%s", where, root ? "" : ".", k->name);
        if (path.oom) {
            s2s_cfg_top(c)->oom = true;
        } else if (is_null(vn)) {
            // `model:` alone: nothing to change
        } else if (vn->type != YAML_MAPPING_NODE) {
            if (root) {
                s2s_cfg_reportf(c, &vn->start_mark, "section '%s' must be a mapping of keys, got %s",
                                k->name, node_kind(vn));
            } else {
                s2s_buf b = {0};
                s2s_buf_printf(&b, "%s: expected a mapping of ", path.s);
                s2s_cfg_list_names(&b, k->sub);
                s2s_buf_printf(&b, ", got %s", node_kind(vn));
                s2s_cfg_report_buf(c, &vn->start_mark, &b);
            }
        } else {
            walk_table(c, cfg, doc, k->sub, path.s, offset + k->offset, vn);
        }
        s2s_buf_free(&path);
    }
}

static void load_base(s2s_cfg_ctx *c, s2s_config *cfg, const yaml_node_t *vn);

static void load_document(s2s_cfg_ctx *c, s2s_config *cfg, yaml_document_t *doc) {
    yaml_node_t *root = yaml_document_get_root_node(doc);
    if (!root || is_null(root)) return;  // an empty file keeps every value
    if (root->type != YAML_MAPPING_NODE) {
        s2s_cfg_reportf(c, &root->start_mark,
                        "expected a mapping of sections (such as 'model:') at the top level, "
                        "got %s", node_kind(root));
        return;
    }
    // `base:` is read first wherever it stands, so that every key of this
    // file overrides it.
    const yaml_node_t *base = NULL;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        yaml_node_t *kn = yaml_document_get_node(doc, p->key);
        yaml_node_t *vn = yaml_document_get_node(doc, p->value);
        if (!kn || !vn || !is_base_key(kn)) continue;
        if (base) {
            s2s_cfg_reportf(c, &kn->start_mark, "duplicate key 'base' (first given at line %zu)",
                            base->start_mark.line + 1);
        } else {
            base = kn;
            load_base(c, cfg, vn);
        }
    }
    walk_table(c, cfg, doc, &s2s_cfg_root, "", 0, root);
}

// Counts brackets everywhere, quoted or not: it overestimates the depth,
// which only matters for text no config needs, and an attacker cannot hide
// brackets from it behind quotes.
static bool flow_too_deep(s2s_cfg_ctx *c) {
    int depth = 0;
    for (size_t i = 0; i < c->len; i++) {
        char ch = c->text[i];
        if (ch == '[' || ch == '{') {
            if (++depth > MAX_FLOW_DEPTH) {
                yaml_mark_t mark = s2s_cfg_offset_to_mark(c->text, c->len, i);
                s2s_cfg_reportf(c, &mark, "brackets nested more than %d deep", MAX_FLOW_DEPTH);
                return true;
            }
        } else if ((ch == ']' || ch == '}') && depth > 0) {
            depth--;
        }
    }
    return false;
}

// ---- syntax errors in a person's words ----

// Byte offset of the start of 0-based line `line` in c->text, or c->len.
static size_t line_start(const s2s_cfg_ctx *c, size_t line) {
    size_t i = 0;
    for (size_t l = 0; l < line && i < c->len; i++)
        if (c->text[i] == '\n') l++;
    return i;
}

// Byte offset of a mark (libyaml's index counts characters, not bytes).
static size_t mark_offset(const s2s_cfg_ctx *c, const yaml_mark_t *m) {
    size_t i = line_start(c, m->line);
    for (size_t col = 0; col < m->column && i < c->len; col++)
        do i++; while (i < c->len && ((unsigned char)c->text[i] & 0xC0) == 0x80);
    return i;
}

// The leading spaces of the line starting at byte i; -1 for a blank or
// comment line (which sets no indentation).
static int line_indent(const s2s_cfg_ctx *c, size_t i) {
    int n = 0;
    while (i < c->len && c->text[i] == ' ') i++, n++;
    if (i >= c->len || c->text[i] == '\n' || c->text[i] == '\r' || c->text[i] == '#') return -1;
    return n;
}

// The indentation of the nearest line above `line` that sets one, or -1.
static int indent_above(const s2s_cfg_ctx *c, size_t line, size_t *above) {
    for (size_t l = line; l-- > 0;) {
        int n = line_indent(c, line_start(c, l));
        if (n >= 0) return *above = l, n;
    }
    return -1;
}

// libyaml names what its scanner met ("could not find expected ':'",
// "found character that cannot start any token"); a person needs what is
// wrong and where they wrote it: the key without its colon (libyaml only
// notices on the next line), the tab, the line indented out of step.
// Writes that message into b and its position into *mark; false when the
// problem is none of these.
static bool explain_syntax(const s2s_cfg_ctx *c, const yaml_parser_t *p, s2s_buf *b,
                           yaml_mark_t *mark) {
    if (!c->text || !p->problem) return false;
    const yaml_mark_t *pm = &p->problem_mark;
    if (!strcmp(p->problem, "could not find expected ':'") && p->context &&
        !strcmp(p->context, "while scanning a simple key")) {
        // The key started at context_mark; show the rest of that line.
        size_t i = mark_offset(c, &p->context_mark), end = i;
        while (end < c->len && c->text[end] != '\n' && c->text[end] != '\r') end++;
        while (end > i && (c->text[end - 1] == ' ' || c->text[end - 1] == '\t')) end--;
        s2s_buf_printf(b, "missing ':' after '%.*s' (a key needs ': ' before its value)",
                       (int)(end - i), c->text + i);
        *mark = p->context_mark;
        return true;
    }
    size_t at_byte = mark_offset(c, pm);
    if (at_byte < c->len && c->text[at_byte] == '\t') {
        s2s_buf_printf(b, "a tab character at column %zu: YAML indents with spaces, not tabs",
                       pm->column + 1);
        *mark = *pm;
        return true;
    }
    size_t above_line = 0;
    int indent = line_indent(c, line_start(c, pm->line));
    int above = indent_above(c, pm->line, &above_line);
    if (indent < 0 || above < 0 || indent == above) return false;
    yaml_mark_t at = {.index = line_start(c, pm->line) + (size_t)indent, .line = pm->line,
                      .column = (size_t)indent};
    if (!strcmp(p->problem, "mapping values are not allowed in this context") && indent > above) {
        // A key indented deeper than a key: value line above it.
        s2s_buf_printf(b, "bad indentation: %d space%s, more than the %d of line %zu above; "
                       "keys of one mapping line up, and a nested one needs a key ending "
                       "in ':' above it", indent, indent == 1 ? "" : "s", above, above_line + 1);
        *mark = at;
        return true;
    }
    if (!strcmp(p->problem, "did not find expected key") && pm->column == (size_t)indent) {
        s2s_buf_printf(b, "bad indentation: %d space%s, which lines up with no key above "
                       "(line %zu has %d)", indent, indent == 1 ? "" : "s", above_line + 1,
                       above);
        *mark = at;
        return true;
    }
    return false;
}

// Turns libyaml's parser error into "file:line:col: problem" + source.
static void report_syntax(s2s_cfg_ctx *c, const yaml_parser_t *p) {
    if (p->error == YAML_MEMORY_ERROR) {
        s2s_cfg_top(c)->oom = true;
        return;
    }
    s2s_buf b = {0};
    yaml_mark_t mark = p->problem_mark;
    if (p->error != YAML_READER_ERROR && explain_syntax(c, p, &b, &mark)) {
        s2s_cfg_report_buf(c, &mark, &b);
        return;
    }
    s2s_buf_puts(&b, p->problem ? p->problem : "invalid YAML");
    if (p->error == YAML_READER_ERROR) {
        // Reader errors carry a byte offset instead of a mark.
        if (p->problem_value != -1) s2s_buf_printf(&b, " (0x%02x)", (unsigned)p->problem_value);
        mark = s2s_cfg_offset_to_mark(c->text, c->len, p->problem_offset);
    } else if (p->context) {
        s2s_buf_printf(&b, " (%s at line %zu)", p->context, p->context_mark.line + 1);
    }
    s2s_cfg_report_buf(c, &mark, &b);
}

void s2s_cfg_parse_into(s2s_cfg_ctx *c, s2s_config *cfg) {
    if (c->len > S2S_CONFIG_MAX_BYTES) {
        // Text handed in directly (a model file's stored config): the same bound.
        s2s_cfg_reportf(c, NULL, "larger than %d bytes, the limit for a config",
                        S2S_CONFIG_MAX_BYTES);
        return;
    }
    if (flow_too_deep(c)) return;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        s2s_cfg_top(c)->oom = true;
        return;
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
                s2s_cfg_report(c, &root->start_mark,
                               "a config holds one YAML document; this is a second one");
            yaml_document_delete(&doc);
        }
    }
    yaml_parser_delete(&parser);
}

// ---- files ----

bool s2s_cfg_read_file(const char *path, s2s_buf *text, int *err, const char **step) {
    *step = "open";
    const char *why;  // a FIFO with no writer: ENXIO, said by the caller
    FILE *f = s2s_open_read(path, /*regular_only=*/false, &why);
    if (!f) {
        *err = errno;
        return false;
    }
    *step = "read";
    // One byte past the limit tells a file at the limit from a longer one,
    // so /dev/zero or an endless pipe stops here.
    char chunk[65536];
    size_t n;
    bool too_big = false;
    while (!too_big && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (text->len + n > S2S_CONFIG_MAX_BYTES) too_big = true;
        else s2s_buf_append(text, chunk, n);
    }
    bool read_error = !too_big && ferror(f);
    *err = too_big ? EFBIG : errno;
    fclose(f);
    if (read_error || too_big) {
        s2s_buf_free(text);
        return false;
    }
    if (!text->oom && !text->s) s2s_buf_append(text, "", 0);
    return true;
}

char *s2s_cfg_dir_of(const char *path) {
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
static void load_base(s2s_cfg_ctx *c, s2s_config *cfg, const yaml_node_t *vn) {
    const yaml_mark_t *at = &vn->start_mark;
    if (vn->type != YAML_SCALAR_NODE || is_null(vn)) {
        s2s_cfg_reportf(c, at, "base: expected the path of a config file, got %s",
                        vn->type == YAML_SCALAR_NODE ? "nothing" : node_kind(vn));
        return;
    }
    const char *value = (const char *)vn->data.scalar.value;
    size_t value_len = vn->data.scalar.length;
    if (memchr(value, '\0', value_len)) {
        s2s_cfg_report(c, at, "base: value contains a NUL character");
        return;
    }
    if (!c->base_dir) {
        // Text with no folder (a model file's stored config) must not
        // pull in files from wherever the process happens to run.
        s2s_cfg_report(c, at, "base: not allowed here: this config is not read from a file");
        return;
    }
    if (c->depth >= MAX_BASE_DEPTH) {
        s2s_cfg_reportf(c, at, "base: more than %d levels of base files", MAX_BASE_DEPTH);
        return;
    }
    s2s_buf path = {0}, why = {0};
    if (value[0] != '/' && c->base_dir[0]) {
        s2s_buf_puts(&path, c->base_dir);
        if (c->base_dir[strlen(c->base_dir) - 1] != '/') s2s_buf_puts(&path, "/");
    }
    s2s_buf_append(&path, value, value_len);
    if (path.oom) {
        s2s_cfg_top(c)->oom = true;
        s2s_buf_free(&path);
        return;
    }
    // Files are told apart by device and inode, so "a.yaml", "./a.yaml"
    // and a symbolic link to it are one file.
    struct stat id;
    s2s_buf text = {0};
    int err = 0;
    const char *step;
    if (stat(path.s, &id) != 0) {
        s2s_buf_puts(&why, "base: cannot open ");
        s2s_cfg_quote(&why, path.s, path.len, 200);
        s2s_buf_printf(&why, ": %s", strerror(errno));
        goto fail;
    }
    if (!S_ISREG(id.st_mode)) {
        // Not a folder, and not /dev/zero or a pipe, which never end.
        s2s_buf_puts(&why, "base: ");
        s2s_cfg_quote(&why, path.s, path.len, 200);
        s2s_buf_puts(&why, S_ISDIR(id.st_mode) ? " is a folder, not a file"
                                               : " is not a regular file");
        goto fail;
    }
    for (const s2s_cfg_ctx *p = c; p; p = p->parent) {
        if (!p->has_id || p->dev != id.st_dev || p->ino != id.st_ino) continue;
        // The chain from the file that was read first down to here.
        s2s_buf_puts(&why, "base: the bases form a cycle: ");
        const s2s_cfg_ctx *chain[MAX_BASE_DEPTH + 1];
        int n = 0;
        for (const s2s_cfg_ctx *q = c; q != p->parent && n <= MAX_BASE_DEPTH; q = q->parent)
            chain[n++] = q;
        while (n > 0) s2s_buf_printf(&why, "%s -> ", chain[--n]->name);
        s2s_buf_puts(&why, path.s);
        goto fail;
    }
    if (!s2s_cfg_read_file(path.s, &text, &err, &step)) {
        if (err == EFBIG) {
            s2s_buf_puts(&why, "base: ");
            s2s_cfg_quote(&why, path.s, path.len, 200);
            s2s_buf_printf(&why, " is larger than %d bytes, the limit for a config",
                           S2S_CONFIG_MAX_BYTES);
        } else {
            s2s_buf_printf(&why, "base: cannot %s ", step);
            s2s_cfg_quote(&why, path.s, path.len, 200);
            s2s_buf_printf(&why, ": %s", strerror(err));
        }
        goto fail;
    }
    size_t text_len = text.len;
    char *name = s2s_buf_take(&path), *body = s2s_buf_take(&text);
    // The name and text outlive this call: origins and messages point in.
    bool kept_name = s2s_cfg_keep(c, name);
    bool kept_body = s2s_cfg_keep(c, body);
    char *dir = kept_name ? s2s_cfg_dir_of(name) : NULL;
    if (kept_name && kept_body && dir) {
        s2s_cfg_ctx b = {.name = name, .text = body, .len = text_len, .base_dir = dir,
                         .check_paths = true, .root = s2s_cfg_top(c), .parent = c,
                         .has_id = true, .dev = id.st_dev, .ino = id.st_ino,
                         .depth = c->depth + 1};
        s2s_cfg_parse_into(&b, cfg);
    } else {
        s2s_cfg_top(c)->oom = true;
    }
    free(dir);
    return;
fail:
    s2s_cfg_report_buf(c, at, &why);
    s2s_buf_free(&path);
}
