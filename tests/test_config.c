// Tests for the YAML config module (src/config): defaults, every error kind
// with its exact message, overrides, validation, printing, the round trip
// through YAML, docs/config.md, the JSON Schema, `config init` and
// `config explain`, and malformed input of every length.
#include <criterion/criterion.h>
#include <glob.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/schema.h"
#include "s2s/config.h"
#include "s2s/model.h"
#include "config/command.h"

#define DIR S2S_TEST_DATA "/config"
#define FIX(name) DIR "/" name

// ---- helpers ----

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    char *buf = NULL;
    size_t n = 0, cap = 0, got;
    char chunk[4096];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (n + got + 1 > cap) {
            cap = (n + got + 1) * 2;
            buf = realloc(buf, cap);
            cr_assert_not_null(buf);
        }
        memcpy(buf + n, chunk, got);
        n += got;
    }
    fclose(f);
    if (!buf) buf = calloc(1, 1);
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

// Loads a fixture over the defaults, expecting failure with exactly `msg`.
static void expect_file_error(const char *path, const char *msg) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    s2s_status st = s2s_config_load_file(&cfg, path);
    cr_assert_eq(st, S2S_ERR_CONFIG, "%s: status %d", path, st);
    cr_assert_str_eq(s2s_last_error(), msg);
}

// Key-by-key equality, naming the keys that differ on failure. Never
// memcmp: s2s_config has padding (after its bools), which a struct copy
// need not copy, so bytewise equal configs were luck (and failed on a
// fresh Debian 12).
static void expect_same_config(const s2s_config *a, const s2s_config *b, const char *what) {
    if (s2s_config_equal(a, b)) return;
    char *d = NULL;
    s2s_config_diff(a, b, false, &d);
    cr_assert_fail("%s: the configs differ:\n%s", what, d ? d : "(out of memory)");
}

static void expect_set_error(s2s_config *cfg, const char *assignment, const char *msg) {
    s2s_config before = *cfg;
    cr_assert_eq(s2s_config_set(cfg, assignment), S2S_ERR_CONFIG, "%s", assignment);
    cr_assert_str_eq(s2s_last_error(), msg);
    expect_same_config(&before, cfg, "a failed --set changed the config");
}

// good.yaml, which gives every key a value other than its default.
static void load_good(s2s_config *cfg) {
    s2s_config_default(cfg);
    cr_assert_eq(s2s_config_load_file(cfg, FIX("good.yaml")), S2S_OK, "%s", s2s_last_error());
}

// base with leaf l alone set to its value in other.
static s2s_config with_leaf_of(const s2s_config *base, const s2s_config *other,
                               const s2s_cfg_leaf *l) {
    s2s_config one = *base;
    memcpy(s2s_cfg_field(&one, l), s2s_cfg_field_const(other, l), l->key->size);
    return one;
}

// Keys of type S2S_CFG_TABLE below t (sections included for the root).
static int count_tables(const s2s_cfg_table *t) {
    int n = 0;
    for (int i = 0; i < t->n_keys; i++)
        if (t->keys[i].type == S2S_CFG_TABLE) n += 1 + count_tables(t->keys[i].sub);
    return n;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

// ---- schema and defaults ----

Test(config, defaults_match_the_documented_values) {
    s2s_config cfg;
    memset(&cfg, 0xAB, sizeof cfg);
    s2s_config_default(&cfg);
    cr_assert_eq(cfg.model.d_model, 512);
    cr_assert_eq(cfg.model.heads, 8);
    cr_assert_eq(cfg.model.encoder_layers, 6);
    cr_assert_eq(cfg.model.decoder_layers, 6);
    cr_assert_eq(cfg.model.ffn_dim, 2048);
    cr_assert_eq(cfg.model.activation, S2S_ACT_RELU);
    cr_assert_eq(cfg.model.norm, S2S_NORM_PRE);
    cr_assert_eq(cfg.model.layer_norm_eps, 1e-5f);
    cr_assert_eq(cfg.model.dropout, 0.1f);
    cr_assert_eq(cfg.model.tie_output, true);
    cr_assert_eq(cfg.model.max_len, 256);
    cr_assert_str_eq(cfg.vocab.src, "");
    cr_assert_str_eq(cfg.vocab.tgt, "");
    cr_assert_eq(cfg.decode.max_len, 128);
    cr_assert_eq(cfg.decode.beam_size, 1);
    cr_assert_eq(cfg.train.guided[S2S_HEAD_ALIGN].stack, S2S_ATTN_MAP_CROSS);
    cr_assert_eq(cfg.train.guided[S2S_HEAD_COREF].stack, S2S_ATTN_MAP_ENC);
    cr_assert_eq(s2s_config_validate(&cfg, "defaults"), S2S_OK, "%s", s2s_last_error());
}

Test(config, schema_covers_every_field_once) {
    // Each byte of s2s_config belongs to at most one leaf, and every 4-byte
    // word (all fields are 4-aligned) holds at least one leaf: a field added
    // to the struct but not to the tables fails here.
    unsigned char owner[sizeof(s2s_config)] = {0};
    for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
        const s2s_cfg_leaf *l = s2s_cfg_leaf_get(i);
        cr_assert_leq(l->offset + l->key->size, sizeof(s2s_config), "%s", l->path);
        for (size_t b = l->offset; b < l->offset + l->key->size; b++) {
            cr_assert_eq(owner[b], 0, "%s overlaps another key", l->path);
            owner[b] = 1;
        }
    }
    // The one field that is no key: each guided head's stack, its role's
    // (s2s_config_default sets it).
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) {
        size_t at = offsetof(s2s_config, train.guided) + r * sizeof(s2s_guided_head) +
                    offsetof(s2s_guided_head, stack);
        cr_assert_eq(owner[at], 0);
        memset(owner + at, 1, sizeof(s2s_attn_map));
    }
    for (size_t w = 0; w < sizeof(s2s_config); w += 4) {
        bool any = false;
        for (size_t b = w; b < w + 4 && b < sizeof(s2s_config); b++) any |= owner[b];
        cr_assert(any, "bytes %zu..%zu of s2s_config belong to no schema key", w, w + 3);
    }
    // The nested keys sit where C puts them.
    int li = s2s_cfg_find_leaf("train.guided_alignment.weight", 29);
    cr_assert_geq(li, 0);
    cr_assert_eq(s2s_cfg_leaf_get(li)->offset,
                 offsetof(s2s_config, train.guided[S2S_HEAD_ALIGN].weight));
}

// Checks the keys of t (at path `where`): each named once, with help, enum
// names exactly on enums, a nested table exactly on tables.
static void check_table(const s2s_cfg_table *t, const char *where) {
    for (int i = 0; i < t->n_keys; i++) {
        const s2s_cfg_key *k = &t->keys[i];
        cr_assert_eq(s2s_cfg_find(t, k->name, strlen(k->name)), i, "%s.%s twice", where, k->name);
        cr_assert(k->help && k->help[0], "%s.%s has no help", where, k->name);
        cr_assert_eq(k->type == S2S_CFG_ENUM, k->names != NULL, "%s.%s", where, k->name);
        cr_assert_eq(k->type == S2S_CFG_TABLE, k->sub != NULL, "%s.%s", where, k->name);
        cr_assert_eq(k->type == S2S_CFG_TABLE, k->def == NULL, "%s.%s", where, k->name);
        if (k->sub) check_table(k->sub, k->name);
    }
}

Test(config, schema_tables_and_leaves_agree) {
    check_table(&s2s_cfg_root, "");
    for (int s = 0; s < s2s_cfg_root.n_keys; s++)
        cr_assert_eq(s2s_cfg_root.keys[s].type, S2S_CFG_TABLE, "sections are tables");
    int last = 0;
    for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
        const s2s_cfg_leaf *l = s2s_cfg_leaf_get(i);
        const char *sec = s2s_cfg_root.keys[l->section].name;
        // "section.[table.]name"
        cr_assert_eq(strncmp(l->path, sec, strlen(sec)), 0, "%s", l->path);
        cr_assert_eq(l->path[strlen(sec)], '.', "%s", l->path);
        const char *dot = strrchr(l->path, '.');
        cr_assert_str_eq(dot + 1, l->key->name);
        cr_assert_geq(l->section, last, "%s: keys out of section order", l->path);
        last = l->section;
        cr_assert_eq(s2s_cfg_find_leaf(l->path, strlen(l->path)), i, "%s twice", l->path);
        cr_assert_eq(s2s_cfg_leaf_at(l->offset), i, "%s", l->path);
    }
    cr_assert_eq(s2s_cfg_find_leaf("train.guided_alignment", 22), -1, "a table is no leaf");
}

Test(config, reference_lists_every_key_and_rule) {
    // docs/config.md itself is compared with `s2s config reference` by
    // tests/cli_config_test.sh.
    char *ref = s2s_config_reference();
    cr_assert_not_null(ref);
    for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
        char needle[128];
        snprintf(needle, sizeof needle, "| `%s` |", s2s_cfg_leaf_get(i)->path);
        cr_assert_not_null(strstr(ref, needle), "%s missing from the reference", needle);
    }
    cr_assert_not_null(strstr(ref, "| `train.guided_alignment` | mapping |"));
    for (int r = 0; r < s2s_cfg_n_rules; r++) {
        char needle[256];
        snprintf(needle, sizeof needle, "\n- %s\n", s2s_cfg_rules[r].doc);
        cr_assert_not_null(strstr(ref, needle), "rule '%s' missing", s2s_cfg_rules[r].doc);
    }
    free(ref);
}

// ---- loading good files ----

Test(config, good_file_sets_every_key) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file(&cfg, FIX("good.yaml")), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(cfg.model.d_model, 256);
    cr_assert_eq(cfg.model.heads, 4);
    cr_assert_eq(cfg.model.encoder_layers, 3);
    cr_assert_eq(cfg.model.decoder_layers, 2);
    cr_assert_eq(cfg.model.ffn_dim, 1024);
    cr_assert_eq(cfg.model.activation, S2S_ACT_GELU);
    cr_assert_eq(cfg.model.norm, S2S_NORM_POST);
    cr_assert_eq(cfg.model.layer_norm_eps, 1e-6f);
    cr_assert_eq(cfg.model.dropout, 0.25f);
    cr_assert_eq(cfg.model.tie_output, false);
    cr_assert_eq(cfg.model.max_len, 100);
    // Relative paths resolve against the folder of the config file.
    cr_assert_str_eq(cfg.vocab.src, FIX("vocab_src.yaml"));
    cr_assert_str_eq(cfg.vocab.tgt, FIX("vocab_tgt.yaml"));
    cr_assert_eq(cfg.decode.max_len, 50);
    cr_assert_eq(cfg.decode.beam_size, 4);
    cr_assert_eq(cfg.model.attention_dropout, 0.05f);
    cr_assert_str_eq(cfg.data.train, FIX("vocab_src.yaml"));
    cr_assert_eq(cfg.train.schedule, S2S_SCHEDULE_NOAM);
    cr_assert_eq(cfg.train.best_metric, S2S_BEST_LOSS);
    cr_assert_eq(cfg.train.shuffle, false);
    cr_assert_eq(cfg.train.grad_norms_every, 20);
    // A YAML sequence for the list-valued key.
    cr_assert(cfg.train.adam_betas[0] == 0.8f && cfg.train.adam_betas[1] == 0.99f);
    // an output file: relative to the config's folder, need not exist
    cr_assert_str_eq(cfg.train.output, FIX("out.safetensors"));
    // A YAML flow mapping for the mapping-valued key.
    cr_assert_eq(cfg.train.guided[S2S_HEAD_ALIGN].layer, 1);
    cr_assert_eq(cfg.train.guided[S2S_HEAD_ALIGN].head, 3);
    cr_assert_eq(cfg.train.guided[S2S_HEAD_ALIGN].weight, 0.5f);
}

// Loads text expecting failure with exactly msg.
static void expect_string_error(const char *text, const char *msg) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg, text, "t.yaml", NULL), S2S_ERR_CONFIG, "%s", text);
    cr_assert_str_eq(s2s_last_error(), msg);
}

Test(config, guided_alignment_is_a_nested_table_of_keys) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    const s2s_guided_head *ga = &cfg.train.guided[S2S_HEAD_ALIGN];
    cr_assert(ga->layer == -1 && ga->head == 0 && ga->weight == 0.1f, "off by default");

    // --set: one nested key at a time; the others keep their values.
    cr_assert_eq(s2s_config_set(&cfg, "train.guided_alignment.layer=1"), S2S_OK, "%s",
                 s2s_last_error());
    cr_assert_eq(s2s_config_set(&cfg, " train.guided_alignment.head = 3 "), S2S_OK, "%s",
                 s2s_last_error());
    cr_assert(ga->layer == 1 && ga->head == 3 && ga->weight == 0.1f);
    expect_set_error(&cfg, "train.guided_alignment.weight=-1",
                     "--set train.guided_alignment.weight=-1: -1 is out of range; must be >= 0");
    expect_set_error(&cfg, "train.guided_alignment.layer=-2",
                     "--set train.guided_alignment.layer=-2: -2 is out of range; must be >= -1");
    expect_set_error(&cfg, "train.guided_alignment.head=1.5",
                     "--set train.guided_alignment.head=1.5: expected an integer, got '1.5'");
    // did-you-mean at the level that is misspelt
    expect_set_error(&cfg, "train.guided_alignment.lyer=1",
                     "--set train.guided_alignment.lyer=1: unknown key 'lyer' in "
                     "'train.guided_alignment' (did you mean 'layer'?)");
    expect_set_error(&cfg, "train.guided_alignmnt.layer=1",
                     "--set train.guided_alignmnt.layer=1: unknown key 'guided_alignmnt' in "
                     "'train' (did you mean 'guided_alignment'?)");
    expect_set_error(&cfg, "trian.guided_alignment.layer=1",
                     "--set trian.guided_alignment.layer=1: unknown section 'trian' (did you "
                     "mean 'train'?)");
    expect_set_error(&cfg, "train.guided_alignment=off",
                     "--set train.guided_alignment=off: 'train.guided_alignment' is a mapping; "
                     "set one of its keys (layer, head or weight)");
    expect_set_error(&cfg, "train.guided_alignment.layer.x=1",
                     "--set train.guided_alignment.layer.x=1: 'train.guided_alignment.layer' is "
                     "a value, not a mapping of keys");
    expect_set_error(&cfg, "layer=1",
                     "--set layer=1: expected section.key=value (did you mean "
                     "'train.guided_alignment.layer'?)");

    // YAML: a block mapping, keys left out keep their values; printed as a
    // block mapping that reads back to the same values.
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg,
                                        "model:\n  decoder_layers: 2\n  heads: 4\n"
                                        "train:\n  guided_alignment:\n    layer: 1\n"
                                        "    weight: 0.25\n",
                                        "t.yaml", NULL),
                 S2S_OK, "%s", s2s_last_error());
    cr_assert(ga->layer == 1 && ga->head == 0 && ga->weight == 0.25f);
    char *y = s2s_config_to_yaml(&cfg);
    cr_assert_not_null(strstr(y, "\n  guided_alignment:\n    layer: 1\n    head: 0  # default\n"
                                 "    weight: 0.25\n"), "%s", y);
    s2s_config back;
    s2s_config_default(&back);
    cr_assert_eq(s2s_config_load_string(&back, y, "y", NULL), S2S_OK, "%s", s2s_last_error());
    expect_same_config(&back, &cfg, y);
    free(y);
    // A flow mapping reads the same.
    s2s_config_default(&back);
    cr_assert_eq(s2s_config_load_string(&back, "model: {decoder_layers: 2, heads: 4}\n"
                                        "train: {guided_alignment: {weight: 0.25, layer: 1}}\n",
                                        "t.yaml", NULL), S2S_OK, "%s", s2s_last_error());
    expect_same_config(&back, &cfg, "flow mapping");
    // An empty mapping changes nothing.
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg, "train:\n  guided_alignment: {}\n", "t.yaml", NULL),
                 S2S_OK, "%s", s2s_last_error());
    s2s_config_default(&back);
    expect_same_config(&cfg, &back, "{}");

    // Each problem at the key or value it concerns, with the line and caret.
    expect_string_error("train:\n  guided_alignment: {layer: x}\n",
                        "t.yaml:2:29: train.guided_alignment.layer: expected an integer, got 'x'\n"
                        "  guided_alignment: {layer: x}\n"
                        "                            ^");
    expect_string_error("train:\n  guided_alignment:\n    head: 0\n    haed: 1\n",
                        "t.yaml:4:5: unknown key 'haed' in 'train.guided_alignment' (did you "
                        "mean 'head'?)\n"
                        "    haed: 1\n"
                        "    ^");
    expect_string_error("train:\n  guided_alignment: {weight: 1, weight: 2}\n",
                        "t.yaml:2:33: duplicate key 'weight' in 'train.guided_alignment' (first "
                        "given at line 2)\n"
                        "  guided_alignment: {weight: 1, weight: 2}\n"
                        "                                ^");
    expect_string_error("train:\n  guided_alignment: {weight: [1]}\n",
                        "t.yaml:2:30: train.guided_alignment.weight: expected a number, got a "
                        "sequence\n"
                        "  guided_alignment: {weight: [1]}\n"
                        "                             ^");
    expect_string_error("train:\n  guided_alignment: {head: \"1\"}\n",
                        "t.yaml:2:28: train.guided_alignment.head: expected an integer, got the "
                        "quoted string '1'\n"
                        "  guided_alignment: {head: \"1\"}\n"
                        "                           ^");
    expect_string_error("train:\n  guided_alignment: [1, 0, 0.5]\n",
                        "t.yaml:2:21: train.guided_alignment: expected a mapping of layer, head "
                        "or weight, got a sequence\n"
                        "  guided_alignment: [1, 0, 0.5]\n"
                        "                    ^");
    expect_string_error("train:\n  guided_alignment: {[1]: 0}\n",
                        "t.yaml:2:22: expected a key name in 'train.guided_alignment', got a "
                        "sequence\n"
                        "  guided_alignment: {[1]: 0}\n"
                        "                     ^");

    // Across keys (the rules table): the layer and head must exist;
    // reported at the nested value.
    expect_string_error("model:\n  decoder_layers: 2\ntrain:\n  guided_alignment: {layer: 2}\n",
                        "t.yaml:4:29: train.guided_alignment.layer: 2 is out of range; "
                        "model.decoder_layers is 2 (layers count from 0)\n"
                        "  guided_alignment: {layer: 2}\n"
                        "                            ^");
    expect_string_error("model:\n  heads: 4\n  d_model: 64\ntrain:\n  guided_alignment:\n"
                        "    layer: 0\n    head: 4\n",
                        "t.yaml:7:11: train.guided_alignment.head: 4 is out of range; "
                        "model.heads is 4 (heads count from 0)\n"
                        "    head: 4\n"
                        "          ^");
    // Off, the head is not checked.
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg, "train:\n  guided_alignment: {head: 99}\n", "t.yaml",
                                        NULL), S2S_OK, "%s", s2s_last_error());
    // Validation of a struct filled by hand.
    s2s_config_default(&cfg);
    cfg.train.guided[S2S_HEAD_ALIGN].weight = NAN;
    cr_assert_eq(s2s_config_validate(&cfg, "cli"), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "cli: train.guided_alignment.weight: .nan is out of range; "
                                       "must be >= 0");
    s2s_config_default(&cfg);
    cfg.train.guided[S2S_HEAD_ALIGN].layer = 6;
    cr_assert_eq(s2s_config_validate(&cfg, "cli"), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "cli: train.guided_alignment.layer: 6 is out of range; "
                                       "model.decoder_layers is 6 (layers count from 0)");
    // A guided head out of its role's attention (only a program can set the
    // stack), or out of any: refused, not read out of bounds.
    const s2s_attn_map wrong[] = {S2S_ATTN_MAP_SELF, S2S_ATTN_MAP_COUNT, (s2s_attn_map)-1};
    for (int k = 0; k < 3; k++) {
        s2s_config_default(&cfg);
        cfg.train.guided[S2S_HEAD_COREF] = (s2s_guided_head){wrong[k], 1, 0, 0.5f};
        cr_assert_eq(s2s_config_validate(&cfg, "cli"), S2S_ERR_CONFIG);
        cr_assert(strstr(s2s_last_error(), "cli: train.guided_coref: stack ") &&
                  strstr(s2s_last_error(), "is not the coreference head's attention (2)"), "%s",
                  s2s_last_error());
    }
    // An override can fix what the file alone would fail.
    const char *sets[] = {"train.guided_alignment.layer=1"};
    char path[] = "/tmp/s2s_test_guided_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    const char *text = "model:\n  decoder_layers: 2\ntrain:\n  guided_alignment: {layer: 5}\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file_set(&cfg, path, sets, 1), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(cfg.train.guided[S2S_HEAD_ALIGN].layer, 1);
    unlink(path);
}

Test(config, pair_values_parse_check_and_print) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert(cfg.train.adam_betas[0] == 0.9f && cfg.train.adam_betas[1] == 0.98f);
    cr_assert_eq(s2s_config_set(&cfg, "train.adam_betas=[0.5, 0.999]"), S2S_OK, "%s", s2s_last_error());
    cr_assert(cfg.train.adam_betas[0] == 0.5f && cfg.train.adam_betas[1] == 0.999f);
    cr_assert_eq(s2s_config_set(&cfg, "train.adam_betas=0.7,0.8"), S2S_OK, "%s", s2s_last_error());
    cr_assert(cfg.train.adam_betas[0] == 0.7f && cfg.train.adam_betas[1] == 0.8f);
    cr_assert_eq(s2s_config_set(&cfg, "train.adam_betas=[0.9, 1.5]"), S2S_ERR_CONFIG);
    cr_assert_not_null(strstr(s2s_last_error(), "out of range; must be >= 0 and < 1, each"), "%s",
                       s2s_last_error());
    cr_assert_eq(s2s_config_set(&cfg, "train.adam_betas=[0.9]"), S2S_ERR_CONFIG);
    cr_assert_eq(s2s_config_set(&cfg, "train.adam_betas=[0.9, 0.9, 0.9]"), S2S_ERR_CONFIG);
    cr_assert(cfg.train.adam_betas[0] == 0.7f, "a failed set leaves the value");
    cr_assert_eq(s2s_config_load_string(&cfg, "train:\n  adam_betas: [0.9, x]\n", "t.yaml", NULL),
                 S2S_ERR_CONFIG);
    cr_assert_eq(s2s_config_load_string(&cfg, "train:\n  adam_betas:\n    - 0.6\n    - 0.7\n",
                                        "t.yaml", NULL), S2S_OK, "%s", s2s_last_error());
    cr_assert(cfg.train.adam_betas[0] == 0.6f && cfg.train.adam_betas[1] == 0.7f);
    char *y = s2s_config_to_yaml(&cfg);
    cr_assert_not_null(strstr(y, "\n  adam_betas: [0.6, 0.7]\n"), "%s", y);
    s2s_config back;
    s2s_config_default(&back);
    cr_assert_eq(s2s_config_load_string(&back, y, "y", NULL), S2S_OK, "%s", s2s_last_error());
    cr_assert(memcmp(&back.train.adam_betas, &cfg.train.adam_betas, sizeof cfg.train.adam_betas) == 0);
    free(y);
}

// ---- the attention variants' keys: index lists and model.*_attention ----

static const s2s_attention_config *attentions(const s2s_config *cfg, int i) {
    const s2s_attention_config *a[] = {&cfg->model.encoder_attention,
                                       &cfg->model.decoder_attention,
                                       &cfg->model.cross_attention};
    return a[i];
}

// Whether list l holds exactly want[0..n) in that order.
static bool list_is(const s2s_index_list *l, const int *want, int n) {
    if (l->n != n) return false;
    for (int i = 0; i < n; i++)
        if (l->v[i] != want[i]) return false;
    return true;
}

static void expect_string_ok(s2s_config *cfg, const char *text) {
    s2s_config_default(cfg);
    cr_assert_eq(s2s_config_load_string(cfg, text, "t.yaml", NULL), S2S_OK, "%s: %s", text,
                 s2s_last_error());
}

Test(config, attention_defaults_are_full_and_old_model_files_read_them) {
    s2s_config cfg;
    memset(&cfg, 0xAB, sizeof cfg);
    s2s_config_default(&cfg);
    for (int i = 0; i < 3; i++) {
        const s2s_attention_config *a = attentions(&cfg, i);
        cr_assert_eq(a->type, S2S_ATTN_FULL, "%d", i);
        cr_assert(a->window == 16 && a->block == 64 && a->stride == 8, "%d", i);
        cr_assert(a->heads.n == 0 && a->layers.n == 0, "%d: every head and layer", i);
    }
    // A model file's stored config from before these keys: the defaults.
    s2s_config old;
    memset(&old, 0x5A, sizeof old);
    s2s_config_default(&old);
    cr_assert_eq(s2s_config_load_string(&old, "model:\n  d_model: 64\n  heads: 4\n"
                                        "decode:\n  beam_size: 2\n", "m.safetensors", NULL),
                 S2S_OK, "%s", s2s_last_error());
    for (int i = 0; i < 3; i++)
        cr_assert_eq(attentions(&old, i)->type, S2S_ATTN_FULL);
    s2s_config want;
    s2s_config_default(&want);
    want.model.d_model = 64;
    want.model.heads = 4;
    cr_assert(s2s_config_same_arch(&old, &want));
    // The model file's text spells every key out and reads back the same.
    char *y = s2s_config_model_to_yaml(&cfg);
    cr_assert_not_null(strstr(y, "\n  encoder_attention:\n    type: full  # default\n"
                                 "    window: 16  # default\n    block: 64  # default\n"
                                 "    stride: 8  # default\n    heads: []  # default\n"
                                 "    layers: []  # default\n  decoder_attention:\n"),
                       "%s", y);
    cr_assert_not_null(strstr(y, "\n  cross_attention:\n    type: full  # default\n"), "%s", y);
    free(y);
    s2s_config good, back;
    load_good(&good);
    y = s2s_config_model_to_yaml(&good);
    cr_assert_not_null(strstr(y, "\n  encoder_attention:\n    type: local\n    window: 3\n"
                                 "    block: 32\n    stride: 4\n    heads: [1, 2, 3]\n"
                                 "    layers: [0, 2]\n"), "%s", y);
    s2s_config_default(&back);
    cr_assert_eq(s2s_config_load_string(&back, y, "m.safetensors", NULL), S2S_OK, "%s",
                 s2s_last_error());
    cr_assert(s2s_config_same_arch(&good, &back), "%s", y);
    cr_assert(list_is(&back.model.decoder_attention.heads, (int[]){0, 2}, 2));
    cr_assert_eq(back.model.cross_attention.type, S2S_ATTN_LINEAR);
    free(y);
    // A stored architecture that differs in an attention key is named.
    cr_assert_eq(s2s_config_check_arch(&good, "m.safetensors", &cfg, "c.yaml"), S2S_ERR_CONFIG);
    cr_assert_not_null(strstr(s2s_last_error(), "\n  model.encoder_attention.heads: [1, 2, 3] in "
                                                "the model, [] in the config"),
                       "%s", s2s_last_error());
}

Test(config, index_lists_read_flow_and_block_sequences_and_print_back) {
    s2s_config cfg, back;
    expect_string_ok(&cfg, "model:\n  encoder_attention:\n    heads: [3, 0, 2]\n");
    cr_assert(list_is(&cfg.model.encoder_attention.heads, (int[]){3, 0, 2}, 3),
              "kept in the order written");
    expect_string_ok(&cfg, "model:\n  decoder_attention:\n    layers:\n      - 5\n      - 1\n"
                           "    heads: [ ]\n");
    cr_assert(list_is(&cfg.model.decoder_attention.layers, (int[]){5, 1}, 2));
    cr_assert_eq(cfg.model.decoder_attention.heads.n, 0);
    // [] empties a list set before (here by a base: the text read first).
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_set(&cfg, "model.cross_attention.heads=[1,2]"), S2S_OK);
    cr_assert_eq(s2s_config_load_string(&cfg, "model: {cross_attention: {heads: []}}\n", "t.yaml",
                                        NULL), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(cfg.model.cross_attention.heads.n, 0);
    // Printed as a flow list, read back to the same values.
    expect_string_ok(&cfg, "model:\n  heads: 64\n  encoder_attention: {type: block, block: 4, "
                           "heads: [63, 0], layers: [1]}\n");
    char *y = s2s_config_to_yaml(&cfg);
    cr_assert_not_null(strstr(y, "\n  encoder_attention:\n    type: block\n    window: 16  # "
                                 "default\n    block: 4\n    stride: 8  # default\n"
                                 "    heads: [63, 0]\n    layers: [1]\n"), "%s", y);
    s2s_config_default(&back);
    cr_assert_eq(s2s_config_load_string(&back, y, "y", NULL), S2S_OK, "%s", s2s_last_error());
    expect_same_config(&back, &cfg, y);
    cr_assert(list_is(&back.model.encoder_attention.heads, (int[]){63, 0}, 2));
    free(y);
    // The same indices in another order are the same list (one architecture).
    back = cfg;
    back.model.encoder_attention.heads = (s2s_index_list){.n = 2, .v = {0, 63}};
    cr_assert(s2s_config_equal(&cfg, &back));
    back.model.encoder_attention.heads = (s2s_index_list){.n = 2, .v = {0, 62}};
    cr_assert_not(s2s_config_equal(&cfg, &back));
    char *d = NULL;
    cr_assert_eq(s2s_config_diff(&cfg, &back, true, &d), S2S_OK);
    cr_assert_str_eq(d, "model.encoder_attention.heads: [63, 0] -> [0, 62]\n");
    free(d);
    // 64 distinct entries are the most a list holds, and fit.
    s2s_buf text = {0};
    s2s_buf_puts(&text, "model:\n  heads: 64\n  encoder_attention:\n    heads: [");
    for (int i = 63; i >= 0; i--) s2s_buf_printf(&text, "%d%s", i, i ? ", " : "]\n");
    expect_string_ok(&cfg, text.s);
    cr_assert_eq(cfg.model.encoder_attention.heads.n, 64);
    cr_assert_eq(cfg.model.encoder_attention.heads.v[63], 0);
    s2s_buf_free(&text);
}

Test(config, index_list_errors_are_at_the_entry) {
    // Out of range, in a flow list: at the entry, with its caret.
    expect_string_error("model:\n  encoder_attention: {heads: [0, 64]}\n",
                        "t.yaml:2:34: model.encoder_attention.heads: 64 is out of range; must be "
                        ">= 0 and <= 63\n"
                        "  encoder_attention: {heads: [0, 64]}\n"
                        "                                 ^");
    // In a block list, at the entry's own line.
    expect_string_error("model:\n  decoder_attention:\n    layers:\n      - 1\n      - -1\n",
                        "t.yaml:5:9: model.decoder_attention.layers: -1 is out of range; must be "
                        ">= 0 and <= 63\n"
                        "      - -1\n"
                        "        ^");
    // Twice: at the second.
    expect_string_error("model:\n  cross_attention:\n    heads: [1, 2, 1]\n",
                        "t.yaml:3:19: model.cross_attention.heads: 1 is listed twice\n"
                        "    heads: [1, 2, 1]\n"
                        "                  ^");
    // Every bad entry is reported, each at its own place.
    expect_string_error("model:\n  encoder_attention:\n    heads: [x, 2, \"3\", [4], 2, ~]\n",
                        "t.yaml:3:13: model.encoder_attention.heads: expected an integer, got "
                        "'x'\n"
                        "    heads: [x, 2, \"3\", [4], 2, ~]\n"
                        "            ^\n"
                        "t.yaml:3:19: model.encoder_attention.heads: expected an integer, got the "
                        "quoted string '3'\n"
                        "    heads: [x, 2, \"3\", [4], 2, ~]\n"
                        "                  ^\n"
                        "t.yaml:3:24: model.encoder_attention.heads: expected an integer, got a "
                        "sequence\n"
                        "    heads: [x, 2, \"3\", [4], 2, ~]\n"
                        "                       ^\n"
                        "t.yaml:3:29: model.encoder_attention.heads: 2 is listed twice\n"
                        "    heads: [x, 2, \"3\", [4], 2, ~]\n"
                        "                            ^\n"
                        "t.yaml:3:32: model.encoder_attention.heads: expected an integer, got "
                        "nothing\n"
                        "    heads: [x, 2, \"3\", [4], 2, ~]\n"
                        "                               ^");
    // Not a list at all: at the value.
    expect_string_error("model:\n  encoder_attention:\n    heads: 3\n",
                        "t.yaml:3:12: model.encoder_attention.heads: expected a list of integers, "
                        "such as [0, 2], got '3'\n"
                        "    heads: 3\n"
                        "           ^");
    expect_string_error("model:\n  encoder_attention:\n    layers: {0: 1}\n",
                        "t.yaml:3:13: model.encoder_attention.layers: expected a list of "
                        "integers, such as [0, 2], got a mapping\n"
                        "    layers: {0: 1}\n"
                        "            ^");
    // More than S2S_MAX_INDICES entries: at the first one too many.
    s2s_buf text = {0}, msg = {0};
    s2s_buf_puts(&text, "model:\n  encoder_attention:\n    heads:\n");
    for (int i = 0; i < 64; i++) s2s_buf_printf(&text, "      - %d\n", i);
    s2s_buf_puts(&text, "      - 0\n");
    s2s_buf_puts(&msg, "t.yaml:68:9: model.encoder_attention.heads: more than 64 entries\n"
                       "      - 0\n"
                       "        ^");
    expect_string_error(text.s, msg.s);
    s2s_buf_free(&text);
    s2s_buf_free(&msg);
    // A failed list leaves the value it had.
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_set(&cfg, "model.encoder_attention.heads=[1]"), S2S_OK);
    cr_assert_eq(s2s_config_load_string(&cfg, "model: {encoder_attention: {heads: [2, 99]}}\n",
                                        "t.yaml", NULL), S2S_ERR_CONFIG);
    cr_assert(list_is(&cfg.model.encoder_attention.heads, (int[]){1}, 1));
}

Test(config, attention_keys_misspelt_or_out_of_range_are_reported) {
    expect_string_error("model:\n  encoder_attention:\n    type: local\n    widow: 3\n",
                        "t.yaml:4:5: unknown key 'widow' in 'model.encoder_attention' (did you "
                        "mean 'window'?)\n"
                        "    widow: 3\n"
                        "    ^");
    expect_string_error("model:\n  encoder_atention: {type: local}\n",
                        "t.yaml:2:3: unknown key 'encoder_atention' in 'model' (did you mean "
                        "'encoder_attention'?)\n"
                        "  encoder_atention: {type: local}\n"
                        "  ^");
    expect_string_error("model:\n  decoder_attention: {type: sparse}\n",
                        "t.yaml:2:29: model.decoder_attention.type: expected full, local, block, "
                        "strided or linear, got 'sparse'\n"
                        "  decoder_attention: {type: sparse}\n"
                        "                            ^");
    expect_string_error("model:\n  encoder_attention: {window: 0, block: 0, stride: 1}\n",
                        "t.yaml:2:31: model.encoder_attention.window: 0 is out of range; must be "
                        ">= 1\n"
                        "  encoder_attention: {window: 0, block: 0, stride: 1}\n"
                        "                              ^\n"
                        "t.yaml:2:41: model.encoder_attention.block: 0 is out of range; must be "
                        ">= 1\n"
                        "  encoder_attention: {window: 0, block: 0, stride: 1}\n"
                        "                                        ^\n"
                        "t.yaml:2:52: model.encoder_attention.stride: 1 is out of range; must be "
                        ">= 2\n"
                        "  encoder_attention: {window: 0, block: 0, stride: 1}\n"
                        "                                                   ^");
    expect_string_error("model:\n  cross_attention: local\n",
                        "t.yaml:2:20: model.cross_attention: expected a mapping of type, window, "
                        "block, stride, heads or layers, got a scalar\n"
                        "  cross_attention: local\n"
                        "                   ^");
    s2s_config cfg;
    expect_string_ok(&cfg, "model:\n  encoder_attention: {window: 1, block: 1, stride: 2}\n");
    cr_assert(cfg.model.encoder_attention.window == 1 && cfg.model.encoder_attention.block == 1 &&
              cfg.model.encoder_attention.stride == 2, "the bounds themselves are allowed");
}

Test(config, index_lists_and_attention_keys_can_be_set) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_set(&cfg, "model.encoder_attention.heads=[1,2,3]"), S2S_OK, "%s",
                 s2s_last_error());
    cr_assert(list_is(&cfg.model.encoder_attention.heads, (int[]){1, 2, 3}, 3));
    cr_assert_eq(s2s_config_set(&cfg, "model.decoder_attention.layers = [ 0 , 1 ] "), S2S_OK, "%s",
                 s2s_last_error());
    cr_assert(list_is(&cfg.model.decoder_attention.layers, (int[]){0, 1}, 2));
    cr_assert_eq(s2s_config_set(&cfg, "model.decoder_attention.type=linear"), S2S_OK);
    cr_assert_eq(cfg.model.decoder_attention.type, S2S_ATTN_LINEAR);
    cr_assert_eq(s2s_config_set(&cfg, "model.encoder_attention.window=3"), S2S_OK);
    cr_assert_eq(cfg.model.encoder_attention.window, 3);
    cr_assert_eq(s2s_config_set(&cfg, "model.encoder_attention.heads=[]"), S2S_OK);
    cr_assert_eq(cfg.model.encoder_attention.heads.n, 0);
    cr_assert_eq(s2s_config_set(&cfg, "model.encoder_attention.heads=[2]"), S2S_OK);
    expect_set_error(&cfg, "model.encoder_attention.heads=[1,64]",
                     "--set model.encoder_attention.heads=[1,64]: 64 is out of range; must be "
                     ">= 0 and <= 63");
    expect_set_error(&cfg, "model.encoder_attention.heads=[1,2,1]",
                     "--set model.encoder_attention.heads=[1,2,1]: 1 is listed twice");
    expect_set_error(&cfg, "model.encoder_attention.heads=1,2",
                     "--set model.encoder_attention.heads=1,2: expected a list of integers, "
                     "such as [0, 2], got '1,2'");
    expect_set_error(&cfg, "model.encoder_attention.heads=[1,,2]",
                     "--set model.encoder_attention.heads=[1,,2]: expected an integer, got ''");
    expect_set_error(&cfg, "model.encoder_attention.heads=[1.5]",
                     "--set model.encoder_attention.heads=[1.5]: expected an integer, got '1.5'");
    expect_set_error(&cfg, "model.encoder_attention.widow=3",
                     "--set model.encoder_attention.widow=3: unknown key 'widow' in "
                     "'model.encoder_attention' (did you mean 'window'?)");
    expect_set_error(&cfg, "model.encoder_attention=local",
                     "--set model.encoder_attention=local: 'model.encoder_attention' is a "
                     "mapping; set one of its keys (type, window, block, stride, heads or "
                     "layers)");
    expect_set_error(&cfg, "model.encoder_attention.stride=1",
                     "--set model.encoder_attention.stride=1: 1 is out of range; must be >= 2");
    s2s_buf a = {0};
    s2s_buf_puts(&a, "model.encoder_attention.heads=[");
    for (int i = 0; i < 64; i++) s2s_buf_printf(&a, "%d,", i);
    s2s_buf_puts(&a, "0]");
    cr_assert_eq(s2s_config_set(&cfg, a.s), S2S_ERR_CONFIG);
    cr_assert_not_null(strstr(s2s_last_error(), ": more than 64 entries"), "%s", s2s_last_error());
    s2s_buf_free(&a);
    cr_assert(list_is(&cfg.model.encoder_attention.heads, (int[]){2}, 1), "failures change nothing");
}

// Each rule fails with its message at the value it names, and passes for
// the configs next to the failing one.
Test(config, attention_rules_across_keys) {
    // Cross-attention: full or linear.
    expect_string_error("model:\n  cross_attention: {type: local}\n",
                        "t.yaml:2:27: model.cross_attention.type: local is not allowed; "
                        "cross-attention is full or linear (a target word may need any source "
                        "word)\n"
                        "  cross_attention: {type: local}\n"
                        "                          ^");
    static const char *const cross[] = {"block", "strided"};
    for (int i = 0; i < 2; i++) {
        char text[128];
        snprintf(text, sizeof text, "model: {cross_attention: {type: %s}}\n", cross[i]);
        s2s_config cfg;
        s2s_config_default(&cfg);
        cr_assert_eq(s2s_config_load_string(&cfg, text, "t.yaml", NULL), S2S_ERR_CONFIG, "%s",
                     text);
    }
    s2s_config cfg;
    expect_string_ok(&cfg, "model: {cross_attention: {type: linear}}\n");
    // Every head index < model.heads, in each table; at the list.
    expect_string_error("model:\n  heads: 4\n  d_model: 64\n  decoder_attention: {heads: [1, 4]}\n",
                        "t.yaml:4:30: model.decoder_attention.heads: 4 is out of range; "
                        "model.heads is 4 (heads count from 0)\n"
                        "  decoder_attention: {heads: [1, 4]}\n"
                        "                             ^");
    expect_string_error("model: {cross_attention: {heads: [8]}}\n",
                        "t.yaml:1:34: model.cross_attention.heads: 8 is out of range; model.heads "
                        "is 8 (heads count from 0)\n"
                        "model: {cross_attention: {heads: [8]}}\n"
                        "                                 ^");
    expect_string_ok(&cfg, "model: {encoder_attention: {heads: [7]}}\n");
    // Every layer index < its stack's layers.
    expect_string_error("model:\n  encoder_layers: 2\n  encoder_attention:\n    layers: [0, 2]\n",
                        "t.yaml:4:13: model.encoder_attention.layers: 2 is out of range; "
                        "model.encoder_layers is 2 (layers count from 0)\n"
                        "    layers: [0, 2]\n"
                        "            ^");
    expect_string_error("model: {decoder_layers: 2, decoder_attention: {layers: [2]}}\n",
                        "t.yaml:1:56: model.decoder_attention.layers: 2 is out of range; "
                        "model.decoder_layers is 2 (layers count from 0)\n"
                        "model: {decoder_layers: 2, decoder_attention: {layers: [2]}}\n"
                        "                                                       ^");
    expect_string_error("model: {decoder_layers: 2, cross_attention: {layers: [3]}}\n",
                        "t.yaml:1:54: model.cross_attention.layers: 3 is out of range; "
                        "model.decoder_layers is 2 (layers count from 0)\n"
                        "model: {decoder_layers: 2, cross_attention: {layers: [3]}}\n"
                        "                                                     ^");
    // Each list counts against its own stack.
    expect_string_ok(&cfg, "model: {decoder_layers: 2, encoder_attention: {layers: [5]}}\n");
    expect_string_ok(&cfg, "model: {encoder_layers: 2, cross_attention: {layers: [5]}}\n");

    // The guided alignment head is not a linear cross-attention head...
    static const char ga[] = "model: {decoder_layers: 2, cross_attention: {type: linear, %s}}\n"
                             "train: {guided_alignment: {layer: 1, head: 2}}\n";
    char text[256];
    snprintf(text, sizeof text, ga, "heads: [2]");
    expect_string_error(text,
                        "t.yaml:2:44: train.guided_alignment.head: head 2 of decoder layer 1 is "
                        "a linear head (model.cross_attention.type is linear and its heads and "
                        "layers include it); a guided head must be a softmax head\n"
                        "train: {guided_alignment: {layer: 1, head: 2}}\n"
                        "                                           ^");
    snprintf(text, sizeof text, ga, "layers: [1]");  // every head of layer 1
    expect_string_error(text,
                        "t.yaml:2:44: train.guided_alignment.head: head 2 of decoder layer 1 is "
                        "a linear head (model.cross_attention.type is linear and its heads and "
                        "layers include it); a guided head must be a softmax head\n"
                        "train: {guided_alignment: {layer: 1, head: 2}}\n"
                        "                                           ^");
    // ... and any other head, layer or type is fine, as is the loss off.
    static const char *const fine[] = {"heads: [0, 1, 3]", "layers: [0]", "heads: [2], layers: [0]"};
    for (int i = 0; i < 3; i++) {
        snprintf(text, sizeof text, ga, fine[i]);
        expect_string_ok(&cfg, text);
    }
    expect_string_ok(&cfg, "model: {cross_attention: {type: full, heads: [0]}}\n"
                           "train: {guided_alignment: {layer: 1, head: 0}}\n");
    expect_string_ok(&cfg, "model: {cross_attention: {type: linear}}\n"
                           "train: {guided_alignment: {layer: -1, head: 0}}\n");
    // The encoder's linear heads are no concern of guided alignment.
    expect_string_ok(&cfg, "model: {encoder_attention: {type: linear}}\n"
                           "train: {guided_alignment: {layer: 1, head: 0}}\n");

    // The guided coreference head is not a linear encoder self-attention head.
    expect_string_error("model: {encoder_attention: {type: linear, heads: [1, 2, 3]}}\n"
                        "train:\n  guided_coref: {layer: 0, head: 3}\n",
                        "t.yaml:3:34: train.guided_coref.head: head 3 of encoder layer 0 is a "
                        "linear head (model.encoder_attention.type is linear and its heads and "
                        "layers include it); a guided head must be a softmax head\n"
                        "  guided_coref: {layer: 0, head: 3}\n"
                        "                                 ^");
    // Heads 1-3 local, head 0 full and guided (the issue's item 7 model).
    expect_string_ok(&cfg, "model: {encoder_attention: {type: local, window: 3, heads: [1, 2, 3]}}\n"
                           "train: {guided_coref: {layer: 1, head: 1}}\n");
    expect_string_ok(&cfg, "model: {encoder_attention: {type: linear, heads: [1, 2, 3]}}\n"
                           "train: {guided_coref: {layer: 1, head: 0}}\n");
    expect_string_ok(&cfg, "model: {cross_attention: {type: linear}, decoder_attention: "
                           "{type: linear}}\ntrain: {guided_coref: {layer: 1, head: 0}}\n");

    // A struct filled by hand: the same rules, and the values themselves.
    s2s_config_default(&cfg);
    cfg.model.encoder_attention.heads = (s2s_index_list){.n = 2, .v = {0, 8}};
    cr_assert_eq(s2s_config_validate(&cfg, "cli"), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "cli: model.encoder_attention.heads: 8 is out of range; "
                                       "model.heads is 8 (heads count from 0)");
    cfg.model.encoder_attention.heads = (s2s_index_list){.n = 2, .v = {3, 3}};
    cr_assert_eq(s2s_config_validate(&cfg, "cli"), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "cli: model.encoder_attention.heads: 3 is listed twice");
    cfg.model.encoder_attention.heads = (s2s_index_list){.n = 1, .v = {-1}};
    cr_assert_eq(s2s_config_validate(&cfg, "cli"), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "cli: model.encoder_attention.heads: -1 is out of range; "
                                       "must be >= 0 and <= 63");
    cfg.model.encoder_attention.heads.n = 65;
    cr_assert_eq(s2s_config_validate(&cfg, "cli"), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "cli: model.encoder_attention.heads: 65 is not a valid "
                                       "number of entries (0 to 64)");
    s2s_config_default(&cfg);
    cfg.model.cross_attention.type = S2S_ATTN_STRIDED;
    cr_assert_eq(s2s_config_validate(&cfg, "cli"), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "cli: model.cross_attention.type: strided is not allowed; "
                                       "cross-attention is full or linear (a target word may "
                                       "need any source word)");
    // An override can fix what the file alone would fail.
    char path[] = "/tmp/s2s_test_attn_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    const char *file = "model:\n  heads: 4\n  d_model: 64\n  encoder_attention: {heads: [5]}\n";
    cr_assert_eq(write(fd, file, strlen(file)), (ssize_t)strlen(file));
    close(fd);
    const char *sets[] = {"model.encoder_attention.heads=[3]"};
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file_set(&cfg, path, sets, 1), S2S_OK, "%s", s2s_last_error());
    cr_assert(list_is(&cfg.model.encoder_attention.heads, (int[]){3}, 1));
    unlink(path);
}

Test(config, attention_keys_are_explained) {
    char *text = NULL;
    cr_assert_eq(s2s_config_explain("model.encoder_attention", &text), S2S_OK);
    cr_assert_not_null(strstr(text, "model.encoder_attention: a mapping of type, window, block, "
                                    "stride, heads or layers\n"), "%s", text);
    cr_assert_not_null(strstr(text, "\n  model.encoder_attention.heads: [int, ...] (distinct, "
                                    "each >= 0 and <= 63); default []\n"), "%s", text);
    cr_assert_not_null(strstr(text, "\n  model.encoder_attention.type: enum (`full`, `local`, "
                                    "`block`, `strided`, `linear`); default full\n"), "%s", text);
    free(text);
    cr_assert_eq(s2s_config_explain("model.cross_attention.type", &text), S2S_OK);
    cr_assert_not_null(strstr(text, "Checked with other keys:\n    - `model.cross_attention.type` "
                                    "is `full` or `linear`"), "%s", text);
    cr_assert_not_null(strstr(text, "abs(i - j) <= `window`"), "the semantics: %s", text);
    free(text);
    cr_assert_eq(s2s_config_explain("model.decoder_attention.layers", &text), S2S_OK);
    cr_assert_not_null(strstr(text, "  Checked with other keys:\n    - Every index of "
                                    "`model.decoder_attention.layers` is <\n"), "%s", text);
    free(text);
    // A bare name: a section's own key first, else the tables that have it.
    cr_assert_eq(s2s_config_explain("heads", &text), S2S_OK);
    cr_assert(strncmp(text, "model.heads: int (>= 1); default 8\n", 35) == 0, "%s", text);
    free(text);
    cr_assert_eq(s2s_config_explain("window", &text), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "'window' is a key of several tables; name one: "
                                       "model.encoder_attention.window, "
                                       "model.decoder_attention.window, "
                                       "model.cross_attention.window");
    cr_assert_eq(s2s_config_explain("model.encoder_attention.widow", &text), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "unknown key 'widow' in 'model.encoder_attention' (did you "
                                       "mean 'model.encoder_attention.window'?)");
    // docs/config.md: a row for the table, then one per key.
    char *ref = s2s_config_reference();
    cr_assert_not_null(strstr(ref, "| `model.cross_attention` | mapping | | type, window, block, "
                                   "stride, heads or layers |"));
    cr_assert_not_null(strstr(ref, "| `model.cross_attention.heads` | [int, ...] | `[]` | "
                                   "distinct, each >= 0 and <= 63 |"), "%s", ref);
    free(ref);
}

Test(config, keys_left_out_keep_their_values) {
    s2s_config cfg, want;
    s2s_config_default(&cfg);
    cfg.decode.beam_size = 7;  // as if set earlier
    want = cfg;
    want.model.heads = 4;
    cr_assert_eq(s2s_config_load_string(&cfg, "model:\n  heads: 4\n", "t.yaml", NULL), S2S_OK);
    expect_same_config(&cfg, &want, "keys left out");
}

Test(config, empty_inputs_keep_the_defaults) {
    const char *texts[] = {"", "\n\n", "# only a comment\n", "---\n", "~\n", "model:\n",
                           "model: ~\nvocab:\n"};
    s2s_config def;
    s2s_config_default(&def);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        s2s_config cfg;
        s2s_config_default(&cfg);
        cr_assert_eq(s2s_config_load_string(&cfg, texts[i], "e.yaml", NULL), S2S_OK,
                     "'%s': %s", texts[i], s2s_last_error());
        expect_same_config(&cfg, &def, texts[i]);
    }
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file(&cfg, FIX("empty.yaml")), S2S_OK);
    expect_same_config(&cfg, &def, "empty.yaml");
}

Test(config, load_string_without_base_dir_leaves_paths_as_written) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    // Not checked for existence: this is how a model file's config is read.
    cr_assert_eq(s2s_config_load_string(&cfg, "vocab:\n  src: some/where.txt\n", "m", NULL),
                 S2S_OK, "%s", s2s_last_error());
    cr_assert_str_eq(cfg.vocab.src, "some/where.txt");
    cr_assert_eq(s2s_config_load_string(&cfg, "vocab:\n  tgt: vocab_tgt.yaml\n", "c.yaml", DIR),
                 S2S_OK, "%s", s2s_last_error());
    cr_assert_str_eq(cfg.vocab.tgt, FIX("vocab_tgt.yaml"));
    cr_assert_eq(s2s_config_load_string(&cfg, "vocab:\n  tgt: " FIX("vocab_src.yaml") "\n",
                                        "c.yaml", "/elsewhere"),
                 S2S_OK, "absolute paths are kept: %s", s2s_last_error());
    cr_assert_str_eq(cfg.vocab.tgt, FIX("vocab_src.yaml"));
}

Test(config, aliases_resolve) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file(&cfg, FIX("aliases.yaml")), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(cfg.model.d_model, 256);
    cr_assert_eq(cfg.model.ffn_dim, 256);
    cr_assert_eq(cfg.decode.beam_size, 2);
    // An alias standing for a whole section is read as that section.
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg, "model: &m\n  heads: 4\ndecode: *m\n", "a.yaml", NULL),
                 S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(),
                     "a.yaml:2:3: unknown key 'heads' in 'decode'\n"
                     "  heads: 4\n"
                     "  ^");
}

// ---- one fixture per error kind, exact messages ----

Test(config, syntax_error_has_position_line_and_caret) {
    expect_file_error(FIX("bad_syntax.yaml"),
                      FIX("bad_syntax.yaml") ":3:4: bad indentation: 3 spaces, more than the 2 "
                      "of line 2 above; keys of one mapping line up, and a nested one needs a "
                      "key ending in ':' above it\n"
                      "   heads: 4\n"
                      "   ^");
}

Test(config, unknown_key_suggests_the_closest) {
    expect_file_error(FIX("unknown_key.yaml"),
                      FIX("unknown_key.yaml") ":3:3: unknown key 'hedas' in 'model' (did you mean 'heads'?)\n"
                      "  hedas: 4\n"
                      "  ^");
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg, "model:\n  colour: red\n", "u.yaml", NULL),
                 S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "u.yaml:2:3: unknown key 'colour' in 'model'\n"
                                       "  colour: red\n"
                                       "  ^");
}

Test(config, wrong_type_is_reported_at_the_value) {
    expect_file_error(FIX("wrong_type.yaml"),
                      FIX("wrong_type.yaml") ":2:10: model.heads: expected an integer, got 'four'\n"
                      "  heads: four\n"
                      "         ^");
}

Test(config, out_of_range_values_are_all_reported) {
    expect_file_error(FIX("out_of_range.yaml"),
                      FIX("out_of_range.yaml") ":2:12: model.d_model: 0 is out of range; must be >= 1\n"
                      "  d_model: 0\n"
                      "           ^\n"
                      FIX("out_of_range.yaml") ":3:12: model.dropout: 1.5 is out of range; must be >= 0 and < 1\n"
                      "  dropout: 1.5\n"
                      "           ^\n"
                      FIX("out_of_range.yaml") ":4:19: model.layer_norm_eps: -1e-5 is out of range; must be > 0\n"
                      "  layer_norm_eps: -1e-5\n"
                      "                  ^");
}

Test(config, bad_enum_lists_the_allowed_values) {
    expect_file_error(FIX("bad_enum.yaml"),
                      FIX("bad_enum.yaml") ":2:9: model.norm: expected pre or post, got 'middle'\n"
                      "  norm: middle\n"
                      "        ^");
}

Test(config, cross_field_problem_is_reported_at_d_model) {
    expect_file_error(FIX("cross_field.yaml"),
                      FIX("cross_field.yaml") ":2:12: model.d_model: 100 is not divisible by model.heads (8)\n"
                      "  d_model: 100\n"
                      "           ^");
}

// Issue 14's overflowing config, and the bound itself: with one encoder and
// one decoder layer the layers hold 12 d^2 + 4 d f weights, exactly 2^32 for
// d = f = 16384 (12 * 2^28 + 4 * 2^28 = 2^32).
Test(config, layers_beyond_the_largest_model_are_refused) {
    expect_string_error("model:\n  d_model: 1239840486\n  heads: 2\n  ffn_dim: 58647\n"
                        "  encoder_layers: 1\n  decoder_layers: 1\n",
                        "t.yaml:2:12: model.d_model 1239840486, model.ffn_dim 58647, "
                        "model.encoder_layers 1 and model.decoder_layers 1 make more than "
                        "4294967296 weights (the most a model may have)\n"
                        "  d_model: 1239840486\n"
                        "           ^");
    s2s_config cfg;
    s2s_config_default(&cfg);
    const char *at_limit = "model: {d_model: 16384, heads: 2, ffn_dim: 16384, "
                           "encoder_layers: 1, decoder_layers: 1}\n";
    cr_assert_eq(s2s_config_load_string(&cfg, at_limit, "t.yaml", NULL), S2S_OK, "%s",
                 s2s_last_error());
    s2s_config_default(&cfg);
    const char *over = "model: {d_model: 16384, heads: 2, ffn_dim: 16386, "
                       "encoder_layers: 1, decoder_layers: 1}\n";
    cr_assert_eq(s2s_config_load_string(&cfg, over, "t.yaml", NULL), S2S_ERR_CONFIG);
}

Test(config, cross_field_problem_falls_back_to_heads_position) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg, "model:\n  heads: 3\n", "h.yaml", NULL),
                 S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "h.yaml:2:10: model.d_model: 512 is not divisible by model.heads (3)\n"
                                       "  heads: 3\n"
                                       "         ^");
}

Test(config, duplicate_key_is_reported_at_the_second_key) {
    expect_file_error(FIX("duplicate_key.yaml"),
                      FIX("duplicate_key.yaml") ":4:3: duplicate key 'heads' in 'model' (first given at line 2)\n"
                      "  heads: 8\n"
                      "  ^");
}

Test(config, missing_vocab_file_is_reported_at_the_value) {
    expect_file_error(FIX("missing_file.yaml"),
                      FIX("missing_file.yaml") ":3:8: vocab.tgt: cannot find '" FIX("no_such_vocab.txt")
                      "': No such file or directory\n"
                      "  tgt: no_such_vocab.txt\n"
                      "       ^");
}

Test(config, several_errors_are_collected_in_order) {
    const char *f = FIX("several_errors.yaml");
    char want[4096];
    snprintf(want, sizeof want,
             "%s:1:1: unknown section 'modle' (did you mean 'model'?)\n"
             "modle:\n"
             "^\n"
             "%s:4:10: model.heads: expected an integer, got '4.5'\n"
             "  heads: 4.5\n"
             "         ^\n"
             "%s:5:15: model.activation: expected relu or gelu, got 'swish'\n"
             "  activation: swish\n"
             "              ^\n"
             "%s:6:15: model.tie_output: expected true or false, got 'yes'\n"
             "  tie_output: yes\n"
             "              ^\n"
             "%s:7:19: model.encoder_layers: expected an integer, got a sequence\n"
             "  encoder_layers: [6]\n"
             "                  ^\n"
             "%s:8:11: model.dropout: expected a number, got nothing\n"
             "  dropout:\n"
             "          ^\n"
             "%s:9:9: section 'decode' must be a mapping of keys, got a scalar\n"
             "decode: 3\n"
             "        ^\n"
             "%s:12:3: duplicate key 'src' in 'vocab' (first given at line 11)\n"
             "  src: vocab_tgt.yaml\n"
             "  ^",
             f, f, f, f, f, f, f, f);
    expect_file_error(f, want);
}

Test(config, top_level_must_be_a_mapping) {
    expect_file_error(FIX("not_mapping.yaml"),
                      FIX("not_mapping.yaml") ":1:1: expected a mapping of sections (such as 'model:') at the top level, got a sequence\n"
                      "- model\n"
                      "^");
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg, "just text", "s.yaml", NULL), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "s.yaml:1:1: expected a mapping of sections (such as 'model:') at the top level, got a scalar\n"
                                       "just text\n"
                                       "^");
}

Test(config, section_must_be_a_mapping) {
    expect_file_error(FIX("section_scalar.yaml"),
                      FIX("section_scalar.yaml") ":1:8: section 'model' must be a mapping of keys, got a scalar\n"
                      "model: 512\n"
                      "       ^");
}

Test(config, smaller_problems) {
    struct { const char *text, *msg; } cases[] = {
        {"model:\n  heads: \"4\"\n",
         "q:2:10: model.heads: expected an integer, got the quoted string '4'\n  heads: \"4\"\n         ^"},
        {"model:\n  d_model: 99999999999\n",
         "q:2:12: model.d_model: 99999999999 does not fit in an int\n  d_model: 99999999999\n           ^"},
        {"model:\n  dropout: 1e99\n",
         "q:2:12: model.dropout: 1e99 does not fit in a float\n  dropout: 1e99\n           ^"},
        {"model:\n  dropout: .nan\n",
         "q:2:12: model.dropout: expected a number, got '.nan'\n  dropout: .nan\n           ^"},
        {"model:\n  d_model: 0x200\n",
         "q:2:12: model.d_model: expected an integer, got '0x200'\n  d_model: 0x200\n           ^"},
        {"model:\n  ? [a]\n  : 1\n",
         "q:2:5: expected a key name in 'model', got a sequence\n  ? [a]\n    ^"},
        {"modle: {}\nmodel: {}\nmodel: {}\n",
         "q:1:1: unknown section 'modle' (did you mean 'model'?)\nmodle: {}\n^\n"
         "q:3:1: duplicate section 'model' (first given at line 2)\nmodel: {}\n^"},
        {"model:\n  heads: 4\n---\nmodel:\n  heads: 2\n",
         "q:4:1: a config holds one YAML document; this is a second one\nmodel:\n^"},
        {"model:\n\theads: 4\n",
         "q:2:1: a tab character at column 1: YAML indents with spaces, not tabs\n\theads: 4\n^"},
        {"model:\n  heads: 4\n  \td_model: 8\n",
         "q:3:3: a tab character at column 3: YAML indents with spaces, not tabs\n  \td_model: 8\n  ^"},
        // libyaml notices a missing colon on the next line; the key is on this one.
        {"model:\n  heads: 4\n  d_model 8\n  layers: 2\n",
         "q:3:3: missing ':' after 'd_model 8' (a key needs ': ' before its value)\n  d_model 8\n  ^"},
        {"model:\n  heads: 4\n 猫: 2\n",
         "q:3:2: bad indentation: 1 space, which lines up with no key above (line 2 has 2)\n 猫: 2\n ^"},
        {"model:\n  heads: 4\n  heads: 5\n  heads: 6\n",
         "q:3:3: duplicate key 'heads' in 'model' (first given at line 2)\n  heads: 5\n  ^\n"
         "q:4:3: duplicate key 'heads' in 'model' (first given at line 2)\n  heads: 6\n  ^"},
        {"model: {heads: 3, d_model: 9}\n",
         "q:1:28: model.d_model: 9 must be even (sinusoidal positions come in sin/cos pairs)\n"
         "model: {heads: 3, d_model: 9}\n                           ^"},
        {"model:\n  heads: *nowhere\n",
         "q:2:10: found undefined alias\n  heads: *nowhere\n         ^"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s2s_config cfg;
        s2s_config_default(&cfg);
        cr_assert_eq(s2s_config_load_string(&cfg, cases[i].text, "q", NULL), S2S_ERR_CONFIG,
                     "%s", cases[i].text);
        cr_assert_str_eq(s2s_last_error(), cases[i].msg, "for input:\n%s", cases[i].text);
    }
}

Test(config, caret_counts_characters_and_keeps_tabs) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    // "é" is two bytes but one column and the tab stays a tab, so the caret
    // sits under 'x' whatever the terminal's tab width.
    cr_assert_eq(s2s_config_load_string(&cfg, "model: {\"é\": 1,\tx: 2}\n", "u.yaml", NULL),
                 S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(),
                     "u.yaml:1:9: unknown key 'é' in 'model'\n"
                     "model: {\"é\": 1,\tx: 2}\n"
                     "        ^\n"
                     "u.yaml:1:17: unknown key 'x' in 'model'\n"
                     "model: {\"é\": 1,\tx: 2}\n"
                     "               \t^");
}

Test(config, missing_config_file_is_an_io_error) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file(&cfg, FIX("no_such.yaml")), S2S_ERR_IO);
    cr_assert_str_eq(s2s_last_error(), FIX("no_such.yaml") ": cannot open: No such file or directory");
    cr_assert_eq(s2s_config_load_file(&cfg, DIR), S2S_ERR_IO, "a folder is not a config");
}

Test(config, invalid_utf8_is_a_config_error) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg, "model:\n  norm: pr\xff\n", "b.yaml", NULL),
                 S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "b.yaml:2:11: invalid leading UTF-8 octet (0xff)\n"
                                       "  norm: pr\xff\n"
                                       "          ^");
}

// ---- overrides and validation ----

// ---- comparing and paths ----

Test(config, equal_compares_every_key_and_ignores_padding) {
    // Padding bytes differ (0x00 vs 0xFF under the same values): still equal.
    s2s_config a, b;
    memset(&a, 0x00, sizeof a);
    memset(&b, 0xFF, sizeof b);
    s2s_config_default(&a);
    s2s_config_default(&b);
    memset(&b.model.tie_output, 1, 1);  // the bool itself stays valid
    unsigned char *pad = (unsigned char *)&b.model.tie_output + 1;
    if ((void *)pad < (void *)&b.model.max_len) *pad = 0x77;  // padding after the bool
    cr_assert(s2s_config_equal(&a, &b));
    // Any one leaf changed (to good.yaml's value) is a difference.
    s2s_config other;
    load_good(&other);
    for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
        const s2s_cfg_leaf *l = s2s_cfg_leaf_get(i);
        s2s_config one = with_leaf_of(&a, &other, l);
        cr_assert_not(s2s_config_equal(&a, &one), "%s", l->path);
        cr_assert_not(s2s_config_equal(&one, &a), "%s", l->path);
    }
}

Test(config, paths_are_joined_and_cleaned) {
    // Output paths need not exist, so any spelling can be tried.
    static const struct { const char *base, *written, *want; } cases[] = {
        {"/d", "out", "/d/out"},
        {"/d/", "./x/.././/y/./out", "/d/y/out"},
        {"/d/e/..", "o", "/d/o"},
        {"/d", "../../../o", "/o"},
        {"d", "../../o", "../o"},
        {"d/e", "../o", "d/o"},
        {"d", "..", "."},
        {"", "./a/b/../c", "a/c"},
        {"/d", "/abs//./p/../q", "/abs/q"},
        {"..", "x", "../x"},
        {"a/..", "../x", "../x"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "train:\n  output: \"%s\"\n", cases[i].written);
        s2s_config cfg;
        s2s_config_default(&cfg);
        cr_assert_eq(s2s_config_load_string(&cfg, text, "t.yaml", cases[i].base), S2S_OK, "%s",
                     s2s_last_error());
        cr_assert_str_eq(cfg.train.output, cases[i].want, "'%s' in '%s'", cases[i].written,
                         cases[i].base);
    }
    // "link/.." is not folded: it leads to the parent of the link's target.
    char dir[] = "/tmp/s2s_test_paths_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char target[300], link[300], want[300];
    snprintf(target, sizeof target, "%s/deep", dir);
    snprintf(link, sizeof link, "%s/lnk", dir);
    cr_assert_eq(mkdir(target, 0700), 0);
    cr_assert_eq(symlink("/tmp", link), 0);
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg, "train:\n  output: lnk/../deep/./o\n", "t.yaml", dir),
                 S2S_OK, "%s", s2s_last_error());
    snprintf(want, sizeof want, "%s/lnk/../deep/o", dir);
    cr_assert_str_eq(cfg.train.output, want);
    // A vocabulary spelled through ".." is found and stored cleaned.
    cr_assert_eq(s2s_config_load_string(&cfg, "vocab:\n  src: .././/vocab_src.yaml\n",
                                        "t.yaml", DIR "/base"), S2S_OK, "%s", s2s_last_error());
    cr_assert_str_eq(cfg.vocab.src, FIX("vocab_src.yaml"));
    unlink(link);
    rmdir(target);
    rmdir(dir);
}

Test(config, absolute_paths_join_the_working_directory) {
    char dir[] = "/tmp/s2s_test_abs_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char sub[300];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    cr_assert_eq(chdir(sub), 0);
    char cwd[300];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));  // /tmp may itself be a link
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_set(&cfg, "train.output=../o.safetensors"), S2S_OK);
    cr_assert_eq(s2s_config_set(&cfg, "train.log=/abs/./x.log"), S2S_OK);
    cr_assert_eq(s2s_config_absolute_paths(&cfg), S2S_OK, "%s", s2s_last_error());
    char want[400];
    snprintf(want, sizeof want, "%.*s/o.safetensors", (int)(strrchr(cwd, '/') - cwd), cwd);
    cr_assert_str_eq(cfg.train.output, want);
    cr_assert_str_eq(cfg.train.log, "/abs/x.log");
    cr_assert_str_eq(cfg.vocab.src, "", "unset paths stay unset");
    // Two spellings of one existing file are the same value for diff.
    s2s_config a, b;
    s2s_config_default(&a);
    s2s_config_default(&b);
    cr_assert_eq(s2s_config_set(&a, "vocab.src=" FIX("vocab_src.yaml")), S2S_OK);
    cr_assert_eq(s2s_config_set(&b, "vocab.src=" DIR "/base/../vocab_src.yaml"), S2S_OK);
    char linkp[300];
    snprintf(linkp, sizeof linkp, "%s/v.yaml", dir);
    cr_assert_eq(symlink(FIX("vocab_src.yaml"), linkp), 0);
    strcpy(b.vocab.src, linkp);
    cr_assert(s2s_config_equal(&a, &b), "a link to the same vocabulary");
    char *d;
    cr_assert_eq(s2s_config_diff(&a, &b, false, &d), S2S_OK);
    cr_assert_str_eq(d, "");
    free(d);
    unlink(linkp);
    cr_assert_eq(chdir("/"), 0);
    rmdir(sub);
    rmdir(dir);
}

Test(config, set_applies_checked_values) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_set(&cfg, "model.heads=4"), S2S_OK);
    cr_assert_eq(cfg.model.heads, 4);
    cr_assert_eq(s2s_config_set(&cfg, " model.norm = post "), S2S_OK);
    cr_assert_eq(cfg.model.norm, S2S_NORM_POST);
    cr_assert_eq(s2s_config_set(&cfg, "model.dropout=0"), S2S_OK);
    cr_assert_eq(cfg.model.dropout, 0.0f);
    cr_assert_eq(s2s_config_set(&cfg, "model.tie_output=false"), S2S_OK);
    cr_assert_eq(cfg.model.tie_output, false);
    cr_assert_eq(s2s_config_set(&cfg, "vocab.src=" FIX("vocab_src.yaml")), S2S_OK);
    cr_assert_str_eq(cfg.vocab.src, FIX("vocab_src.yaml"));
    cr_assert_eq(s2s_config_set(&cfg, "vocab.src="), S2S_OK, "an empty path unsets it");
    cr_assert_str_eq(cfg.vocab.src, "");
}

Test(config, set_rejects_bad_overrides_and_names_them) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    expect_set_error(&cfg, "model.hedas=4",
                     "--set model.hedas=4: unknown key 'hedas' in 'model' (did you mean 'heads'?)");
    expect_set_error(&cfg, "modle.heads=4",
                     "--set modle.heads=4: unknown section 'modle' (did you mean 'model'?)");
    expect_set_error(&cfg, "model.heads=four",
                     "--set model.heads=four: expected an integer, got 'four'");
    expect_set_error(&cfg, "model.dropout=1",
                     "--set model.dropout=1: 1 is out of range; must be >= 0 and < 1");
    expect_set_error(&cfg, "model.d_model=-512",
                     "--set model.d_model=-512: -512 is out of range; must be >= 1");
    expect_set_error(&cfg, "model.activation=tanh",
                     "--set model.activation=tanh: expected relu or gelu, got 'tanh'");
    expect_set_error(&cfg, "heads=4",
                     "--set heads=4: expected section.key=value (did you mean 'model.heads'?)");
    expect_set_error(&cfg, "model.heads", "--set model.heads: expected section.key=value");
    expect_set_error(&cfg, "vocab.src=/no/such/vocab.txt",
                     "--set vocab.src=/no/such/vocab.txt: cannot find '/no/such/vocab.txt': "
                     "No such file or directory");
    // Paths that do not fit the field are refused, not cut.
    char *longpath = malloc(S2S_PATH_MAX + 32);
    strcpy(longpath, "vocab.src=");
    memset(longpath + 10, 'a', S2S_PATH_MAX);
    longpath[10 + S2S_PATH_MAX] = '\0';
    cr_assert_eq(s2s_config_set(&cfg, longpath), S2S_ERR_CONFIG);
    cr_assert_not_null(strstr(s2s_last_error(), ": path is longer than 1023 bytes"));
    free(longpath);
}

Test(config, validate_checks_across_fields_and_ranges) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    cfg.model.d_model = 510;
    cfg.model.heads = 4;
    cr_assert_eq(s2s_config_validate(&cfg, "cli"), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "cli: model.d_model: 510 is not divisible by model.heads (4)");

    cfg.model.d_model = 511;
    cfg.model.heads = 1;
    cr_assert_eq(s2s_config_validate(&cfg, NULL), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(),
                     "config: model.d_model: 511 must be even (sinusoidal positions come in sin/cos pairs)");

    // Out-of-range fields are reported, and heads == 0 must not divide.
    s2s_config_default(&cfg);
    cfg.model.heads = 0;
    cfg.model.norm = (s2s_norm)7;
    cfg.model.dropout = NAN;
    cr_assert_eq(s2s_config_validate(&cfg, "m.s2s"), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(),
                     "m.s2s: model.heads: 0 is out of range; must be >= 1\n"
                     "m.s2s: model.norm: 7 is not a valid value (expected pre or post)\n"
                     "m.s2s: model.dropout: .nan is out of range; must be >= 0 and < 1");

    s2s_config_default(&cfg);
    cfg.model.d_model = 96;
    cfg.model.heads = 12;
    cr_assert_eq(s2s_config_validate(&cfg, "ok"), S2S_OK);
}

// ---- printing and the round trip ----

Test(config, to_yaml_spells_out_every_key_and_marks_defaults) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    char *y = s2s_config_to_yaml(&cfg);
    cr_assert_not_null(y);
    // A line per leaf and per table (sections and nested tables alike).
    cr_assert_eq(count_lines(y), s2s_cfg_n_leaves() + count_tables(&s2s_cfg_root));
    int defaults = 0;
    for (const char *p = y; (p = strstr(p, "  # default\n")); p++) defaults++;
    cr_assert_eq(defaults, s2s_cfg_n_leaves(), "every default value is marked:\n%s", y);
    free(y);

    cr_assert_eq(s2s_config_set(&cfg, "model.heads=4"), S2S_OK);
    cr_assert_eq(s2s_config_set(&cfg, "model.dropout=0.3"), S2S_OK);
    y = s2s_config_to_yaml(&cfg);
    cr_assert_not_null(strstr(y, "\n  heads: 4\n"), "%s", y);
    cr_assert_not_null(strstr(y, "\n  dropout: 0.3\n"), "%s", y);
    cr_assert_not_null(strstr(y, "\n  d_model: 512  # default\n"), "%s", y);
    cr_assert_not_null(strstr(y, "\n  layer_norm_eps: 1.0e-05  # default\n"), "%s", y);
    cr_assert_not_null(strstr(y, "\nvocab:\n  src: \"\"  # default\n"), "%s", y);
    cr_assert_eq(strncmp(y, "model:\n", 7), 0);
    free(y);
}

static void expect_round_trip(const s2s_config *cfg) {
    char *y = s2s_config_to_yaml(cfg);
    cr_assert_not_null(y);
    s2s_config back;
    memset(&back, 0x5A, sizeof back);
    s2s_config_default(&back);
    cr_assert_eq(s2s_config_load_string(&back, y, "roundtrip", NULL), S2S_OK, "%s\n%s",
                 s2s_last_error(), y);
    expect_same_config(cfg, &back, y);
    free(y);
}

Test(config, round_trip_through_yaml_is_exact) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file(&cfg, FIX("good.yaml")), S2S_OK);
    char *y = s2s_config_to_yaml(&cfg);
    s2s_config back;
    s2s_config_default(&back);
    cr_assert_eq(s2s_config_load_string(&back, y, "roundtrip", NULL), S2S_OK, "%s", s2s_last_error());
    expect_same_config(&cfg, &back, y);
    free(y);

    // Paths that need quoting, and floats with all 24 bits of mantissa.
    s2s_config_default(&cfg);
    strcpy(cfg.vocab.src, "dir: with #hash/\"quoted\" \\ and\ttab/ü.txt");
    strcpy(cfg.vocab.tgt, " leading space");
    cfg.model.layer_norm_eps = nextafterf(1e-5f, 1.0f);
    cfg.model.dropout = nextafterf(1.0f, 0.0f);
    expect_round_trip(&cfg);

    // Every float a few thousand random bit patterns in range can take.
    uint32_t state = 12345;
    for (int i = 0; i < 3000; i++) {
        state = state * 1664525u + 1013904223u;
        float f;
        uint32_t bits = state >> 2;  // below 0x40000000: positive, < 2
        memcpy(&f, &bits, sizeof f);
        if (!(f > 0 && f < 1) || !isnormal(f)) continue;
        cfg.model.dropout = f;
        cfg.model.layer_norm_eps = f;
        char *text = s2s_config_model_to_yaml(&cfg);
        s2s_config back2;
        s2s_config_default(&back2);
        cr_assert_eq(s2s_config_load_string(&back2, text, "f", NULL), S2S_OK, "%s", s2s_last_error());
        cr_assert_eq(memcmp(&back2.model.dropout, &f, sizeof f), 0, "%.9g -> %s", f, text);
        cr_assert_eq(memcmp(&back2.model.layer_norm_eps, &f, sizeof f), 0, "%.9g", f);
        free(text);
    }
}

Test(config, model_to_yaml_holds_only_model_and_decode) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file(&cfg, FIX("good.yaml")), S2S_OK);
    char *y = s2s_config_model_to_yaml(&cfg);
    cr_assert_not_null(y);
    cr_assert_eq(strncmp(y, "model:\n", 7), 0, "%s", y);
    cr_assert_not_null(strstr(y, "\ndecode:\n"), "%s", y);
    cr_assert_null(strstr(y, "vocab"), "%s", y);
    cr_assert_null(strstr(y, "\ntrain:"), "%s", y);
    cr_assert_null(strstr(y, "\ndata:"), "%s", y);
    int model_keys = 0, decode_keys = 0;
    for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
        model_keys += !strncmp(s2s_cfg_leaf_get(i)->path, "model.", 6);
        decode_keys += !strncmp(s2s_cfg_leaf_get(i)->path, "decode.", 7);
    }
    // A nested table (model.encoder_attention) is one more line, its name.
    const s2s_cfg_table *model = s2s_cfg_root.keys[s2s_cfg_find(&s2s_cfg_root, "model", 5)].sub;
    const s2s_cfg_table *decode =
        s2s_cfg_root.keys[s2s_cfg_find(&s2s_cfg_root, "decode", 6)].sub;
    cr_assert_eq(count_lines(y),
                 2 + model_keys + decode_keys + count_tables(model) + count_tables(decode), "%s",
                 y);
    s2s_config back;
    s2s_config_default(&back);
    cr_assert_eq(s2s_config_load_string(&back, y, "model file", NULL), S2S_OK, "%s", s2s_last_error());
    // model: and decode: came back; the other sections kept back's defaults.
    char *d = NULL;
    cr_assert_eq(s2s_config_diff(&cfg, &back, false, &d), S2S_OK);
    for (const char *line = d; *line; line = strchr(line, '\n') + 1)
        cr_assert(strncmp(line, "model.", 6) && strncmp(line, "decode.", 7), "%s", d);
    free(d);
    free(y);
}

// ---- hostile input ----

// Writes n bytes of text (a comment, then spaces) to a fresh temporary file.
static void write_sized(char *path, size_t n) {
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    char *text = malloc(n);
    memset(text, ' ', n);
    memcpy(text, "#", 1);
    cr_assert_eq(write(fd, text, n), (ssize_t)n);
    close(fd);
    free(text);
}

Test(config, inputs_over_one_mib_are_refused_naming_the_file, .timeout = 10) {
    s2s_config cfg;
    char at[] = "/tmp/s2s_test_limit_XXXXXX", over[] = "/tmp/s2s_test_limit_XXXXXX";
    write_sized(at, S2S_CONFIG_MAX_BYTES);
    write_sized(over, S2S_CONFIG_MAX_BYTES + 1);
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file(&cfg, at), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_config_load_file(&cfg, over), S2S_ERR_CONFIG);
    char want[128];
    snprintf(want, sizeof want, "%s: larger than 1048576 bytes (1 MiB), the limit for a config "
             "file", over);
    cr_assert_str_eq(s2s_last_error(), want);
    // An endless stream stops at the limit instead of reading forever.
    cr_assert_eq(s2s_config_load_file(&cfg, "/dev/zero"), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "/dev/zero: larger than 1048576 bytes (1 MiB), the limit "
                                       "for a config file");
    // A base: that is too big is reported at the base: value.
    char top[] = "/tmp/s2s_test_limit_XXXXXX";
    int fd = mkstemp(top);
    cr_assert_geq(fd, 0);
    dprintf(fd, "base: %s\n", over);
    close(fd);
    cr_assert_eq(s2s_config_load_file(&cfg, top), S2S_ERR_CONFIG);
    snprintf(want, sizeof want, "%s:1:7: base: '%s' is larger than 1048576 bytes, the limit for "
             "a config", top, over);
    cr_assert_eq(strncmp(s2s_last_error(), want, strlen(want)), 0, "%s", s2s_last_error());
    // Text handed in directly has the same bound.
    char *text = malloc(S2S_CONFIG_MAX_BYTES + 2);
    memset(text, '\n', S2S_CONFIG_MAX_BYTES + 1);
    text[S2S_CONFIG_MAX_BYTES + 1] = '\0';
    cr_assert_eq(s2s_config_load_string(&cfg, text, "s.yaml", NULL), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "s.yaml: larger than 1048576 bytes, the limit for a config");
    free(text);
    unlink(at);
    unlink(over);
    unlink(top);
}

Test(config, huge_inputs_stay_bounded) {
    s2s_config cfg;
    // Many lines before a good key (960 kB, under the 1 MiB limit).
    size_t n = 80000;
    char *text = malloc(n * 12 + 64);
    char *p = text;
    p += sprintf(p, "model:\n");
    for (size_t i = 0; i < n; i++) p += sprintf(p, "  # %07zu\n", i);
    sprintf(p, "  heads: 4\n");
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg, text, "big.yaml", NULL), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(cfg.model.heads, 4);

    // Thousands of problems: the first ones listed, the rest counted.
    p = text;
    p += sprintf(p, "model:\n");
    for (size_t i = 0; i < 50000; i++) p += sprintf(p, "  k%06zu: 1\n", i);
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg, text, "big.yaml", NULL), S2S_ERR_CONFIG);
    const char *msg = s2s_last_error();
    const char *first = "big.yaml:2:3: unknown key 'k000000' in 'model'\n";
    cr_assert_eq(strncmp(msg, first, strlen(first)), 0, "%s", msg);
    cr_assert_not_null(strstr(msg, "more problems not shown)"), "%s", msg);
    cr_assert_lt(strlen(msg), 2000);
    free(text);

    // One enormous line: the quoted source is a window around the caret.
    n = S2S_CONFIG_MAX_BYTES - 64;
    text = malloc(n + 64);
    p = text + sprintf(text, "model: {");
    memset(p, ' ', n);
    strcpy(p + n, "heads: four}\n");
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg, text, "wide.yaml", NULL), S2S_ERR_CONFIG);
    msg = s2s_last_error();
    char want[64];
    snprintf(want, sizeof want, "wide.yaml:1:%zu: model.heads: expected an integer", n + 16);
    cr_assert_eq(strncmp(msg, want, strlen(want)), 0, "%s", msg);
    cr_assert_not_null(strstr(msg, "heads: four}\n"), "%s", msg);
    cr_assert_lt(strlen(msg), 500);
    // The caret sits under 'f' in the windowed line.
    const char *line = strchr(msg, '\n') + 1;
    const char *caret = strchr(line, '\n') + 1;
    cr_assert_eq(line[strchr(caret, '^') - caret], 'f');
    free(text);

    // A long key is quoted cut short (libyaml refuses plain keys over 1024
    // characters, so a megabyte key is a syntax error, also kept short).
    size_t sizes[] = {1000, n};
    for (int i = 0; i < 2; i++) {
        text = malloc(sizes[i] + 64);
        p = text + sprintf(text, "model:\n  ");
        memset(p, 'x', sizes[i]);
        strcpy(p + sizes[i], ": 1\n");
        s2s_config_default(&cfg);
        cr_assert_eq(s2s_config_load_string(&cfg, text, "k.yaml", NULL), S2S_ERR_CONFIG);
        cr_assert_lt(strlen(s2s_last_error()), 500);
        if (i == 0)
            cr_assert_not_null(strstr(s2s_last_error(), "xxx...' in 'model'\n"), "%s",
                               s2s_last_error());
        free(text);
    }
}

Test(config, deep_nesting_and_recursive_aliases_do_not_crash) {
    size_t n = 100000;
    char *text = malloc(2 * n + 32);
    char *p = text + sprintf(text, "model:\n  heads: ");
    memset(p, '[', n);
    memset(p + n, ']', n);
    p[2 * n] = '\0';
    s2s_config cfg;
    s2s_config_default(&cfg);
    s2s_status st = s2s_config_load_string(&cfg, text, "deep.yaml", NULL);
    cr_assert_eq(st, S2S_ERR_CONFIG);
    // The line is shown as "..." + 160 bytes around the caret + "...".
    char want[512];
    p = want + sprintf(want, "deep.yaml:2:110: brackets nested more than 100 deep\n...");
    memset(p, '[', 160);
    p += sprintf(p + 160, "...\n") + 160;
    memset(p, ' ', 3 + 80);
    strcpy(p + 83, "^");
    cr_assert_str_eq(s2s_last_error(), want);
    free(text);
    // Shallow nesting (and brackets closed again) is fine.
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg, "model: {heads: 4}\ndecode: {beam_size: 2}\n",
                                        "flow.yaml", NULL), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(cfg.decode.beam_size, 2);

    const char *recursive[] = {"model: &a\n  heads: *a\n", "&a [*a]\n", "model: &m {x: *m}\n",
                               "*a\n", "&a model: &b\n  *a : *b\n"};
    for (size_t i = 0; i < sizeof recursive / sizeof recursive[0]; i++) {
        s2s_config_default(&cfg);
        st = s2s_config_load_string(&cfg, recursive[i], "r.yaml", NULL);
        cr_assert_eq(st, S2S_ERR_CONFIG, "%s", recursive[i]);
        cr_assert_eq(strncmp(s2s_last_error(), "r.yaml:", 7), 0, "%s", s2s_last_error());
    }
}

// Loads text, which must give OK (and then a valid config) or a config
// error with a message naming the file.
static void expect_ok_or_config_error(const char *text) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    s2s_status st = s2s_config_load_string(&cfg, text, "fuzz.yaml", DIR);
    cr_assert(st == S2S_OK || st == S2S_ERR_CONFIG, "status %d for:\n%s", st, text);
    if (st == S2S_OK) {
        cr_assert_eq(s2s_config_validate(&cfg, "fuzz"), S2S_OK, "%s\nfor:\n%s",
                     s2s_last_error(), text);
    } else {
        cr_assert_eq(strncmp(s2s_last_error(), "fuzz.yaml", 9), 0, "%s", s2s_last_error());
    }
}

Test(config, every_truncation_and_garbling_of_good_yaml_is_handled) {
    size_t len;
    char *good = read_all(FIX("good.yaml"), &len);
    char *buf = malloc(len + 2);
    int oks = 0;
    for (size_t n = 0; n <= len; n++) {
        memcpy(buf, good, n);
        buf[n] = '\0';
        s2s_config cfg;
        s2s_config_default(&cfg);
        s2s_status st = s2s_config_load_string(&cfg, buf, "fuzz.yaml", DIR);
        oks += st == S2S_OK;
        expect_ok_or_config_error(buf);
    }
    cr_assert_gt(oks, 0, "at least the whole file loads");

    const char garble[] = {':', '-', '[', ']', '{', '}', '&', '*', '!', '"', '\'', '\t', '\n',
                           ' ', '#', '|', '>', '%', '@', '\\', ',', '?', '9', 'x', (char)0x80,
                           (char)0xff, (char)0xc3};
    for (size_t i = 0; i < len; i++) {
        for (size_t g = 0; g < sizeof garble; g++) {
            memcpy(buf, good, len + 1);
            buf[i] = garble[g];
            expect_ok_or_config_error(buf);
        }
        // Drop byte i; insert a byte at i.
        memcpy(buf, good, i);
        memcpy(buf + i, good + i + 1, len - i);
        expect_ok_or_config_error(buf);
        memcpy(buf, good, i);
        buf[i] = ':';
        memcpy(buf + i + 1, good + i, len - i + 1);
        expect_ok_or_config_error(buf);
    }
    free(buf);
    free(good);
}

// ---- base: inheritance and override precedence ----

Test(config, base_chain_is_read_first_and_overridden_by_the_file) {
    // grand.yaml < base/parent.yaml < inherit_child.yaml, each a base of
    // the next; the child's base: stands last in it but is read first.
    s2s_config cfg, want;
    s2s_config_default(&want);
    want.model.heads = 8;             // grand 2, parent 4, child 8
    want.model.d_model = 128;         // parent
    want.model.encoder_layers = 3;    // grand
    want.model.decoder_layers = 3;    // grand
    want.decode.max_len = 40;         // grand
    want.decode.beam_size = 3;        // parent
    // Each file's paths are relative to its own folder.
    // ("base/../vocab_src.yaml", cleaned)
    strcpy(want.vocab.src, FIX("vocab_src.yaml"));
    strcpy(want.vocab.tgt, FIX("vocab_tgt.yaml"));
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file(&cfg, FIX("inherit_child.yaml")), S2S_OK, "%s",
                 s2s_last_error());
    expect_same_config(&cfg, &want, "inherit_child.yaml");
}

Test(config, precedence_is_base_then_file_then_set) {
    const char *sets[] = {"model.heads=16", "decode.beam_size=5"};
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file_set(&cfg, FIX("inherit_child.yaml"), sets, 2), S2S_OK,
                 "%s", s2s_last_error());
    cr_assert_eq(cfg.model.heads, 16, "--set beats the file (8) and its bases (4, 2)");
    cr_assert_eq(cfg.decode.beam_size, 5, "--set beats the base (3)");
    cr_assert_eq(cfg.model.d_model, 128, "untouched by --set: from the base");
    cr_assert_eq(cfg.decode.max_len, 40);
    // The same through s2s_config_set after loading.
    s2s_config again;
    s2s_config_default(&again);
    cr_assert_eq(s2s_config_load_file(&again, FIX("inherit_child.yaml")), S2S_OK);
    for (int i = 0; i < 2; i++) cr_assert_eq(s2s_config_set(&again, sets[i]), S2S_OK);
    expect_same_config(&cfg, &again, "--set after loading");
    // Later overrides win over earlier ones.
    const char *twice[] = {"model.heads=16", "model.heads=32"};
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file_set(&cfg, FIX("inherit_child.yaml"), twice, 2), S2S_OK);
    cr_assert_eq(cfg.model.heads, 32);
}

Test(config, cross_field_checks_wait_for_the_whole_chain_and_overrides) {
    s2s_config cfg;
    // base/cross.yaml alone is invalid; a file based on it can fix it.
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file(&cfg, DIR "/base/cross.yaml"), S2S_ERR_CONFIG);
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg, "base: base/cross.yaml\nmodel:\n  heads: 4\n",
                                        "fix.yaml", DIR), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(cfg.model.d_model, 100);
    // An override can fix the file too...
    const char *fix[] = {"model.heads=4"};
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file_set(&cfg, FIX("cross_field.yaml"), fix, 1), S2S_OK, "%s",
                 s2s_last_error());
    // ...and a problem left in a base is shown at the base's line.
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg, "base: base/cross.yaml\nmodel:\n  heads: 3\n",
                                        "odd.yaml", DIR), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(),
                     DIR "/base/cross.yaml:3:12: model.d_model: 100 is not divisible by model.heads (3)\n"
                     "  d_model: 100\n"
                     "           ^");
    // Once an override sets d_model, the file's line for heads is the one
    // to show; with both overridden, no line explains the values.
    const char *odd[] = {"model.d_model=90", "model.heads=4"};
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file_set(&cfg, FIX("inherit_child.yaml"), odd, 1),
                 S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), FIX("inherit_child.yaml")
                     ":2:10: model.d_model: 90 is not divisible by model.heads (8)\n"
                     "  heads: 8\n"
                     "         ^");
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file_set(&cfg, FIX("inherit_child.yaml"), odd, 2),
                 S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), FIX("inherit_child.yaml")
                     ": model.d_model: 90 is not divisible by model.heads (4)");
}

Test(config, set_problems_are_listed_with_the_files) {
    const char *sets[] = {"model.heads=four", "model.hedas=4", "decode.beam_size=2"};
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file_set(&cfg, FIX("bad_enum.yaml"), sets, 3), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(),
                     FIX("bad_enum.yaml") ":2:9: model.norm: expected pre or post, got 'middle'\n"
                     "  norm: middle\n"
                     "        ^\n"
                     "--set model.heads=four: expected an integer, got 'four'\n"
                     "--set model.hedas=4: unknown key 'hedas' in 'model' (did you mean 'heads'?)");
}

Test(config, base_cycles_are_reported_at_the_base_that_closes_them) {
    expect_file_error(FIX("cycle_a.yaml"),
                      FIX("cycle_b.yaml") ":3:7: base: the bases form a cycle: "
                      FIX("cycle_a.yaml") " -> " FIX("cycle_b.yaml") " -> " FIX("cycle_a.yaml") "\n"
                      "base: cycle_a.yaml\n"
                      "      ^");
    // Entering the cycle from the other file names the chain from there;
    // "./" does not hide that it is the same file.
    expect_file_error(FIX("cycle_b.yaml"),
                      FIX("cycle_a.yaml") ":1:7: base: the bases form a cycle: "
                      FIX("cycle_b.yaml") " -> " FIX("cycle_a.yaml") " -> " FIX("cycle_b.yaml") "\n"
                      "base: cycle_b.yaml\n"
                      "      ^");
    expect_file_error(FIX("cycle_self.yaml"),
                      FIX("cycle_self.yaml") ":1:7: base: the bases form a cycle: "
                      FIX("cycle_self.yaml") " -> " DIR "/./cycle_self.yaml\n"
                      "base: ./cycle_self.yaml\n"
                      "      ^");
}

Test(config, base_problems_are_reported_where_they_are) {
    expect_file_error(FIX("base_missing.yaml"),
                      FIX("base_missing.yaml") ":3:7: base: cannot open '" FIX("no_such_base.yaml")
                      "': No such file or directory\n"
                      "base: no_such_base.yaml\n"
                      "      ^");
    // Problems in the base and in the file, in the order they are read.
    expect_file_error(FIX("base_errors.yaml"),
                      DIR "/base/bad.yaml:2:3: unknown key 'hedas' in 'model' (did you mean 'heads'?)\n"
                      "  hedas: 4\n"
                      "  ^\n"
                      FIX("base_errors.yaml") ":3:9: model.norm: expected pre or post, got 'middle'\n"
                      "  norm: middle\n"
                      "        ^");
    struct { const char *text, *msg; } cases[] = {
        {"base: good.yaml\nbase: good.yaml\n",
         "b.yaml:2:1: duplicate key 'base' (first given at line 1)\nbase: good.yaml\n^"},
        {"base: [good.yaml]\n",
         "b.yaml:1:7: base: expected the path of a config file, got a sequence\nbase: [good.yaml]\n      ^"},
        {"base:\nmodel: {}\n",
         "b.yaml:1:6: base: expected the path of a config file, got nothing\nbase:\n     ^"},
        {"base: base\n",
         "b.yaml:1:7: base: '" DIR "/base' is a folder, not a file\nbase: base\n      ^"},
        {"base: /dev/zero\n",
         "b.yaml:1:7: base: '/dev/zero' is not a regular file\nbase: /dev/zero\n      ^"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s2s_config cfg;
        s2s_config_default(&cfg);
        cr_assert_eq(s2s_config_load_string(&cfg, cases[i].text, "b.yaml", DIR), S2S_ERR_CONFIG,
                     "%s", cases[i].text);
        cr_assert_str_eq(s2s_last_error(), cases[i].msg, "for input:\n%s", cases[i].text);
    }
    // Text read from a model file has no folder: base: is refused there.
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_string(&cfg, "base: " FIX("good.yaml") "\n", "m", NULL),
                 S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(),
                     "m:1:7: base: not allowed here: this config is not read from a file\n"
                     "base: " FIX("good.yaml") "\n"
                     "      ^");
}

Test(config, long_base_chains_stop_at_a_limit) {
    char dir[] = "/tmp/s2s_config_chain_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    enum { N = 40 };
    char path[N][128];
    for (int i = 0; i < N; i++) {
        snprintf(path[i], sizeof path[i], "%s/c%02d.yaml", dir, i);
        FILE *f = fopen(path[i], "w");
        cr_assert_not_null(f);
        if (i + 1 < N) fprintf(f, "base: c%02d.yaml\n", i + 1);
        else fprintf(f, "model:\n  heads: 2\n");
        fclose(f);
    }
    s2s_config cfg;
    // 32 links are fine...
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file(&cfg, path[N - 1 - 32]), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(cfg.model.heads, 2);
    // ...the 33rd is refused at the base: of the 32nd file down.
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file(&cfg, path[N - 1 - 33]), S2S_ERR_CONFIG);
    char want[256];
    snprintf(want, sizeof want, "%s:1:7: base: more than 32 levels of base files\n", path[N - 2]);
    cr_assert_eq(strncmp(s2s_last_error(), want, strlen(want)), 0, "%s", s2s_last_error());
    for (int i = 0; i < N; i++) remove(path[i]);
    rmdir(dir);
}

// ---- diff and architecture checks ----

Test(config, diff_lists_changed_keys_in_schema_order) {
    s2s_config a, b;
    s2s_config_default(&a);
    s2s_config_default(&b);
    char *text = NULL;
    cr_assert_eq(s2s_config_diff(&a, &b, false, &text), S2S_OK);
    cr_assert_str_eq(text, "", "equal configs have no diff");
    free(text);

    b.decode.beam_size = 4;
    b.model.d_model = 128;
    b.model.norm = S2S_NORM_POST;
    b.model.dropout = 0.25f;
    strcpy(b.vocab.src, "v/zh.txt");
    cr_assert_eq(s2s_config_diff(&a, &b, false, &text), S2S_OK);
    cr_assert_str_eq(text, "model.d_model: 512 -> 128\n"
                           "model.norm: pre -> post\n"
                           "model.dropout: 0.1 -> 0.25\n"
                           "vocab.src: \"\" -> \"v/zh.txt\"\n"
                           "decode.beam_size: 1 -> 4\n");
    free(text);
    cr_assert_eq(s2s_config_diff(&a, &b, /*model_only=*/true, &text), S2S_OK);
    cr_assert_str_eq(text, "model.d_model: 512 -> 128\n"
                           "model.norm: pre -> post\n"
                           "model.dropout: 0.1 -> 0.25\n");
    free(text);

    // Property: every key differing on its own gives exactly its own line.
    s2s_config other;
    load_good(&other);
    for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
        const s2s_cfg_leaf *l = s2s_cfg_leaf_get(i);
        s2s_config one = with_leaf_of(&a, &other, l);
        cr_assert_eq(s2s_config_diff(&a, &one, false, &text), S2S_OK);
        cr_assert_eq(count_lines(text), 1, "%s: %s", l->path, text);
        cr_assert_eq(strncmp(text, l->path, strlen(l->path)), 0, "%s", text);
        cr_assert_eq(text[strlen(l->path)], ':', "%s", text);
        free(text);
    }
}

Test(config, same_arch_ignores_dropout_and_other_sections) {
    s2s_config a, b;
    s2s_config_default(&a);
    b = a;
    b.model.dropout = 0.3f;
    b.decode.beam_size = 5;
    b.decode.max_len = 7;
    strcpy(b.vocab.tgt, "elsewhere.txt");
    cr_assert(s2s_config_same_arch(&a, &b));
    cr_assert_eq(s2s_config_check_arch(&a, "m.safetensors", &b, "c.yaml"), S2S_OK);
    // Every other model key is architecture.
    s2s_config other;
    load_good(&other);
    for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
        const s2s_cfg_leaf *l = s2s_cfg_leaf_get(i);
        if (strncmp(l->path, "model.", 6) != 0) continue;
        s2s_config one = with_leaf_of(&a, &other, l);
        bool arch = strcmp(l->path, "model.dropout") != 0 &&
                    strcmp(l->path, "model.attention_dropout") != 0;
        cr_assert_eq(s2s_config_same_arch(&a, &one), !arch, "%s", l->path);
    }

    b.model.d_model = 64;
    b.model.heads = 4;
    b.model.norm = S2S_NORM_POST;
    cr_assert_not(s2s_config_same_arch(&a, &b));
    cr_assert_eq(s2s_config_check_arch(&a, "m.safetensors", &b, "c.yaml"), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(),
                     "m.safetensors: the model's architecture differs from c.yaml:\n"
                     "  model.d_model: 512 in the model, 64 in the config\n"
                     "  model.heads: 8 in the model, 4 in the config\n"
                     "  model.norm: pre in the model, post in the config");
}

// ---- shipped configs ----

// Calls fn on each configs/*.yaml (path, name); returns how many.
static int each_shipped_config(void (*fn)(const char *path, const char *name)) {
    glob_t g;
    int rc = glob(S2S_SOURCE_DIR "/configs/*.yaml", 0, NULL, &g);
    cr_assert(rc == 0 || rc == GLOB_NOMATCH);
    int n = rc == 0 ? (int)g.gl_pathc : 0;
    for (int i = 0; i < n; i++) fn(g.gl_pathv[i], strrchr(g.gl_pathv[i], '/') + 1);
    if (rc == 0) globfree(&g);
    return n;
}

static void check_shipped(const char *path, const char *name) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file(&cfg, path), S2S_OK, "%s", s2s_last_error());
    // Every key (any line that is not blank, a comment or a section
    // header) explains itself in a comment.
    char *text = read_all(path, NULL);
    int line = 0;
    for (char *p = text; *p;) {
        char *end = strchr(p, '\n');
        if (!end) end = p + strlen(p);
        line++;
        char *s = p, *e = end;
        while (s < e && (*s == ' ' || *s == '\t')) s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) e--;
        bool skip = s == e || *s == '#' || e[-1] == ':';
        if (!skip) {
            bool commented = false;
            for (char *q = s; q + 1 < e; q++) commented |= q[0] == ' ' && q[1] == '#';
            cr_assert(commented, "configs/%s:%d: a key without a comment", name, line);
        }
        p = *end ? end + 1 : end;
    }
    free(text);
    // configs/README.md lists it.
    char *readme = read_all(S2S_SOURCE_DIR "/configs/README.md", NULL);
    char needle[300];
    snprintf(needle, sizeof needle, "`%s`", name);
    cr_assert_not_null(strstr(readme, needle), "configs/README.md does not list %s", needle);
    free(readme);
}

Test(config, shipped_configs_load_are_commented_and_listed) {
    cr_assert_geq(each_shipped_config(check_shipped), 1);
}

// Loads text as a config of the configs/ folder: OK (then valid) or a
// config error naming the file, and never a crash (ASan builds check the
// rest).
static void expect_handled(const char *text) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    s2s_status st = s2s_config_load_string(&cfg, text, "fuzz.yaml", S2S_SOURCE_DIR "/configs");
    cr_assert(st == S2S_OK || st == S2S_ERR_CONFIG, "status %d for:\n%s", st, text);
    if (st == S2S_OK)
        cr_assert_eq(s2s_config_validate(&cfg, "fuzz"), S2S_OK, "%s\nfor:\n%s",
                     s2s_last_error(), text);
    else
        cr_assert_eq(strncmp(s2s_last_error(), "fuzz.yaml", 9), 0, "%s", s2s_last_error());
}

static void fuzz_shipped(const char *path, const char *name) {
    size_t len;
    char *good = read_all(path, &len);
    char *buf = malloc(len + 2);
    // Every truncation.
    for (size_t n = 0; n <= len; n++) {
        memcpy(buf, good, n);
        buf[n] = '\0';
        expect_handled(buf);
    }
    // At every byte: a few YAML-significant or invalid bytes in its place
    // (chosen by a fixed generator, so failures repeat), and the byte dropped.
    const char garble[] = {':', '-', '[', '{', '&', '*', '"', '\t', '\n', ' ', '#', '|',
                           '9', 'x', (char)0x80, (char)0xff};
    uint32_t state = 2024;
    size_t stride = len / 1500 + 1;  // bounds the time a long config takes
    for (size_t i = 0; i < len; i += stride) {
        for (int r = 0; r < 3; r++) {
            state = state * 1664525u + 1013904223u;
            memcpy(buf, good, len + 1);
            buf[i] = garble[(state >> 16) % sizeof garble];
            expect_handled(buf);
        }
        memcpy(buf, good, i);
        memcpy(buf + i, good + i + 1, len - i);
        expect_handled(buf);
    }
    // Whole lines swapped with the next one, and duplicated.
    for (size_t i = 0; i < len; i++) {
        if (i > 0 && good[i - 1] != '\n') continue;
        const char *nl = memchr(good + i, '\n', len - i);
        if (!nl) break;
        size_t a = (size_t)(nl - (good + i)) + 1;  // this line with its '\n'
        const char *nl2 = memchr(nl + 1, '\n', len - (i + a));
        size_t b = nl2 ? (size_t)(nl2 - nl) : len - (i + a);
        char *sw = malloc(len + a + 1);
        memcpy(sw, good, i);
        memcpy(sw + i, good + i + a, b);
        memcpy(sw + i + b, good + i, a);
        memcpy(sw + i + a + b, good + i + a + b, len - i - a - b + 1);
        expect_handled(sw);
        memcpy(sw, good, i + a);
        memcpy(sw + i + a, good + i, len - i + 1);
        expect_handled(sw);
        free(sw);
    }
    (void)name;
    free(buf);
    free(good);
}

Test(config, truncated_and_garbled_shipped_configs_are_handled) {
    cr_assert_geq(each_shipped_config(fuzz_shipped), 1);
}

// ---- the JSON Schema, init and explain ----

// The schema object of leaf path ("train.guided_alignment.layer"), checking
// on the way that every table it passes through is a closed object.
static json_t *schema_of(json_t *root, const char *path) {
    json_t *s = root;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *save = NULL, *name = strtok_r(buf, ".", &save); name;
         name = strtok_r(NULL, ".", &save)) {
        cr_assert(json_is_false(json_object_get(s, "additionalProperties")),
                  "%s: a table on the way is not closed", path);
        s = json_object_get(json_object_get(s, "properties"), name);
        cr_assert_not_null(s, "%s: '%s' is not in the schema", path, name);
    }
    return s;
}

// A JSON scalar as the text --set reads as that value.
static void json_to_text(char *out, size_t n, const json_t *j) {
    if (json_is_integer(j)) snprintf(out, n, "%lld", (long long)json_integer_value(j));
    else if (json_is_real(j)) snprintf(out, n, "%.9g", json_real_value(j));
    else if (json_is_string(j)) snprintf(out, n, "%s", json_string_value(j));
    else if (json_is_boolean(j)) snprintf(out, n, "%s", json_is_true(j) ? "true" : "false");
    else cr_assert_fail("unexpected JSON value");
}

// The loader's verdict on path=value (as --set gives it), into *cfg.
static bool set_into(s2s_config *cfg, const char *path, const char *value) {
    char a[2200];
    snprintf(a, sizeof a, "%s=%s", path, value);
    return s2s_config_set(cfg, a) == S2S_OK;
}

static bool set_ok(const char *path, const char *value) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    return set_into(&cfg, path, value);
}

Test(config, json_schema_has_every_key_with_what_the_loader_takes) {
    char *text = s2s_config_json_schema();
    cr_assert_not_null(text);
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    cr_assert_not_null(root, "the schema is not JSON: %s at line %d", err.text, err.line);
    cr_assert_str_eq(json_string_value(json_object_get(root, "$schema")),
                     "https://json-schema.org/draft/2020-12/schema");
    json_t *props = json_object_get(root, "properties");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(props, "base"), "type")),
                     "string");
    cr_assert_eq(json_object_size(props), (size_t)s2s_cfg_root.n_keys + 1, "sections and base");
    // The rules JSON Schema cannot express are named in its description.
    const char *desc = json_string_value(json_object_get(root, "description"));
    for (int r = 0; r < s2s_cfg_n_rules; r++)
        cr_assert_not_null(strstr(desc, s2s_cfg_rules[r].doc));
    s2s_config def;
    s2s_config_default(&def);
    static const struct { s2s_cfg_type t; const char *json; } types[] = {
        {S2S_CFG_INT, "integer"}, {S2S_CFG_FLOAT, "number"}, {S2S_CFG_BOOL, "boolean"},
        {S2S_CFG_ENUM, "string"}, {S2S_CFG_FLOAT_PAIR, "array"},
        {S2S_CFG_INDEX_LIST, "array"}};
    for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
        const s2s_cfg_leaf *l = s2s_cfg_leaf_get(i);
        const s2s_cfg_key *k = l->key;
        json_t *s = schema_of(root, l->path);
        cr_assert_str_eq(json_string_value(json_object_get(s, "description")), k->help, "%s",
                         l->path);
        json_t *type = json_object_get(s, "type");
        if (k->type == S2S_CFG_PATH || k->type == S2S_CFG_STRING) {
            cr_assert_str_eq(json_string_value(json_array_get(type, 0)), "string", "%s", l->path);
            cr_assert_null(json_object_get(s, "default"), "%s: an unset path has no default",
                           l->path);
            // maxLength: the longest name the loader takes (an output
            // need not exist; an input path would have to).
            char name[2048];
            size_t max = (size_t)json_integer_value(json_object_get(s, "maxLength"));
            cr_assert(max + 2 < sizeof name, "%s", l->path);
            memset(name, 'x', max + 1);
            name[max] = '\0';
            if (k->flags & S2S_CFG_OUTPUT) cr_assert(set_ok(l->path, name), "%s", l->path);
            name[max] = 'x';
            name[max + 1] = '\0';
            cr_assert(!set_ok(l->path, name), "%s: longer than maxLength", l->path);
            continue;
        }
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
            if (types[t].t == k->type)
                cr_assert_str_eq(json_string_value(type), types[t].json, "%s", l->path);
        // The default, given as a value, is read as the loader's default.
        json_t *d = json_object_get(s, "default");
        cr_assert_not_null(d, "%s has no default", l->path);
        char value[160];
        if (json_is_array(d)) {
            // "[a, b]", or "[]" for an empty index list.
            size_t at = (size_t)snprintf(value, sizeof value, "[");
            for (size_t j = 0; j < json_array_size(d); j++) {
                char a[64];
                json_to_text(a, sizeof a, json_array_get(d, j));
                at += (size_t)snprintf(value + at, sizeof value - at, "%s%s", j ? ", " : "", a);
            }
            snprintf(value + at, sizeof value - at, "]");
        } else {
            json_to_text(value, sizeof value, d);
        }
        s2s_config cfg;
        s2s_config_default(&cfg);
        memset(s2s_cfg_field(&cfg, l), 0x55, k->size);  // so the default must be written
        cr_assert(set_into(&cfg, l->path, value), "%s=%s: %s", l->path, value, s2s_last_error());
        cr_assert(s2s_cfg_ops_of(k)->equal(k, s2s_cfg_field_const(&cfg, l),
                                           s2s_cfg_field_const(&def, l)),
                  "%s: the schema's default %s is not the loader's", l->path, value);
        if (k->type == S2S_CFG_ENUM) {
            // The names, in order; each one loads.
            json_t *e = json_object_get(s, "enum");
            int j = 0;
            for (; k->names[j]; j++) {
                cr_assert_str_eq(json_string_value(json_array_get(e, (size_t)j)), k->names[j]);
                cr_assert(set_ok(l->path, k->names[j]));
            }
            cr_assert_eq(json_array_size(e), (size_t)j, "%s", l->path);
            continue;
        }
        if (k->type == S2S_CFG_BOOL) continue;
        if (k->type == S2S_CFG_INDEX_LIST) {
            // Distinct entries, at most S2S_MAX_INDICES: as the loader.
            cr_assert(json_is_true(json_object_get(s, "uniqueItems")), "%s", l->path);
            cr_assert_eq(json_integer_value(json_object_get(s, "maxItems")), S2S_MAX_INDICES,
                         "%s", l->path);
            cr_assert(set_ok(l->path, "[1, 0]"), "%s", l->path);
            cr_assert(!set_ok(l->path, "[1, 1]"), "%s: uniqueItems", l->path);
        }
        // Bounds: the loader takes an inclusive bound and refuses an
        // exclusive one and whatever lies beyond either (each entry of a
        // list: a pair's two, an index list's one).
        json_t *num = json_is_array(d) ? json_object_get(s, "items") : s;
        const char *list_fmt = k->type == S2S_CFG_FLOAT_PAIR ? "[%s, %s]" : "[%s]";
        static const char *const names[] = {"minimum", "exclusiveMinimum", "maximum",
                                            "exclusiveMaximum"};
        int found = 0;
        for (int b = 0; b < 4; b++) {
            json_t *v = json_object_get(num, names[b]);
            if (!v) continue;
            found++;
            bool integer = json_is_integer(v);
            double x = json_number_value(v), step = integer ? 1 : fabs(x) * 1e-3 + 0.25;
            char at[64], past[64], at2[140], past2[140];
            json_to_text(at, sizeof at, v);
            snprintf(past, sizeof past, integer ? "%.0f" : "%.9g", b < 2 ? x - step : x + step);
            snprintf(at2, sizeof at2, json_is_array(d) ? list_fmt : "%s", at, at);
            snprintf(past2, sizeof past2, json_is_array(d) ? list_fmt : "%s", past, past);
            cr_assert_eq(set_ok(l->path, at2), b % 2 == 0, "%s=%s", l->path, at2);
            cr_assert(!set_ok(l->path, past2), "%s=%s is beyond the schema's %s", l->path, past2,
                      names[b]);
        }
        cr_assert_eq(found, 2, "%s: a lower and an upper bound", l->path);
    }
    json_decref(root);
    free(text);
}

// configs/<name>.yaml, whose shape the preset of that name is.
Test(config, presets_are_the_shipped_configs_without_paths) {
    static const char *const names[] = {"demo", "zh-en", "bench"};
    for (int p = 0; p < 3; p++) {
        s2s_config preset, shipped;
        cr_assert_eq(s2s_config_preset(&preset, names[p]), S2S_OK, "%s", s2s_last_error());
        char path[256];
        snprintf(path, sizeof path, S2S_SOURCE_DIR "/configs/%s.yaml", names[p]);
        s2s_config_default(&shipped);
        cr_assert_eq(s2s_config_load_file(&shipped, path), S2S_OK, "%s", s2s_last_error());
        for (int i = 0; i < s2s_cfg_n_leaves(); i++) {
            const s2s_cfg_leaf *l = s2s_cfg_leaf_get(i);
            const s2s_cfg_key *k = l->key;
            if (k->type == S2S_CFG_PATH || (k->flags & S2S_CFG_OUTPUT)) {
                cr_assert_eq(*(const char *)s2s_cfg_field_const(&preset, l), '\0', "%s", l->path);
                continue;
            }
            cr_assert(s2s_cfg_ops_of(k)->equal(k, s2s_cfg_field_const(&preset, l),
                                               s2s_cfg_field_const(&shipped, l)),
                      "preset %s differs from %s at %s", names[p], path, l->path);
        }
    }
    s2s_config cfg;
    cr_assert_eq(s2s_config_preset(&cfg, "big"), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(),
                     "unknown preset 'big' (the presets are demo, zh-en and bench)");
}

Test(config, commented_yaml_loads_back_with_a_comment_on_every_key) {
    static const char *const names[] = {"demo", "zh-en", "bench", NULL};
    for (int p = 0; p < 4; p++) {
        s2s_config cfg, back;
        if (names[p]) cr_assert_eq(s2s_config_preset(&cfg, names[p]), S2S_OK);
        else s2s_config_default(&cfg);
        char *text = s2s_config_to_commented_yaml(&cfg, "A header that is long enough to be "
                                                  "wrapped onto a second line of comment, "
                                                  "which it is once it passes 78 columns.");
        cr_assert_not_null(text);
        s2s_config_default(&back);
        back.model.d_model = 2;  // every value must come from the text
        cr_assert_eq(s2s_config_load_string(&back, text, "init.yaml", NULL), S2S_OK, "%s",
                     s2s_last_error());
        expect_same_config(&cfg, &back, "the commented YAML read back");
        // Each key line follows a comment (whose last line is its summary);
        // no line is longer than 78 columns unless it is one long word.
        int keys = 0;
        const char *prev = NULL;
        for (const char *line = text; *line;) {
            const char *end = strchr(line, '\n');
            cr_assert_not_null(end);
            const char *s = line + strspn(line, " ");
            if (s < end && *s != '#') {
                keys++;
                cr_assert(prev && prev[strspn(prev, " ")] == '#', "a key without a comment: %.*s",
                          (int)(end - line), line);
            }
            if (end - line > 78) cr_assert_null(memchr(s + 2, ' ', (size_t)(end - s - 2)));
            prev = line;
            line = end + 1;
        }
        cr_assert_eq(keys, s2s_cfg_n_leaves() + count_tables(&s2s_cfg_root));
        cr_assert_not_null(strstr(text, "  # int (>= 1); default 512\n  d_model: "));
        cr_assert_not_null(strstr(text, "# A header that is long enough to be wrapped onto a "
                                        "second line of comment,\n# which it is once"));
        free(text);
    }
}

Test(config, explain_prints_one_key_and_suggests_for_unknown_ones) {
    char *text = NULL;
    cr_assert_eq(s2s_config_explain("model.d_model", &text), S2S_OK);
    cr_assert(strncmp(text, "model.d_model: int (>= 1); default 512\n  Width of every", 55) == 0,
              "%s", text);
    cr_assert_not_null(strstr(text, "Checked with other keys:\n    - `model.d_model` is even"));
    char *bare = NULL;
    cr_assert_eq(s2s_config_explain("d_model", &bare), S2S_OK);
    cr_assert_str_eq(bare, text);
    free(bare);
    free(text);
    cr_assert_eq(s2s_config_explain("train.guided_alignment", &text), S2S_OK);
    cr_assert_not_null(strstr(text, "train.guided_alignment: a mapping of layer, head or weight\n"));
    cr_assert_not_null(strstr(text, "\n  train.guided_alignment.layer: int (>= -1); default -1\n"));
    free(text);
    static const struct { const char *key, *msg; } bad[] = {
        {"model.d_modl", "unknown key 'd_modl' in 'model' (did you mean 'model.d_model'?)"},
        {"train.guided_alignment.lyer",
         "unknown key 'lyer' in 'train.guided_alignment' (did you mean "
         "'train.guided_alignment.layer'?)"},
        {"d_modle", "unknown key 'd_modle' (did you mean 'model.d_model'?)"},
        {"modle", "unknown key 'modle' (did you mean 'model'?)"},
        {"modle.heads", "unknown section 'modle' (did you mean 'model'?)"},
        {"max_len", "'max_len' is a key of several tables; name one: model.max_len, decode.max_len"},
        {"model.heads.x", "'model.heads' is a value, not a mapping of keys"},
        {"zzz", "unknown key 'zzz'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        text = NULL;
        cr_assert_eq(s2s_config_explain(bad[i].key, &text), S2S_ERR_CONFIG, "%s", bad[i].key);
        cr_assert_null(text);
        cr_assert_str_eq(s2s_last_error(), bad[i].msg);
    }
}

// Issue 32: the keys a valid config may leave unset but init and train need.
Test(config, unset_keys_per_command) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    char buf[128];
    cr_assert_eq(s2s_config_unset_keys(&cfg, S2S_CONFIG_FOR_INIT, buf, sizeof buf), 2);
    cr_assert_str_eq(buf, "vocab.src and vocab.tgt");
    cr_assert_eq(s2s_config_unset_keys(&cfg, S2S_CONFIG_FOR_TRAIN, buf, sizeof buf), 3);
    cr_assert_str_eq(buf, "data.train, vocab.src and vocab.tgt");
    strcpy(cfg.vocab.src, "a.txt");
    strcpy(cfg.vocab.tgt, "b.txt");
    cr_assert_eq(s2s_config_unset_keys(&cfg, S2S_CONFIG_FOR_INIT, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "");
    cr_assert_eq(s2s_config_unset_keys(&cfg, S2S_CONFIG_FOR_TRAIN, buf, sizeof buf), 1);
    cr_assert_str_eq(buf, "data.train");
    // s2s_model_init refuses what the check names.
    cfg.vocab.tgt[0] = '\0';
    s2s_model *m;
    cr_assert_eq(s2s_model_init(&m, &cfg, 1), S2S_ERR_CONFIG);
    cr_assert(strstr(s2s_last_error(), "vocab.tgt must be set"), "%s", s2s_last_error());
}
