// Internal: the config schema — nested tables naming every key of s2s_config.
//
// The root table's keys are the sections (`model`, `vocab`, ...); a key of
// type S2S_CFG_TABLE holds a nested table of keys, as netplan nests its
// handler tables, so `train.guided_alignment.layer` is the key `layer` of
// the table `guided_alignment` of the section `train`. Every other key is a
// leaf with a value type, and each type has one set of value operations
// (s2s_cfg_ops: parse, check, format, equal, ...), so nothing else switches
// over the types. The loader, s2s_config_default, validation, printing,
// diffs and docs/config.md all walk these tables:
//
//     for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
//         const s2s_cfg_leaf *l = s2s_cfg_leaf_get(i);
//         printf("%s = %s\n", l->path, l->key->def);   // "model.d_model = 512"
//     }
//
// Adding a key means adding a field to s2s_config and one row to a table in
// schema.c; adding a second head selector such as guided_alignment means one
// S2S_CFG_TABLE row pointing at the same nested table, plus its rows in the
// cross-field rules table.
#ifndef S2S_CONFIG_SCHEMA_H
#define S2S_CONFIG_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>

#include "core/strbuf.h"
#include "s2s/config.h"

typedef enum s2s_cfg_type {
    S2S_CFG_INT,     // int
    S2S_CFG_FLOAT,   // float
    S2S_CFG_BOOL,    // bool
    S2S_CFG_ENUM,    // an int-sized C enum; names[value] is its spelling
    S2S_CFG_PATH,    // char[size]; relative paths resolve against base_dir
    S2S_CFG_STRING,  // char[size]
    S2S_CFG_FLOAT_PAIR,  // float[2], written [a, b]; bounds apply to each
    S2S_CFG_TABLE,   // a struct whose fields are the keys of `sub`
    // s2s_index_list, written [0, 2, 3] ([]: every index); bounds apply to
    // each entry, which must be distinct.
    S2S_CFG_INDEX_LIST,
    S2S_CFG_TYPE_COUNT
} s2s_cfg_type;

// Bounds flags: which of min/max apply, and whether they are exclusive.
enum {
    S2S_CFG_MIN = 1,
    S2S_CFG_MAX = 2,
    S2S_CFG_MIN_EXCL = 4,  // value > min instead of value >= min
    S2S_CFG_MAX_EXCL = 8,  // value < max instead of value <= max
};

// Key flags.
enum {
    // A model: key that does not change what the network computes (dropout):
    // it may differ between a model file and the config it is used with.
    S2S_CFG_NOT_ARCH = 1,
    // A string naming a file s2s writes: relative to the config file's
    // folder like a path, but it need not exist yet.
    S2S_CFG_OUTPUT = 2,
};

typedef struct s2s_cfg_table s2s_cfg_table;
struct json_t;  // jansson's, for the JSON Schema operations

typedef struct s2s_cfg_key {
    const char *name;  // "d_model": the name inside its table
    s2s_cfg_type type;
    size_t offset;     // offsetof the field in the struct its table describes
    size_t size;       // sizeof the field (the buffer size for PATH/STRING)
    const char *def;   // leaves: the default, spelled as in YAML ("" = unset path)
    unsigned bounds;   // S2S_CFG_MIN | ...
    double min, max;
    const char *const *names;  // ENUM only, NULL-terminated, index = value
    const char *help;
    unsigned flags;    // S2S_CFG_NOT_ARCH, S2S_CFG_OUTPUT
    const s2s_cfg_table *sub;  // S2S_CFG_TABLE only: the nested keys
} s2s_cfg_key;

struct s2s_cfg_table {
    const s2s_cfg_key *keys;
    int n_keys;
};

// The sections, in the order they are written.
extern const s2s_cfg_table s2s_cfg_root;

// The index of name[0..n) in t, or -1.
int s2s_cfg_find(const s2s_cfg_table *t, const char *name, size_t n);
// The closest key name of t to name[0..n) within a small edit distance, or
// NULL: the "did you mean".
const char *s2s_cfg_suggest(const s2s_cfg_table *t, const char *name, size_t n);
// Appends t's key names as "layer, head or weight".
void s2s_cfg_list_names(s2s_buf *b, const s2s_cfg_table *t);

// ---- help text (reference.c) ----

// Appends text as lines of at most `width` columns (a longer word keeps its
// own line), each `indent` spaces in and then led by `first` (the first
// line) or `rest`: "# " and "# " for a comment, "- " and "  " for a bullet.
void s2s_cfg_wrap(s2s_buf *b, const char *text, int indent, const char *first,
                  const char *rest, int width);
// Appends what k is in one line: "int (>= 1); default 512"; for a table
// "a mapping of layer, head or weight".
void s2s_cfg_summary(s2s_buf *b, const s2s_cfg_key *k);

// ---- leaves: every value-holding key, depth first in table order ----

typedef struct s2s_cfg_leaf {
    const s2s_cfg_key *key;
    const char *path;     // "train.guided_alignment.layer"
    size_t offset;        // of the field in s2s_config
    int section;          // index of its section in s2s_cfg_root
} s2s_cfg_leaf;

int s2s_cfg_n_leaves(void);
// Precondition: 0 <= i < s2s_cfg_n_leaves().
const s2s_cfg_leaf *s2s_cfg_leaf_get(int i);
// The index of the leaf named path[0..n) or -1.
int s2s_cfg_find_leaf(const char *path, size_t n);
// The index of the leaf whose field starts at `offset` in s2s_config, or -1.
int s2s_cfg_leaf_at(size_t offset);

void *s2s_cfg_field(s2s_config *cfg, const s2s_cfg_leaf *l);
const void *s2s_cfg_field_const(const s2s_config *cfg, const s2s_cfg_leaf *l);

// Appends s in single quotes, cut to about `max` bytes (at most 256) with
// "...", control characters shown as \xNN (s2s_quote), so a message stays
// one readable line.
void s2s_cfg_quote(s2s_buf *b, const char *s, size_t n, size_t max);

// ---- value operations, one set per leaf type (values.c) ----

typedef struct s2s_cfg_ops {
    const char *doc_type;  // the docs' Type column: "int", "[float, float]"
    // What a value looks like: "an integer", "pre or post", ...
    void (*describe)(s2s_buf *b, const s2s_cfg_key *k);
    // Parses text (a NUL-terminated YAML scalar; also the default k->def)
    // and, when it is valid and in range, stores it at field. `quoted`: the
    // scalar was quoted in the YAML, so it is a string and not a number or
    // boolean. On failure leaves field alone, appends the reason ("expected
    // an integer, got 'x'") to why and returns false. Paths are stored as
    // written.
    bool (*parse)(const s2s_cfg_key *k, const char *text, bool quoted, void *field,
                  s2s_buf *why);
    // Checks a stored value (which may hold any bits) against k's type and
    // bounds; on failure appends the reason to why and returns false.
    bool (*check)(const s2s_cfg_key *k, const void *field, s2s_buf *why);
    // Appends the value as YAML text that parses back to the same value.
    void (*format)(s2s_buf *b, const s2s_cfg_key *k, const void *field);
    // Whether two stored values are the same (field by field, never by
    // padding; paths also when they name the same file).
    bool (*equal)(const s2s_cfg_key *k, const void *a, const void *b);
    // The docs' Allowed column: "`true`, `false`", ">= 1", ...
    void (*allowed)(s2s_buf *b, const s2s_cfg_key *k);
    // JSON Schema (json_schema.c): adds to the object `schema` the keywords
    // that say what the loader accepts (type, enum, bounds, items, length).
    // False on out of memory.
    bool (*json_schema)(struct json_t *schema, const s2s_cfg_key *k);
    // The stored value as JSON (the schema's `default`); NULL for an unset
    // path or string, and on out of memory.
    struct json_t *(*to_json)(const s2s_cfg_key *k, const void *field);
} s2s_cfg_ops;

// o[key] = v for the json_schema operations, taking v's reference (even on
// failure); false when v is NULL (out of memory) or the set fails.
bool s2s_cfg_put(struct json_t *o, const char *key, struct json_t *v);

// The operations of a leaf's type. Precondition: k->type != S2S_CFG_TABLE.
const s2s_cfg_ops *s2s_cfg_ops_of(const s2s_cfg_key *k);

// Appends one entry, the YAML scalar `text`, to the list of an
// S2S_CFG_INDEX_LIST key k: an integer within k's bounds, not yet in the
// list, the list not yet full (S2S_MAX_INDICES). Otherwise leaves the list
// alone, appends the reason ("9 is listed twice") to why and returns false.
// The loader calls it entry by entry, so that a bad entry of a YAML
// sequence is reported at its own line and column; parse calls it too.
bool s2s_cfg_index_add(const s2s_cfg_key *k, s2s_index_list *list, const char *text,
                       bool quoted, s2s_buf *why);

// ---- cross-field rules (schema.c), read by validation and the docs ----

typedef struct s2s_cfg_rule {
    const char *doc;  // the docs' bullet (Markdown)
    // False, with the message appended to why ("model.d_model: 64 is not
    // ..."), when cfg breaks the rule. Each key already holds a valid value.
    bool (*holds)(const struct s2s_cfg_rule *r, const s2s_config *cfg, s2s_buf *why);
    const char *arg;    // a table path the check reads ("train.guided_alignment")
    const char *at[3];  // leaves to report at: the first one read from a file
} s2s_cfg_rule;

extern const s2s_cfg_rule s2s_cfg_rules[];
extern const int s2s_cfg_n_rules;

#endif
