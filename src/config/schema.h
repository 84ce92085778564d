// Internal: the config schema — one table naming every key of s2s_config.
//
// The loader (config.c), s2s_config_default, validation, s2s_config_to_yaml
// and docs/config.md are all driven by s2s_cfg_keys[], so adding a key means
// adding a field to s2s_config and one row to the table in schema.c:
//
//     for (int i = 0; i < s2s_cfg_n_keys; i++)
//         printf("%s = %s\n", s2s_cfg_keys[i].key, s2s_cfg_keys[i].def);
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
    S2S_CFG_GUIDED,  // s2s_guided_alignment, written {layer: L, head: H, weight: W};
                     // fields left out keep their values; bounds are per field
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

typedef struct s2s_cfg_section {
    const char *name;  // "model"
    const char *help;
} s2s_cfg_section;

typedef struct s2s_cfg_key {
    const char *key;   // "model.d_model": section, a dot, the name
    s2s_cfg_type type;
    size_t offset;     // offsetof(s2s_config, ...)
    size_t size;       // sizeof the field (the buffer size for PATH/STRING)
    const char *def;   // the default, spelled as in YAML ("" = unset path)
    unsigned bounds;   // S2S_CFG_MIN | ...
    double min, max;
    const char *const *names;  // ENUM only, NULL-terminated, index = value
    const char *help;
    unsigned flags;    // S2S_CFG_NOT_ARCH, S2S_CFG_OUTPUT
} s2s_cfg_key;

extern const s2s_cfg_section s2s_cfg_sections[];
extern const int s2s_cfg_n_sections;
extern const s2s_cfg_key s2s_cfg_keys[];
extern const int s2s_cfg_n_keys;

// Appends s in single quotes, cut to about `max` bytes (at most 256) with
// "...", control characters shown as \xNN (s2s_quote), so a message stays
// one readable line.
void s2s_cfg_quote(s2s_buf *b, const char *s, size_t n, size_t max);

// ---- lookups ----

// The section index of name[0..n), or -1.
int s2s_cfg_find_section(const char *name, size_t n);
// The key index of section.name[0..n), or -1.
int s2s_cfg_find_key(int section, const char *name, size_t n);
// The section index a key belongs to.
int s2s_cfg_key_section(const s2s_cfg_key *k);
// The part of k->key after the dot.
const char *s2s_cfg_key_name(const s2s_cfg_key *k);
// The closest section name (section < 0) or key name of that section to
// name[0..n) within a small edit distance, or NULL: the "did you mean".
const char *s2s_cfg_suggest(int section, const char *name, size_t n);

// ---- values ----

// Field address of key k inside cfg.
void *s2s_cfg_field(s2s_config *cfg, const s2s_cfg_key *k);
const void *s2s_cfg_field_const(const s2s_config *cfg, const s2s_cfg_key *k);

// Parses text (a NUL-terminated YAML scalar) into a value of k's type and,
// when it is in range, stores it at field. `quoted`: the scalar was quoted
// in the YAML, so it is a string and not a number or boolean. On failure
// leaves field alone, appends the reason ("expected an integer, got 'x'")
// to why and returns false. PATH values are stored as written.
bool s2s_cfg_parse_value(const s2s_cfg_key *k, const char *text, bool quoted,
                         void *field, s2s_buf *why);

// One field of a mapping-valued key (S2S_CFG_GUIDED): parses text (a plain
// YAML scalar) as the value of the field name[0..n) and, when it is valid,
// stores it in the struct at field. Returns the field's index (its place in
// s2s_cfg_field_names(k)), or -1 with the reason appended to why.
int s2s_cfg_parse_field(const s2s_cfg_key *k, const char *name, size_t n, const char *text,
                        void *field, s2s_buf *why);
// The field names of a mapping-valued key, NULL-terminated; NULL for
// other types.
const char *const *s2s_cfg_field_names(const s2s_cfg_key *k);

// What a value of k's type looks like: "an integer", "pre or post", ...
void s2s_cfg_describe_type(s2s_buf *b, const s2s_cfg_key *k);

// Checks a stored value against k's bounds (and enum range); on failure
// appends the reason to why and returns false.
bool s2s_cfg_check_value(const s2s_cfg_key *k, const void *field,
                         s2s_buf *why);

// Appends the value as YAML text that parses back to the same bits.
void s2s_cfg_format_value(s2s_buf *b, const s2s_cfg_key *k,
                          const void *field);

bool s2s_cfg_value_equal(const s2s_cfg_key *k, const void *a, const void *b);

// ---- documentation ----

// docs/config.md: every section and key with type, default, range and help.
// Caller frees; NULL on out of memory.
char *s2s_config_reference_md(void);

#endif
