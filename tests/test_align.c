// Tests for src/align: Pharaoh text, AER against hand-worked cases and a
// plain counting reference, argmax links, plane selection and
// renormalisation, symmetrisation against Koehn's definitions worked by
// hand, display widths, the terminal heatmap with CJK labels, attention
// rows that are distributions (decoder and encoder self-attention; the
// cross-attention is covered, with a recomputation from the weights, in
// test_decoding.c), the hard alignment of a hypothesis, the symmetrised
// alignment of a forward/reverse model pair, the per-plane AER and
// coreference tables against plain loops, and the HTML report.
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "s2s/align.h"
#include "s2s/s2s.h"
#include "align/align.h"
#include "tools/heatmap.h"
#include "tools/html.h"

// ---- helpers ----

static s2s_alignment parse(const char *text) {
    s2s_alignment a = {0};
    cr_assert_eq(s2s_alignment_parse(&a, text, "test"), S2S_OK, "%s: %s", text, s2s_last_error());
    return a;
}

static void assert_links(const s2s_alignment *a, const char *want) {
    char *got = s2s_alignment_format(a);
    cr_assert_not_null(got);
    cr_assert_str_eq(got, want);
    free(got);
}

// A tiny deterministic generator for the property tests.
static uint64_t rng_state = 88172645463325252ull;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}

// ---- Pharaoh text ----

Test(align, pharaoh_reads_sure_and_possible_links_and_writes_them_back) {
    s2s_alignment a = parse("  5-6p 0-0\t2p1 3?4 1-1\n");
    cr_assert_eq(a.n, 5);
    const s2s_link want[] = {{0, 0, false}, {1, 1, false}, {2, 1, true}, {3, 4, true}, {5, 6, true}};
    for (int k = 0; k < 5; k++) {
        cr_assert_eq(a.links[k].src, want[k].src, "link %d", k);
        cr_assert_eq(a.links[k].tgt, want[k].tgt, "link %d", k);
        cr_assert_eq(a.links[k].possible, want[k].possible, "link %d", k);
    }
    assert_links(&a, "0-0 1-1 2p1 3p4 5p6");
    // What format writes parses back to the same links.
    char *text = s2s_alignment_format(&a);
    s2s_alignment b = parse(text);
    cr_assert_eq(b.n, a.n);
    for (int k = 0; k < a.n; k++) {  // field by field: s2s_link has padding bytes
        cr_assert_eq(a.links[k].src, b.links[k].src, "link %d", k);
        cr_assert_eq(a.links[k].tgt, b.links[k].tgt, "link %d", k);
        cr_assert_eq(a.links[k].possible, b.links[k].possible, "link %d", k);
    }
    free(text);
    s2s_alignment_free(&a);
    s2s_alignment_free(&b);
    s2s_alignment e = parse("");
    cr_assert_eq(e.n, 0);
    assert_links(&e, "");
    s2s_alignment_free(&e);
}

Test(align, coref_column_gives_pronoun_to_antecedent_links_per_side) {
    s2s_alignment src = {0}, tgt = {0};
    cr_assert_eq(s2s_coref_parse(&src, &tgt, "9-1 3-1|7-1", "c.tsv:2"), S2S_OK);
    cr_assert_eq(src.n, 2);
    cr_assert(src.links[0].src == 3 && src.links[0].tgt == 1);  // normalized order
    cr_assert(src.links[1].src == 9 && src.links[1].tgt == 1);
    cr_assert_eq(tgt.n, 1);
    cr_assert(tgt.links[0].src == 7 && tgt.links[0].tgt == 1);

    cr_assert_eq(s2s_coref_parse(&src, &tgt, "4-0|", "c.tsv:3"), S2S_OK);  // Chinese repeats the noun
    cr_assert(src.n == 1 && tgt.n == 0);
    cr_assert_eq(s2s_coref_parse(&src, &tgt, "|2-0", "c.tsv:4"), S2S_OK);
    cr_assert(src.n == 0 && tgt.n == 1);
    cr_assert_eq(s2s_coref_parse(&src, &tgt, NULL, "c.tsv:5"), S2S_OK);  // no column
    cr_assert(src.n == 0 && tgt.n == 0);

    cr_assert_eq(s2s_coref_parse(&src, &tgt, "4-0", "c.tsv:6"), S2S_ERR_FORMAT);
    cr_assert_str_eq(s2s_last_error(), "c.tsv:6: bad coreference column '4-0' (expected SRC|TGT)");
    cr_assert_eq(s2s_coref_parse(&src, &tgt, "4-0|1-0|2-0", "c.tsv:7"), S2S_ERR_FORMAT);
    cr_assert_eq(s2s_coref_parse(&src, &tgt, "4-x|", "c.tsv:8"), S2S_ERR_FORMAT);
    cr_assert(strstr(s2s_last_error(), "c.tsv:8: bad alignment link '4-x'"));
    s2s_alignment_free(&src);
    s2s_alignment_free(&tgt);
}

Test(align, duplicate_links_merge_and_sure_wins) {
    s2s_alignment a = parse("1p2 1-2 1-2 0p0 0p0");
    assert_links(&a, "0p0 1-2");
    cr_assert(s2s_alignment_has(&a, 1, 2));
    cr_assert(s2s_alignment_has(&a, 0, 0));
    cr_assert_not(s2s_alignment_has(&a, 2, 1));
    s2s_alignment_free(&a);
}

Test(align, bad_pharaoh_links_are_refused_with_the_place_and_the_link) {
    const char *bad[] = {"0-0 1-x", "1--2", "-1-2", "1-2q", "99999999999-1", "1-2pp", "3", "a-b", "1p2p"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s2s_alignment a = {0};
        cr_assert_eq(s2s_alignment_parse(&a, bad[i], "dev.tsv:3"), S2S_ERR_FORMAT, "'%s' accepted", bad[i]);
        cr_assert(strstr(s2s_last_error(), "dev.tsv:3: bad alignment link '"), "%s", s2s_last_error());
        s2s_alignment_free(&a);
    }
    s2s_alignment a = parse("0-0 4-2");
    cr_assert_eq(s2s_alignment_check(&a, 5, 3, "x"), S2S_OK);
    cr_assert_eq(s2s_alignment_check(&a, 4, 3, "dev.tsv:9"), S2S_ERR_FORMAT);
    cr_assert(strstr(s2s_last_error(), "dev.tsv:9: alignment link 4-2 out of range"), "%s", s2s_last_error());
    s2s_alignment_free(&a);
}

// ---- AER ----

static void assert_aer(const char *hyp, const char *gold, double aer, double p, double r) {
    s2s_alignment h = parse(hyp), g = parse(gold);
    s2s_aer_counts c = {0};
    s2s_aer_add(&c, &h, &g);
    cr_assert_float_eq(s2s_aer(&c), aer, 1e-12, "hyp '%s' gold '%s': AER %g", hyp, gold, s2s_aer(&c));
    cr_assert_float_eq(s2s_aer_precision(&c), p, 1e-12, "hyp '%s' gold '%s'", hyp, gold);
    cr_assert_float_eq(s2s_aer_recall(&c), r, 1e-12, "hyp '%s' gold '%s'", hyp, gold);
    s2s_alignment_free(&h);
    s2s_alignment_free(&g);
}

Test(align, aer_precision_and_recall_on_hand_worked_cases) {
    // |A|=3 |S|=2 |A∩S|=1 |A∩P|=2: AER = 1 - 3/5.
    assert_aer("0-0 1-2 2-2", "0-0 1-1 1p2", 0.4, 2.0 / 3.0, 0.5);
    assert_aer("0-0 1-1", "0-0 1-1", 0.0, 1.0, 1.0);
    assert_aer("0-1 1-0", "0-0 1-1", 1.0, 0.0, 0.0);
    // Only a possible link hit: precision 1, recall 0, AER 1 - 1/2.
    assert_aer("0-1", "0-0 0p1", 0.5, 1.0, 0.0);
    // Possible links are not needed: all sure found, AER 0 although P is bigger.
    assert_aer("0-0", "0-0 1p1 2p2", 0.0, 1.0, 1.0);
    // A hypothesis's possible flag does not matter.
    assert_aer("0p0", "0-0", 0.0, 1.0, 1.0);
    // Nothing proposed, nothing sure.
    assert_aer("", "", 0.0, 1.0, 1.0);
    assert_aer("", "0-0", 1.0, 1.0, 0.0);
}

Test(align, aer_sums_counts_over_the_corpus) {
    s2s_alignment h1 = parse("0-0 1-2 2-2"), g1 = parse("0-0 1-1 1p2");
    s2s_alignment h2 = parse("0-0 1-1"), g2 = parse("0-0 1-1");
    s2s_aer_counts c = {0};
    s2s_aer_add(&c, &h1, &g1);
    s2s_aer_add(&c, &h2, &g2);
    cr_assert_eq(c.a, 5);
    cr_assert_eq(c.s, 4);
    cr_assert_eq(c.a_s, 3);
    cr_assert_eq(c.a_p, 4);
    cr_assert_float_eq(s2s_aer(&c), 1.0 - 7.0 / 9.0, 1e-12);
    s2s_alignment_free(&h1);
    s2s_alignment_free(&g1);
    s2s_alignment_free(&h2);
    s2s_alignment_free(&g2);
}

// Random alignments against counting over a dense matrix.
Test(align, aer_counts_equal_plain_counting_on_random_alignments) {
    for (int trial = 0; trial < 200; trial++) {
        int ns = 1 + (int)(rnd() % 7), nt = 1 + (int)(rnd() % 7);
        int gold[8][8] = {{0}}, hyp[8][8] = {{0}};  // 0 none, 1 sure, 2 possible
        s2s_alignment h = {0}, g = {0};
        for (int i = 0; i < ns; i++)
            for (int j = 0; j < nt; j++) {
                uint32_t x = rnd() % 6;
                gold[i][j] = x == 0 ? 1 : x == 1 ? 2 : 0;
                hyp[i][j] = rnd() % 4 == 0;
                if (gold[i][j]) cr_assert_eq(s2s_alignment_add(&g, i, j, gold[i][j] == 2), S2S_OK);
                if (hyp[i][j]) cr_assert_eq(s2s_alignment_add(&h, i, j, false), S2S_OK);
            }
        s2s_alignment_normalize(&g);
        s2s_alignment_normalize(&h);
        long long a = 0, s = 0, as = 0, ap = 0;
        for (int i = 0; i < ns; i++)
            for (int j = 0; j < nt; j++) {
                a += hyp[i][j];
                s += gold[i][j] == 1;
                as += hyp[i][j] && gold[i][j] == 1;
                ap += hyp[i][j] && gold[i][j] != 0;
            }
        s2s_aer_counts c = {0};
        s2s_aer_add(&c, &h, &g);
        cr_assert(c.a == a && c.s == s && c.a_s == as && c.a_p == ap, "trial %d", trial);
        double want = a + s ? 1.0 - (double)(as + ap) / (double)(a + s) : 0.0;
        cr_assert_float_eq(s2s_aer(&c), want, 1e-12);
        s2s_alignment_free(&h);
        s2s_alignment_free(&g);
    }
}

// ---- from attention to links ----

Test(align, argmax_links_each_target_token_and_skips_eos) {
    // 3 target tokens x (3 source tokens + </s>)
    const float w[3 * 4] = {
        0.7f, 0.1f, 0.1f, 0.1f,  // -> source 0
        0.1f, 0.2f, 0.3f, 0.4f,  // -> </s>: unaligned
        0.2f, 0.4f, 0.4f, 0.0f,  // tie: the first, source 1
    };
    s2s_alignment a = {0};
    cr_assert_eq(s2s_align_argmax(&a, w, 3, 4, 3), S2S_OK);
    assert_links(&a, "0-0 1-2");
    // Without the </s> column, row 1 goes to its best real token.
    float d[3 * 3];
    bool keep[4] = {true, true, true, false};
    cr_assert_eq(s2s_attn_drop_columns(d, w, 3, 4, keep), 3);
    cr_assert_eq(s2s_align_argmax(&a, d, 3, 3, 3), S2S_OK);
    assert_links(&a, "0-0 1-2 2-1");
    s2s_alignment_free(&a);
}

// A share below 1 also links the other source tokens with at least that
// share of the row's largest weight; never a special column, and a row
// whose largest weight is on one stays unaligned.
Test(align, share_links_every_source_token_near_the_largest) {
    const float w[4 * 4] = {
        0.50f, 0.45f, 0.05f, 0.00f,  // two near-equal: both from share 0.9
        0.30f, 0.10f, 0.30f, 0.30f,  // a tie at 0.3, </s> too
        0.10f, 0.20f, 0.30f, 0.40f,  // -> </s>: unaligned at any share
        0.60f, NAN,   0.15f, 0.25f,  // NaN skipped; </s> at 0.25 never linked
    };
    s2s_alignment a = {0};
    cr_assert_eq(s2s_align_share(&a, w, 4, 4, 3, 1.0f), S2S_OK);
    assert_links(&a, "0-0 0-1 0-3");  // = argmax
    cr_assert_eq(s2s_align_share(&a, w, 4, 4, 3, 0.9f), S2S_OK);
    assert_links(&a, "0-0 0-1 0-3 1-0 2-1");
    cr_assert_eq(s2s_align_share(&a, w, 4, 4, 3, 0.25f), S2S_OK);
    assert_links(&a, "0-0 0-1 0-3 1-0 1-1 2-1 2-3");
    s2s_alignment_free(&a);
}

Test(align, dropping_columns_renormalises_each_row) {
    const float w[3 * 4] = {
        0.1f, 0.2f, 0.3f, 0.4f,
        1.0f, 0.0f, 0.0f, 0.0f,  // all mass on the dropped column
        0.25f, 0.25f, 0.25f, 0.25f,
    };
    bool keep[4] = {false, true, true, true};
    float d[9];
    cr_assert_eq(s2s_attn_drop_columns(d, w, 3, 4, keep), 3);
    cr_assert_float_eq(d[0], 0.2f / 0.9f, 1e-6);
    cr_assert_float_eq(d[2], 0.4f / 0.9f, 1e-6);
    for (int r = 0; r < 3; r++) {
        double sum = d[r * 3] + d[r * 3 + 1] + d[r * 3 + 2];
        if (r == 1)
            cr_assert_float_eq(sum, 0.0, 1e-9, "a row without kept mass stays zero");
        else
            cr_assert_float_eq(sum, 1.0, 1e-6, "row %d", r);
    }
    cr_assert_float_eq(d[6], 1.0f / 3.0f, 1e-6);
}

Test(align, select_returns_a_plane_or_the_mean_of_layers_and_heads) {
    enum { L = 2, H = 3, R = 2, C = 3 };
    float maps[L * H * R * C], out[R * C];
    for (int k = 0; k < L * H * R * C; k++) maps[k] = (float)(rnd() % 1000) / 1000.0f;
#define AT(l, h, e) maps[((l) * H + (h)) * R * C + (e)]
    cr_assert_eq(s2s_attn_select(out, maps, L, H, R, C, 1, 2), S2S_OK);
    for (int e = 0; e < R * C; e++) cr_assert_float_eq(out[e], AT(1, 2, e), 1e-7);
    cr_assert_eq(s2s_attn_select(out, maps, L, H, R, C, 0, S2S_ALIGN_AVG), S2S_OK);
    for (int e = 0; e < R * C; e++)
        cr_assert_float_eq(out[e], (AT(0, 0, e) + AT(0, 1, e) + AT(0, 2, e)) / 3, 1e-6);
    cr_assert_eq(s2s_attn_select(out, maps, L, H, R, C, S2S_ALIGN_AVG, 1), S2S_OK);
    for (int e = 0; e < R * C; e++) cr_assert_float_eq(out[e], (AT(0, 1, e) + AT(1, 1, e)) / 2, 1e-6);
    cr_assert_eq(s2s_attn_select(out, maps, L, H, R, C, S2S_ALIGN_AVG, S2S_ALIGN_AVG), S2S_OK);
    for (int e = 0; e < R * C; e++) {
        double m = 0;
        for (int l = 0; l < L; l++)
            for (int h = 0; h < H; h++) m += AT(l, h, e);
        cr_assert_float_eq(out[e], m / (L * H), 1e-6);
    }
#undef AT
    cr_assert_eq(s2s_attn_select(out, maps, L, H, R, C, 2, 0), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "layer 2 out of range"), "%s", s2s_last_error());
    cr_assert_eq(s2s_attn_select(out, maps, L, H, R, C, 0, 3), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "head 3 out of range (the model has 3 heads: 0-2)"), "%s",
              s2s_last_error());
    cr_assert_eq(s2s_attn_select(out, maps, L, H, R, C, -5, 0), S2S_ERR_INVALID);
}

// ---- symmetrisation ----

static void assert_sym(const s2s_alignment *f, const s2s_alignment *r, int ns, int nt,
                       s2s_symmetrize m, const char *want) {
    s2s_alignment out = {0};
    cr_assert_eq(s2s_align_symmetrize(&out, f, r, ns, nt, m), S2S_OK, "%s", s2s_last_error());
    char *got = s2s_alignment_format(&out);
    cr_assert_str_eq(got, want, "%s", s2s_symmetrize_name(m));
    free(got);
    s2s_alignment_free(&out);
}

// Worked by hand from Koehn's GROW-DIAG-FINAL(-AND) pseudocode:
// intersection {0-0 1-1}; 2-2 is a union link diagonal to 1-1 with source
// 2 unaligned, so grow-diag adds it; 0-1 is a union link whose words are
// both aligned, so nothing adds it; 4-4 (forward) and 4-3 (reverse) touch
// nothing: FINAL adds 4-4 (source 4 free), then 4-3 (target 3 still free);
// FINAL-AND adds 4-4 (both free) but not 4-3 (source 4 taken by then).
Test(align, symmetrization_matches_the_definitions_on_a_hand_worked_case) {
    s2s_alignment f = parse("0-0 0-1 1-1 2-2 4-4"), r = parse("0-0 1-1 4-3");
    assert_sym(&f, &r, 5, 5, S2S_SYM_INTERSECTION, "0-0 1-1");
    assert_sym(&f, &r, 5, 5, S2S_SYM_UNION, "0-0 0-1 1-1 2-2 4-3 4-4");
    assert_sym(&f, &r, 5, 5, S2S_SYM_GROW_DIAG, "0-0 1-1 2-2");
    assert_sym(&f, &r, 5, 5, S2S_SYM_GROW_DIAG_FINAL, "0-0 1-1 2-2 4-3 4-4");
    assert_sym(&f, &r, 5, 5, S2S_SYM_GROW_DIAG_FINAL_AND, "0-0 1-1 2-2 4-4");
    s2s_alignment_free(&f);
    s2s_alignment_free(&r);
}

// grow-diag only reaches union links next to the alignment, but follows
// chains of them; horizontal neighbours count too (1-2 next to 1-1, with
// target 2 free).
Test(align, grow_diag_grows_along_chains_and_sideways) {
    s2s_alignment f = parse("0-0 2-2 3-3"), r = parse("0-0");
    assert_sym(&f, &r, 4, 4, S2S_SYM_GROW_DIAG, "0-0");
    s2s_alignment f2 = parse("0-0 1-1 2-2 3-3"), r2 = parse("0-0 1-1");
    assert_sym(&f2, &r2, 4, 4, S2S_SYM_GROW_DIAG, "0-0 1-1 2-2 3-3");
    s2s_alignment f3 = parse("0-0 1-1 1-2"), r3 = parse("0-0 1-1");
    assert_sym(&f3, &r3, 2, 3, S2S_SYM_GROW_DIAG, "0-0 1-1 1-2");
    s2s_alignment_free(&f);
    s2s_alignment_free(&r);
    s2s_alignment_free(&f2);
    s2s_alignment_free(&r2);
    s2s_alignment_free(&f3);
    s2s_alignment_free(&r3);
}

static bool subset(const s2s_alignment *a, const s2s_alignment *b) {
    for (int k = 0; k < a->n; k++)
        if (!s2s_alignment_has(b, a->links[k].src, a->links[k].tgt)) return false;
    return true;
}

Test(align, symmetrizations_nest_between_intersection_and_union) {
    for (int trial = 0; trial < 200; trial++) {
        int ns = 1 + (int)(rnd() % 8), nt = 1 + (int)(rnd() % 8);
        s2s_alignment f = {0}, r = {0}, out[S2S_SYM_COUNT] = {{0}};
        for (int i = 0; i < ns; i++)
            for (int j = 0; j < nt; j++) {
                if (rnd() % 4 == 0) s2s_alignment_add(&f, i, j, false);
                if (rnd() % 4 == 0) s2s_alignment_add(&r, i, j, false);
            }
        s2s_alignment_normalize(&f);
        s2s_alignment_normalize(&r);
        for (int m = 0; m < S2S_SYM_COUNT; m++)
            cr_assert_eq(s2s_align_symmetrize(&out[m], &f, &r, ns, nt, (s2s_symmetrize)m), S2S_OK);
        cr_assert(subset(&out[S2S_SYM_INTERSECTION], &out[S2S_SYM_GROW_DIAG]));
        // (-final-and is not always inside -final: adding less in the
        // forward pass can leave words free for the reverse pass.)
        cr_assert(subset(&out[S2S_SYM_GROW_DIAG], &out[S2S_SYM_GROW_DIAG_FINAL_AND]));
        cr_assert(subset(&out[S2S_SYM_GROW_DIAG], &out[S2S_SYM_GROW_DIAG_FINAL]));
        cr_assert(subset(&out[S2S_SYM_GROW_DIAG_FINAL], &out[S2S_SYM_UNION]));
        cr_assert(subset(&out[S2S_SYM_GROW_DIAG_FINAL_AND], &out[S2S_SYM_UNION]));
        // Intersection and union by definition.
        for (int i = 0; i < ns; i++)
            for (int j = 0; j < nt; j++) {
                bool a = s2s_alignment_has(&f, i, j), b = s2s_alignment_has(&r, i, j);
                cr_assert_eq(s2s_alignment_has(&out[S2S_SYM_INTERSECTION], i, j), a && b);
                cr_assert_eq(s2s_alignment_has(&out[S2S_SYM_UNION], i, j), a || b);
            }
        // -final leaves no word unaligned that a union link could cover
        // with a link touching an unaligned word.
        const s2s_alignment *g = &out[S2S_SYM_GROW_DIAG_FINAL];
        for (int k = 0; k < out[S2S_SYM_UNION].n; k++) {
            int i = out[S2S_SYM_UNION].links[k].src, j = out[S2S_SYM_UNION].links[k].tgt;
            bool i_free = true, j_free = true;
            for (int q = 0; q < g->n; q++) {
                if (g->links[q].src == i) i_free = false;
                if (g->links[q].tgt == j) j_free = false;
            }
            cr_assert(!(i_free || j_free), "trial %d: union link %d-%d left out", trial, i, j);
        }
        s2s_alignment_free(&f);
        s2s_alignment_free(&r);
        for (int m = 0; m < S2S_SYM_COUNT; m++) s2s_alignment_free(&out[m]);
    }
}

Test(align, symmetrize_refuses_links_outside_the_sentence_and_names_methods) {
    s2s_alignment f = parse("0-0 3-1"), r = parse("0-0"), out = {0};
    cr_assert_eq(s2s_align_symmetrize(&out, &f, &r, 2, 2, S2S_SYM_UNION), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "forward link 3-1 out of range"), "%s", s2s_last_error());
    s2s_symmetrize m;
    for (int k = 0; k < S2S_SYM_COUNT; k++) {
        cr_assert(s2s_symmetrize_parse(s2s_symmetrize_name((s2s_symmetrize)k), &m));
        cr_assert_eq((int)m, k);
    }
    cr_assert_not(s2s_symmetrize_parse("grow", &m));
    cr_assert_null(s2s_symmetrize_name(S2S_SYM_COUNT));
    s2s_alignment_transpose(&f);
    assert_links(&f, "0-0 1-3");
    s2s_alignment_free(&f);
    s2s_alignment_free(&r);
    s2s_alignment_free(&out);
}

// ---- terminal ----

Test(align, display_width_counts_cjk_double_and_marks_zero) {
    cr_assert_eq(s2s_display_width("abc"), 3);
    cr_assert_eq(s2s_display_width("猫"), 2);
    cr_assert_eq(s2s_display_width("我爱吃苹果"), 10);
    cr_assert_eq(s2s_display_width("，。？"), 6);      // fullwidth punctuation
    cr_assert_eq(s2s_display_width("ｱ"), 1);           // halfwidth katakana
    cr_assert_eq(s2s_display_width("한국"), 4);
    cr_assert_eq(s2s_display_width("e\xCC\x81"), 1);  // e + combining acute
    cr_assert_eq(s2s_display_width("\xF0\x9F\x98\x80"), 2);  // 😀
    cr_assert_eq(s2s_display_width("░▒▓█"), 4);
    cr_assert_eq(s2s_display_width("\x1b[38;5;45mred\x1b[0m"), 3);
    cr_assert_eq(s2s_display_width("a\xFF" "b"), 3);   // an invalid byte counts 1
    cr_assert_eq(s2s_display_width(""), 0);
}

Test(align, display_width_counts_each_byte_of_bad_utf8_once) {
    cr_assert_eq(s2s_display_width("\xE7\x8C"), 2);      // 猫 cut short
    cr_assert_eq(s2s_display_width("\xC0\xAF"), 2);      // overlong '/'
    cr_assert_eq(s2s_display_width("\xED\xA0\x80"), 3);  // a surrogate
    cr_assert_eq(s2s_display_width("\xF4\x90\x80\x80"), 4);  // above U+10FFFF
    cr_assert_eq(s2s_display_width("\xE7\x8C\xAB\x80"), 3);  // 猫, then a stray continuation
}

static void assert_even_lines(const char *text, int want_lines) {
    int lines = 0, width = -1;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        cr_assert_not_null(nl, "every line ends in a newline");
        char *line = strndup(p, (size_t)(nl - p));
        int w = s2s_display_width(line);
        if (width < 0) width = w;
        cr_assert_eq(w, width, "line %d is %d columns wide, line 0 %d:\n%s", lines, w, width, text);
        free(line);
        lines++;
        p = nl + 1;
    }
    cr_assert_eq(lines, want_lines);
}

Test(align, heatmap_lines_have_one_width_with_cjk_tokens) {
    const char *rows[] = {"i", "love", "to", "eat", "apples", "</s>"};
    const char *cols[] = {"我", "爱", "吃", "苹果", "。", "</s>"};
    float w[6 * 6];
    for (int r = 0; r < 6; r++) {
        double sum = 0;
        for (int c = 0; c < 6; c++) sum += w[r * 6 + c] = (float)(1 + (r * 7 + c * 3) % 5);
        for (int c = 0; c < 6; c++) w[r * 6 + c] = (float)(w[r * 6 + c] / sum);
    }
    w[0] = 1.0f;
    w[1] = 0.0f;
    for (int color = 0; color < 2; color++) {
        char *t = s2s_heatmap_text(w, 6, 6, rows, cols, color);
        cr_assert_not_null(t);
        assert_even_lines(t, 7);
        cr_assert(strstr(t, "苹果"), "%s", t);
        cr_assert_eq(strstr(t, "\x1b[") != NULL, color == 1, "colour only when asked");
        // A weight of 1 is a full block; a weight of 0 is blank.
        const char *row1 = strchr(t, '\n') + 1;
        cr_assert(strstr(row1, "\xE2\x96\x88\xE2\x96\x88"), "%s", t);
        free(t);
    }
    // CJK row labels, a long label cut with "…", a label with a control byte.
    const char *r2[] = {"猫", "超级长的中文词语标签还有更多", "x\x1b[31my"};
    const char *c2[] = {"averyveryverylongword", "狗", "b"};
    float w2[9] = {0.2f, 0.3f, 0.5f, 0.9f, 0.05f, 0.05f, 0.0f, 0.0f, 1.0f};
    char *t = s2s_heatmap_text(w2, 3, 3, r2, c2, false);
    cr_assert_not_null(t);
    assert_even_lines(t, 4);
    cr_assert(strstr(t, "\xE2\x80\xA6"), "long labels are cut with an ellipsis:\n%s", t);
    cr_assert_null(strstr(t, "\x1b"), "control bytes in labels are replaced:\n%s", t);
    free(t);
}

// ---- attention maps from the library ----

static s2s_model *ref_model(uint64_t seed) {
    s2s_config c;
    s2s_config_default(&c);
    cr_assert_eq(s2s_config_load_file(&c, S2S_TEST_DATA "/ref/pre_relu_tied.yaml"), S2S_OK, "%s",
                 s2s_last_error());
    s2s_model *m;
    cr_assert_eq(s2s_model_init(&m, &c, seed), S2S_OK, "%s", s2s_last_error());
    return m;
}

static void assert_distributions(const float *maps, int planes, int rows, int cols, bool causal,
                                 const char *what) {
    for (int p = 0; p < planes; p++)
        for (int r = 0; r < rows; r++) {
            const float *x = maps + ((size_t)p * rows + r) * cols;
            double sum = 0;
            for (int c = 0; c < cols; c++) {
                cr_assert(x[c] >= 0.0f && x[c] <= 1.0f, "%s plane %d row %d col %d: %g", what, p, r, c, x[c]);
                if (causal && c > r) cr_assert_eq(x[c], 0.0f, "%s: row %d sees the future", what, r);
                sum += x[c];
            }
            cr_assert_float_eq(sum, 1.0, 1e-5, "%s plane %d row %d sums to %g", what, p, r, sum);
        }
}

// Cross-attention rows are checked (with a recomputation from the weights)
// in test_decoding.c; here the self-attention maps align also shows.
Test(align, self_attention_rows_are_distributions) {
    s2s_model *m = ref_model(7);
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    const s2s_vocab *sv = s2s_model_src_vocab(m), *tv = s2s_model_tgt_vocab(m);
    s2s_tokens s = {0}, t = {0};
    cr_assert_eq(s2s_tokenize(sv, "der hund sitzt auf der matte", &s), S2S_OK);
    cr_assert_eq(s2s_tokenize(tv, "the dog sits on the mat", &t), S2S_OK);
    s2s_decode_params p = s2s_decode_default_params(m);
    p.want_attention = p.want_self_attention = true;
    const int *src[1] = {s.ids}, *tgt[1] = {t.ids};
    s2s_hypothesis h;
    cr_assert_eq(s2s_score(st, &p, src, &s.n, tgt, &t.n, 1, &h), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(h.n_out, t.n + 1);
    cr_assert_eq(h.n_src, s.n + 1);
    cr_assert_not_null(h.self_attn);
    cr_assert_not_null(h.enc_attn);
    assert_distributions(h.cross_attn, h.layers * h.heads, h.n_out, h.n_src, false, "cross");
    assert_distributions(h.self_attn, h.layers * h.heads, h.n_out, h.n_out, true, "decoder self");
    assert_distributions(h.enc_attn, h.enc_layers * h.heads, h.n_src, h.n_src, false, "encoder self");
    // Averaged planes are distributions too, and argmax gives one link per
    // target token once </s> is left out.
    float *w = malloc((size_t)h.n_out * h.n_src * sizeof *w), *d = malloc((size_t)h.n_out * h.n_src * sizeof *d);
    bool keep[64];
    for (int c = 0; c < h.n_src; c++) keep[c] = c < h.n_src - 1;
    cr_assert_eq(s2s_attn_select(w, h.cross_attn, h.layers, h.heads, h.n_out, h.n_src,
                                 S2S_ALIGN_AVG, S2S_ALIGN_AVG), S2S_OK);
    assert_distributions(w, 1, h.n_out, h.n_src, false, "average");
    int cols = s2s_attn_drop_columns(d, w, h.n_out, h.n_src, keep);
    assert_distributions(d, 1, h.n_out, cols, false, "without </s>");
    s2s_alignment a = {0};
    cr_assert_eq(s2s_align_argmax(&a, d, h.n, cols, cols), S2S_OK);
    cr_assert_eq(a.n, t.n);
    cr_assert_eq(s2s_alignment_check(&a, s.n, t.n, "x"), S2S_OK);
    s2s_alignment_free(&a);
    free(w);
    free(d);
    s2s_hypothesis_free(&h);
    s2s_tokens_free(&s);
    s2s_tokens_free(&t);
    s2s_state_free(st);
    s2s_model_free(m);
}

// ---- each head's attention pattern ----

// The reference model with variants on every attention: encoder heads 1
// and 2 local (window 2), the decoder's self-attention strided (stride 3)
// in layer 1, cross-attention head 3 linear.
static s2s_model *variant_model(uint64_t seed) {
    s2s_config c;
    s2s_config_default(&c);
    cr_assert_eq(s2s_config_load_file(&c, S2S_TEST_DATA "/ref/pre_relu_tied.yaml"), S2S_OK, "%s",
                 s2s_last_error());
    c.model.encoder_attention = (s2s_attention_config){
        .type = S2S_ATTN_LOCAL, .window = 2, .block = 1, .stride = 2, .heads = {2, {1, 2}}};
    c.model.decoder_attention = (s2s_attention_config){
        .type = S2S_ATTN_STRIDED, .window = 1, .block = 1, .stride = 3, .layers = {1, {1}}};
    c.model.cross_attention = (s2s_attention_config){
        .type = S2S_ATTN_LINEAR, .window = 1, .block = 1, .stride = 2, .heads = {1, {3}}};
    s2s_model *m;
    cr_assert_eq(s2s_model_init(&m, &c, seed), S2S_OK, "%s", s2s_last_error());
    return m;
}

// The semantics of issue 29 / docs/attention.md, spelled out again.
static bool plain_sees(s2s_attn_type t, int span, bool causal, int i, int j) {
    if (causal && j > i) return false;
    switch (t) {
    case S2S_ATTN_LOCAL: return abs(i - j) <= span;
    case S2S_ATTN_BLOCK: return i / span == j / span;
    case S2S_ATTN_STRIDED: return abs(i - j) < span || (i - j) % span == 0;
    default: return true;
    }
}

Test(align, head_patterns_follow_the_config_and_hide_what_the_semantics_say) {
    s2s_model *m = variant_model(3), *full = ref_model(3);
    struct { s2s_attn_map map; int layer, head; s2s_attn_type type; int span; bool causal;
             const char *text; } want[] = {
        {S2S_ATTN_MAP_ENC, 0, 0, S2S_ATTN_FULL, 0, false, "full"},
        {S2S_ATTN_MAP_ENC, 1, 1, S2S_ATTN_LOCAL, 2, false, "local, window 2"},
        {S2S_ATTN_MAP_ENC, 0, 2, S2S_ATTN_LOCAL, 2, false, "local, window 2"},
        {S2S_ATTN_MAP_SELF, 0, 0, S2S_ATTN_FULL, 0, true, "full"},
        {S2S_ATTN_MAP_SELF, 1, 3, S2S_ATTN_STRIDED, 3, true, "strided, stride 3"},
        {S2S_ATTN_MAP_CROSS, 1, 2, S2S_ATTN_FULL, 0, false, "full"},
        {S2S_ATTN_MAP_CROSS, 0, 3, S2S_ATTN_LINEAR, 0, false, "linear"},
        {S2S_ATTN_MAP_CROSS, 5, 3, S2S_ATTN_FULL, 0, false, "full"},  // no such layer
    };
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        s2s_head_pattern p = s2s_model_head_pattern(m, want[k].map, want[k].layer, want[k].head);
        char text[48];
        cr_assert_eq(p.type, want[k].type, "case %zu", k);
        cr_assert_eq(p.span, want[k].span, "case %zu", k);
        cr_assert_eq(p.causal, want[k].causal, "case %zu", k);
        cr_assert_str_eq(s2s_head_pattern_text(&p, text, sizeof text), want[k].text);
    }
    for (int t = 0; t < S2S_ATTN_MAP_COUNT; t++) {
        cr_assert(s2s_model_attn_varies(m, (s2s_attn_map)t), "map %d", t);
        cr_assert_not(s2s_model_attn_varies(full, (s2s_attn_map)t), "a full model's map %d", t);
    }
    // Key by key against the semantics, every type and span, causal or not.
    for (int t = 0; t < S2S_ATTN_TYPE_COUNT; t++)
        for (int span = 1; span <= 4; span++)
            for (int causal = 0; causal < 2; causal++) {
                if (t == S2S_ATTN_STRIDED && span < 2) continue;  // stride >= 2
                s2s_head_pattern p = {(s2s_attn_type)t, span, causal};
                for (int i = 0; i < 12; i++)
                    for (int j = 0; j < 12; j++)
                        cr_assert_eq(s2s_head_pattern_sees(&p, i, j),
                                     plain_sees((s2s_attn_type)t, span, causal, i, j),
                                     "type %d span %d causal %d: %d sees %d", t, span, causal, i, j);
            }
    char small[6];
    s2s_head_pattern p = {S2S_ATTN_STRIDED, 3, false};
    cr_assert_str_eq(s2s_head_pattern_text(&p, small, sizeof small), "strid", "cut to the buffer");
    s2s_model_free(m);
    s2s_model_free(full);
}

// Every plane of a variant model's maps is 0 exactly where the pattern
// hides the key: softmax and the linear heads' phi (elu + 1 > 0) give every
// key they see some weight. A mean sees what any of its planes sees.
Test(align, variant_maps_are_zero_exactly_where_the_pattern_hides_the_key) {
    s2s_model *m = variant_model(5);
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    s2s_tokens s = {0}, t = {0};
    cr_assert_eq(s2s_tokenize(s2s_model_src_vocab(m), "der hund sitzt auf der matte", &s), S2S_OK);
    cr_assert_eq(s2s_tokenize(s2s_model_tgt_vocab(m), "the dog sits on the mat", &t), S2S_OK);
    s2s_decode_params p = s2s_decode_default_params(m);
    p.want_attention = p.want_self_attention = true;
    const int *src[1] = {s.ids}, *tgt[1] = {t.ids};
    s2s_hypothesis h;
    cr_assert_eq(s2s_score(st, &p, src, &s.n, tgt, &t.n, 1, &h), S2S_OK, "%s", s2s_last_error());
    struct { s2s_attn_map map; const float *w; int layers, rows, cols; } maps[] = {
        {S2S_ATTN_MAP_CROSS, h.cross_attn, h.layers, h.n_out, h.n_src},
        {S2S_ATTN_MAP_SELF, h.self_attn, h.layers, h.n_out, h.n_out},
        {S2S_ATTN_MAP_ENC, h.enc_attn, h.enc_layers, h.n_src, h.n_src},
    };
    float *w = malloc(64 * 64 * sizeof *w);
    bool *seen = malloc(64 * 64 * sizeof *seen);
    int hidden[S2S_ATTN_MAP_COUNT] = {0};
    for (int k = 0; k < S2S_ATTN_MAP_COUNT; k++)
        for (int l = -1; l < maps[k].layers; l++)
            for (int hd = -1; hd < h.heads; hd++) {
                int R = maps[k].rows, C = maps[k].cols;
                cr_assert_eq(s2s_attn_select(w, maps[k].w, maps[k].layers, h.heads, R, C, l, hd), S2S_OK);
                cr_assert_eq(s2s_attn_select_seen(seen, m, maps[k].map, R, C, l, hd), S2S_OK, "%s",
                             s2s_last_error());
                for (int e = 0; e < R * C; e++) {
                    cr_assert_eq(w[e] > 0.0f, seen[e], "map %d layer %d head %d cell (%d, %d): %g",
                                 k, l, hd, e / C, e % C, w[e]);
                    hidden[k] += l >= 0 && hd >= 0 && !seen[e];
                }
            }
    cr_assert_eq(hidden[S2S_ATTN_MAP_CROSS], 0, "cross-attention hides nothing");
    int n = h.n_out, local = 0;  // causal cut in every self plane, plus the strided layer's
    for (int i = 0; i < h.n_src; i++)
        for (int j = 0; j < h.n_src; j++) local += abs(i - j) > 2;
    cr_assert_eq(hidden[S2S_ATTN_MAP_ENC], 2 * 2 * local, "2 local heads in 2 layers");
    int strided = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++) strided += !(i - j < 3 || (i - j) % 3 == 0);
    cr_assert_eq(hidden[S2S_ATTN_MAP_SELF], 8 * n * (n - 1) / 2 + 4 * strided);
    cr_assert_eq(s2s_attn_select_seen(seen, m, S2S_ATTN_MAP_ENC, 2, 2, 2, 0), S2S_ERR_INVALID);
    cr_assert_eq(s2s_attn_select_seen(seen, m, S2S_ATTN_MAP_ENC, 2, 2, 0, 4), S2S_ERR_INVALID);
    free(w);
    free(seen);
    s2s_hypothesis_free(&h);
    s2s_tokens_free(&s);
    s2s_tokens_free(&t);
    s2s_state_free(st);
    s2s_model_free(m);
}

Test(align, heatmap_draws_hidden_keys_apart_from_zero_weights) {
    const char *rl[] = {"a", "bb"}, *cl[] = {"x", "yyy", "猫"};
    float w[6] = {0.9f, 0.0f, 0.0f, 0.0f, 0.6f, 0.3f};
    bool seen[6] = {true, true, false, false, true, true};
    char *plain = s2s_heatmap_text(w, 2, 3, rl, cl, false);
    char *same = s2s_heatmap_text_seen(w, NULL, 2, 3, rl, cl, false);
    char *t = s2s_heatmap_text_seen(w, seen, 2, 3, rl, cl, false);
    cr_assert(plain && same && t);
    cr_assert_str_eq(same, plain, "seen NULL: every key seen");
    assert_even_lines(t, 3);
    // row a: x seen (█), yyy seen with weight 0 (blank), 猫 hidden (two dots)
    cr_assert(strstr(t, "a  ██     ··\n"), "%s", t);
    cr_assert(strstr(t, "bb ·· ▓▓▓ ▒▒\n"), "%s", t);
    free(plain);
    free(same);
    free(t);
}

// Every layer and head side by side, worked by hand from the layout the
// header states: labels 7 columns ("layer 0"), 2 spaces before each block,
// blocks as wide as "head 1"; 2 columns a cell when the heads fit in the
// width, else 1 and a band per head.
Test(align, heatmap_grid_puts_heads_side_by_side_within_the_width) {
    const char *rl[] = {"a", "b"}, *cl[] = {"x", "y"};
    // (layers 1, heads 2, rows 2, cols 2)
    float w[8] = {1.0f, 0.0f, 0.3f, 0.6f, /* head 1 */ 0.1f, 0.9f, 0.0f, 0.0f};
    char *t = s2s_heatmap_grid_text(w, NULL, 1, 2, 2, 2, rl, cl, 80, false);
    cr_assert_not_null(t);
    cr_assert_str_eq(t, "columns: x y\n"
                        "layer 0  head 0  head 1\n"
                        "a        ██      ░░██  \n"
                        "b        ▒▒▓▓          \n");
    free(t);
    t = s2s_heatmap_grid_text(w, NULL, 1, 2, 2, 2, rl, cl, 14, false);
    cr_assert_not_null(t);
    cr_assert_str_eq(t, "columns: x y\n"
                        "layer 0  head 0\n"
                        "a        █     \n"
                        "b        ▒▓    \n"
                        "layer 0  head 1\n"
                        "a        ░█    \n"
                        "b              \n");
    free(t);
    // a hidden key as '·', in colour only when asked; a long label cut
    bool seen[8] = {true, false, true, true, true, true, true, true};
    const char *long_rl[] = {"comfortable", "b"};
    t = s2s_heatmap_grid_text(w, seen, 1, 2, 2, 2, long_rl, cl, 80, false);
    cr_assert_not_null(t);
    cr_assert(strstr(t, "\ncomfort…  ██··    ░░██  \n"), "%s", t);
    cr_assert_null(strchr(t, '\x1b'));
    free(t);
    t = s2s_heatmap_grid_text(w, seen, 1, 2, 2, 2, long_rl, cl, 80, true);
    cr_assert(t && strstr(t, "\x1b[38;5;"), "%s", t);
    free(t);
}

// ---- alignments of hypotheses (s2s_hard_align, pair, AER table) ----

// A hypothesis with only what the alignment reads: n target tokens (+ the
// </s> row) over n_src_tokens source tokens (+ the </s> column).
static s2s_hypothesis fake_hyp(float *maps, int layers, int heads, int n, int n_src_tokens) {
    return (s2s_hypothesis){.n = n, .n_out = n + 1, .cross_attn = maps, .layers = layers,
                            .enc_layers = layers, .heads = heads, .n_src = n_src_tokens + 1};
}

// The reference hard alignment, by plain loops: for each target token t,
// the mean over the selected layers and heads of every column, the first
// largest one; the </s> column means no link, or with no_eos is not a
// candidate. m is (n_src - 1, n) row-major.
static void ref_hard_align(bool *m, const float *maps, int L, int H, int n_out, int n_src, int n,
                           int layer, int head, bool no_eos) {
    memset(m, 0, (size_t)(n_src - 1) * n * sizeof *m);
    for (int t = 0; t < n; t++) {
        int best = -1;
        double best_w = 0;
        for (int c = 0; c < n_src - (no_eos ? 1 : 0); c++) {
            double w = 0;
            int k = 0;
            for (int l = 0; l < L; l++)
                for (int h = 0; h < H; h++)
                    if ((layer < 0 || l == layer) && (head < 0 || h == head)) {
                        w += maps[(((size_t)l * H + h) * n_out + t) * n_src + c];
                        k++;
                    }
            w /= k;
            if (best < 0 || w > best_w) best = c, best_w = w;
        }
        if (best < n_src - 1) m[(size_t)best * n + t] = true;
    }
}

// a equals the dense (ns, nt) matrix m.
static void assert_matrix(const s2s_alignment *a, const bool *m, int ns, int nt, const char *what) {
    int n = 0;
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < nt; j++) {
            n += m[(size_t)i * nt + j];
            if (m[(size_t)i * nt + j]) cr_assert(s2s_alignment_has(a, i, j), "%s: lacks %d-%d", what, i, j);
        }
    cr_assert_eq(a->n, n, "%s: %d links, wanted %d", what, a->n, n);
}

// Random distributions over the columns of every row; some rows lean on </s>.
static void random_maps(float *maps, int planes, int rows, int cols) {
    for (int p = 0; p < planes; p++)
        for (int r = 0; r < rows; r++) {
            float *x = maps + ((size_t)p * rows + r) * cols;
            double sum = 0;
            for (int c = 0; c < cols; c++) sum += x[c] = (float)(rnd() % 1000 + 1);
            if (rnd() % 3 == 0) x[cols - 1] += (float)sum, sum *= 2;
            for (int c = 0; c < cols; c++) x[c] = (float)(x[c] / sum);
        }
}

Test(align, hard_align_takes_the_argmax_of_each_token_row_by_hand) {
    // 1 layer, 1 head: 2 target tokens + </s> row, 2 source tokens + </s>.
    float w[3 * 3] = {
        0.1f, 0.2f, 0.7f,  // looks most at </s>: unaligned, or source 1 with no_eos
        0.6f, 0.3f, 0.1f,  // source 0
        0.5f, 0.5f, 0.0f,  // the </s> row: never a link
    };
    s2s_hypothesis h = fake_hyp(w, 1, 1, 2, 2);
    s2s_alignment a = {0};
    cr_assert_eq(s2s_hard_align(&a, &h, 0, 0, 1.0f, /*no_eos=*/false), S2S_OK);
    assert_links(&a, "0-1");
    cr_assert_eq(s2s_hard_align(&a, &h, S2S_ALIGN_AVG, S2S_ALIGN_AVG, 1.0f, /*no_eos=*/true), S2S_OK);
    assert_links(&a, "0-1 1-0");
    // Bad selectors and a hypothesis without attention are refused.
    cr_assert_eq(s2s_hard_align(&a, &h, 1, 0, 1.0f, false), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "layer 1"), "%s", s2s_last_error());
    cr_assert_eq(s2s_hard_align(&a, &h, 0, -2, 1.0f, false), S2S_ERR_INVALID);
    h.cross_attn = NULL;
    cr_assert_eq(s2s_hard_align(&a, &h, 0, 0, 1.0f, false), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "want_attention"), "%s", s2s_last_error());
    s2s_alignment_free(&a);
}

Test(align, hard_align_equals_plain_loops_on_every_plane) {
    enum { L = 2, H = 3 };
    for (int trial = 0; trial < 30; trial++) {
        int n = 1 + (int)(rnd() % 6), ns = 1 + (int)(rnd() % 6);
        float *maps = malloc((size_t)L * H * (n + 1) * (ns + 1) * sizeof *maps);
        bool *want = malloc((size_t)ns * n * sizeof *want);
        random_maps(maps, L * H, n + 1, ns + 1);
        s2s_hypothesis h = fake_hyp(maps, L, H, n, ns);
        s2s_alignment a = {0};
        for (int l = S2S_ALIGN_AVG; l < L; l++)
            for (int hd = S2S_ALIGN_AVG; hd < H; hd++)
                for (int no_eos = 0; no_eos < 2; no_eos++) {
                    cr_assert_eq(s2s_hard_align(&a, &h, l, hd, 1.0f, no_eos), S2S_OK, "%s", s2s_last_error());
                    ref_hard_align(want, maps, L, H, n + 1, ns + 1, n, l, hd, no_eos);
                    char what[64];
                    snprintf(what, sizeof what, "trial %d layer %d head %d no_eos %d", trial, l, hd, no_eos);
                    assert_matrix(&a, want, ns, n, what);
                    if (no_eos) cr_assert_eq(a.n, n, "%s: every token aligned", what);
                }
        s2s_alignment_free(&a);
        free(maps);
        free(want);
    }
}

// A vocab file of the specials then `words` in the given order.
static void write_vocab(const char *path, const char *const *words, int n) {
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("<pad>\n<unk>\n<s>\n</s>\n", f);
    for (int i = 0; i < n; i++) fprintf(f, "%s\n", words[i]);
    cr_assert_eq(fclose(f), 0);
}

// The model of tests/data/ref/pre_relu_tied.yaml with other vocab files.
static s2s_model *model_with_vocabs(const char *src, const char *tgt, uint64_t seed) {
    s2s_config c;
    s2s_config_default(&c);
    cr_assert_eq(s2s_config_load_file(&c, S2S_TEST_DATA "/ref/pre_relu_tied.yaml"), S2S_OK, "%s",
                 s2s_last_error());
    snprintf(c.vocab.src, sizeof c.vocab.src, "%s", src);
    snprintf(c.vocab.tgt, sizeof c.vocab.tgt, "%s", tgt);
    s2s_model *m;
    cr_assert_eq(s2s_model_init(&m, &c, seed), S2S_OK, "%s", s2s_last_error());
    return m;
}

// Forced decoding of source -> target text with attention.
static s2s_hypothesis score_pair(s2s_state *st, const s2s_model *m, const s2s_tokens *s,
                                 const s2s_tokens *t) {
    s2s_decode_params p = s2s_decode_default_params(m);
    p.want_attention = true;
    const int *src[1] = {s->ids}, *tgt[1] = {t->ids};
    s2s_hypothesis h;
    cr_assert_eq(s2s_score(st, &p, src, &s->n, tgt, &t->n, 1, &h), S2S_OK, "%s", s2s_last_error());
    return h;
}

// The reverse model's vocabs list the words in other orders than the
// forward model's, and know a word ("zebra") the forward target vocab does
// not: the pair must match tokens by their text. The reference scores the
// reverse direction itself (tokenizing the texts with the reverse vocabs),
// takes both argmaxes by plain loops and combines them by set operations.
Test(align, symmetrize_pair_equals_the_reverse_model_scored_by_hand) {
    static const char *const de[] = {"matte", "auf", "sitzt", "hund", "der", "die", "katze"};
    static const char *const en[] = {"zebra", "mat", "on", "sits", "dog", "the", "cat"};
    char dir[] = "/tmp/s2s_align_pair_XXXXXX", rsrc[96], rtgt[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(rsrc, sizeof rsrc, "%s/en.txt", dir);
    snprintf(rtgt, sizeof rtgt, "%s/de.txt", dir);
    write_vocab(rsrc, en, 7);
    write_vocab(rtgt, de, 7);
    s2s_model *fwd = ref_model(11);
    s2s_model *rev = model_with_vocabs(rsrc, rtgt, 12);
    s2s_state *fst, *rst;
    cr_assert_eq(s2s_state_new(&fst, fwd), S2S_OK);
    cr_assert_eq(s2s_state_new(&rst, rev), S2S_OK);
    const char *source = "der hund sitzt auf der matte", *target = "the dog sits on the zebra mat";
    s2s_tokens s = {0}, t = {0}, rs = {0}, rt = {0};
    cr_assert_eq(s2s_tokenize(s2s_model_src_vocab(fwd), source, &s), S2S_OK);
    cr_assert_eq(s2s_tokenize(s2s_model_tgt_vocab(fwd), target, &t), S2S_OK);
    cr_assert_eq(t.ids[5], S2S_UNK, "zebra is unknown to the forward model");
    cr_assert_eq(s2s_tokenize(s2s_model_src_vocab(rev), target, &rs), S2S_OK);
    cr_assert_eq(s2s_tokenize(s2s_model_tgt_vocab(rev), source, &rt), S2S_OK);
    cr_assert_neq(rs.ids[5], S2S_UNK, "but known to the reverse one");
    s2s_hypothesis h = score_pair(fst, fwd, &s, &t), rh = score_pair(rst, rev, &rs, &rt);
    int ns = s.n, nt = t.n;
    bool *f = malloc((size_t)ns * nt), *r = malloc((size_t)nt * ns), *want = malloc((size_t)ns * nt);
    for (int no_eos = 0; no_eos < 2; no_eos++) {
        ref_hard_align(f, h.cross_attn, h.layers, h.heads, h.n_out, h.n_src, h.n, 1, 2, no_eos);
        ref_hard_align(r, rh.cross_attn, rh.layers, rh.heads, rh.n_out, rh.n_src, rh.n, 0,
                       S2S_ALIGN_AVG, no_eos);  // (target token, source token)
        s2s_align_pair p = s2s_align_pair_default(fwd, rev, rst);
        p.layer = 1, p.head = 2, p.rev_layer = 0, p.rev_head = S2S_ALIGN_AVG, p.no_eos = no_eos;
        for (int m = S2S_SYM_INTERSECTION; m <= S2S_SYM_UNION; m++) {
            p.method = (s2s_symmetrize)m;
            s2s_alignment out = {0}, fo = {0};
            cr_assert_eq(s2s_align_symmetrize_pair(&p, 1, &s, &h, &t, &fo, &out), S2S_OK, "%s",
                         s2s_last_error());
            for (int i = 0; i < ns; i++)
                for (int j = 0; j < nt; j++) {
                    bool a = f[i * nt + j], b = r[j * ns + i];
                    want[i * nt + j] = m == S2S_SYM_UNION ? a || b : a && b;
                }
            assert_matrix(&fo, f, ns, nt, "forward");
            assert_matrix(&out, want, ns, nt, s2s_symmetrize_name(p.method));
            s2s_alignment_free(&out);
            s2s_alignment_free(&fo);
        }
    }
    // The grown methods combine the same two alignments (s2s_align_symmetrize
    // is checked against the definitions above); fwd_out may be NULL.
    s2s_alignment fa = {0}, ra = {0}, want_gdf = {0}, out = {0};
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < nt; j++) {
            if (f[i * nt + j]) cr_assert_eq(s2s_alignment_add(&fa, i, j, false), S2S_OK);
            if (r[j * ns + i]) cr_assert_eq(s2s_alignment_add(&ra, i, j, false), S2S_OK);
        }
    s2s_alignment_normalize(&fa);
    s2s_alignment_normalize(&ra);
    cr_assert_eq(s2s_align_symmetrize(&want_gdf, &fa, &ra, ns, nt, S2S_SYM_GROW_DIAG_FINAL), S2S_OK);
    s2s_align_pair p = s2s_align_pair_default(fwd, rev, rst);
    p.layer = 1, p.head = 2, p.rev_layer = 0, p.rev_head = S2S_ALIGN_AVG, p.no_eos = true;
    p.method = S2S_SYM_GROW_DIAG_FINAL;
    cr_assert_eq(s2s_align_symmetrize_pair(&p, 1, &s, &h, &t, NULL, &out), S2S_OK, "%s", s2s_last_error());
    char *got = s2s_alignment_format(&out), *exp = s2s_alignment_format(&want_gdf);
    cr_assert_str_eq(got, exp);
    free(got);
    free(exp);
    // A hypothesis that does not belong to the source is refused.
    s.n--;
    cr_assert_eq(s2s_align_symmetrize_pair(&p, 1, &s, &h, &t, NULL, &out), S2S_ERR_INVALID);
    s.n++;
    s2s_alignment_free(&fa);
    s2s_alignment_free(&ra);
    s2s_alignment_free(&want_gdf);
    s2s_alignment_free(&out);
    free(f);
    free(r);
    free(want);
    s2s_hypothesis_free(&h);
    s2s_hypothesis_free(&rh);
    s2s_tokens_free(&s);
    s2s_tokens_free(&t);
    s2s_tokens_free(&rs);
    s2s_tokens_free(&rt);
    s2s_state_free(fst);
    s2s_state_free(rst);
    s2s_model_free(fwd);
    s2s_model_free(rev);
    remove(rsrc);
    remove(rtgt);
    cr_assert_eq(rmdir(dir), 0);
}

Test(align, aer_table_rows_and_best_plane_by_hand) {
    // 1 layer, 2 heads; 2 target tokens over 2 source tokens. Head 0 is
    // right, head 1 crossed; their mean ties on every row, so it links
    // both tokens to source 0 (the first on ties).
    float maps[2 * 3 * 3] = {
        1, 0, 0, 0, 1, 0, 0, 0, 1,  // head 0
        0, 1, 0, 1, 0, 0, 0, 0, 1,  // head 1
    };
    s2s_hypothesis h = fake_hyp(maps, 1, 2, 2, 2);
    s2s_alignment gold = parse("0-0 1-1");
    s2s_plane_table *t;
    cr_assert_eq(s2s_plane_table_new(&t, S2S_HEAD_ALIGN, 1, 2, 1.0f, false), S2S_OK);
    cr_assert_eq(s2s_plane_table_add(t, &h, &gold, NULL, NULL), S2S_OK);
    cr_assert_eq(s2s_plane_table_sentences(t), 1);
    const struct { int l, h; double aer; } want[] = {
        {0, 0, 0.0}, {0, 1, 1.0}, {0, S2S_ALIGN_AVG, 0.5},  // 1 - (1 + 1) / (2 + 2)
        {S2S_ALIGN_AVG, 0, 0.0}, {S2S_ALIGN_AVG, 1, 1.0}, {S2S_ALIGN_AVG, S2S_ALIGN_AVG, 0.5},
    };
    for (int k = 0; k < 6; k++) {
        const s2s_plane_counts *pc = s2s_plane_table_counts(t, want[k].l, want[k].h);
        cr_assert_not_null(pc);
        const s2s_aer_counts *c = &pc->aer;
        cr_assert_float_eq(s2s_aer(c), want[k].aer, 1e-12, "layer %d head %d: %g", want[k].l,
                           want[k].h, s2s_aer(c));
    }
    // (avg, 0) and (0, 0) tie at 0: the average layer comes first.
    int bl, bh;
    s2s_plane_table_best(t, &bl, &bh);
    cr_assert(bl == S2S_ALIGN_AVG && bh == 0, "best %d/%d", bl, bh);
    cr_assert_null(s2s_plane_table_counts(t, 1, 0));
    cr_assert_null(s2s_plane_table_counts(t, 0, 2));
    cr_assert_null(s2s_plane_table_counts(t, -2, 0));
    // Another shape or no attention is refused and leaves the table alone.
    s2s_hypothesis other = fake_hyp(maps, 2, 1, 2, 2);
    cr_assert_eq(s2s_plane_table_add(t, &other, &gold, NULL, NULL), S2S_ERR_INVALID);
    h.cross_attn = NULL;
    cr_assert_eq(s2s_plane_table_add(t, &h, &gold, NULL, NULL), S2S_ERR_INVALID);
    cr_assert_eq(s2s_plane_table_sentences(t), 1);
    s2s_plane_table_free(t);
    cr_assert_eq(s2s_plane_table_new(&t, S2S_HEAD_ALIGN, 0, 2, 1.0f, false), S2S_ERR_INVALID);
    // A probe that is not one of the two is refused.
    cr_assert_eq(s2s_plane_table_new(&t, S2S_HEAD_ROLE_COUNT, 1, 2, 1.0f, false), S2S_ERR_INVALID);
    cr_assert_null(t);
    cr_assert_eq(s2s_plane_table_new(&t, (s2s_head_role)-1, 1, 2, 1.0f, false), S2S_ERR_INVALID);
    s2s_alignment_free(&gold);
}

// Random corpora: every plane's counts equal plain counting of the
// reference alignments, and the best plane is the first lowest AER in the
// documented order.
Test(align, aer_table_equals_plain_counting_and_its_best_is_the_minimum) {
    enum { L = 2, H = 2, P = (L + 1) * (H + 1) };
    for (int trial = 0; trial < 20; trial++) {
        s2s_plane_table *t;
        bool no_eos = trial % 2;
        cr_assert_eq(s2s_plane_table_new(&t, S2S_HEAD_ALIGN, L, H, 1.0f, no_eos), S2S_OK);
        long long a[P] = {0}, s[P] = {0}, as[P] = {0}, ap[P] = {0};
        for (int sent = 0; sent < 4; sent++) {
            int n = 1 + (int)(rnd() % 5), ns = 1 + (int)(rnd() % 5);
            float *maps = malloc((size_t)L * H * (n + 1) * (ns + 1) * sizeof *maps);
            bool *m = malloc((size_t)ns * n), *g = malloc((size_t)ns * n), *poss = malloc((size_t)ns * n);
            random_maps(maps, L * H, n + 1, ns + 1);
            s2s_alignment gold = {0};
            for (int i = 0; i < ns * n; i++) {
                uint32_t x = rnd() % 5;
                g[i] = x < 2, poss[i] = x == 1;
                if (g[i]) cr_assert_eq(s2s_alignment_add(&gold, i / n, i % n, poss[i]), S2S_OK);
            }
            s2s_alignment_normalize(&gold);
            s2s_hypothesis h = fake_hyp(maps, L, H, n, ns);
            cr_assert_eq(s2s_plane_table_add(t, &h, &gold, NULL, NULL), S2S_OK, "%s", s2s_last_error());
            for (int l = -1; l < L; l++)
                for (int hd = -1; hd < H; hd++) {
                    int k = (l + 1) * (H + 1) + hd + 1;
                    ref_hard_align(m, maps, L, H, n + 1, ns + 1, n, l, hd, no_eos);
                    for (int i = 0; i < ns * n; i++) {
                        a[k] += m[i];
                        s[k] += g[i] && !poss[i];
                        as[k] += m[i] && g[i] && !poss[i];
                        ap[k] += m[i] && g[i];
                    }
                }
            s2s_alignment_free(&gold);
            free(maps);
            free(m);
            free(g);
            free(poss);
        }
        int want_l = 0, want_h = 0;
        double best = 2;
        for (int l = -1; l < L; l++)
            for (int hd = -1; hd < H; hd++) {
                int k = (l + 1) * (H + 1) + hd + 1;
                const s2s_aer_counts *c = &s2s_plane_table_counts(t, l, hd)->aer;
                cr_assert(c->a == a[k] && c->s == s[k] && c->a_s == as[k] && c->a_p == ap[k],
                          "trial %d plane %d/%d", trial, l, hd);
                double e = a[k] + s[k] ? 1.0 - (double)(as[k] + ap[k]) / (double)(a[k] + s[k]) : 0.0;
                if (e < best) best = e, want_l = l, want_h = hd;
            }
        int bl, bh;
        s2s_plane_table_best(t, &bl, &bh);
        cr_assert(bl == want_l && bh == want_h, "trial %d: best %d/%d, wanted %d/%d", trial, bl, bh,
                  want_l, want_h);
        cr_assert_eq(s2s_plane_table_sentences(t), 4);
        s2s_plane_table_free(t);
    }
}

// ---- coreference table ----

// An encoder-only hypothesis: n_tok source tokens (+ the </s> row and
// column), maps (layers, heads, n_tok + 1, n_tok + 1).
static s2s_hypothesis enc_hyp(float *maps, int layers, int heads, int n_tok) {
    return (s2s_hypothesis){.enc_attn = maps, .enc_layers = layers, .layers = 1, .heads = heads,
                            .n_src = n_tok + 1};
}

Test(align, coref_table_by_hand_with_exclusions_and_ties) {
    // "the cat , it" + </s>: pronoun 3 ("it"), antecedent 1 ("cat"). One
    // layer, three heads; only row 3 matters. Head 0 gives itself, "," and
    // </s> more than "cat", which is still the largest candidate: a hit.
    // Head 1 ties "the" and "cat": a miss. Head 2 prefers "the": a miss.
    const char *tok[] = {"the", "cat", ",", "it"};
    float maps[3 * 5 * 5] = {0};
    const float rows[3][5] = {
        {0.05f, 0.10f, 0.25f, 0.30f, 0.30f},
        {0.30f, 0.30f, 0.10f, 0.10f, 0.20f},
        {0.40f, 0.20f, 0.10f, 0.10f, 0.20f},
    };
    for (int h = 0; h < 3; h++) memcpy(&maps[(h * 5 + 3) * 5], rows[h], sizeof rows[h]);
    s2s_hypothesis hy = enc_hyp(maps, 1, 3, 4);
    s2s_alignment gold = {0}, none = {0};
    cr_assert_eq(s2s_coref_parse(&gold, &none, "3-1|", "test"), S2S_OK);
    s2s_plane_table *t;
    cr_assert_eq(s2s_plane_table_new(&t, S2S_HEAD_COREF, 1, 3, 1.0f, false), S2S_OK);
    cr_assert_eq(s2s_plane_table_add(t, &hy, &gold, tok, "test:1"), S2S_OK, "%s", s2s_last_error());
    const struct { int l, h, hits; double w; } want[] = {
        {0, 0, 1, 0.10}, {0, 1, 0, 0.30}, {0, 2, 0, 0.20},
        // the mean row: the 0.25, cat 0.20: a miss
        {0, S2S_ALIGN_AVG, 0, 0.20}, {S2S_ALIGN_AVG, 1, 0, 0.30},
        {S2S_ALIGN_AVG, S2S_ALIGN_AVG, 0, 0.20},
    };
    for (int k = 0; k < 6; k++) {
        const s2s_coref_counts *c = &s2s_plane_table_counts(t, want[k].l, want[k].h)->coref;
        cr_assert_not_null(c);
        cr_assert_eq(c->links, 1);
        cr_assert_eq(c->hits, want[k].hits, "plane %d/%d", want[k].l, want[k].h);
        cr_assert_float_eq(s2s_coref_mean_weight(c), want[k].w, 1e-6, "plane %d/%d: %g",
                           want[k].l, want[k].h, s2s_coref_mean_weight(c));
    }
    int bl, bh;
    s2s_plane_table_best(t, &bl, &bh);  // (avg, 0) is right too, and comes first
    cr_assert(bl == S2S_ALIGN_AVG && bh == 0, "best %d/%d", bl, bh);
    cr_assert_null(s2s_plane_table_counts(t, 1, 0));
    cr_assert_null(s2s_plane_table_counts(t, 0, 3));
    // The shown row: non-candidates are -1, the argmax the first largest.
    float row[5];
    cr_assert_eq(s2s_coref_row(row, &maps[5 * 5], 5, tok, 3), 0);  // head 1: the/cat tie
    cr_assert(row[2] == -1.0f && row[3] == -1.0f && row[4] == -1.0f && row[1] == 0.30f);
    // Bad links and shapes are refused and leave the table alone.
    const char *bad[] = {"3-5|", "3-3|", "3-2|"};
    for (int k = 0; k < 3; k++) {
        s2s_alignment b = {0};
        cr_assert_eq(s2s_coref_parse(&b, &none, bad[k], "test"), S2S_OK);
        cr_assert_eq(s2s_plane_table_add(t, &hy, &b, tok, "gold.tsv:7"), S2S_ERR_INVALID);
        cr_assert(strstr(s2s_last_error(), "gold.tsv:7: coreference link"), "%s", s2s_last_error());
        s2s_alignment_free(&b);
    }
    s2s_hypothesis other = enc_hyp(maps, 3, 1, 4);
    cr_assert_eq(s2s_plane_table_add(t, &other, &gold, tok, "x"), S2S_ERR_INVALID);
    hy.enc_attn = NULL;
    cr_assert_eq(s2s_plane_table_add(t, &hy, &gold, tok, "x"), S2S_ERR_INVALID);
    cr_assert_eq(s2s_plane_table_sentences(t), 1);
    cr_assert_eq(s2s_plane_table_counts(t, 0, 0)->coref.links, 1);
    s2s_plane_table_free(t);
    cr_assert_eq(s2s_plane_table_new(&t, S2S_HEAD_COREF, 1, 0, 1.0f, false), S2S_ERR_INVALID);
    cr_assert(s2s_token_is_punct("\xEF\xBC\x8C") && s2s_token_is_punct(".") &&
              !s2s_token_is_punct("it") && !s2s_token_is_punct("\xE5\xAE\x83"));  // ， . it 它
    s2s_alignment_free(&gold);
    s2s_alignment_free(&none);
}

// Random sentences: every plane's counts equal a plain loop over the mean
// of the selected heads, and the best plane is the most accurate one (ties
// to the higher weight, then the first).
Test(align, coref_table_equals_plain_loops_and_its_best_is_the_maximum) {
    enum { L = 2, H = 3, P = (L + 1) * (H + 1) };
    const char *vocab[] = {"a", "b", ",", "c", "\xE3\x80\x82", "d"};  // 。 is punctuation
    for (int trial = 0; trial < 20; trial++) {
        s2s_plane_table *t;
        cr_assert_eq(s2s_plane_table_new(&t, S2S_HEAD_COREF, L, H, 1.0f, false), S2S_OK);
        long long links[P] = {0}, hits[P] = {0};
        double weight[P] = {0};
        for (int sent = 0; sent < 4; sent++) {
            int n = 2 + (int)(rnd() % 6), S = n + 1;
            const char *tok[8];
            for (int i = 0; i < n; i++) tok[i] = vocab[rnd() % 6];
            tok[0] = "a";
            float *maps = malloc((size_t)L * H * S * S * sizeof *maps);
            random_maps(maps, L * H, S, S);
            // Coarse weights make ties between candidates common.
            for (int i = 0; i < L * H * S * S; i++) maps[i] = (float)(int)(maps[i] * 8) / 8;
            s2s_alignment gold = {0};
            for (int p = 1; p < n; p++)
                if (rnd() % 2)
                    cr_assert_eq(s2s_alignment_add(&gold, p, (int)(rnd() % (unsigned)p), false), S2S_OK);
            // keep only antecedents that are not punctuation
            int w = 0;
            for (int i = 0; i < gold.n; i++)
                if (!s2s_token_is_punct(tok[gold.links[i].tgt])) gold.links[w++] = gold.links[i];
            gold.n = w;
            s2s_alignment_normalize(&gold);
            s2s_hypothesis hy = enc_hyp(maps, L, H, n);
            cr_assert_eq(s2s_plane_table_add(t, &hy, &gold, tok, "x"), S2S_OK, "%s", s2s_last_error());
            for (int l = -1; l < L; l++)
                for (int hd = -1; hd < H; hd++) {
                    int k = (l + 1) * (H + 1) + hd + 1;
                    for (int i = 0; i < gold.n; i++) {
                        int p = gold.links[i].src, a = gold.links[i].tgt;
                        double row[8] = {0};
                        for (int c = 0; c < S; c++) {
                            int m = 0;
                            for (int x = 0; x < L; x++)
                                for (int y = 0; y < H; y++)
                                    if ((l < 0 || x == l) && (hd < 0 || y == hd)) {
                                        row[c] += maps[(((size_t)x * H + y) * S + p) * S + c];
                                        m++;
                                    }
                            row[c] /= m;
                        }
                        bool hit = true;
                        for (int c = 0; c < n; c++)
                            if (c != p && c != a && strcmp(tok[c], ",") && strcmp(tok[c], vocab[4]) &&
                                row[c] >= row[a] - 1e-6)
                                hit = false;
                        links[k]++;
                        hits[k] += hit;
                        weight[k] += row[a];
                    }
                }
            s2s_alignment_free(&gold);
            free(maps);
        }
        int want_l = -1, want_h = -1;
        double best_acc = -1, best_w = -1;
        for (int l = -1; l < L; l++)
            for (int hd = -1; hd < H; hd++) {
                int k = (l + 1) * (H + 1) + hd + 1;
                const s2s_coref_counts *c = &s2s_plane_table_counts(t, l, hd)->coref;
                cr_assert(c->links == links[k] && c->hits == hits[k],
                          "trial %d plane %d/%d: %lld/%lld hits, wanted %lld/%lld", trial, l, hd,
                          c->hits, c->links, hits[k], links[k]);
                cr_assert_float_eq(c->weight, weight[k], 1e-4);
                double acc = links[k] ? (double)hits[k] / links[k] : 0, mw = links[k] ? weight[k] / links[k] : 0;
                if (acc > best_acc + 1e-12 || (fabs(acc - best_acc) < 1e-12 && mw > best_w + 1e-9))
                    best_acc = acc, best_w = mw, want_l = l, want_h = hd;
            }
        int bl, bh;
        s2s_plane_table_best(t, &bl, &bh);
        cr_assert(bl == want_l && bh == want_h, "trial %d: best %d/%d, wanted %d/%d", trial, bl, bh,
                  want_l, want_h);
        s2s_plane_table_free(t);
    }
}

// ---- HTML ----

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

Test(align, html_report_appends_gold_and_coref_to_the_last_sentence) {
    float cross[3 * 3] = {.5f, .25f, .25f, .1f, .8f, .1f, 0, 0, 1};
    s2s_hypothesis h = {.n = 2, .n_out = 3, .cross_attn = cross, .layers = 1, .enc_layers = 1,
                        .heads = 1, .n_src = 3};
    const char *src[] = {"it", "cat"}, *tgt[] = {"es", "Katze"};
    s2s_alignment gold = parse("0-0 1p1"), links = parse("0-1");
    s2s_align_html *d;
    cr_assert_eq(s2s_align_html_new(&d, NULL), S2S_OK);
    cr_assert_eq(s2s_align_html_set_gold(d, &gold), S2S_ERR_INVALID, "before any sentence");
    cr_assert_eq(s2s_align_html_add_coref(d, &links), S2S_ERR_INVALID, "before any sentence");
    cr_assert_eq(s2s_align_html_add(d, src, 2, tgt, 2, &h, NULL), S2S_OK);
    cr_assert_eq(s2s_align_html_add(d, src, 2, tgt, 2, &h, NULL), S2S_OK);
    cr_assert_eq(s2s_align_html_set_gold(d, &gold), S2S_OK);
    cr_assert_eq(s2s_align_html_add_coref(d, &links), S2S_OK);
    s2s_align_html_set_enc_view(d, 1, S2S_ALIGN_AVG, true);
    char dir[] = "/tmp/s2s_align_test_XXXXXX", path[128];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/report.html", dir);
    cr_assert_eq(s2s_align_html_write(d, path), S2S_OK, "%s", s2s_last_error());
    char *html = slurp(path);
    cr_assert(strstr(html, "\"drop_specials\":false,\"enc\":[1,-1,true],\"sentences\":["), "the encoder view");
    cr_assert_eq(count(html, "\"gold\":"), 1, "only the last sentence");
    cr_assert(strstr(html, "\"enc\":null,\"gold\":\"0-0 1p1\",\"coref\":[[0,1]]}\n]}"), "appended in order");
    free(html);
    s2s_align_html_free(d);
    s2s_alignment_free(&gold);
    s2s_alignment_free(&links);
    remove(path);
    rmdir(dir);
}

Test(align, html_report_holds_every_sentence_and_escapes_tokens) {
    // A hand-made hypothesis: 1 layer, 2 heads, 2 targets + </s>, 2 sources + </s>.
    float cross[2 * 3 * 3] = {.5f, .25f, .25f, .1f, .8f, .1f, 0, 0, 1, 1, 0, 0, 0, 1, 0, .3f, .3f, .4f};
    s2s_hypothesis h = {.n = 2, .n_out = 3, .cross_attn = cross, .layers = 1, .enc_layers = 1,
                        .heads = 2, .n_src = 3};
    const char *src[] = {"</script><b>x", "猫"}, *tgt[] = {"a\"b", "cat & dog"};
    s2s_align_html *d;
    cr_assert_eq(s2s_align_html_new(&d, "test <report>"), S2S_OK);
    cr_assert_eq(s2s_align_html_add(d, src, 2, tgt, 2, &h, "0-0 1-1"), S2S_OK);
    cr_assert_eq(s2s_align_html_add(d, src, 2, tgt, 2, &h, NULL), S2S_OK);
    cr_assert_eq(s2s_align_html_add(d, src, 1, tgt, 2, &h, NULL), S2S_ERR_INVALID, "shape mismatch");
    s2s_align_html_set_view(d, 0, S2S_ALIGN_AVG, true);
    char dir[] = "/tmp/s2s_align_test_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128], bad[160];
    snprintf(path, sizeof path, "%s/report.html", dir);
    cr_assert_eq(s2s_align_html_write(d, path), S2S_OK, "%s", s2s_last_error());
    char *html = slurp(path);
    cr_assert(strstr(html, "<!DOCTYPE html>"));
    cr_assert(strstr(html, "<title>test &lt;report&gt;</title>"));
    cr_assert_eq(count(html, "</script>"), 2, "a token must not close the data block");
    cr_assert(strstr(html, "\\u003c/script\\u003e\\u003cb\\u003ex"));
    cr_assert(strstr(html, "\"a\\\"b\""));
    cr_assert(strstr(html, "猫"));
    cr_assert_eq(count(html, "\"cross\":"), 2, "both sentences");
    cr_assert(strstr(html, "\"cross\":[0.5,0.25,0.25,0.1,0.8,0.1,0,0,1,1,0,0,0,1,0,0.3,0.3,0.4]"), "weights");
    cr_assert(strstr(html, "\"default_layer\":0,\"default_head\":-1,\"drop_specials\":true"));
    cr_assert_null(strstr(html, "http://"), "no network");
    cr_assert_null(strstr(html, "https://"), "no network");
    free(html);
    snprintf(bad, sizeof bad, "%s/no/such/dir/r.html", dir);
    cr_assert_eq(s2s_align_html_write(d, bad), S2S_ERR_IO);
    cr_assert(strstr(s2s_last_error(), bad), "%s", s2s_last_error());
    s2s_align_html_free(d);
    remove(path);
    cr_assert_eq(rmdir(dir), 0, "no temp file left behind");
}

Test(align, html_report_carries_each_heads_pattern) {
    float cross[1 * 4 * 2 * 2] = {0};
    s2s_hypothesis h = {.n = 1, .n_out = 2, .cross_attn = cross, .layers = 1, .heads = 4, .n_src = 2};
    const char *src[] = {"x"}, *tgt[] = {"y"};
    s2s_model *m = variant_model(1);
    s2s_align_html *d;
    cr_assert_eq(s2s_align_html_new(&d, "patterns"), S2S_OK);
    cr_assert_eq(s2s_align_html_add(d, src, 1, tgt, 1, &h, NULL), S2S_OK);
    cr_assert_eq(s2s_align_html_set_patterns(d, m), S2S_OK);
    char dir[] = "/tmp/s2s_align_test_XXXXXX", path[128];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/report.html", dir);
    cr_assert_eq(s2s_align_html_write(d, path), S2S_OK, "%s", s2s_last_error());
    char *html = slurp(path);
    const char *F = "{\"type\":\"full\",\"causal\":false}", *C = "{\"type\":\"full\",\"causal\":true}",
               *L = "{\"type\":\"local\",\"window\":2,\"causal\":false}",
               *S = "{\"type\":\"strided\",\"stride\":3,\"causal\":true}",
               *N = "{\"type\":\"linear\",\"causal\":false}";
    char want[2048];
    snprintf(want, sizeof want,
             "\"patterns\":{\"cross\":[[%s,%s,%s,%s],[%s,%s,%s,%s]],\"self\":[[%s,%s,%s,%s],"
             "[%s,%s,%s,%s]],\"enc\":[[%s,%s,%s,%s],[%s,%s,%s,%s]]},",
             F, F, F, N, F, F, F, N, C, C, C, C, S, S, S, S, F, L, L, F, F, L, L, F);
    cr_assert(strstr(html, want), "want %s in the page's data", want);
    free(html);
    s2s_align_html_free(d);
    s2s_model_free(m);
    remove(path);
    rmdir(dir);
}
