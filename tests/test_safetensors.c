// Tests for src/model/safetensors.c: round trips, the on-disk layout checked
// byte by byte (independently of the reader), hostile and truncated files,
// and the atomic-write guarantees.
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/safetensors.h"
#include "support.h"

TestSuite(safetensors, .init = tmpdir_make, .fini = tmpdir_remove);

// ---- helpers ----


// Number of entries in dir other than . and ..
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

// Writes a file with the given header length field, header text and
// data_len bytes of data (values 0, 1, 2, ...).
static void write_raw_len(const char *path, uint64_t len_field, const char *header,
                          size_t data_len) {
    size_t hl = strlen(header);
    unsigned char *buf = malloc(8 + hl + data_len + 1);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(len_field >> (8 * i));
    memcpy(buf + 8, header, hl);
    for (size_t i = 0; i < data_len; i++) buf[8 + hl + i] = (unsigned char)i;
    spit(path, buf, 8 + hl + data_len);
    free(buf);
}

static void write_raw(const char *path, const char *header, size_t data_len) {
    write_raw_len(path, strlen(header), header, data_len);
}

static uint64_t read_u64_le(const unsigned char *p) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | p[i];
    return n;
}

// Three tensors of 1, 2 and 4 dims with distinct values, two metadata entries.
typedef struct {
    float a[5], b[6], c[24];
    s2s_st_tensor t[3];
    s2s_st_meta m[2];
} sample;

static void make_sample(sample *s) {
    for (int i = 0; i < 5; i++) s->a[i] = 0.5f * (float)i - 1.0f;
    for (int i = 0; i < 6; i++) s->b[i] = 100.0f + (float)i * 0.25f;
    for (int i = 0; i < 24; i++) s->c[i] = -3.0e-7f * (float)(i * i) + (float)i;
    s->t[0] = (s2s_st_tensor){.name = "encoder.embed", .ndim = 1, .shape = {5}, .data = s->a};
    s->t[1] = (s2s_st_tensor){.name = "b", .ndim = 2, .shape = {2, 3}, .data = s->b};
    s->t[2] = (s2s_st_tensor){.name = "a.weight", .ndim = 4, .shape = {1, 2, 3, 4},
                              .data = s->c};
    s->m[0] = (s2s_st_meta){"format", "pt"};
    s->m[1] = (s2s_st_meta){"s2s.config", "{\"d_model\": 512, \"name\": \"caf\xc3\xa9\"}"};
}

static void expect_format_error(const char *path, const char *substr) {
    s2s_st_file *f = (s2s_st_file *)0x1;
    s2s_status st = s2s_st_open(&f, path);
    cr_assert_eq(st, S2S_ERR_FORMAT, "status %d, message: %s", st, s2s_last_error());
    cr_assert_null(f);
    cr_assert(strstr(s2s_last_error(), path), "message does not name the file: %s",
              s2s_last_error());
    cr_assert(strstr(s2s_last_error(), substr), "expected '%s' in: %s", substr,
              s2s_last_error());
    cr_assert_null(strchr(s2s_last_error(), '\n'), "message is not one line");
}

// ---- round trip and layout ----

Test(safetensors, round_trip_keeps_values_shapes_names_order_metadata) {
    sample s;
    make_sample(&s);
    const char *path = tmp_path("model.safetensors");
    cr_assert_eq(s2s_st_write(path, s.t, 3, s.m, 2), S2S_OK, "%s", s2s_last_error());

    s2s_st_file *f;
    cr_assert_eq(s2s_st_open(&f, path), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_st_count(f), 3);
    for (int i = 0; i < 3; i++) {
        const s2s_st_tensor *t = s2s_st_get(f, i);
        cr_assert_not_null(t);
        cr_assert_str_eq(t->name, s.t[i].name);
        cr_assert_eq(t->ndim, s.t[i].ndim);
        size_t n = 1;
        for (int d = 0; d < t->ndim; d++) {
            cr_assert_eq(t->shape[d], s.t[i].shape[d]);
            n *= (size_t)t->shape[d];
        }
        cr_assert_eq(memcmp(t->data, s.t[i].data, n * sizeof(float)), 0, "tensor %d data", i);
        cr_assert_eq(s2s_st_find(f, s.t[i].name), t);
    }
    cr_assert_null(s2s_st_get(f, 3));
    cr_assert_null(s2s_st_get(f, -1));
    cr_assert_null(s2s_st_find(f, "missing"));
    cr_assert_null(s2s_st_find(f, "__metadata__"));
    cr_assert_str_eq(s2s_st_meta_get(f, "format"), "pt");
    cr_assert_str_eq(s2s_st_meta_get(f, "s2s.config"), s.m[1].value);
    cr_assert_null(s2s_st_meta_get(f, "missing"));
    s2s_st_close(f);
}

Test(safetensors, layout_is_padded_header_then_contiguous_data) {
    sample s;
    make_sample(&s);
    const char *path = tmp_path("model.safetensors");
    cr_assert_eq(s2s_st_write(path, s.t, 3, s.m, 2), S2S_OK, "%s", s2s_last_error());

    size_t size;
    unsigned char *buf = slurp(path, &size);
    cr_assert_geq(size, 8);
    uint64_t n = read_u64_le(buf);
    cr_assert_eq((8 + n) % 8, 0, "header length %llu leaves data unaligned",
                 (unsigned long long)n);
    // The header is JSON followed only by spaces, and the data section holds
    // the three tensors back to back in order.
    cr_assert_eq(buf[8], '{');
    size_t last = 8 + n - 1;
    while (buf[last] == ' ') last--;
    cr_assert_eq(buf[last], '}');
    cr_assert_lt(8 + n - 1 - last, 8, "more padding than needed");
    size_t data_bytes = sizeof s.a + sizeof s.b + sizeof s.c;
    cr_assert_eq(size, 8 + n + data_bytes);
    const unsigned char *data = buf + 8 + n;
    cr_assert_eq(memcmp(data, s.a, sizeof s.a), 0);
    cr_assert_eq(memcmp(data + sizeof s.a, s.b, sizeof s.b), 0);
    cr_assert_eq(memcmp(data + sizeof s.a + sizeof s.b, s.c, sizeof s.c), 0);
    // Offsets are written as the reader of any other implementation sees them.
    char *json = strndup((const char *)buf + 8, n);
    cr_assert(strstr(json, "\"b\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[20,44]}"),
              "%s", json);
    free(json);
    free(buf);
}

Test(safetensors, empty_file_round_trips) {
    const char *path = tmp_path("empty.safetensors");
    cr_assert_eq(s2s_st_write(path, NULL, 0, NULL, 0), S2S_OK, "%s", s2s_last_error());
    s2s_st_file *f;
    cr_assert_eq(s2s_st_open(&f, path), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_st_count(f), 0);
    cr_assert_null(s2s_st_meta_get(f, "format"));
    s2s_st_close(f);
}

// Files from other writers: no padding (data at an odd file offset), header
// order different from data order, a zero-size tensor.
Test(safetensors, reads_foreign_layout) {
    const char *path = tmp_path("foreign.safetensors");
    write_raw(path,
              "{\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
              "\"e\":{\"shape\":[0,3],\"dtype\":\"F32\",\"data_offsets\":[8,8]},"
              "\"x\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]}}",
              16);
    s2s_st_file *f;
    cr_assert_eq(s2s_st_open(&f, path), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_st_count(f), 3);
    cr_assert_str_eq(s2s_st_get(f, 0)->name, "y");
    cr_assert_str_eq(s2s_st_get(f, 1)->name, "e");
    cr_assert_str_eq(s2s_st_get(f, 2)->name, "x");
    const s2s_st_tensor *y = s2s_st_find(f, "y"), *x = s2s_st_find(f, "x");
    unsigned char expect[16];
    for (int i = 0; i < 16; i++) expect[i] = (unsigned char)i;
    cr_assert_eq(memcmp(x->data, expect, 8), 0);
    cr_assert_eq(memcmp(y->data, expect + 8, 8), 0);
    cr_assert_eq(((uintptr_t)x->data) % sizeof(float), 0, "data is not aligned");
    s2s_st_close(f);
}

// ---- hostile input ----

Test(safetensors, every_truncation_is_an_error_not_a_crash) {
    float a[3] = {1, 2, 3}, b[2] = {4, 5};
    s2s_st_tensor t[2] = {{.name = "a", .ndim = 1, .shape = {3}, .data = a},
                          {.name = "b", .ndim = 2, .shape = {1, 2}, .data = b}};
    s2s_st_meta m[1] = {{"k", "v"}};
    const char *path = tmp_path("full.safetensors");
    cr_assert_eq(s2s_st_write(path, t, 2, m, 1), S2S_OK, "%s", s2s_last_error());
    size_t size;
    unsigned char *buf = slurp(path, &size);

    const char *cut = tmp_path("cut.safetensors");
    for (size_t len = 0; len < size; len++) {
        spit(cut, buf, len);
        s2s_st_file *f = (s2s_st_file *)0x1;
        s2s_status st = s2s_st_open(&f, cut);
        cr_assert(st == S2S_ERR_FORMAT || st == S2S_ERR_IO,
                  "length %zu of %zu: status %d (%s)", len, size, st, s2s_last_error());
        cr_assert_null(f);
        cr_assert(strstr(s2s_last_error(), cut), "length %zu: %s", len, s2s_last_error());
    }
    free(buf);
}

// Flipping any single byte gives a file that is either refused or, when the
// flip lands in data or padding, read with all tensor data inside the buffer
// (AddressSanitizer checks the reads).
Test(safetensors, corrupted_bytes_are_refused_or_read_safely) {
    sample s;
    make_sample(&s);
    const char *path = tmp_path("full.safetensors");
    cr_assert_eq(s2s_st_write(path, s.t, 3, s.m, 2), S2S_OK, "%s", s2s_last_error());
    size_t size;
    unsigned char *buf = slurp(path, &size);
    const char *bad = tmp_path("bad.safetensors");
    static const unsigned char flips[] = {0x01, 0x20, 0x80, 0xff};
    for (size_t pos = 0; pos < size; pos++) {
        for (size_t k = 0; k < sizeof flips; k++) {
            buf[pos] ^= flips[k];
            spit(bad, buf, size);
            buf[pos] ^= flips[k];
            s2s_st_file *f;
            s2s_status st = s2s_st_open(&f, bad);
            cr_assert(st == S2S_OK || st == S2S_ERR_FORMAT, "byte %zu ^ %#x: status %d (%s)",
                      pos, flips[k], st, s2s_last_error());
            if (st != S2S_OK) continue;
            volatile float sum = 0;
            for (int i = 0; i < s2s_st_count(f); i++) {
                const s2s_st_tensor *t = s2s_st_get(f, i);
                int64_t n = 1;
                for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
                for (int64_t j = 0; j < n; j++) sum += t->data[j];
            }
            s2s_st_close(f);
        }
    }
    free(buf);
}

Test(safetensors, short_file_message) {
    const char *path = tmp_path("short.safetensors");
    spit(path, "abcde", 5);
    expect_format_error(path, "truncated: 5 bytes, not a safetensors file");
}

Test(safetensors, data_shorter_than_offsets) {
    const char *path = tmp_path("t.safetensors");
    write_raw(path, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1024],\"data_offsets\":[0,4096]}}", 1000);
    expect_format_error(path,
                        "truncated: tensor 'x' needs bytes 0..4096 of the data but the file "
                        "has 1000");
}

Test(safetensors, wrong_dtype) {
    const char *path = tmp_path("t.safetensors");
    write_raw(path, "{\"x\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4);
    expect_format_error(path, "tensor 'x' has dtype F16; s2s reads F32, I8 and BF16");
}

Test(safetensors, i8_and_bf16_sized_by_their_element) {
    const char *path = tmp_path("t.safetensors");
    // 4 I8 elements take 4 bytes, where 4 F32 would take 16
    write_raw(path, "{\"x\":{\"dtype\":\"I8\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16);
    expect_format_error(path, "tensor 'x'");
    int8_t q[4] = {-127, -1, 0, 127};
    uint16_t h[3] = {0x3f80, 0xc000, 0x7f80};  // 1, -2, +inf
    float f[2] = {0.5f, -0.25f};
    s2s_st_tensor ts[3] = {
        {.name = "q", .ndim = 2, .shape = {2, 2}, .raw = q, .dtype = S2S_ST_I8},
        {.name = "h", .ndim = 1, .shape = {3}, .raw = h, .dtype = S2S_ST_BF16},
        {.name = "f", .ndim = 1, .shape = {2}, .data = f},
    };
    cr_assert_eq(s2s_st_write(path, ts, 3, NULL, 0), S2S_OK, "%s", s2s_last_error());
    s2s_st_file *file;
    cr_assert_eq(s2s_st_open(&file, path), S2S_OK, "%s", s2s_last_error());
    const s2s_st_tensor *a = s2s_st_find(file, "q"), *b = s2s_st_find(file, "h"),
                        *c = s2s_st_find(file, "f");
    cr_assert(a->dtype == S2S_ST_I8 && b->dtype == S2S_ST_BF16 && c->dtype == S2S_ST_F32);
    cr_assert_eq(memcmp(a->raw, q, sizeof q), 0);
    cr_assert_eq(memcmp(b->raw, h, sizeof h), 0);
    cr_assert_eq(memcmp(c->raw, f, sizeof f), 0);
    cr_assert_str_eq(s2s_st_dtype_name(a->dtype), "I8");
    s2s_st_close(file);
}

Test(safetensors, shape_disagrees_with_offsets) {
    const char *path = tmp_path("t.safetensors");
    write_raw(path, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,12]}}", 16);
    expect_format_error(path, "tensor 'x'");
}

Test(safetensors, overlapping_tensors) {
    const char *path = tmp_path("t.safetensors");
    write_raw(path,
              "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
              "\"z\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[24,28]},"
              "\"y\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
              28);
    expect_format_error(path, "overlap");
    cr_assert(strstr(s2s_last_error(), "'x'") && strstr(s2s_last_error(), "'y'"), "%s",
              s2s_last_error());
}

// The data offsets must cover the data section exactly, as the reference
// implementation requires (issue 14 item 7): unindexed bytes are refused.
Test(safetensors, holes_and_trailing_bytes_are_refused) {
    const char *path = tmp_path("t.safetensors");
    write_raw(path,
              "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
              "\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
              12);
    expect_format_error(path, "bytes 4..8 of the data belong to no tensor (tensor 'y' starts at 8)");
    write_raw(path, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8);
    expect_format_error(path, "bytes 0..4 of the data belong to no tensor");
    write_raw(path, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 5);
    expect_format_error(path, "bytes 4..5 at the end of the data belong to no tensor");
    write_raw(path, "{}", 1);
    expect_format_error(path, "bytes 0..1 at the end of the data belong to no tensor");
    // An empty tensor inside another one's bytes.
    write_raw(path,
              "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
              "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}",
              8);
    expect_format_error(path, "overlap");
}

// The header is one JSON object padded with spaces, nothing else.
Test(safetensors, header_is_an_object_then_only_spaces) {
    const char *path = tmp_path("t.safetensors");
    const char *x = "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    char header[256];
    snprintf(header, sizeof header, "%s       ", x);
    write_raw(path, header, 4);
    s2s_st_file *f;
    cr_assert_eq(s2s_st_open(&f, path), S2S_OK, "%s", s2s_last_error());
    s2s_st_close(f);
    // JSON white space other than spaces, or anything else, after the object.
    const char *pads[] = {"\n", "\t  ", "  \n  ", "\r", " x"};
    for (size_t i = 0; i < sizeof pads / sizeof pads[0]; i++) {
        snprintf(header, sizeof header, "%s%s", x, pads[i]);
        write_raw(path, header, 4);
        expect_format_error(path, "does not end in '}'");
    }
    snprintf(header, sizeof header, "%s }  ", x);
    write_raw(path, header, 4);
    expect_format_error(path, "header JSON, line 1");
    snprintf(header, sizeof header, " %s", x);
    write_raw(path, header, 4);
    expect_format_error(path, "does not start with '{'");
}

Test(safetensors, corrupted_json) {
    const char *path = tmp_path("t.safetensors");
    write_raw(path, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]", 4);
    expect_format_error(path, "header JSON");
}

Test(safetensors, header_length_beyond_file) {
    const char *path = tmp_path("t.safetensors");
    write_raw_len(path, 1000, "{}", 0);
    expect_format_error(path, "header length 1000");
}

Test(safetensors, absurd_header_length) {
    const char *path = tmp_path("t.safetensors");
    write_raw_len(path, UINT64_MAX, "{}", 0);
    expect_format_error(path, ": not a safetensors file (its first 8 bytes");
    write_raw_len(path, (uint64_t)1 << 62, "{}", 0);
    expect_format_error(path, "over the 100 MB limit");
}

Test(safetensors, missing_file_is_io_error) {
    const char *path = tmp_path("does-not-exist.safetensors");
    s2s_st_file *f = (s2s_st_file *)0x1;
    cr_assert_eq(s2s_st_open(&f, path), S2S_ERR_IO);
    cr_assert_null(f);
    cr_assert(strstr(s2s_last_error(), path), "%s", s2s_last_error());
}

Test(safetensors, directory_is_io_error) {
    s2s_st_file *f;
    cr_assert_eq(s2s_st_open(&f, tmpdir), S2S_ERR_IO, "%s", s2s_last_error());
}

// Each malformed header must be refused with S2S_ERR_FORMAT and a message
// that contains `expect`.
typedef struct {
    const char *header;
    size_t data_len;
    const char *expect;
} bad_header;

// Parameters are indices into these tables: Criterion runs each test in a
// re-executed copy of this binary, where pointers inside parameters would be
// meaningless.
#define E(body) "{\"x\":{" body "}}"
static const bad_header bad_headers[] = {
        {"[1,2]", 0, "header JSON does not start with '{'"},
        {"\"x\"", 0, "header JSON"},
        {"", 0, "header JSON"},
        {"{\"x\":[1]}", 0, "'x' is not a JSON object"},
        {E("\"shape\":[1],\"data_offsets\":[0,4]"), 4, "lacks 'dtype'"},
        {E("\"dtype\":\"F32\",\"data_offsets\":[0,4]"), 4, "lacks 'shape'"},
        {E("\"dtype\":\"F32\",\"shape\":[1]"), 4, "lacks 'data_offsets'"},
        {E("\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]"), 4, "dtype"},
        {E("\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]"), 4, "shape"},
        {E("\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]"), 4, "shape"},
        {E("\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]"), 4, "shape"},
        {E("\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]"), 4, "shape"},
        {E("\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]"), 4, "0 dims"},
        {E("\"dtype\":\"F32\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,4]"), 4, "5 dims"},
        {E("\"dtype\":\"F32\",\"shape\":[4611686018427387904,4611686018427387904],"
           "\"data_offsets\":[0,4]"),
         4, "too large"},
        {E("\"dtype\":\"F32\",\"shape\":[9223372036854775807],"
           "\"data_offsets\":[0,4]"),
         4, "too large"},
        {E("\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,4]"), 4,
         "header JSON"},
        {E("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]"), 4, "data_offsets"},
        {E("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}"), 4, "data_offsets"},
        {E("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]"), 4, "data_offsets"},
        {E("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]"), 4, "reversed"},
        {E("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,9223372036854775807]"), 4,
         "truncated"},
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
         4, "duplicate"},
        {"{\"__metadata__\":{\"k\":1}}", 0, "metadata 'k' is not a string"},
        {"{\"__metadata__\":[\"k\"]}", 0, "__metadata__ is not a JSON object"},
        {"{\"__metadata__\":{\"k\":\"a\\u0000b\"}}", 0, "header JSON"},
        {"{\"__metadata__\":{\"k\":\"\xff\"}}", 0, "header JSON"},
        // A hostile name must not break the one-line message.
        {"{\"x\\ny\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]}}", 2,
         "tensor 'x\\x0ay' has dtype F16"},
};
#undef E
#define N_BAD_HEADERS ((int)(sizeof bad_headers / sizeof bad_headers[0]))

static int *indices(int *idx, int n) {
    for (int i = 0; i < n; i++) idx[i] = i;
    return idx;
}

ParameterizedTestParameters(safetensors, malformed_header) {
    static int idx[N_BAD_HEADERS];
    return cr_make_param_array(int, indices(idx, N_BAD_HEADERS), (size_t)N_BAD_HEADERS);
}

ParameterizedTest(int *i, safetensors, malformed_header) {
    const bad_header *c = &bad_headers[*i];
    const char *path = tmp_path("bad.safetensors");
    write_raw(path, c->header, c->data_len);
    expect_format_error(path, c->expect);
}

// ---- writing ----

Test(safetensors, write_into_missing_dir_fails_cleanly) {
    float a[1] = {1};
    s2s_st_tensor t = {.name = "a", .ndim = 1, .shape = {1}, .data = a};
    const char *path = tmp_path("no/such/dir/model.safetensors");
    cr_assert_eq(s2s_st_write(path, &t, 1, NULL, 0), S2S_ERR_IO);
    cr_assert(strstr(s2s_last_error(), path), "%s", s2s_last_error());
    cr_assert(strstr(s2s_last_error(), "cannot write: No such file or directory"), "%s",
              s2s_last_error());
    cr_assert_eq(count_entries(tmpdir), 0);
}

// Here the temp file is created and written, and only the rename fails (a
// file cannot replace a directory): the temp file must be gone afterwards.
Test(safetensors, failed_rename_leaves_no_temp_file) {
    float a[1] = {1};
    s2s_st_tensor t = {.name = "a", .ndim = 1, .shape = {1}, .data = a};
    const char *path = tmp_path("model.safetensors");
    cr_assert_eq(mkdir(path, 0700), 0);
    cr_assert_eq(s2s_st_write(path, &t, 1, NULL, 0), S2S_ERR_IO);
    cr_assert(strstr(s2s_last_error(), "cannot write"), "%s", s2s_last_error());
    cr_assert_eq(count_entries(tmpdir), 1);
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert(S_ISDIR(sb.st_mode));
}

Test(safetensors, overwrite_replaces_existing_file) {
    float a[4] = {1, 2, 3, 4}, b[1] = {7};
    s2s_st_tensor ta = {.name = "a", .ndim = 2, .shape = {2, 2}, .data = a};
    s2s_st_tensor tb = {.name = "b", .ndim = 1, .shape = {1}, .data = b};
    s2s_st_meta m = {"version", "2"};
    const char *path = tmp_path("model.safetensors");
    cr_assert_eq(s2s_st_write(path, &ta, 1, NULL, 0), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_st_write(path, &tb, 1, &m, 1), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(count_entries(tmpdir), 1);

    s2s_st_file *f;
    cr_assert_eq(s2s_st_open(&f, path), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_st_count(f), 1);
    cr_assert_null(s2s_st_find(f, "a"));
    cr_assert_not_null(s2s_st_find(f, "b"));
    cr_assert_eq(s2s_st_find(f, "b")->data[0], 7.0f);
    cr_assert_str_eq(s2s_st_meta_get(f, "version"), "2");
    s2s_st_close(f);
}

typedef struct {
    s2s_st_tensor t[2];
    int n_tensors;
    s2s_st_meta m[2];
    int n_meta;
    const char *expect;
} bad_write;

static const float some_data[8];

static const bad_write bad_writes[] = {
        {{{"a", 0, {0}, {some_data}, S2S_ST_F32}}, 1, {{0}}, 0, "0 dims"},
        {{{"a", 5, {1, 1, 1, 1}, {some_data}, S2S_ST_F32}}, 1, {{0}}, 0, "5 dims"},
        {{{"a", 1, {-2}, {some_data}, S2S_ST_F32}}, 1, {{0}}, 0, "negative"},
        {{{"a", 4, {INT64_MAX, INT64_MAX, 2, 2}, {some_data}, S2S_ST_F32}}, 1, {{0}}, 0, "too large"},
        {{{"a", 1, {2}, {some_data}, S2S_ST_F32}, {"a", 1, {1}, {some_data}, S2S_ST_F32}}, 2, {{0}}, 0,
         "duplicate tensor name 'a'"},
        {{{NULL, 1, {2}, {some_data}, S2S_ST_F32}}, 1, {{0}}, 0, "no name"},
        {{{"a", 1, {2}, {NULL}, S2S_ST_F32}}, 1, {{0}}, 0, "no data"},
        {{{"__metadata__", 1, {2}, {some_data}, S2S_ST_F32}}, 1, {{0}}, 0, "reserved"},
        {{{"\xff", 1, {2}, {some_data}, S2S_ST_F32}}, 1, {{0}}, 0, "UTF-8"},
        {{{"a", 1, {2}, {some_data}, S2S_ST_F32}}, 1, {{"k", "1"}, {"k", "2"}}, 2, "duplicate metadata key"},
        {{{"a", 1, {2}, {some_data}, S2S_ST_F32}}, 1, {{"k", NULL}}, 1, "metadata"},
        {{{"a", 1, {2}, {some_data}, S2S_ST_F32}}, 1, {{"k", "\xc3"}}, 1, "UTF-8"},
        {{{"a", 1, {2}, {some_data}, S2S_ST_F32}}, -1, {{0}}, 0, "tensor list"},
};
#define N_BAD_WRITES ((int)(sizeof bad_writes / sizeof bad_writes[0]))

ParameterizedTestParameters(safetensors, write_rejects_invalid_input) {
    static int idx[N_BAD_WRITES];
    return cr_make_param_array(int, indices(idx, N_BAD_WRITES), (size_t)N_BAD_WRITES);
}

ParameterizedTest(int *i, safetensors, write_rejects_invalid_input) {
    const bad_write *c = &bad_writes[*i];
    const char *path = tmp_path("model.safetensors");
    s2s_status st = s2s_st_write(path, c->t, c->n_tensors, c->m, c->n_meta);
    cr_assert_eq(st, S2S_ERR_INVALID, "status %d: %s", st, s2s_last_error());
    cr_assert(strstr(s2s_last_error(), c->expect), "expected '%s' in: %s", c->expect,
              s2s_last_error());
    cr_assert_eq(count_entries(tmpdir), 0, "something was left on disk");
}
