// The value operations of the config schema: one s2s_cfg_ops per leaf type
// (parse, check, format, equal, describe, the docs' Allowed column), so the
// loader, defaults, validation, printing, diffs and docs/config.md never
// switch over the types.
#include <errno.h>
#include <float.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/schema.h"
#include "core/error.h"

// ---- shared pieces ----

bool s2s_cfg_put(json_t *o, const char *key, json_t *v) {
    return v && json_object_set_new(o, key, v) == 0;
}

// ">= 1", "> 0", ">= 0 and < 1"; nothing when unbounded.
static void describe_bounds(s2s_buf *b, const s2s_cfg_key *k) {
    if (k->bounds & S2S_CFG_MIN)
        s2s_buf_printf(b, "%s %g", (k->bounds & S2S_CFG_MIN_EXCL) ? ">" : ">=", k->min);
    if ((k->bounds & S2S_CFG_MIN) && (k->bounds & S2S_CFG_MAX)) s2s_buf_puts(b, " and ");
    if (k->bounds & S2S_CFG_MAX)
        s2s_buf_printf(b, "%s %g", (k->bounds & S2S_CFG_MAX_EXCL) ? "<" : "<=", k->max);
}

static bool in_bounds(const s2s_cfg_key *k, double v) {
    if (k->bounds & S2S_CFG_MIN) {
        if ((k->bounds & S2S_CFG_MIN_EXCL) ? !(v > k->min) : !(v >= k->min)) return false;
    }
    if (k->bounds & S2S_CFG_MAX) {
        if ((k->bounds & S2S_CFG_MAX_EXCL) ? !(v < k->max) : !(v <= k->max)) return false;
    }
    return true;
}

static bool type_error(const s2s_cfg_key *k, const char *text, bool quoted, s2s_buf *why) {
    s2s_buf_puts(why, "expected ");
    s2s_cfg_ops_of(k)->describe(why, k);
    s2s_buf_puts(why, quoted ? ", got the quoted string " : ", got ");
    s2s_cfg_quote(why, text, strlen(text), 60);
    return false;
}

static bool range_error(const s2s_cfg_key *k, const char *shown, s2s_buf *why) {
    s2s_buf_append(why, shown, strlen(shown) > 60 ? 60 : strlen(shown));
    s2s_buf_puts(why, " is out of range; must be ");
    describe_bounds(why, k);
    if (k->type == S2S_CFG_FLOAT_PAIR) s2s_buf_puts(why, ", each");
    return false;
}

// range_error for a stored value, shown as format() spells it.
static bool stored_range_error(const s2s_cfg_key *k, const void *field, s2s_buf *why) {
    s2s_buf shown = {0};
    s2s_cfg_ops_of(k)->format(&shown, k, field);
    range_error(k, shown.s ? shown.s : "?", why);
    s2s_buf_free(&shown);
    return false;
}

static void allowed_bounds(s2s_buf *b, const s2s_cfg_key *k) {
    if (k->bounds) describe_bounds(b, k);
    else s2s_buf_puts(b, "any");
}

// Plain decimal numbers only: strtol/strtof would also take leading blanks,
// hex, "inf" and "nan", none of which a config should contain.
static bool is_decimal_int(const char *s) {
    if (*s == '+' || *s == '-') s++;
    if (!*s) return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return false;
    return true;
}

static bool is_decimal_float(const char *s) {
    bool digits = false;
    if (*s == '+' || *s == '-') s++;
    for (; *s >= '0' && *s <= '9'; s++) digits = true;
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++) digits = true;
    if (!digits) return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') s++;
        if (!(*s >= '0' && *s <= '9')) return false;
        while (*s >= '0' && *s <= '9') s++;
    }
    return *s == '\0';
}

// The shortest %g text that reads back (through strtof) as the same float,
// written with a '.' so that YAML 1.1 readers such as PyYAML see a float.
static void format_float(s2s_buf *b, float v) {
    if (isnan(v)) { s2s_buf_puts(b, ".nan"); return; }
    if (isinf(v)) { s2s_buf_puts(b, v < 0 ? "-.inf" : ".inf"); return; }
    char text[48];
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(text, sizeof text, "%.*g", prec, (double)v);
        float back = strtof(text, NULL);
        if (memcmp(&back, &v, sizeof v) == 0) break;
    }
    char *e = strchr(text, 'e');
    if (!strchr(text, '.')) {
        char out[56];
        if (e) snprintf(out, sizeof out, "%.*s.0%s", (int)(e - text), text, e);
        else snprintf(out, sizeof out, "%s.0", text);
        s2s_buf_puts(b, out);
        return;
    }
    s2s_buf_puts(b, text);
}

// ---- JSON Schema pieces ----

static json_t *json_int_of(double v) { return json_integer((json_int_t)v); }

// k's bounds as minimum/exclusiveMinimum/maximum/exclusiveMaximum; where k
// has none, the limits [lo, hi] of the C type, which the loader enforces too
// ("does not fit in an int").
static bool json_bounds(json_t *s, const s2s_cfg_key *k, bool integer, double lo, double hi) {
    json_t *(*num)(double) = integer ? json_int_of : json_real;
    bool has_min = k->bounds & S2S_CFG_MIN, has_max = k->bounds & S2S_CFG_MAX;
    const char *lower = has_min && (k->bounds & S2S_CFG_MIN_EXCL) ? "exclusiveMinimum" : "minimum";
    const char *upper = has_max && (k->bounds & S2S_CFG_MAX_EXCL) ? "exclusiveMaximum" : "maximum";
    return s2s_cfg_put(s, lower, num(has_min ? k->min : lo)) &&
           s2s_cfg_put(s, upper, num(has_max ? k->max : hi));
}

// A float as the JSON number that prints as format_float's shortest text
// (with a real precision of 9 digits).
static json_t *float_json(float v) {
    if (!isfinite(v)) return NULL;
    s2s_buf t = {0};
    format_float(&t, v);
    json_t *j = t.s ? json_real(strtod(t.s, NULL)) : NULL;
    s2s_buf_free(&t);
    return j;
}

// Floats compare by bits, so that a NaN equals itself and -0 differs from 0:
// "differs" then always means "prints differently".
static bool float_bits_equal(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

// ---- int ----

static void int_describe(s2s_buf *b, const s2s_cfg_key *k) {
    (void)k;
    s2s_buf_puts(b, "an integer");
}

static bool int_parse(const s2s_cfg_key *k, const char *text, bool quoted, void *field,
                      s2s_buf *why) {
    if (quoted || !is_decimal_int(text)) return type_error(k, text, quoted, why);
    errno = 0;
    long long v = strtoll(text, NULL, 10);
    if (errno == ERANGE || v < INT_MIN || v > INT_MAX) {
        s2s_buf_append(why, text, strlen(text) > 60 ? 60 : strlen(text));
        s2s_buf_puts(why, " does not fit in an int");
        return false;
    }
    if (!in_bounds(k, (double)v)) return range_error(k, text, why);
    *(int *)field = (int)v;
    return true;
}

static bool int_check(const s2s_cfg_key *k, const void *field, s2s_buf *why) {
    if (in_bounds(k, *(const int *)field)) return true;
    return stored_range_error(k, field, why);
}

static void int_format(s2s_buf *b, const s2s_cfg_key *k, const void *field) {
    (void)k;
    s2s_buf_printf(b, "%d", *(const int *)field);
}

static bool int_equal(const s2s_cfg_key *k, const void *a, const void *b) {
    (void)k;
    return *(const int *)a == *(const int *)b;
}

static bool int_json_schema(json_t *s, const s2s_cfg_key *k) {
    return s2s_cfg_put(s, "type", json_string("integer")) &&
           json_bounds(s, k, /*integer=*/true, INT_MIN, INT_MAX);
}

static json_t *int_to_json(const s2s_cfg_key *k, const void *field) {
    (void)k;
    return json_integer(*(const int *)field);
}

static const s2s_cfg_ops int_ops = {"int", int_describe, int_parse, int_check, int_format,
                                    int_equal, allowed_bounds, int_json_schema, int_to_json};

// ---- float ----

static void float_describe(s2s_buf *b, const s2s_cfg_key *k) {
    (void)k;
    s2s_buf_puts(b, "a number");
}

static bool float_parse(const s2s_cfg_key *k, const char *text, bool quoted, void *field,
                        s2s_buf *why) {
    if (quoted || !is_decimal_float(text)) return type_error(k, text, quoted, why);
    // strtof, not strtod then a cast: rounding twice can miss the float
    // that format_float printed, breaking the round trip.
    float v = strtof(text, NULL);
    if (!isfinite(v)) {
        s2s_buf_append(why, text, strlen(text) > 60 ? 60 : strlen(text));
        s2s_buf_puts(why, " does not fit in a float");
        return false;
    }
    if (!in_bounds(k, v)) return range_error(k, text, why);
    *(float *)field = v;
    return true;
}

static bool float_check(const s2s_cfg_key *k, const void *field, s2s_buf *why) {
    float v = *(const float *)field;
    if (isfinite(v) && in_bounds(k, v)) return true;
    if (!isfinite(v) && !k->bounds) {
        s2s_buf shown = {0};
        format_float(&shown, v);
        s2s_buf_printf(why, "%s is not a finite number", shown.s ? shown.s : "?");
        s2s_buf_free(&shown);
        return false;
    }
    return stored_range_error(k, field, why);
}

static void float_format(s2s_buf *b, const s2s_cfg_key *k, const void *field) {
    (void)k;
    format_float(b, *(const float *)field);
}

static bool float_equal(const s2s_cfg_key *k, const void *a, const void *b) {
    (void)k;
    return float_bits_equal(*(const float *)a, *(const float *)b);
}

// Beyond FLT_MAX the loader says "does not fit in a float".
static bool float_json_schema(json_t *s, const s2s_cfg_key *k) {
    return s2s_cfg_put(s, "type", json_string("number")) &&
           json_bounds(s, k, /*integer=*/false, -FLT_MAX, FLT_MAX);
}

static json_t *float_to_json(const s2s_cfg_key *k, const void *field) {
    (void)k;
    return float_json(*(const float *)field);
}

static const s2s_cfg_ops float_ops = {"float", float_describe, float_parse, float_check,
                                      float_format, float_equal, allowed_bounds,
                                      float_json_schema, float_to_json};

// ---- bool ----
// Read as a byte, not a bool: a stray value in a bool is undefined.

static unsigned char bool_byte(const void *field) {
    unsigned char c;
    memcpy(&c, field, 1);
    return c;
}

static void bool_describe(s2s_buf *b, const s2s_cfg_key *k) {
    (void)k;
    s2s_buf_puts(b, "true or false");
}

static bool bool_parse(const s2s_cfg_key *k, const char *text, bool quoted, void *field,
                       s2s_buf *why) {
    static const char *const yes[] = {"true", "True", "TRUE"};
    static const char *const no[] = {"false", "False", "FALSE"};
    if (!quoted)
        for (int i = 0; i < 3; i++) {
            if (strcmp(text, yes[i]) == 0) { *(bool *)field = true; return true; }
            if (strcmp(text, no[i]) == 0) { *(bool *)field = false; return true; }
        }
    return type_error(k, text, quoted, why);
}

static bool bool_check(const s2s_cfg_key *k, const void *field, s2s_buf *why) {
    (void)k;
    unsigned char c = bool_byte(field);
    if (c <= 1) return true;
    s2s_buf_printf(why, "%u is not a valid bool", (unsigned)c);
    return false;
}

static void bool_format(s2s_buf *b, const s2s_cfg_key *k, const void *field) {
    (void)k;
    s2s_buf_puts(b, bool_byte(field) ? "true" : "false");
}

static bool bool_equal(const s2s_cfg_key *k, const void *a, const void *b) {
    (void)k;
    return bool_byte(a) == bool_byte(b);
}

static void bool_allowed(s2s_buf *b, const s2s_cfg_key *k) {
    (void)k;
    s2s_buf_puts(b, "`true`, `false`");
}

static bool bool_json_schema(json_t *s, const s2s_cfg_key *k) {
    (void)k;
    return s2s_cfg_put(s, "type", json_string("boolean"));
}

static json_t *bool_to_json(const s2s_cfg_key *k, const void *field) {
    (void)k;
    return json_boolean(bool_byte(field));
}

static const s2s_cfg_ops bool_ops = {"bool", bool_describe, bool_parse, bool_check,
                                     bool_format, bool_equal, bool_allowed,
                                     bool_json_schema, bool_to_json};

// ---- enum ----

static int enum_count(const s2s_cfg_key *k) {
    int n = 0;
    while (k->names[n]) n++;
    return n;
}

static void enum_describe(s2s_buf *b, const s2s_cfg_key *k) {
    int n = enum_count(k);
    for (int i = 0; i < n; i++)
        s2s_buf_printf(b, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", k->names[i]);
}

static bool enum_parse(const s2s_cfg_key *k, const char *text, bool quoted, void *field,
                       s2s_buf *why) {
    (void)quoted;  // `norm: "pre"` is as good as `norm: pre`
    for (int i = 0; k->names[i]; i++)
        if (strcmp(text, k->names[i]) == 0) {
            *(int *)field = i;
            return true;
        }
    return type_error(k, text, false, why);
}

static bool enum_check(const s2s_cfg_key *k, const void *field, s2s_buf *why) {
    int v = *(const int *)field;
    if (v >= 0 && v < enum_count(k)) return true;
    s2s_buf_printf(why, "%d is not a valid value (expected ", v);
    enum_describe(why, k);
    s2s_buf_puts(why, ")");
    return false;
}

static void enum_format(s2s_buf *b, const s2s_cfg_key *k, const void *field) {
    int v = *(const int *)field;
    if (v >= 0 && v < enum_count(k)) s2s_buf_puts(b, k->names[v]);
    else s2s_buf_printf(b, "%d", v);  // invalid; validation says so
}

static void enum_allowed(s2s_buf *b, const s2s_cfg_key *k) {
    for (int j = 0; k->names[j]; j++) s2s_buf_printf(b, "%s`%s`", j ? ", " : "", k->names[j]);
}

static bool enum_json_schema(json_t *s, const s2s_cfg_key *k) {
    json_t *names = json_array();
    if (!s2s_cfg_put(s, "type", json_string("string")) || !s2s_cfg_put(s, "enum", names))
        return false;
    for (int i = 0; k->names[i]; i++)
        if (json_array_append_new(names, json_string(k->names[i]))) return false;
    return true;
}

static json_t *enum_to_json(const s2s_cfg_key *k, const void *field) {
    int v = *(const int *)field;
    return v >= 0 && v < enum_count(k) ? json_string(k->names[v]) : NULL;
}

static const s2s_cfg_ops enum_ops = {"enum", enum_describe, enum_parse, enum_check,
                                     enum_format, int_equal, enum_allowed,
                                     enum_json_schema, enum_to_json};

// ---- path and string: char[size] ----

static void path_describe(s2s_buf *b, const s2s_cfg_key *k) {
    (void)k;
    s2s_buf_puts(b, "a path");
}

static void string_describe(s2s_buf *b, const s2s_cfg_key *k) {
    (void)k;
    s2s_buf_puts(b, "a string");
}

static bool text_parse(const s2s_cfg_key *k, const char *text, bool quoted, void *field,
                       s2s_buf *why) {
    (void)quoted;
    size_t n = strlen(text);
    if (n >= k->size) {
        s2s_buf_printf(why, "%s is longer than %zu bytes",
                       k->type == S2S_CFG_PATH ? "path" : "string", k->size - 1);
        return false;
    }
    memcpy(field, text, n + 1);
    return true;
}

static bool text_check(const s2s_cfg_key *k, const void *field, s2s_buf *why) {
    if (memchr(field, '\0', k->size)) return true;
    s2s_buf_puts(why, "is not NUL-terminated");
    return false;
}

// A double-quoted YAML scalar, so paths with ': ', '#', quotes or leading
// blanks read back unchanged. Bounded, in case the field lacks its NUL
// (validation reports it).
static void text_format(s2s_buf *b, const s2s_cfg_key *k, const void *field) {
    const char *s = field;
    size_t n = strnlen(s, k->size);
    s2s_buf_puts(b, "\"");
    for (size_t i = 0; i < n && n < k->size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') s2s_buf_printf(b, "\\%c", c);
        else if (c == '\n') s2s_buf_puts(b, "\\n");
        else if (c == '\t') s2s_buf_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7f) s2s_buf_printf(b, "\\x%02x", c);
        else s2s_buf_append(b, &s[i], 1);
    }
    s2s_buf_puts(b, "\"");
}

static bool text_equal(const s2s_cfg_key *k, const void *a, const void *b) {
    return strncmp(a, b, k->size) == 0;
}

// Two spellings of one file ("a/v.txt", "/abs/a/v.txt", a link to it) are
// the same vocabulary: paths that name existing files compare by identity.
static bool path_equal(const s2s_cfg_key *k, const void *a, const void *b) {
    if (text_equal(k, a, b)) return true;
    const char *pa = a, *pb = b;
    if (!memchr(pa, '\0', k->size) || !memchr(pb, '\0', k->size) || !pa[0] || !pb[0])
        return false;
    struct stat sa, sb;
    return stat(pa, &sa) == 0 && stat(pb, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

static void path_allowed(s2s_buf *b, const s2s_cfg_key *k) {
    (void)k;
    s2s_buf_puts(b, "an existing file");
}

static void string_allowed(s2s_buf *b, const s2s_cfg_key *k) {
    s2s_buf_puts(b, (k->flags & S2S_CFG_OUTPUT) ? "a file name" : "any");
}

// `key:` with no value leaves a path unset, as "" does. maxLength counts
// characters where the loader counts bytes: the same for ASCII names.
static bool text_json_schema(json_t *s, const s2s_cfg_key *k) {
    return s2s_cfg_put(s, "type", json_pack("[ss]", "string", "null")) &&
           s2s_cfg_put(s, "maxLength", json_integer((json_int_t)k->size - 1));
}

static json_t *text_to_json(const s2s_cfg_key *k, const void *field) {
    const char *s = field;
    return memchr(s, '\0', k->size) && s[0] ? json_string(s) : NULL;
}

static const s2s_cfg_ops path_ops = {"path", path_describe, text_parse, text_check,
                                     text_format, path_equal, path_allowed,
                                     text_json_schema, text_to_json};
static const s2s_cfg_ops string_ops = {"string", string_describe, text_parse, text_check,
                                       text_format, text_equal, string_allowed,
                                       text_json_schema, text_to_json};

// ---- float pair: float[2], written [a, b] ----

static void pair_describe(s2s_buf *b, const s2s_cfg_key *k) {
    (void)k;
    s2s_buf_puts(b, "a list of two numbers");
}

// "[a, b]" or "a, b" (the loader turns a YAML sequence into the first;
// --set may give either), each a plain decimal number.
static bool pair_parse(const s2s_cfg_key *k, const char *text, bool quoted, void *field,
                       s2s_buf *why) {
    const char *s = text, *end = text + strlen(text);
    float v[2];
    while (s < end && *s == ' ') s++;
    while (end > s && end[-1] == ' ') end--;
    if (s < end && *s == '[') {
        if (end[-1] != ']') return type_error(k, text, quoted, why);
        s++;
        end--;
    }
    for (int i = 0; i < 2; i++) {
        const char *stop = i == 0 ? memchr(s, ',', (size_t)(end - s)) : end;
        if (!stop || quoted) return type_error(k, text, quoted, why);
        const char *a = s, *b = stop;
        while (a < b && *a == ' ') a++;
        while (b > a && b[-1] == ' ') b--;
        char num[64];
        if (b - a <= 0 || b - a >= (ptrdiff_t)sizeof num) return type_error(k, text, quoted, why);
        memcpy(num, a, (size_t)(b - a));
        num[b - a] = '\0';
        if (!is_decimal_float(num)) return type_error(k, text, quoted, why);
        v[i] = strtof(num, NULL);
        s = stop + 1;
    }
    for (int i = 0; i < 2; i++)
        if (!isfinite(v[i]) || !in_bounds(k, v[i])) return range_error(k, text, why);
    memcpy(field, v, sizeof v);
    return true;
}

static bool pair_check(const s2s_cfg_key *k, const void *field, s2s_buf *why) {
    float v[2];
    memcpy(v, field, sizeof v);
    if (isfinite(v[0]) && isfinite(v[1]) && in_bounds(k, v[0]) && in_bounds(k, v[1]))
        return true;
    return stored_range_error(k, field, why);
}

static void pair_format(s2s_buf *b, const s2s_cfg_key *k, const void *field) {
    (void)k;
    float v[2];
    memcpy(v, field, sizeof v);
    s2s_buf_puts(b, "[");
    format_float(b, v[0]);
    s2s_buf_puts(b, ", ");
    format_float(b, v[1]);
    s2s_buf_puts(b, "]");
}

static bool pair_equal(const s2s_cfg_key *k, const void *a, const void *b) {
    (void)k;
    float x[2], y[2];
    memcpy(x, a, sizeof x);
    memcpy(y, b, sizeof y);
    return float_bits_equal(x[0], y[0]) && float_bits_equal(x[1], y[1]);
}

static void pair_allowed(s2s_buf *b, const s2s_cfg_key *k) {
    allowed_bounds(b, k);
    s2s_buf_puts(b, ", each");
}

static bool pair_json_schema(json_t *s, const s2s_cfg_key *k) {
    json_t *item = json_object();
    return s2s_cfg_put(s, "type", json_string("array")) && s2s_cfg_put(s, "items", item) &&
           float_json_schema(item, k) && s2s_cfg_put(s, "minItems", json_integer(2)) &&
           s2s_cfg_put(s, "maxItems", json_integer(2));
}

static json_t *pair_to_json(const s2s_cfg_key *k, const void *field) {
    (void)k;
    float v[2];
    memcpy(v, field, sizeof v);
    json_t *a = json_array();
    if (a && (json_array_append_new(a, float_json(v[0])) ||
              json_array_append_new(a, float_json(v[1])))) {
        json_decref(a);
        return NULL;
    }
    return a;
}

static const s2s_cfg_ops pair_ops = {"[float, float]", pair_describe, pair_parse, pair_check,
                                     pair_format, pair_equal, pair_allowed,
                                     pair_json_schema, pair_to_json};

// ---- index list: s2s_index_list, written [0, 2, 3] ----
// Heads and layers an attention variant applies to. Entries are kept in the
// order written, and two lists holding the same indices are equal, so
// [2, 1] and [1, 2] are one architecture.

static void list_describe(s2s_buf *b, const s2s_cfg_key *k) {
    (void)k;
    s2s_buf_puts(b, "a list of integers, such as [0, 2]");
}

bool s2s_cfg_index_add(const s2s_cfg_key *k, s2s_index_list *list, const char *text,
                       bool quoted, s2s_buf *why) {
    if (quoted || !is_decimal_int(text)) {
        s2s_buf_puts(why, quoted ? "expected an integer, got the quoted string "
                                 : "expected an integer, got ");
        s2s_cfg_quote(why, text, strlen(text), 60);
        return false;
    }
    // Checked before the value: with every bound no wider than the list,
    // an entry past the last is always a repeat or out of range as well,
    // and "too many" says more.
    if (list->n >= S2S_MAX_INDICES) {
        s2s_buf_printf(why, "more than %d entries", S2S_MAX_INDICES);
        return false;
    }
    errno = 0;
    long long v = strtoll(text, NULL, 10);
    if (errno == ERANGE || v < INT_MIN || v > INT_MAX || !in_bounds(k, (double)v)) {
        s2s_buf_append(why, text, strlen(text) > 60 ? 60 : strlen(text));
        s2s_buf_puts(why, " is out of range; must be ");
        describe_bounds(why, k);
        return false;
    }
    for (int i = 0; i < list->n; i++)
        if (list->v[i] == (int)v) {
            s2s_buf_printf(why, "%d is listed twice", (int)v);
            return false;
        }
    list->v[list->n++] = (int)v;
    return true;
}

// "[a, b, ...]" (a YAML sequence as --set gives it, or a default); the
// brackets are required, as a YAML list needs them, so `heads: 3` in a
// file is refused rather than read as [3].
static bool list_parse(const s2s_cfg_key *k, const char *text, bool quoted, void *field,
                       s2s_buf *why) {
    const char *s = text, *end = text + strlen(text);
    while (s < end && *s == ' ') s++;
    while (end > s && end[-1] == ' ') end--;
    if (quoted || end - s < 2 || *s != '[' || end[-1] != ']')
        return type_error(k, text, quoted, why);
    s++;
    end--;
    s2s_index_list list = {0};
    const char *a = s;
    while (a < end && *a == ' ') a++;
    if (a < end) {
        for (;;) {
            const char *stop = memchr(s, ',', (size_t)(end - s));
            if (!stop) stop = end;
            const char *b = stop;
            a = s;
            while (a < b && *a == ' ') a++;
            while (b > a && b[-1] == ' ') b--;
            char num[64];
            size_t n = (size_t)(b - a) < sizeof num ? (size_t)(b - a) : sizeof num - 1;
            memcpy(num, a, n);
            num[n] = '\0';
            if (!s2s_cfg_index_add(k, &list, num, false, why)) return false;
            if (stop == end) break;
            s = stop + 1;
        }
    }
    memcpy(field, &list, sizeof list);
    return true;
}

// Any bits: a count outside 0..S2S_MAX_INDICES is clamped for printing.
static int list_count(const s2s_index_list *l) {
    return l->n < 0 ? 0 : l->n > S2S_MAX_INDICES ? S2S_MAX_INDICES : l->n;
}

static bool list_check(const s2s_cfg_key *k, const void *field, s2s_buf *why) {
    s2s_index_list l;
    memcpy(&l, field, sizeof l);
    if (l.n < 0 || l.n > S2S_MAX_INDICES) {
        s2s_buf_printf(why, "%d is not a valid number of entries (0 to %d)", l.n,
                       S2S_MAX_INDICES);
        return false;
    }
    for (int i = 0; i < l.n; i++) {
        if (!in_bounds(k, l.v[i])) {
            s2s_buf_printf(why, "%d is out of range; must be ", l.v[i]);
            describe_bounds(why, k);
            return false;
        }
        for (int j = 0; j < i; j++)
            if (l.v[j] == l.v[i]) {
                s2s_buf_printf(why, "%d is listed twice", l.v[i]);
                return false;
            }
    }
    return true;
}

static void list_format(s2s_buf *b, const s2s_cfg_key *k, const void *field) {
    (void)k;
    s2s_index_list l;
    memcpy(&l, field, sizeof l);
    s2s_buf_puts(b, "[");
    for (int i = 0; i < list_count(&l); i++) s2s_buf_printf(b, "%s%d", i ? ", " : "", l.v[i]);
    s2s_buf_puts(b, "]");
}

// The same count and every entry of one in the other: with distinct
// entries (which check ensures), the same set of indices.
static bool list_equal(const s2s_cfg_key *k, const void *a, const void *b) {
    (void)k;
    s2s_index_list x, y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    if (x.n != y.n) return false;
    for (int i = 0; i < list_count(&x); i++) {
        bool found = false;
        for (int j = 0; j < list_count(&y) && !found; j++) found = x.v[i] == y.v[j];
        if (!found) return false;
    }
    return true;
}

// "distinct, each >= 0 and <= 63"; the most entries only where the bounds
// leave room for more.
static void list_allowed(s2s_buf *b, const s2s_cfg_key *k) {
    s2s_buf_puts(b, "distinct, each ");
    allowed_bounds(b, k);
    bool bounded = (k->bounds & S2S_CFG_MIN) && (k->bounds & S2S_CFG_MAX);
    if (!bounded || k->max - k->min + 1 > S2S_MAX_INDICES)
        s2s_buf_printf(b, ", at most %d", S2S_MAX_INDICES);
}

static bool list_json_schema(json_t *s, const s2s_cfg_key *k) {
    json_t *item = json_object();
    return s2s_cfg_put(s, "type", json_string("array")) && s2s_cfg_put(s, "items", item) &&
           int_json_schema(item, k) && s2s_cfg_put(s, "uniqueItems", json_true()) &&
           s2s_cfg_put(s, "maxItems", json_integer(S2S_MAX_INDICES));
}

static json_t *list_to_json(const s2s_cfg_key *k, const void *field) {
    (void)k;
    s2s_index_list l;
    memcpy(&l, field, sizeof l);
    json_t *a = json_array();
    for (int i = 0; a && i < list_count(&l); i++)
        if (json_array_append_new(a, json_integer(l.v[i]))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static const s2s_cfg_ops list_ops = {"[int, ...]", list_describe, list_parse, list_check,
                                     list_format, list_equal, list_allowed,
                                     list_json_schema, list_to_json};

// ---- by type ----

const s2s_cfg_ops *s2s_cfg_ops_of(const s2s_cfg_key *k) {
    static const s2s_cfg_ops *const by_type[S2S_CFG_TYPE_COUNT] = {
        [S2S_CFG_INT] = &int_ops,       [S2S_CFG_FLOAT] = &float_ops,
        [S2S_CFG_BOOL] = &bool_ops,     [S2S_CFG_ENUM] = &enum_ops,
        [S2S_CFG_PATH] = &path_ops,     [S2S_CFG_STRING] = &string_ops,
        [S2S_CFG_FLOAT_PAIR] = &pair_ops, [S2S_CFG_INDEX_LIST] = &list_ops,
    };
    S2S_ASSERT(k->type >= 0 && k->type < S2S_CFG_TYPE_COUNT && by_type[k->type]);
    return by_type[k->type];
}
