// Tests for src/tokenizer: vocab loading and its errors, tokenizing
// (checked against stated examples and, for CJK longest match, against a
// plain linear-scan greedy segmenter), detokenizing and round trips.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s2s/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer/tsv.h"

#define VOCAB_DIR S2S_TEST_DATA "/vocab/"

static s2s_vocab *en, *zh;
static s2s_tokens t;

static void setup(void) {
    cr_assert_eq(s2s_vocab_load(&en, VOCAB_DIR "en.txt"), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_vocab_load(&zh, VOCAB_DIR "zh.txt"), S2S_OK, "%s", s2s_last_error());
    memset(&t, 0, sizeof t);
}

static void teardown(void) {
    s2s_tokens_free(&t);
    s2s_vocab_free(en);
    s2s_vocab_free(zh);
}

TestSuite(tokenizer, .init = setup, .fini = teardown);

// ---- helpers ----

// The pieces of t joined by single spaces. Caller frees.
static char *pieces_str(const s2s_tokens *tk) {
    size_t n = 1;
    for (int i = 0; i < tk->n; i++) n += strlen(tk->pieces[i]) + 1;
    char *s = malloc(n);
    cr_assert_not_null(s);
    s[0] = '\0';
    for (int i = 0; i < tk->n; i++) {
        if (i) strcat(s, " ");
        strcat(s, tk->pieces[i]);
    }
    return s;
}

// Tokenizes text with v and checks the pieces, and that every id is exactly
// the vocab's id of its piece (so unknown pieces are <unk> and known ones
// are not).
static void expect_pieces(const s2s_vocab *v, const char *text, const char *want) {
    cr_assert_eq(s2s_tokenize(v, text, &t), S2S_OK, "%s", s2s_last_error());
    char *got = pieces_str(&t);
    cr_assert_str_eq(got, want, "tokenize(\"%s\")", text);
    free(got);
    for (int i = 0; i < t.n; i++)
        cr_assert_eq(t.ids[i], s2s_vocab_id(v, t.pieces[i]), "piece '%s'", t.pieces[i]);
}

static void expect_error(const char *file, s2s_status st, const char *msg) {
    s2s_vocab *v = (s2s_vocab *)0x1;
    cr_assert_eq(s2s_vocab_load(&v, file), st, "%s: %s", file, s2s_last_error());
    cr_assert_null(v);
    cr_assert(strstr(s2s_last_error(), msg), "message '%s' lacks '%s'", s2s_last_error(), msg);
}

// Ids of space-separated tokens (which must all be in v).
static int to_ids(const s2s_vocab *v, const char *spaced, int *ids) {
    char *copy = strdup(spaced), *save = NULL;
    int n = 0;
    for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        int id = s2s_vocab_id(v, w);
        cr_assert(id != S2S_UNK || strcmp(w, "<unk>") == 0, "'%s' not in vocab", w);
        ids[n++] = id;
    }
    free(copy);
    return n;
}

static void expect_detok(const s2s_vocab *v, const char *spaced, const char *want) {
    int ids[64];
    int n = to_ids(v, spaced, ids);
    char *got = s2s_detokenize(v, ids, n);
    cr_assert_not_null(got);
    cr_assert_str_eq(got, want, "detokenize(\"%s\")", spaced);
    free(got);
}

// ---- vocab ----

Test(tokenizer, vocab_load_ok) {
    cr_assert_eq(s2s_vocab_size(en), 47);
    const char *sp[] = {"<pad>", "<unk>", "<s>", "</s>"};
    for (int i = 0; i < 4; i++) {
        cr_assert_str_eq(s2s_vocab_token(en, i), sp[i]);
        cr_assert_eq(s2s_vocab_id(en, sp[i]), i);
    }
    cr_assert_str_eq(s2s_vocab_token(en, 4), "the");
    cr_assert_eq(s2s_vocab_id(en, "cat"), 5);
    cr_assert_eq(s2s_vocab_id(en, "zebra"), S2S_UNK);
    cr_assert_eq(s2s_vocab_id(en, "ca"), S2S_UNK);
    cr_assert_eq(s2s_vocab_id(en, ""), S2S_UNK);
    cr_assert_null(s2s_vocab_token(en, -1));
    cr_assert_null(s2s_vocab_token(en, 47));
}

Test(tokenizer, vocab_crlf_lines) {
    s2s_vocab *v;
    cr_assert_eq(s2s_vocab_load(&v, VOCAB_DIR "crlf.txt"), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_vocab_size(v), 6);
    cr_assert_str_eq(s2s_vocab_token(v, 3), "</s>");
    cr_assert_str_eq(s2s_vocab_token(v, 5), "cat");
    s2s_vocab_free(v);
}

// Every id of a large generated vocab is found by the hash table, and
// near-misses are not (a linear scan would give the same answers).
Test(tokenizer, vocab_lookup_matches_line_numbers) {
    enum { N = 20000 };
    size_t cap = 64 + (size_t)N * 12;
    char *text = malloc(cap), *p = text;
    p += sprintf(p, "<pad>\n<unk>\n<s>\n</s>");
    for (int i = S2S_NUM_SPECIALS; i < N; i++) p += sprintf(p, "\nw%d", i);
    s2s_vocab *v;
    cr_assert_eq(s2s_vocab_from_string(&v, text, "gen"), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_vocab_size(v), N);
    char tok[32];
    for (int i = S2S_NUM_SPECIALS; i < N; i++) {
        sprintf(tok, "w%d", i);
        cr_assert_eq(s2s_vocab_id(v, tok), i);
        cr_assert_str_eq(s2s_vocab_token(v, i), tok);
        sprintf(tok, "x%d", i);
        cr_assert_eq(s2s_vocab_id(v, tok), S2S_UNK);
    }
    char *back = s2s_vocab_to_string(v);
    cr_assert_str_eq(back, text);
    free(back);
    s2s_vocab_free(v);
    free(text);
}

Test(tokenizer, vocab_to_string_round_trip) {
    char *s = s2s_vocab_to_string(zh);
    cr_assert_not_null(s);
    s2s_vocab *v;
    cr_assert_eq(s2s_vocab_from_string(&v, s, "zh"), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_vocab_size(v), s2s_vocab_size(zh));
    for (int i = 0; i < s2s_vocab_size(zh); i++)
        cr_assert_str_eq(s2s_vocab_token(v, i), s2s_vocab_token(zh, i));
    free(s);
    s2s_vocab_free(v);
}

Test(tokenizer, vocab_missing_special) {
    expect_error(VOCAB_DIR "bad_missing_special.txt", S2S_ERR_FORMAT,
                 "bad_missing_special.txt:4: missing special token '</s>'");
    s2s_vocab *v;
    cr_assert_eq(s2s_vocab_from_string(&v, "", "empty.txt"), S2S_ERR_FORMAT);
    cr_assert(strstr(s2s_last_error(), "empty.txt:1: missing special token '<pad>'"));
}

Test(tokenizer, vocab_misordered_special) {
    expect_error(VOCAB_DIR "bad_misordered.txt", S2S_ERR_FORMAT,
                 "bad_misordered.txt:2: expected special token '<unk>', found '<s>'");
}

Test(tokenizer, vocab_empty_line) {
    expect_error(VOCAB_DIR "bad_empty_line.txt", S2S_ERR_FORMAT, "bad_empty_line.txt:6: empty line");
}

Test(tokenizer, vocab_duplicate) {
    expect_error(VOCAB_DIR "bad_duplicate.txt", S2S_ERR_FORMAT,
                 "bad_duplicate.txt:7: duplicate token 'cat' (first on line 5)");
    s2s_vocab *v;
    cr_assert_eq(s2s_vocab_from_string(&v, "<pad>\n<unk>\n<s>\n</s>\n<s>", "m"), S2S_ERR_FORMAT);
    cr_assert(strstr(s2s_last_error(), "m:5: duplicate token '<s>' (first on line 3)"));
}

Test(tokenizer, vocab_invalid_utf8) {
    expect_error(VOCAB_DIR "bad_utf8.txt", S2S_ERR_FORMAT, "bad_utf8.txt:6:2: invalid UTF-8");
}

Test(tokenizer, vocab_whitespace_in_token) {
    expect_error(VOCAB_DIR "bad_space.txt", S2S_ERR_FORMAT,
                 "bad_space.txt:5: token 'hot dog' contains whitespace");
}

Test(tokenizer, vocab_missing_file) {
    expect_error(VOCAB_DIR "no_such_vocab.txt", S2S_ERR_IO,
                 "no_such_vocab.txt: cannot open: No such file or directory");
}

// ---- tokenize ----

Test(tokenizer, english_punctuation_and_case) {
    expect_pieces(en, "The cat sat on the mat, it looks very comfortable.",
                  "the cat sat on the mat , it looks very comfortable .");
    for (int i = 0; i < t.n; i++) cr_assert_neq(t.ids[i], S2S_UNK, "piece '%s'", t.pieces[i]);
    expect_pieces(en, "  THE\tCat\n(sat)!?", "the cat ( sat ) ! ?");
}

Test(tokenizer, contractions_keep_apostrophe) {
    expect_pieces(en, "I didn't know, it's true!", "i didn't know , it's true !");
    cr_assert_neq(t.ids[1], S2S_UNK);
    // A curly apostrophe inside a word is the same token as a straight one.
    expect_pieces(en, "I didn\xE2\x80\x99t", "i didn't");
    cr_assert_eq(t.ids[1], s2s_vocab_id(en, "didn't"));
    // Not between two letters: a token of its own.
    expect_pieces(en, "'hello' the cats' 3's it'", "' hello ' the cats ' 3 ' s it '");
}

Test(tokenizer, chinese_longest_match) {
    expect_pieces(zh, "看起来很好", "看起来 很好");
    cr_assert_eq(t.ids[0], s2s_vocab_id(zh, "看起来"));
    expect_pieces(zh, "中国人喜欢看", "中国人 喜欢 看");
    expect_pieces(zh, "这只动物没有过马路，因为它太累了。",
                  "这 只 动物 没有 过 马路 ， 因为 它 太 累 了 。");
    for (int i = 0; i < t.n; i++) cr_assert_neq(t.ids[i], S2S_UNK);
}

Test(tokenizer, unknown_chinese_characters_are_one_unk_each_run) {
    // 起 alone and 他们 are not in the vocab, and no entry starts at any of
    // them: one <unk> for the run, which the vocab's words around end.
    expect_pieces(zh, "看起他们", "看 起他们");
    cr_assert_eq(t.ids[0], s2s_vocab_id(zh, "看"));
    cr_assert_eq(t.ids[1], S2S_UNK);
    expect_pieces(zh, "我爱巧克力。", "我 爱 巧克力 。");
    cr_assert_eq(t.ids[2], S2S_UNK);
    // a known word inside ends the run: 起 | 看 | 们
    expect_pieces(zh, "起看们", "起 看 们");
    cr_assert_eq(t.ids[0], S2S_UNK);
    cr_assert_eq(t.ids[2], S2S_UNK);
    int which[4];
    cr_assert_eq(s2s_unknown_words(&t, which, 4), 2);
    cr_assert_eq(which[0], 0);
    cr_assert_eq(which[1], 2);
}

Test(tokenizer, spans_give_each_token_as_typed) {
    // English pieces are lower-cased; the span keeps the typed case.
    cr_assert_eq(s2s_tokenize(en, "The  Zebra sat.", &t), S2S_OK);
    cr_assert_eq(t.n, 4);
    cr_assert_str_eq(t.pieces[1], "zebra");
    char *w = s2s_token_text(&t, 1);
    cr_assert_str_eq(w, "Zebra");
    free(w);
    cr_assert_eq(t.start[1], 5);
    cr_assert_eq(t.end[1], 10);
    for (int j = 0; j < t.n; j++) {  // every span lies in the text, in order
        cr_assert_leq(t.end[j], (int)strlen(t.text));
        cr_assert_lt(t.start[j], t.end[j]);
        if (j) cr_assert_leq(t.end[j - 1], t.start[j]);
    }
    cr_assert_null(s2s_token_text(&t, 4));
    // Chinese spans count in the normalised text: the ASCII ? became ？.
    cr_assert_eq(s2s_tokenize(zh, "我爱巧克力?", &t), S2S_OK);
    cr_assert_str_eq(t.text, "我爱巧克力？");
    w = s2s_token_text(&t, 2);
    cr_assert_str_eq(w, "巧克力");
    free(w);
}

// The typed text of token j (s2s_token_typed), compared and freed.
static void expect_typed(const s2s_tokens *tk, int j, const char *want) {
    char *w = s2s_token_typed(tk, j);
    cr_assert_not_null(w);
    cr_assert_str_eq(w, want, "token %d", j);
    free(w);
}

Test(tokenizer, typed_spans_name_each_token_as_the_user_typed_it) {
    // ASCII ! and ? become full-width in Chinese; the typed text keeps them.
    cr_assert_eq(s2s_tokenize(zh, "我爱巧克力!  你呢?", &t), S2S_OK);
    cr_assert_str_eq(t.typed, "我爱巧克力!  你呢?");
    cr_assert_str_eq(t.pieces[3], "！");
    expect_typed(&t, 3, "!");
    expect_typed(&t, 2, "巧克力");
    expect_typed(&t, t.n - 1, "?");
    char *w = s2s_token_text(&t, 3);  // the normalised form is still there
    cr_assert_str_eq(w, "！");
    free(w);
    // Traditional characters map one to one: 愛 is typed, 爱 is read.
    cr_assert_eq(s2s_tokenize(zh, "我愛巧克力!", &t), S2S_OK);
    cr_assert_str_eq(t.pieces[1], "爱");
    expect_typed(&t, 1, "愛");
    expect_typed(&t, 3, "!");
    // A question mark normalising added was typed by no one: its span is
    // empty and it is named as normalised.
    cr_assert_eq(s2s_tokenize(zh, "你喜欢猫吗", &t), S2S_OK);
    cr_assert_eq(t.typed_start[t.n - 1], t.typed_end[t.n - 1]);
    expect_typed(&t, t.n - 1, "？");
    // A rewritten run stands for all of what was typed: "2" became "two",
    // the tokens of "didn't" come from "DIDNT".
    cr_assert_eq(s2s_tokenize(en, "I DIDNT see 2 zebras", &t), S2S_OK);
    cr_assert_str_eq(t.text, "I DIDN'T see two zebras");
    for (int j = 0; j < t.n; j++) {  // every span lies in the typed text, in order
        cr_assert_leq(t.typed_start[j], t.typed_end[j]);
        cr_assert_leq(t.typed_end[j], (int)strlen(t.typed));
        if (j) cr_assert_leq(t.typed_start[j - 1], t.typed_start[j]);
    }
    expect_typed(&t, 1, "DIDNT");
    expect_typed(&t, t.n - 2, "2");
    expect_typed(&t, t.n - 1, "zebras");
}

Test(tokenizer, detokenize_replacing_copies_the_attended_source_word) {
    s2s_tokens src = {0};
    cr_assert_eq(s2s_tokenize(zh, "我爱巧克力。", &src), S2S_OK);
    int ids[8];
    int n = to_ids(en, "i know <unk> .", ids);
    int unk_src[8] = {-1, -1, 2, -1};
    char *got = s2s_detokenize_replacing(en, ids, n, unk_src, &src);
    cr_assert_str_eq(got, "I know 巧克力.");
    free(got);
    got = s2s_join_tokens_replacing(en, ids, n, unk_src, &src);
    cr_assert_str_eq(got, "i know 巧克力 .");
    free(got);
    // at the start of a sentence: as typed, not capitalised
    n = to_ids(en, "<unk> sat .", ids);
    int first[3] = {2, -1, -1};
    got = s2s_detokenize_replacing(en, ids, n, first, &src);
    cr_assert_str_eq(got, "巧克力 sat.");
    free(got);
    // -1, out of range or no unk_src: <unk> stays
    n = to_ids(en, "i know <unk> .", ids);
    unk_src[2] = -1;
    got = s2s_detokenize_replacing(en, ids, n, unk_src, &src);
    cr_assert_str_eq(got, "I know <unk>.");
    free(got);
    unk_src[2] = 4;
    got = s2s_detokenize_replacing(en, ids, n, unk_src, &src);
    cr_assert_str_eq(got, "I know <unk>.");
    free(got);
    got = s2s_detokenize_replacing(en, ids, n, NULL, &src);
    cr_assert_str_eq(got, "I know <unk>.");
    free(got);
    // Into Chinese, an English word as typed, with no spaces around it.
    cr_assert_eq(s2s_tokenize(en, "I said Pizza.", &src), S2S_OK);
    n = to_ids(zh, "我 爱 <unk> 。", ids);
    int into_zh[4] = {-1, -1, 2, -1};
    got = s2s_detokenize_replacing(zh, ids, n, into_zh, &src);
    cr_assert_str_eq(got, "我爱Pizza。");
    free(got);
    s2s_tokens_free(&src);
}

// The sentences of text joined by "|".
static void expect_split(const char *text, const char *want) {
    s2s_span *sp;
    int n;
    cr_assert_eq(s2s_split_sentences(text, &sp, &n), S2S_OK, "%s", s2s_last_error());
    char got[512] = "";
    for (int i = 0; i < n; i++) {
        cr_assert_leq(sp[i].start, sp[i].end);
        if (i) strcat(got, "|");
        strncat(got, text + sp[i].start, sp[i].end - sp[i].start);
    }
    free(sp);
    cr_assert_str_eq(got, want, "split(\"%s\")", text);
}

Test(tokenizer, split_sentences_at_end_marks_when_text_follows) {
    expect_split("我爱吃苹果。他明天看书吗？", "我爱吃苹果。|他明天看书吗？");
    expect_split("我爱吃苹果。", "我爱吃苹果。");
    expect_split("你好?我很好!", "你好?|我很好!");
    expect_split("I love cats.  Do you?", "I love cats.|Do you?");
    expect_split("Really?! Yes.", "Really?!|Yes.");
    expect_split("他说：“好。”然后走了。", "他说：“好。”|然后走了。");
    expect_split("\"Go.\" He went.", "\"Go.\"|He went.");
    expect_split("It costs 3.5 dollars. Fine.", "It costs 3.5 dollars.|Fine.");
    expect_split("Mr. Smith met Dr. Who. U.S. army.", "Mr. Smith met Dr. Who.|U.S. army.");
    expect_split("at 5 p.m. today", "at 5 p.m. today");
    expect_split("wait... then go", "wait...|then go");
    expect_split("I saw it. and more", "I saw it. and more");  // lower case: no new sentence
    expect_split("end.   ", "end.   ");
    expect_split("", "");
    s2s_span *sp;
    int n;
    cr_assert_eq(s2s_split_sentences("\xff.", &sp, &n), S2S_ERR_INVALID);
}

// Plain greedy longest match by linear scan over the vocab lines.
static int ref_segment(char **toks, int ntoks, const char *s, const char **out, int *lens) {
    int n = 0;
    bool unknown_prev = false;
    while (*s) {
        int best = -1;
        size_t best_len = 0;
        for (int i = S2S_NUM_SPECIALS; i < ntoks; i++) {
            size_t l = strlen(toks[i]);
            if (l > best_len && strncmp(s, toks[i], l) == 0) best = i, best_len = l;
        }
        if (best < 0) best_len = 3;  // every test character is 3 bytes
        if (best < 0 && n > 0 && unknown_prev) {  // a run of unknowns is one piece
            lens[n - 1] += 3;
            s += 3;
            continue;
        }
        unknown_prev = best < 0;
        out[n] = s;
        lens[n++] = (int)best_len;
        s += best_len;
    }
    return n;
}

Test(tokenizer, chinese_matches_reference_segmenter) {
    const char *alphabet[] = {"看", "起", "来", "很", "好", "中", "国", "人", "我", "他"};
    char *vtext = s2s_vocab_to_string(zh);
    char *toks[128];
    int ntoks = 0;
    for (char *save = NULL, *w = strtok_r(vtext, "\n", &save); w; w = strtok_r(NULL, "\n", &save))
        toks[ntoks++] = w;
    unsigned seed = 12345;
    char text[3 * 200 + 1];
    const char *ref[200];
    int lens[200];
    for (int trial = 0; trial < 300; trial++) {
        int len = 1 + trial % 200;
        text[0] = '\0';
        for (int i = 0; i < len; i++) {
            seed = seed * 1103515245u + 12345u;
            strcat(text, alphabet[(seed >> 16) % 10]);
        }
        int n = ref_segment(toks, ntoks, text, ref, lens);
        cr_assert_eq(s2s_tokenize(zh, text, &t), S2S_OK);
        cr_assert_eq(t.n, n, "%s", text);
        for (int i = 0; i < n; i++) {
            cr_assert_eq(strlen(t.pieces[i]), (size_t)lens[i]);
            cr_assert_eq(strncmp(t.pieces[i], ref[i], (size_t)lens[i]), 0);
        }
    }
    free(vtext);
}

// ---- CJK segmentation against the algorithm of 9f2c0a5 ----
//
// Until 9f2c0a5 the greedy longest match tried every length up to the
// vocab's longest CJK token at each position, longest first, hashing each
// candidate from its start (the longest token's length squared per
// position). The segmenter now walks the sorted CJK tokens once per
// position; these tests hold it to the old loop's output, kept here.

static size_t old_seq_len(unsigned char c) {
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

static size_t old_longest_match(const s2s_vocab *v, const char *r, size_t p, size_t n,
                                bool *known) {
    int maxc = s2s_vocab_max_cjk_chars(v);
    if (maxc < 1) maxc = 1;
    size_t end = p;
    int chars = 0;
    while (end < n && chars < maxc) {
        end += old_seq_len((unsigned char)r[end]);
        chars++;
    }
    while (chars > 1 && s2s_vocab_find(v, r + p, end - p) < 0) {
        do end--;
        while (((unsigned char)r[end] & 0xC0) == 0x80);
        chars--;
    }
    *known = s2s_vocab_find(v, r + p, end - p) >= 0;
    return end;
}

// The old segment_cjk: piece k of the run r[0..n) is r[ends[k-1]..ends[k]).
static int old_segment(const s2s_vocab *v, const char *r, size_t n, size_t *ends) {
    bool merge = s2s_vocab_size(v) > S2S_NUM_SPECIALS;
    size_t p = 0;
    int k = 0;
    while (p < n) {
        bool known;
        size_t end = old_longest_match(v, r, p, n, &known);
        while (merge && !known && end < n) {
            bool next_known;
            size_t next = old_longest_match(v, r, end, n, &next_known);
            if (next_known) break;
            end = next;
        }
        ends[k++] = end;
        p = end;
    }
    return k;
}

static bool cjk_at(const char *s, size_t i, size_t len) {
    uint32_t c;
    return i < len && s2s_utf8_decode(s + i, len - i, &c) > 0 && s2s_is_cjk(c);
}

static bool all_cjk(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint32_t c;
        i += (size_t)s2s_utf8_decode(s + i, n - i, &c);
        if (!s2s_is_cjk(c)) return false;
    }
    return n > 0;
}

// Tokenizes text with v and checks every run of CJK characters of the
// normalised text against old_segment: the run's tokens (consecutive, all
// CJK, spans touching) must be the old pieces with the vocab's ids, and the
// run must be whole (no CJK character just outside it). Returns how many
// runs were checked.
static int expect_old_segmentation(const s2s_vocab *v, const char *text) {
    cr_assert_eq(s2s_tokenize(v, text, &t), S2S_OK, "%s", s2s_last_error());
    const char *norm = t.text;
    size_t len = strlen(norm);
    size_t *ends = malloc((len + 1) * sizeof *ends);
    cr_assert_not_null(ends);
    int runs = 0;
    for (int j = 0; j < t.n;) {
        size_t from = (size_t)t.start[j];
        if (!all_cjk(norm + from, (size_t)(t.end[j] - t.start[j]))) {
            j++;
            continue;
        }
        int last = j;
        while (last + 1 < t.n && t.start[last + 1] == t.end[last] &&
               all_cjk(norm + t.start[last + 1], (size_t)(t.end[last + 1] - t.start[last + 1])))
            last++;
        size_t to = (size_t)t.end[last];
        size_t before = from;
        while (before > 0 && ((unsigned char)norm[--before] & 0xC0) == 0x80) continue;
        cr_assert(from == 0 || !cjk_at(norm, before, len), "'%s': the run at byte %zu is cut",
                  text, from);
        cr_assert(!cjk_at(norm, to, len), "'%s': the run before byte %zu is cut", text, to);
        int n = old_segment(v, norm + from, to - from, ends);
        cr_assert_eq(last - j + 1, n, "'%s': run at byte %zu: %d pieces, the old loop %d", text,
                     from, last - j + 1, n);
        size_t p = from;
        for (int k = 0; k < n; k++) {
            size_t e = from + ends[k];
            cr_assert_eq((size_t)t.start[j + k], p, "'%s': piece %d", text, j + k);
            cr_assert_eq((size_t)t.end[j + k], e, "'%s': piece %d", text, j + k);
            cr_assert_eq(strlen(t.pieces[j + k]), e - p);
            cr_assert_eq(memcmp(t.pieces[j + k], norm + p, e - p), 0);
            int id = s2s_vocab_find(v, norm + p, e - p);
            cr_assert_eq(t.ids[j + k], id < 0 ? S2S_UNK : id, "'%s': piece %d", text, j + k);
            p = e;
        }
        runs++;
        j = last + 1;
    }
    free(ends);
    return runs;
}

static unsigned next_rand(unsigned *seed) {
    *seed = *seed * 1103515245u + 12345u;
    return *seed >> 16;
}

// Random vocabularies over a few CJK characters of 3 and 4 bytes (so
// tokens share long prefixes and byte order matters), with some tokens that
// mix in a Latin letter or a CJK punctuation mark (never matched inside a
// run); random lines of those characters with spaces, letters and
// punctuation between runs.
Test(tokenizer, cjk_segmentation_matches_the_old_loop_on_random_vocabs) {
    const char *alphabet[] = {"一", "丁", "二", "あ", "가", "𠀀", "𠀁", "中"};
    const char *breaks[] = {" ", "a", "，", "x1", "。"};
    enum { NB = 5 };
    unsigned seed = 2718;
    char vtext[64 * 80], line[3000];
    int runs = 0;
    for (int trial = 0; trial < 400; trial++) {
        strcpy(vtext, "<pad>\n<unk>\n<s>\n</s>");
        int ntok = (int)(next_rand(&seed) % 40);
        int width = 1 + (int)(next_rand(&seed) % 4);  // how many characters tokens use
        for (int k = 0; k < ntok; k++) {
            char tok[80] = "";
            int chars = 1 + (int)(next_rand(&seed) % (trial % 3 ? 4 : 12));
            for (int c = 0; c < chars; c++)
                strcat(tok, alphabet[next_rand(&seed) % (unsigned)(width + 2)]);
            if (next_rand(&seed) % 10 == 0) strcat(tok, next_rand(&seed) % 2 ? "a" : "，");
            char want[84];
            snprintf(want, sizeof want, "\n%s\n", tok);
            char probe[64 * 80 + 2];
            snprintf(probe, sizeof probe, "\n%s\n", vtext);
            if (strstr(probe, want)) continue;  // no duplicates
            strcat(vtext, "\n");
            strcat(vtext, tok);
        }
        s2s_vocab *v;
        cr_assert_eq(s2s_vocab_from_string(&v, vtext, "random"), S2S_OK, "%s", s2s_last_error());
        for (int k = 0; k < 10; k++) {
            line[0] = '\0';
            int chars = (int)(next_rand(&seed) % 200);
            for (int c = 0; c < chars; c++) {
                unsigned r = next_rand(&seed);
                strcat(line, r % 17 ? alphabet[r % (unsigned)(width + 2)] : breaks[r / 17 % NB]);
            }
            runs += expect_old_segmentation(v, line);
        }
        s2s_vocab_free(v);
    }
    cr_expect_gt(runs, 4000);
}

// The shipped vocabularies on the test sets, both columns: the same
// pieces and ids as the old loop on every CJK run.
Test(tokenizer, cjk_segmentation_matches_the_old_loop_on_the_test_sets) {
    const char *vocabs[] = {S2S_SOURCE_DIR "/vocab/zh.txt", S2S_SOURCE_DIR "/vocab/en.txt"};
    const char *sets[] = {S2S_SOURCE_DIR "/data/corpus/test.zh-en.tsv",
                          S2S_SOURCE_DIR "/data/corpus/test.en-zh.tsv"};
    int runs = 0, lines = 0;
    for (int i = 0; i < 2; i++) {
        s2s_vocab *v;
        cr_assert_eq(s2s_vocab_load(&v, vocabs[i]), S2S_OK, "%s", s2s_last_error());
        for (int k = 0; k < 2; k++) {
            FILE *f = fopen(sets[k], "r");
            cr_assert_not_null(f, "%s", sets[k]);
            char *buf = NULL;
            size_t cap = 0;
            while (getline(&buf, &cap, f) > 0) {
                buf[strcspn(buf, "\n")] = '\0';
                char *tab = strchr(buf, '\t');
                cr_assert_not_null(tab);
                *tab = '\0';
                runs += expect_old_segmentation(v, buf);
                runs += expect_old_segmentation(v, tab + 1);
                lines++;
            }
            free(buf);
            fclose(f);
        }
        s2s_vocab_free(v);
    }
    cr_expect_eq(lines, 4000);
    cr_expect_gt(runs, 4000);
}

// Issue 27, item 9: with one vocab token of 20,000 CJK characters, each
// position of a CJK run hashed every candidate up to 20,000 characters
// long (or to the run's end) from its start, so this line of 20,000
// characters cost some 10^12 hashed bytes: hours (one of 2,000 took 14 s
// at 9f2c0a5).
// Walked once per position it takes milliseconds. The timeout is a guard
// far above the new cost (this asserts the pieces, not a time).
Test(tokenizer, long_vocab_token_costs_no_square_per_position, .timeout = 120) {
    enum { L = 20000 };
    size_t head = strlen("<pad>\n<unk>\n<s>\n</s>\n我\n爱\n一一\n");
    char *vtext = malloc(head + 3 * L + 1);
    cr_assert_not_null(vtext);
    strcpy(vtext, "<pad>\n<unk>\n<s>\n</s>\n我\n爱\n一一\n");
    for (int i = 0; i < L - 1; i++) memcpy(vtext + head + 3 * i, "一", 3);
    memcpy(vtext + head + 3 * (L - 1), "二", 4);  // with the NUL
    s2s_vocab *v;
    cr_assert_eq(s2s_vocab_from_string(&v, vtext, "long"), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_vocab_max_cjk_chars(v), L);
    // 我爱 x 10,000, then 一 x 5: none starting the long token but the 一s,
    // which follow it for 5 characters and then end.
    char *line = malloc(3 * L + 15 + 1);
    cr_assert_not_null(line);
    for (int i = 0; i < L / 2; i++) memcpy(line + 6 * i, "我爱", 6);
    strcpy(line + 3 * L, "一一一一一");
    cr_assert_eq(s2s_tokenize(v, line, &t), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(t.n, L + 3);
    for (int i = 0; i < L; i++) cr_assert_str_eq(t.pieces[i], i % 2 ? "爱" : "我");
    cr_assert_str_eq(t.pieces[L], "一一");
    cr_assert_str_eq(t.pieces[L + 1], "一一");
    cr_assert_str_eq(t.pieces[L + 2], "一");
    // and the long token itself, whole, between two others
    char *with = malloc(3 * L + 7);
    cr_assert_not_null(with);
    strcpy(with, "我");
    memcpy(with + 3, vtext + head, 3 * L);
    strcpy(with + 3 + 3 * L, "爱");
    cr_assert_eq(s2s_tokenize(v, with, &t), S2S_OK);
    cr_assert_eq(t.n, 3);
    cr_assert_eq(t.ids[1], s2s_vocab_size(v) - 1);
    cr_assert_eq(strlen(t.pieces[1]), (size_t)3 * L);
    free(with);
    free(line);
    s2s_vocab_free(v);
    free(vtext);
}

Test(tokenizer, unknown_words_keep_pieces) {
    expect_pieces(en, "The Zebra sat on the Sofa", "the zebra sat on the sofa");
    cr_assert_eq(t.ids[1], S2S_UNK);
    cr_assert_eq(t.ids[5], S2S_UNK);
    cr_assert_neq(t.ids[2], S2S_UNK);
    char *j = s2s_join_tokens(en, t.ids, t.n);
    cr_assert_str_eq(j, "the <unk> sat on the <unk>");
    free(j);
}

Test(tokenizer, mixed_scripts) {
    expect_pieces(zh, "我爱NLP。", "我 爱 nlp 。");
    for (int i = 0; i < t.n; i++) cr_assert_neq(t.ids[i], S2S_UNK);
    expect_pieces(zh, "我爱ＮＬＰ！", "我 爱 nlp ！");  // fullwidth letters fold
    expect_pieces(zh, "他说：“你好”", "他 说 ： “ 你 好 ”");
}

Test(tokenizer, lowercases_beyond_ascii) {
    expect_pieces(en, "CAFÉ ΕΛΛΑΔΑ Straße", "café ελλαδα straße");
    cr_assert_eq(t.ids[0], s2s_vocab_id(en, "café"));
    cr_assert_eq(t.ids[1], s2s_vocab_id(en, "ελλαδα"));
    cr_assert_neq(t.ids[1], S2S_UNK);
}

Test(tokenizer, empty_and_whitespace_lines) {
    const char *blank[] = {"", " ", "   \t  \r\n", "\xE3\x80\x80\xC2\xA0"};
    for (int i = 0; i < 4; i++) {
        t.n = -1;
        cr_assert_eq(s2s_tokenize(en, blank[i], &t), S2S_OK);
        cr_assert_eq(t.n, 0);
    }
    char *s = s2s_detokenize(en, t.ids, 0);
    cr_assert_str_eq(s, "");
    free(s);
}

Test(tokenizer, invalid_utf8) {
    struct { const char *text; const char *where; } cases[] = {
        {"abc\xff", "byte 3"},          // not a lead byte
        {"ok \xE4\xB8", "byte 3"},      // truncated
        {"\xED\xA0\x80", "byte 0"},     // surrogate
        {"the \xC0\xAF", "byte 4"},     // overlong
        {"\xF4\x90\x80\x80", "byte 0"}, // above U+10FFFF
        {"a\x80", "byte 1"},            // stray continuation
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cr_assert_eq(s2s_tokenize(en, "the cat", &t), S2S_OK);
        cr_assert_eq(s2s_tokenize(en, cases[i].text, &t), S2S_ERR_INVALID, "case %zu", i);
        cr_assert_eq(t.n, 0);
        cr_assert(strstr(s2s_last_error(), cases[i].where), "case %zu: '%s'", i, s2s_last_error());
    }
}

Test(tokenizer, one_megabyte_lines) {
    const char *unit = "The cat sat on the mat, ";  // 7 tokens, 24 bytes
    size_t reps = (1u << 20) / strlen(unit) + 1, ulen = strlen(unit);
    char *text = malloc(reps * ulen + 1);
    for (size_t i = 0; i < reps; i++) memcpy(text + i * ulen, unit, ulen);
    text[reps * ulen] = '\0';
    cr_assert_eq(s2s_tokenize(en, text, &t), S2S_OK);
    cr_assert_eq((size_t)t.n, 7 * reps);
    const char *want[] = {"the", "cat", "sat", "on", "the", "mat", ","};
    for (int i = 0; i < t.n; i++) {
        cr_assert_str_eq(t.pieces[i], want[i % 7]);
        cr_assert_eq(t.ids[i], s2s_vocab_id(en, want[i % 7]));
    }

    // One 1 MB word: a single unknown piece holding all of it.
    memset(text, 'A', reps * ulen);
    cr_assert_eq(s2s_tokenize(en, text, &t), S2S_OK);
    cr_assert_eq(t.n, 1);
    cr_assert_eq(t.ids[0], S2S_UNK);
    cr_assert_eq(strlen(t.pieces[0]), reps * ulen);
    cr_assert_eq(t.pieces[0][0], 'a');
    free(text);

    // 1 MB of CJK without a break: "看起来很好" segments as 看起来 很好.
    const char *cunit = "看起来很好";
    size_t clen = strlen(cunit), creps = (1u << 20) / clen + 1;
    text = malloc(creps * clen + 1);
    for (size_t i = 0; i < creps; i++) memcpy(text + i * clen, cunit, clen);
    text[creps * clen] = '\0';
    cr_assert_eq(s2s_tokenize(zh, text, &t), S2S_OK);
    cr_assert_eq((size_t)t.n, 2 * creps);
    for (int i = 0; i < t.n; i++) cr_assert_str_eq(t.pieces[i], i % 2 ? "很好" : "看起来");
    free(text);
}

Test(tokenizer, reuses_buffers_across_calls) {
    cr_assert_eq(s2s_tokenize(en, "the cat sat on the mat , it looks very comfortable .", &t), S2S_OK);
    int cap = t.cap;
    expect_pieces(en, "A dog.", "a dog .");
    cr_assert_eq(t.cap, cap);
    expect_pieces(en, "", "");
    expect_pieces(en, "my cat", "my cat");
}

// ---- detokenize ----

Test(tokenizer, detokenize_english) {
    expect_detok(en, "the cat sat on the mat , it looks very comfortable .",
                 "The cat sat on the mat, it looks very comfortable.");
    expect_detok(en, "i know . i'm here ! she said ; really ?", "I know. I'm here! She said; Really?");
    expect_detok(en, "she said \" hello \" ( really ) to 50 %", "She said \"hello\" (really) to 50%");
    expect_detok(en, "\" hello , \" she said .", "\"Hello,\" she said.");
    expect_detok(en, "the <unk> sat .", "The <unk> sat.");
    expect_detok(en, "café is ελλαδα", "Café is ελλαδα");
}

Test(tokenizer, detokenize_skips_specials) {
    int cat = s2s_vocab_id(en, "cat"), the = s2s_vocab_id(en, "the");
    int ids[] = {S2S_BOS, S2S_PAD, the, S2S_UNK, cat, S2S_EOS, S2S_PAD, 9999};
    char *s = s2s_detokenize(en, ids, 8);
    cr_assert_str_eq(s, "The <unk> cat <unk>");  // out of range shows as <unk>
    free(s);
    s = s2s_join_tokens(en, ids, 7);
    cr_assert_str_eq(s, "the <unk> cat");
    free(s);
}

Test(tokenizer, detokenize_chinese) {
    expect_detok(zh, "这 只 动物 没有 过 马路 ， 因为 它 太 累 了 。", "这只动物没有过马路，因为它太累了。");
    expect_detok(zh, "我 爱 nlp 。", "我爱nlp。");
    expect_detok(zh, "我 说 ： “ 你 好 ”", "我说：“你好”");
}

Test(tokenizer, round_trip) {
    const char *en_lines[] = {
        "The cat sat on the mat, it looks very comfortable.",
        "I didn't know (really) it's true!",
        "She said \"hello\" to my dog. I'm here?",
        "\"A cat,\" she said; The dog is here.",
    };
    for (size_t i = 0; i < sizeof en_lines / sizeof *en_lines; i++) {
        cr_assert_eq(s2s_tokenize(en, en_lines[i], &t), S2S_OK);
        for (int j = 0; j < t.n; j++) cr_assert_neq(t.ids[j], S2S_UNK, "'%s'", t.pieces[j]);
        char *s = s2s_detokenize(en, t.ids, t.n);
        cr_assert_str_eq(s, en_lines[i]);
        free(s);
    }
    const char *zh_lines[] = {"这只动物没有过马路，因为它太累了。", "你喜欢中国！我看起来很好？"};
    for (size_t i = 0; i < 2; i++) {
        cr_assert_eq(s2s_tokenize(zh, zh_lines[i], &t), S2S_OK);
        char *s = s2s_detokenize(zh, t.ids, t.n);
        cr_assert_str_eq(s, zh_lines[i]);
        free(s);
    }
}

// ---- specials and TSV lines ----

Test(tokenizer, special_tokens_are_the_vocab_first_lines) {
    const char *want[] = {"<pad>", "<unk>", "<s>", "</s>"};
    for (int i = 0; i < S2S_NUM_SPECIALS; i++) {
        cr_assert_str_eq(s2s_special_token(i), want[i]);
        cr_assert_str_eq(s2s_special_token(i), s2s_vocab_token(zh, i));
    }
    cr_assert_eq(s2s_special_token(S2S_EOS), s2s_special_token(3));
    cr_assert_null(s2s_special_token(-1));
    cr_assert_null(s2s_special_token(S2S_NUM_SPECIALS));
}

Test(tokenizer, tsv_split_columns) {
    char a[] = "我爱吃苹果\ti love to eat apples .\t0-0 1-1\r\n";
    char *tgt, *third;
    cr_assert_eq(s2s_tsv_split(a, strlen(a), "f.tsv", 1, &tgt, &third), S2S_OK);
    cr_assert_str_eq(a, "我爱吃苹果");
    cr_assert_str_eq(tgt, "i love to eat apples .");
    cr_assert_str_eq(third, "0-0 1-1");

    char b[] = "x\ty\n";
    cr_assert_eq(s2s_tsv_split(b, strlen(b), "f.tsv", 2, &tgt, &third), S2S_OK);
    cr_assert_str_eq(b, "x");
    cr_assert_str_eq(tgt, "y");
    cr_assert_null(third);

    char c[] = "x\ty\tz\tw";  // further tabs stay in the third column
    cr_assert_eq(s2s_tsv_split(c, strlen(c), "f.tsv", 3, &tgt, &third), S2S_OK);
    cr_assert_str_eq(tgt, "y");
    cr_assert_str_eq(third, "z\tw");
    char *fourth = s2s_tsv_next(third);  // the fourth column, cut off the third
    cr_assert_str_eq(third, "z");
    cr_assert_str_eq(fourth, "w");
    cr_assert_null(s2s_tsv_next(fourth));
    cr_assert_null(s2s_tsv_next(NULL));

    char d[] = "\t\n";  // empty columns are the caller's to judge
    cr_assert_eq(s2s_tsv_split(d, strlen(d), "f.tsv", 4, &tgt, &third), S2S_OK);
    cr_assert_str_eq(d, "");
    cr_assert_str_eq(tgt, "");
}

Test(tokenizer, tsv_split_errors_name_the_line) {
    char *tgt, *third;
    char a[] = "no tab here\n";
    cr_assert_eq(s2s_tsv_split(a, strlen(a), "f.tsv", 7, &tgt, &third), S2S_ERR_FORMAT);
    cr_assert_str_eq(s2s_last_error(), "f.tsv:7: expected source<TAB>target, found no tab");
    char b[] = "x\0y\tz\n";  // 6 bytes read, a NUL among them
    cr_assert_eq(s2s_tsv_split(b, 6, "f.tsv", 8, &tgt, &third), S2S_ERR_FORMAT);
    cr_assert_str_eq(s2s_last_error(), "f.tsv:8: NUL byte in the line");
    char c[] = "no tab";
    cr_assert_eq(s2s_tsv_split(c, strlen(c), NULL, 9, &tgt, &third), S2S_ERR_FORMAT);
    cr_assert_str_eq(s2s_last_error(), "expected source<TAB>target, found no tab");
}
