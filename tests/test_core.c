// Tests for src/core: the FNV-1a hash against the published test vectors,
// the growable string's reserve (including reuse of a block of unknown
// size), and s2s_read_file against the bytes written.
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "core/util.h"
#include "support.h"

TestSuite(core, .init = tmpdir_make, .fini = tmpdir_remove);

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
