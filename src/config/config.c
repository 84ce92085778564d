// The public config API (s2s/config.h): defaults, loading with overrides,
// validation with the cross-field rules, printing and comparing, all by
// walking the schema tables (schema.c) with the value operations of each
// type (values.c). The YAML walk is in walk.c, problem reports in report.c.
#include "s2s/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/arch.h"
#include "config/load.h"
#include "core/error.h"
#include "core/safe_write.h"
#include "config/command.h"

// ---- defaults ----

void s2s_config_default(s2s_config *cfg) {
    // Zero first so that padding holds no stale bytes (not that anything
    // compares it: s2s_config_equal goes field by field).
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
        const s2s_cfg_leaf *l = s2s_cfg_leaf_get(i);
        s2s_buf why = {0};
        bool ok = s2s_cfg_ops_of(l->key)->parse(l->key, l->key->def, false,
                                                 s2s_cfg_field(cfg, l), &why);
        s2s_buf_free(&why);
        S2S_ASSERT(ok);  // a schema default that does not parse is a bug
    }
    // not a key: each guided head is in its role's attention
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) cfg->train.guided[r].stack = s2s_roles[r].stack;
}

// ---- overrides ----

static void trim(const char **s, const char **e) {
    while (*s < *e && (**s == ' ' || **s == '\t')) (*s)++;
    while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t')) (*e)--;
}

// "heads=4", a key without its section: says which section it lives in, if any.
static s2s_status no_section(const char *assignment, const char *ks, const char *ke) {
    for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
        const s2s_cfg_leaf *l = s2s_cfg_leaf_get(i);
        if (strlen(l->key->name) == (size_t)(ke - ks) &&
            memcmp(l->key->name, ks, (size_t)(ke - ks)) == 0)
            return s2s_fail(S2S_ERR_CONFIG,
                            "--set %.200s: expected section.key=value (did you mean '%s'?)",
                            assignment, l->path);
    }
    return s2s_fail(S2S_ERR_CONFIG, "--set %.200s: expected section.key=value", assignment);
}

// Sets leaf li to the value [vs, ve) of the assignment; *leaf = li on success.
static s2s_status set_leaf(s2s_config *cfg, const char *assignment, int li, const char *vs,
                           const char *ve, int *leaf) {
    char *value = malloc((size_t)(ve - vs) + 1);
    if (!value) return s2s_fail(S2S_ERR_NOMEM, "--set: out of memory");
    memcpy(value, vs, (size_t)(ve - vs));
    value[ve - vs] = '\0';
    // Command-line paths are relative to the working directory.
    s2s_buf why = {0};
    bool ok = s2s_cfg_apply_value(/*base_dir=*/NULL, /*check_paths=*/true, cfg,
                                  s2s_cfg_leaf_get(li), value, /*quoted=*/false, &why);
    free(value);
    s2s_status st = S2S_OK;
    if (why.oom) st = s2s_fail(S2S_ERR_NOMEM, "--set: out of memory");
    else if (!ok) st = s2s_fail(S2S_ERR_CONFIG, "--set %.200s: %s", assignment,
                                why.s ? why.s : "invalid value");
    else *leaf = li;
    s2s_buf_free(&why);
    return st;
}

// s2s_config_set, also saying which leaf it set (*leaf, on success): the
// key path is walked table by table, so a misspelt name at any depth gets
// the did-you-mean of its own table.
static s2s_status set_one(s2s_config *cfg, const char *assignment, int *leaf) {
    const char *eq = strchr(assignment, '=');
    if (!eq)
        return s2s_fail(S2S_ERR_CONFIG, "--set %.200s: expected section.key=value", assignment);
    const char *ks = assignment, *ke = eq, *vs = eq + 1, *ve = eq + strlen(eq);
    trim(&ks, &ke);
    trim(&vs, &ve);
    if (!memchr(ks, '.', (size_t)(ke - ks))) return no_section(assignment, ks, ke);
    const s2s_cfg_table *t = &s2s_cfg_root;
    size_t offset = 0;
    for (const char *p = ks;;) {
        const char *end = memchr(p, '.', (size_t)(ke - p));
        if (!end) end = ke;
        size_t n = (size_t)(end - p);
        // The path so far: "train.guided_alignment".
        int where = (int)(p > ks ? p - 1 - ks : 0);
        int i = s2s_cfg_find(t, p, n);
        if (i < 0) {
            const char *hint = s2s_cfg_suggest(t, p, n);
            int shown = (int)(n > 60 ? 60 : n);
            if (t == &s2s_cfg_root)
                return s2s_fail(S2S_ERR_CONFIG, "--set %.200s: unknown section '%.*s'%s%s%s",
                                assignment, shown, p, hint ? " (did you mean '" : "",
                                hint ? hint : "", hint ? "'?)" : "");
            return s2s_fail(S2S_ERR_CONFIG, "--set %.200s: unknown key '%.*s' in '%.*s'%s%s%s",
                            assignment, shown, p, where, ks, hint ? " (did you mean '" : "",
                            hint ? hint : "", hint ? "'?)" : "");
        }
        const s2s_cfg_key *k = &t->keys[i];
        int here = (int)(end - ks);
        if (k->type == S2S_CFG_TABLE && end == ke) {
            s2s_buf b = {0};
            s2s_buf_printf(&b, "--set %.200s: '%.*s' is a mapping; set one of its keys (", assignment,
                           here, ks);
            s2s_cfg_list_names(&b, k->sub);
            s2s_buf_puts(&b, ")");
            s2s_status st = b.oom ? s2s_fail(S2S_ERR_NOMEM, "--set: out of memory")
                                  : s2s_fail(S2S_ERR_CONFIG, "%s", b.s);
            s2s_buf_free(&b);
            return st;
        }
        if (k->type == S2S_CFG_TABLE) {
            t = k->sub;
            offset += k->offset;
            p = end + 1;
            continue;
        }
        if (end != ke)
            return s2s_fail(S2S_ERR_CONFIG, "--set %.200s: '%.*s' is a value, not a mapping of keys",
                            assignment, here, ks);
        int li = s2s_cfg_leaf_at(offset + k->offset);
        S2S_ASSERT(li >= 0);
        return set_leaf(cfg, assignment, li, vs, ve, leaf);
    }
}

s2s_status s2s_config_set(s2s_config *cfg, const char *assignment) {
    if (!cfg || !assignment) return s2s_fail(S2S_ERR_INVALID, "s2s_config_set: NULL argument");
    int leaf;
    return set_one(cfg, assignment, &leaf);
}

// ---- validation ----

// Where leaf i's value was read (this file or a base), or NULL: a default,
// an override, or positions not tracked.
static const s2s_cfg_origin *origin_of(const s2s_cfg_ctx *c, int i) {
    return (c->origin && i >= 0 && c->origin[i].set) ? &c->origin[i] : NULL;
}

// Reports at the value o points to, in the file it came from; without a
// position (in the top file's name) when o is NULL.
static void report_at(s2s_cfg_ctx *c, const s2s_cfg_origin *o, s2s_buf *why) {
    if (why->oom) c->oom = true;
    else if (o) s2s_cfg_report_in(c, o->name, o->text, o->len, &o->mark, why->s);
    else s2s_cfg_report_in(c, c->name, NULL, 0, NULL, why->s);
    s2s_buf_free(why);
}

static void validate_into(s2s_cfg_ctx *c, const s2s_config *cfg) {
    int before = c->n_errors;
    for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
        const s2s_cfg_leaf *l = s2s_cfg_leaf_get(i);
        s2s_buf why = {0};
        s2s_buf_printf(&why, "%s: ", l->path);
        if (s2s_cfg_ops_of(l->key)->check(l->key, s2s_cfg_field_const(cfg, l), &why))
            s2s_buf_free(&why);
        else
            report_at(c, origin_of(c, i), &why);
    }
    if (c->n_errors > before) return;  // e.g. heads == 0: no division in the rules
    for (int r = 0; r < s2s_cfg_n_rules; r++) {
        const s2s_cfg_rule *rule = &s2s_cfg_rules[r];
        s2s_buf why = {0};
        if (rule->holds(rule, cfg, &why)) {
            s2s_buf_free(&why);
            continue;
        }
        const s2s_cfg_origin *o = NULL;
        for (int a = 0; a < 3 && rule->at[a] && !o; a++)
            o = origin_of(c, s2s_cfg_find_leaf(rule->at[a], strlen(rule->at[a])));
        report_at(c, o, &why);
    }
}

s2s_status s2s_config_validate(const s2s_config *cfg, const char *name) {
    if (!cfg) return s2s_fail(S2S_ERR_INVALID, "s2s_config_validate: NULL config");
    s2s_cfg_ctx c = {.name = name ? name : "config"};
    validate_into(&c, cfg);
    return s2s_cfg_finish(&c);
}

// ---- what the commands need ----

int s2s_config_unset_keys(const s2s_config *cfg, s2s_config_use use, char *buf, size_t size) {
    const char *unset[3];
    int n = 0;
    if (use == S2S_CONFIG_FOR_TRAIN && !cfg->data.train[0]) unset[n++] = "data.train";
    if (!cfg->vocab.src[0]) unset[n++] = "vocab.src";
    if (!cfg->vocab.tgt[0]) unset[n++] = "vocab.tgt";
    if (size > 0) buf[0] = '\0';
    for (int k = 0; k < n && size > 0; k++) {
        size_t at = strlen(buf);
        snprintf(buf + at, size - at, "%s%s", k == 0 ? "" : k == n - 1 ? " and " : ", ", unset[k]);
    }
    return n;
}

// ---- loading ----

// Reads the text (and its bases), applies the overrides, then runs the
// cross-field checks on the result; all problems are reported together.
static s2s_status load_buffer(s2s_config *cfg, const char *text, size_t len, const char *name,
                              const char *base_dir, bool check_paths, const struct stat *id,
                              const char *const *sets, int n_sets) {
    s2s_cfg_ctx c = {.name = name ? name : "<string>", .text = text, .len = len,
                     .base_dir = base_dir, .check_paths = check_paths, .has_id = id != NULL,
                     .dev = id ? id->st_dev : 0, .ino = id ? id->st_ino : 0};
    c.origin = calloc((size_t)s2s_cfg_n_leaves(), sizeof *c.origin);
    if (!c.origin) {
        c.oom = true;
        return s2s_cfg_finish(&c);
    }
    s2s_cfg_parse_into(&c, cfg);
    for (int i = 0; i < n_sets && !c.oom; i++) {
        int li = -1;
        s2s_status st = set_one(cfg, sets[i], &li);
        if (st == S2S_ERR_NOMEM) c.oom = true;
        else if (st != S2S_OK) s2s_cfg_report_in(&c, NULL, NULL, 0, NULL, s2s_last_error());
        // Overridden: the file's position no longer explains the value.
        else c.origin[li].set = false;
    }
    // Cross-field problems only make sense once every value read cleanly.
    if (c.n_errors == 0 && !c.oom) validate_into(&c, cfg);
    return s2s_cfg_finish(&c);
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
    if (!s2s_cfg_read_file(path, &text, &err, &step)) {
        if (err == EFBIG)
            return s2s_fail(S2S_ERR_CONFIG, "%s: larger than %d bytes (1 MiB), the limit for a "
                            "config file", path, S2S_CONFIG_MAX_BYTES);
        return s2s_fail(S2S_ERR_IO, "%s: cannot %s: %s", path, step,
                        err == ENXIO ? "a FIFO with no writer" : strerror(err));
    }
    if (text.oom) {
        s2s_buf_free(&text);
        return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory reading the file", path);
    }
    // Relative paths in the file are relative to the file's folder.
    char *base_dir = s2s_cfg_dir_of(path);
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

// ---- paths ----

static bool is_path_leaf(const s2s_cfg_leaf *l) {
    return l->key->type == S2S_CFG_PATH || (l->key->flags & S2S_CFG_OUTPUT);
}

s2s_status s2s_config_absolute_paths(s2s_config *cfg) {
    if (!cfg) return s2s_fail(S2S_ERR_INVALID, "s2s_config_absolute_paths: NULL argument");
    char cwd[S2S_PATH_MAX];
    bool have_cwd = false;
    for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
        const s2s_cfg_leaf *l = s2s_cfg_leaf_get(i);
        char *path = s2s_cfg_field(cfg, l);
        if (!is_path_leaf(l) || !memchr(path, '\0', l->key->size) || path[0] == '\0') continue;
        if (path[0] != '/') {
            if (!have_cwd && !getcwd(cwd, sizeof cwd))
                return s2s_fail(S2S_ERR_IO, "cannot find the working directory: %s",
                                strerror(errno));
            have_cwd = true;
            size_t nc = strlen(cwd), np = strlen(path);
            if (nc + 1 + np >= l->key->size)
                return s2s_fail(S2S_ERR_CONFIG, "%s: '%s/%s' is longer than %zu bytes", l->path,
                                cwd, path, l->key->size - 1);
            memmove(path + nc + 1, path, np + 1);
            memcpy(path, cwd, nc);
            path[nc] = '/';
        }
        s2s_cfg_clean_path(path);
    }
    return S2S_OK;
}

// ---- printing ----

// Comment lines above a key of `s2s config init`: its help, then what it
// takes and its default.
static void key_comment(s2s_buf *b, const s2s_cfg_key *k, int indent) {
    s2s_cfg_wrap(b, k->help, indent, "# ", "# ", 78);
    s2s_buf_printf(b, "%*s# ", indent, "");
    s2s_cfg_summary(b, k);
    s2s_buf_puts(b, "\n");
}

// The keys of table t (whose struct is at `offset`), `indent` spaces in;
// a nested table as a block mapping under its name. Without comments, a
// value equal to its default is marked `# default`; with them, each key
// gets key_comment above it.
static void table_to_yaml(s2s_buf *b, const s2s_config *cfg, const s2s_config *def,
                          const s2s_cfg_table *t, size_t offset, int indent, bool commented) {
    for (int i = 0; i < t->n_keys; i++) {
        const s2s_cfg_key *k = &t->keys[i];
        if (commented) key_comment(b, k, indent);
        s2s_buf_printf(b, "%*s%s:", indent, "", k->name);
        if (k->type == S2S_CFG_TABLE) {
            s2s_buf_puts(b, "\n");
            table_to_yaml(b, cfg, def, k->sub, offset + k->offset, indent + 2, commented);
            continue;
        }
        const s2s_cfg_leaf *l = s2s_cfg_leaf_get(s2s_cfg_leaf_at(offset + k->offset));
        const s2s_cfg_ops *ops = s2s_cfg_ops_of(k);
        const void *v = s2s_cfg_field_const(cfg, l);
        s2s_buf_puts(b, " ");
        ops->format(b, k, v);
        if (!commented && ops->equal(k, v, s2s_cfg_field_const(def, l)))
            s2s_buf_puts(b, "  # default");
        s2s_buf_puts(b, "\n");
    }
}

static void section_to_yaml(s2s_buf *b, const s2s_config *cfg, const s2s_config *def,
                            const char *name, bool commented) {
    int s = s2s_cfg_find(&s2s_cfg_root, name, strlen(name));
    S2S_ASSERT(s >= 0);
    const s2s_cfg_key *k = &s2s_cfg_root.keys[s];
    if (commented) {
        s2s_buf_puts(b, "\n");
        s2s_cfg_wrap(b, k->help, 0, "# ", "# ", 78);
    }
    s2s_buf_printf(b, "%s:\n", k->name);
    table_to_yaml(b, cfg, def, k->sub, k->offset, 2, commented);
}

static char *all_to_yaml(const s2s_config *cfg, const char *header, bool commented) {
    s2s_config def;
    s2s_config_default(&def);
    s2s_buf b = {0};
    if (header) s2s_cfg_wrap(&b, header, 0, "# ", "# ", 78);
    for (int s = 0; s < s2s_cfg_root.n_keys; s++)
        section_to_yaml(&b, cfg, &def, s2s_cfg_root.keys[s].name, commented);
    return s2s_buf_take(&b);
}

char *s2s_config_to_yaml(const s2s_config *cfg) {
    return all_to_yaml(cfg, NULL, /*commented=*/false);
}

char *s2s_config_to_commented_yaml(const s2s_config *cfg, const char *header) {
    return all_to_yaml(cfg, header, /*commented=*/true);
}

s2s_status s2s_config_write_commented(const s2s_config *cfg, const char *header,
                                      const char *path) {
    char *text = all_to_yaml(cfg, header, /*commented=*/true);
    if (!text) return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    s2s_status st = s2s_safe_write_file(path, text, strlen(text));
    free(text);
    return st;
}

char *s2s_config_model_to_yaml(const s2s_config *cfg) {
    s2s_config def;
    s2s_config_default(&def);
    s2s_buf b = {0};
    section_to_yaml(&b, cfg, &def, "model", false);
    section_to_yaml(&b, cfg, &def, "decode", false);
    return s2s_buf_take(&b);
}

// ---- presets: the starting configs of `s2s config init` ----
// configs/<name>.yaml themselves, embedded at build time (CMakeLists.txt,
// cmake/embed.cmake), read without their file paths so that the config
// written loads anywhere.

extern const char s2s_preset_demo[], s2s_preset_zh_en[], s2s_preset_bench[];

static const struct {
    const char *name, *yaml;
} presets[] = {{"demo", s2s_preset_demo}, {"zh-en", s2s_preset_zh_en}, {"bench", s2s_preset_bench}};

s2s_status s2s_config_preset(s2s_config *cfg, const char *name) {
    if (!cfg || !name) return s2s_fail(S2S_ERR_INVALID, "s2s_config_preset: NULL argument");
    for (size_t p = 0; p < sizeof presets / sizeof presets[0]; p++) {
        if (strcmp(name, presets[p].name) != 0) continue;
        char file[64];
        snprintf(file, sizeof file, "configs/%s.yaml", name);
        s2s_config_default(cfg);
        s2s_status st = s2s_config_load_string(cfg, presets[p].yaml, file, /*base_dir=*/NULL);
        if (st != S2S_OK) return st;
        for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
            const s2s_cfg_leaf *l = s2s_cfg_leaf_get(i);
            if (is_path_leaf(l)) *(char *)s2s_cfg_field(cfg, l) = '\0';
        }
        return s2s_config_validate(cfg, name);
    }
    return s2s_fail(S2S_ERR_CONFIG, "unknown preset '%.60s' (the presets are demo, zh-en and "
                    "bench)", name);
}

// ---- comparing ----

static int model_section(void) { return s2s_cfg_find(&s2s_cfg_root, "model", 5); }

static bool leaf_equal(const s2s_cfg_leaf *l, const s2s_config *a, const s2s_config *b) {
    return s2s_cfg_ops_of(l->key)->equal(l->key, s2s_cfg_field_const(a, l),
                                         s2s_cfg_field_const(b, l));
}

static bool is_arch_leaf(const s2s_cfg_leaf *l) {
    return l->section == model_section() && !(l->key->flags & S2S_CFG_NOT_ARCH);
}

bool s2s_config_equal(const s2s_config *a, const s2s_config *b) {
    for (int i = 0; i < s2s_cfg_n_leaves(); i++)
        if (!leaf_equal(s2s_cfg_leaf_get(i), a, b)) return false;
    return true;
}

s2s_status s2s_config_diff(const s2s_config *a, const s2s_config *b, bool model_only,
                           char **out_text) {
    if (!out_text) return s2s_fail(S2S_ERR_INVALID, "s2s_config_diff: NULL argument");
    *out_text = NULL;
    if (!a || !b) return s2s_fail(S2S_ERR_INVALID, "s2s_config_diff: NULL argument");
    s2s_buf out = {0};
    for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
        const s2s_cfg_leaf *l = s2s_cfg_leaf_get(i);
        if ((model_only && l->section != model_section()) || leaf_equal(l, a, b)) continue;
        const s2s_cfg_ops *ops = s2s_cfg_ops_of(l->key);
        s2s_buf_printf(&out, "%s: ", l->path);
        ops->format(&out, l->key, s2s_cfg_field_const(a, l));
        s2s_buf_puts(&out, " -> ");
        ops->format(&out, l->key, s2s_cfg_field_const(b, l));
        s2s_buf_puts(&out, "\n");
    }
    *out_text = s2s_buf_take(&out);
    return *out_text ? S2S_OK : s2s_fail(S2S_ERR_NOMEM, "config diff: out of memory");
}

bool s2s_config_same_arch(const s2s_config *a, const s2s_config *b) {
    for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
        const s2s_cfg_leaf *l = s2s_cfg_leaf_get(i);
        if (is_arch_leaf(l) && !leaf_equal(l, a, b)) return false;
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
    for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
        const s2s_cfg_leaf *l = s2s_cfg_leaf_get(i);
        if (!is_arch_leaf(l) || leaf_equal(l, stored, wanted)) continue;
        const s2s_cfg_ops *ops = s2s_cfg_ops_of(l->key);
        s2s_buf_printf(&b, "\n  %s: ", l->path);
        ops->format(&b, l->key, s2s_cfg_field_const(stored, l));
        s2s_buf_puts(&b, " in the model, ");
        ops->format(&b, l->key, s2s_cfg_field_const(wanted, l));
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
