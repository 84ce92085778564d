// Tests for src/core: the FNV-1a hash against the published test vectors,
// the growable string's reserve (including reuse of a block of unknown
// size), s2s_read_file against the bytes written, the checked size
// arithmetic against 128-bit integer arithmetic, s2s_quote on hostile text
// byte by byte, and the version as the headers, the library and CMake each
// give it.
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/checked.h"
#include "core/error.h"
#include "core/strbuf.h"
#include "core/util.h"
#include "s2s/s2s.h"
#include "support.h"
#include "core/io.h"

TestSuite(core, .init = tmpdir_make, .fini = tmpdir_remove);

// ---- errors ----

// A message that wraps the last one, as callers add the file to a reader's
// message: the old text is read whole before the new one is written.
Test(core, fail_can_wrap_the_last_message) {
    s2s_fail(S2S_ERR_FORMAT, "line %d: a bad token", 7);
    cr_assert_eq(s2s_fail(S2S_ERR_CONFIG, "%s: %s", "data.tsv", s2s_last_error()), S2S_ERR_CONFIG);
    cr_assert_str_eq(s2s_last_error(), "data.tsv: line 7: a bad token");
    s2s_fail(S2S_ERR_FORMAT, "%s and %s", s2s_last_error(), s2s_last_error());
    cr_assert_str_eq(s2s_last_error(),
                     "data.tsv: line 7: a bad token and data.tsv: line 7: a bad token");
}

// ---- hashing ----

Test(core, fnv1a_matches_the_published_vectors) {
    // From the FNV reference test suite (isthe.com/chongo/tech/comp/fnv).
    cr_assert_eq(s2s_fnv1a(S2S_FNV1A_INIT, "", 0), 0xcbf29ce484222325ULL);
    cr_assert_eq(s2s_fnv1a(S2S_FNV1A_INIT, "a", 1), 0xaf63dc4c8601ec8cULL);
    cr_assert_eq(s2s_fnv1a(S2S_FNV1A_INIT, "foobar", 6), 0x85944171f73967e8ULL);
}

Test(core, fnv1a_continues_from_a_prefix) {
    uint64_t h = s2s_fnv1a(S2S_FNV1A_INIT, "foo", 3);
    cr_assert_eq(s2s_fnv1a(h, "bar", 3), 0x85944171f73967e8ULL);
    // a word step is one byte step when the word fits a byte
    cr_assert_eq(s2s_fnv1a_word(S2S_FNV1A_INIT, 'a'), 0xaf63dc4c8601ec8cULL);
}

// ---- growable string ----

Test(core, buf_reserve_makes_room_once) {
    s2s_buf b = {0};
    cr_assert(s2s_buf_reserve(&b, 1000));
    char *block = b.s;
    cr_assert_geq(b.cap, 1001);
    for (int i = 0; i < 1000; i++) s2s_buf_putc(&b, (char)('a' + i % 26));
    cr_assert_eq(b.s, block, "the reserved room was enough");
    cr_assert_eq(b.len, 1000);
    cr_assert_eq(b.s[1000], '\0');
    cr_assert_eq(b.s[999], 'a' + 999 % 26);
    s2s_buf_free(&b);
}

Test(core, buf_reserve_resizes_a_block_of_unknown_size) {
    char *old = malloc(4);
    memcpy(old, "xyz", 4);
    s2s_buf b = {.s = old};
    cr_assert(s2s_buf_reserve(&b, 5000));
    cr_assert_geq(b.cap, 5001);
    s2s_buf_puts(&b, "hello");
    char *s = s2s_buf_take(&b);
    cr_assert_str_eq(s, "hello");
    free(s);
}

// ---- files ----

Test(core, read_file_returns_every_byte) {
    // Larger than the first read (64 kB) and with NULs inside.
    size_t n = 200000;
    unsigned char *want = malloc(n);
    for (size_t i = 0; i < n; i++) want[i] = (unsigned char)(i * 7 + i / 251);
    spit(tmp_path("f.bin"), want, n);
    char *got;
    size_t len;
    cr_assert_eq(s2s_read_file(&got, &len, tmp_path("f.bin")), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(len, n);
    cr_assert(memcmp(got, want, n) == 0);
    cr_assert_eq(got[n], '\0');
    free(got);
    spit(tmp_path("empty"), "", 0);
    cr_assert_eq(s2s_read_file(&got, &len, tmp_path("empty")), S2S_OK);
    cr_assert_eq(len, 0);
    cr_assert_str_eq(got, "");
    free(got);
    free(want);
}

Test(core, read_file_names_a_missing_file) {
    char *got;
    cr_assert_eq(s2s_read_file(&got, NULL, tmp_path("none")), S2S_ERR_IO);
    cr_assert_null(got);
    cr_assert(strstr(s2s_last_error(), "none: cannot open"), "%s", s2s_last_error());
}

Test(core, read_file_max_refuses_a_larger_file_and_an_endless_stream) {
    spit(tmp_path("ten"), "0123456789", 10);
    char *got;
    size_t len;
    cr_assert_eq(s2s_read_file_max(&got, &len, tmp_path("ten"), 10, "x"), S2S_OK);
    cr_assert_eq(len, 10);
    free(got);
    cr_assert_eq(s2s_read_file_max(&got, &len, tmp_path("ten"), 9, "a test file"), S2S_ERR_FORMAT);
    cr_assert_null(got);
    cr_assert(strstr(s2s_last_error(), "ten: larger than 9 bytes, the limit for a test file"), "%s",
              s2s_last_error());
    // /dev/zero never ends: the read stops near the limit.
    cr_assert_eq(s2s_read_file_max(&got, &len, "/dev/zero", 1 << 20, "x"), S2S_ERR_FORMAT);
}

// The lines of text by a plain split at '\n' (a last line without one
// counts; "\r" before '\n' dropped), the reference for s2s_read_line.
static int split_lines(const char *text, size_t n, size_t starts[], size_t lens[]) {
    int k = 0;
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && text[j] != '\n') j++;
        size_t len = j - i;
        if (j < n && len > 0 && text[j - 1] == '\r') len--;
        starts[k] = i, lens[k] = len, k++;
        i = j + 1;
    }
    return k;
}

Test(core, read_line_returns_each_line_as_a_plain_split_does) {
    // NUL bytes, CRLF, an empty line, a lone \r inside, no final newline.
    static const char text[] = "one\ntwo\r\n\nthr\0ee\nfo\rur\r\nlast";
    size_t n = sizeof text - 1, starts[16], lens[16];
    int want = split_lines(text, n, starts, lens);
    spit(tmp_path("lines"), text, n);
    FILE *f = fopen(tmp_path("lines"), "rb");
    char *buf = NULL;
    size_t cap = 0, len;
    bool too_long = true;
    int k = 0, r;
    while ((r = s2s_read_line(f, &buf, &cap, 100, &len, &too_long)) > 0) {
        cr_assert_lt(k, want);
        cr_assert_not(too_long);
        cr_assert_eq(len, lens[k], "line %d: %zu bytes, expected %zu", k, len, lens[k]);
        cr_assert(memcmp(buf, text + starts[k], len) == 0, "line %d", k);
        cr_assert_eq(buf[len], '\0');
        k++;
    }
    cr_assert_eq(r, 0);
    cr_assert_eq(k, want);
    fclose(f);
    free(buf);
}

Test(core, read_line_reads_through_a_line_longer_than_the_limit) {
    // 8 bytes pass with max 8 (also before \r\n), 9 do not; the next line
    // comes whole after a too long one, and the buffer never grows past max + 2.
    static const char text[] = "12345678\n12345678\r\n123456789\nafter\n"
                               "1234567890123456789012345678901234567890\nend";
    spit(tmp_path("long"), text, sizeof text - 1);
    FILE *f = fopen(tmp_path("long"), "rb");
    char *buf = NULL;
    size_t cap = 0, len;
    bool too_long;
    const char *want[] = {"12345678", "12345678", NULL, "after", NULL, "end"};
    for (int k = 0; k < 6; k++) {
        cr_assert_eq(s2s_read_line(f, &buf, &cap, 8, &len, &too_long), 1, "line %d", k);
        cr_assert_eq(too_long, want[k] == NULL, "line %d", k);
        cr_assert_str_eq(buf, want[k] ? want[k] : "", "line %d", k);
        cr_assert_eq(len, want[k] ? strlen(want[k]) : 0);
        cr_assert_leq(cap, 10);
    }
    cr_assert_eq(s2s_read_line(f, &buf, &cap, 8, &len, &too_long), 0);
    fclose(f);
    free(buf);
}

// Issue 27, item 8: a line that never ends (/dev/zero) was read through
// forever. A line of S2S_LINE_SKIP_MAX_BYTES is still read through and
// skipped; one byte more stops the input (-2, S2S_ERR_FORMAT's message).
Test(core, read_line_stops_reading_through_at_its_bound) {
    const size_t lim = S2S_LINE_SKIP_MAX_BYTES;
    char *text = malloc(lim + 16);
    cr_assert_not_null(text);
    memset(text, 'x', lim);
    memcpy(text + lim, "\nnext\n", 6);
    char *buf = NULL;
    size_t cap = 0, len;
    bool too_long;
    FILE *f = fmemopen(text, lim + 6, "rb");
    cr_assert_not_null(f);
    cr_assert_eq(s2s_read_line(f, &buf, &cap, 8, &len, &too_long), 1);
    cr_assert(too_long && len == 0 && cap <= 10);
    cr_assert_eq(s2s_read_line(f, &buf, &cap, 8, &len, &too_long), 1);
    cr_assert(!too_long);
    cr_assert_str_eq(buf, "next");
    cr_assert_eq(s2s_read_line(f, &buf, &cap, 8, &len, &too_long), 0);
    fclose(f);

    text[lim] = 'x';  // one byte more, then lines that are never reached
    f = fmemopen(text, lim + 6, "rb");
    cr_assert_not_null(f);
    cr_assert_eq(s2s_read_line(f, &buf, &cap, 8, &len, &too_long), -2);
    cr_assert_not_null(strstr(s2s_last_error(), "line longer than 67108864 bytes"), "%s",
                       s2s_last_error());
    fclose(f);

    f = fopen("/dev/zero", "rb");
    cr_assert_not_null(f);
    cr_assert_eq(s2s_read_line(f, &buf, &cap, 1 << 20, &len, &too_long), -2);
    cr_assert_leq(cap, (1 << 20) + 2);
    fclose(f);
    free(buf);
    free(text);
}

// fopen of a FIFO with no writer waited forever (a model or config path
// naming one hung s2s). s2s_open_read refuses it at once, refuses anything
// but a regular file when asked, and reads a FIFO that has a writer.
Test(core, open_read_never_waits_for_a_fifo_writer, .init = tmpdir_make,
     .fini = tmpdir_remove) {
    char *fifo = strdup(tmp_path("fifo"));
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    const char *why;
    errno = 0;
    cr_assert_null(s2s_open_read(fifo, false, &why));
    cr_assert_eq(errno, ENXIO);
    cr_assert_str_eq(why, "a FIFO with no writer");
    cr_assert_null(s2s_open_read(fifo, true, &why));
    cr_assert_str_eq(why, "not a regular file");
    cr_assert_null(s2s_open_read(tmpdir, true, &why));
    cr_assert_str_eq(why, "not a regular file");
    cr_assert_null(s2s_open_read(tmp_path("missing"), false, &why));
    cr_assert(errno == ENOENT && why == NULL);
    // A writer (this process, read-write and non-blocking): its bytes come through.
    int w = open(fifo, O_RDWR | O_NONBLOCK);
    cr_assert_geq(w, 0);
    cr_assert_eq(write(w, "ab\n", 3), 3);
    FILE *f = s2s_open_read(fifo, false, &why);
    cr_assert_not_null(f, "%s", strerror(errno));
    char line[8] = "";
    cr_assert_not_null(fgets(line, sizeof line, f));
    cr_assert_str_eq(line, "ab\n");
    fclose(f);
    close(w);
    spit(tmp_path("plain"), "x", 1);
    f = s2s_open_read(tmp_path("plain"), true, &why);
    cr_assert_not_null(f);
    cr_assert_eq(fgetc(f), 'x');
    fclose(f);
    free(fifo);
}

// ---- checked arithmetic ----

// The exact value, or SIZE_MAX when it does not fit: what the helpers promise.
static size_t clamp(unsigned __int128 x) { return x > SIZE_MAX ? SIZE_MAX : (size_t)x; }

Test(core, size_mul_and_add_saturate_exactly_at_overflow) {
    const size_t v[] = {0, 1, 2, 3, 4, 1000, (size_t)1 << 31, (size_t)1 << 32, ((size_t)1 << 32) + 1,
                        SIZE_MAX / 2, SIZE_MAX / 2 + 1, SIZE_MAX / 3, SIZE_MAX - 1, SIZE_MAX};
    int n = (int)(sizeof v / sizeof v[0]);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            unsigned __int128 a = v[i], b = v[j];
            size_t want_mul = clamp(a * b), want_add = clamp(a + b);
            // SIZE_MAX means "overflowed" and stays so, times anything but 0.
            if ((v[i] == SIZE_MAX && v[j] != 0) || (v[j] == SIZE_MAX && v[i] != 0))
                want_mul = SIZE_MAX;
            cr_assert_eq(s2s_size_mul(v[i], v[j]), want_mul, "%zu * %zu", v[i], v[j]);
            cr_assert_eq(s2s_size_add(v[i], v[j]), want_add, "%zu + %zu", v[i], v[j]);
        }
}

Test(core, size_prod_refuses_negative_factors_and_overflow) {
    cr_assert_eq(S2S_SIZE(3, 4, 5), 60);
    cr_assert_eq(S2S_SIZE(7), 7);
    cr_assert_eq(S2S_SIZE(0, -1), SIZE_MAX, "a negative factor is not a size");
    cr_assert_eq(S2S_SIZE(-1, 0), SIZE_MAX);
    cr_assert_eq(S2S_SIZE(0, INT64_MAX, INT64_MAX), 0);
    // The model layout of issue 14: d_model 1239840486 and ffn_dim 58647.
    int64_t d = 1239840486, f = 58647;
    unsigned __int128 exact = (unsigned __int128)d * (unsigned __int128)f * 2;
    cr_assert_eq(S2S_SIZE(2, d, f), clamp(exact));
    cr_assert_eq(S2S_SIZE(d, d, d), SIZE_MAX);
    cr_assert_eq(S2S_SIZE(INT64_MAX, 2), clamp((unsigned __int128)INT64_MAX * 2));
    cr_assert_eq(S2S_SIZE(INT64_MAX, 4), SIZE_MAX);
    // A chain stays SIZE_MAX once it overflowed.
    cr_assert_eq(s2s_size_add(S2S_SIZE(d, d, d), 1), SIZE_MAX);
    cr_assert_eq(s2s_size_mul(s2s_size_add(SIZE_MAX - 1, 5), 3), SIZE_MAX);
}

// ---- quoting untrusted text ----

static const char *quote(const char *s, size_t n, size_t size) {
    static char out[512];
    cr_assert_leq(size, sizeof out);
    memset(out, 0x55, sizeof out);
    const char *r = s2s_quote(out, size, s, n);
    cr_assert_eq(r, out);
    cr_assert_lt(strlen(out), size, "wrote past size %zu", size);
    return out;
}

Test(core, big_alloc_gives_zeroed_blocks_small_and_large) {
    // 1 KB and 1 MB stay on calloc; 2 MB, 2 MB + 4 KB + 4 and 5 MB are
    // mapped (but in sanitizer builds), the last two with a tail on small
    // pages. Each reads as zeros, and writes reach its last byte.
    size_t sizes[] = {1024, (size_t)1 << 20, (size_t)2 << 20, ((size_t)2 << 20) + 4100,
                      (size_t)5 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i] / 4;
        uint32_t *p = s2s_big_alloc(n, 4);
        cr_assert_not_null(p, "%zu bytes", sizes[i]);
        size_t nonzero = 0;
        for (size_t j = 0; j < n; j++) nonzero += p[j] != 0;
        cr_assert_eq(nonzero, 0, "%zu bytes: %zu words not zero", sizes[i], nonzero);
        for (size_t j = 0; j < n; j++) p[j] = (uint32_t)j * 2654435761u;
        for (size_t j = 0; j < n; j += 4093) cr_assert_eq(p[j], (uint32_t)j * 2654435761u);
        cr_assert_eq(p[n - 1], (uint32_t)(n - 1) * 2654435761u);
        s2s_big_free(p, n, 4);
    }
    s2s_big_free(NULL, 1, 1);
}

Test(core, big_alloc_refuses_an_overflowing_size) {
    cr_assert_null(s2s_big_alloc(SIZE_MAX / 2, 4));
    cr_assert(strstr(s2s_last_error(), "out of memory"), "%s", s2s_last_error());
}

Test(core, quote_shows_control_bytes_as_hex) {
    const char esc[] = "\x1b[31mred\x1b[0m";
    cr_assert_str_eq(quote(esc, strlen(esc), 96), "\\x1b[31mred\\x1b[0m");
    cr_assert_str_eq(quote("a\nb\tc\rd\x7f", 8, 96), "a\\x0ab\\x09c\\x0dd\\x7f");
    cr_assert_str_eq(quote("a\0b", 3, 96), "a\\x00b");
    // C1 controls (U+0080..U+009F; U+009B is CSI) and bytes that are no
    // UTF-8 character; U+00A0 and other characters pass.
    cr_assert_str_eq(quote("\xc2\x9b" "2J", 4, 96), "\\xc2\\x9b2J");
    cr_assert_str_eq(quote("\xc2\xa0", 2, 96), "\xc2\xa0");
    cr_assert_str_eq(quote("\x9b" "x\xff\xc3", 4, 96), "\\x9bx\\xff\\xc3");
    cr_assert_str_eq(quote("\xe2\x82", 2, 96), "\\xe2\\x82", "a truncated character");
    const char ok[] = "caf\xc3\xa9 \xe6\x88\x91 \xf0\x9f\x98\x80";
    cr_assert_str_eq(quote(ok, strlen(ok), 96), ok);
    // Every byte value: no control byte gets through, and the result is one line.
    for (int c = 0; c < 256; c++) {
        char in[1] = {(char)c};
        const char *q = quote(in, 1, 16);
        for (const char *p = q; *p; p++)
            cr_assert((unsigned char)*p >= 0x20 && *p != 0x7f, "byte %#x shown as %s", c, q);
    }
}

Test(core, quote_cuts_long_text_at_a_character) {
    char long_text[300];
    memset(long_text, 'x', sizeof long_text);
    const char *q = quote(long_text, sizeof long_text, 20);
    cr_assert_str_eq(q, "xxxxxxxxxxxxxxxx...");
    // Exactly what fits is not cut.
    cr_assert_str_eq(quote(long_text, 19, 20), "xxxxxxxxxxxxxxxxxxx");
    cr_assert_str_eq(quote(long_text, 20, 20), "xxxxxxxxxxxxxxxx...");
    // Never half of a character or of an escape.
    const char wo[] = "\xe6\x88\x91\xe6\x88\x91\xe6\x88\x91\xe6\x88\x91";  // 4 x U+6211
    cr_assert_str_eq(quote(wo, strlen(wo), 11), "\xe6\x88\x91\xe6\x88\x91...");
    const char escs[] = "\x1b\x1b\x1b\x1b\x1b";
    cr_assert_str_eq(quote(escs, 5, 13), "\\x1b\\x1b...");
    cr_assert_str_eq(quote("", 0, 8), "");
}

// ---- version ----

Test(core, version_is_one_number_everywhere) {
    char composed[32];
    snprintf(composed, sizeof composed, "%d.%d.%d", S2S_VERSION_MAJOR, S2S_VERSION_MINOR,
             S2S_VERSION_PATCH);
    cr_assert_str_eq(S2S_VERSION, composed);
    cr_assert_str_eq(s2s_version(), S2S_VERSION, "library and headers differ");
    cr_assert_str_eq(s2s_version(), S2S_CMAKE_VERSION, "CMake's project version differs");
}

// ---- did you mean ----

static const char *closest(const char *name, const char *const *cands, int n) {
    s2s_suggest s = s2s_suggest_start(name, strlen(name));
    for (int i = 0; i < n; i++) s2s_suggest_offer(&s, cands[i]);
    return s.best;
}

Test(core, suggest_finds_one_swap_or_one_typo) {
    const char *keys[] = {"layers", "heads", "d_model"};
    cr_assert_str_eq(closest("hedas", keys, 3), "heads");  // one adjacent swap
    const char *opts[] = {"--beam", "--n-best", "--max-len", "--help"};
    cr_assert_str_eq(closest("--bean", opts, 4), "--beam");     // one substitution
    cr_assert_str_eq(closest("--max-le", opts, 4), "--max-len");  // one deletion
    cr_assert_str_eq(closest("--hhelp", opts, 4), "--help");      // one insertion
}

Test(core, suggest_stays_within_the_limit) {
    // "abcd" has limit 1 + 4/4 = 2: "abxy" is 2 edits away, "wxyz" 4.
    const char *far[] = {"wxyz"}, *near[] = {"abxy"};
    cr_assert_null(closest("abcd", far, 1));
    cr_assert_str_eq(closest("abcd", near, 1), "abxy");
    // Long names allow at most 3 edits: 4 substitutions are too many.
    const char *longname[] = {"--sampling-topk"};
    cr_assert_null(closest("--sampxxxx-topk", longname, 1));
    cr_assert_str_eq(closest("--sampxxxg-topk", longname, 1), "--sampling-topk");
    // As many edits as the candidate has characters is no suggestion.
    const char *one[] = {"b"};
    cr_assert_null(closest("a", one, 1));
    cr_assert_null(closest("--zzzzzzzz", (const char *[]){"--beam", "--help"}, 2));
}

Test(core, suggest_prefers_the_nearest_then_the_first) {
    const char *cands[] = {"cart", "cat", "car"};  // 2, 1 and 1 edits from "cab"
    cr_assert_str_eq(closest("cab", cands, 3), "cat");
}
