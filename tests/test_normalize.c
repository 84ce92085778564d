// Tests for src/tokenizer/normalize.c: each rule on hand-written cases
// (inputs and the outputs worked out from docs/toy-corpus.md), idempotence,
// no change to any sentence of the corpus, the vocab's language, errors,
// and that s2s_tokenize tokenizes the normalised text.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s2s/normalize.h"
#include "s2s/tokenizer.h"

#define VOCAB_DIR S2S_SOURCE_DIR "/vocab/"
#define CORPUS_DIR S2S_SOURCE_DIR "/data/corpus/"

typedef struct {
    const char *in, *want;
} norm_case;

static char *normalized(s2s_lang lang, const char *text) {
    char *out = NULL;
    cr_assert_eq(s2s_normalize(lang, text, &out), S2S_OK, "normalize(\"%s\"): %s", text,
                 s2s_last_error());
    cr_assert_not_null(out);
    return out;
}

// Each case gives its output, and normalising that output again changes
// nothing.
static void expect_cases(s2s_lang lang, const norm_case *c, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char *got = normalized(lang, c[i].in);
        cr_expect_str_eq(got, c[i].want, "%s: \"%s\"", s2s_lang_name(lang), c[i].in);
        char *again = normalized(lang, got);
        cr_expect_str_eq(again, got, "%s: not idempotent on \"%s\"", s2s_lang_name(lang), got);
        free(again);
        free(got);
    }
}

#define CASES(lang, arr) expect_cases(lang, arr, sizeof arr / sizeof *arr)

// ---- English ----

Test(normalize, en_width_and_punctuation) {
    static const norm_case c[] = {
        {"Ｉ ｈａｖｅ ｔｗｏ ｃａｔｓ．", "I have two cats."},
        {"Do you like cats？", "Do you like cats?"},
        {"I have two cats。", "I have two cats."},
        {"That cat sits on the mat，it looks very comfortable．",
         "That cat sits on the mat,it looks very comfortable."},
        {"I\u3000like cats.", "I like cats."},
        {"Cats、dogs and fish.", "Cats,dogs and fish."},
        {"I like cats｡", "I like cats."},
        {"The animal didn’t cross the street.", "The animal didn't cross the street."},
        {"I like cats!", "I like cats!"},  // ! has no corpus form to become
    };
    CASES(S2S_LANG_EN, c);
}

Test(normalize, en_numbers) {
    static const norm_case c[] = {
        {"I have 2 cats.", "I have two cats."},
        {"I have 3 cats.", "I have three cats."},
        {"He has 10 books.", "He has ten books."},
        {"I have 1 cat.", "I have a cat."},
        {"I have 1 apple.", "I have an apple."},
        {"1 Apple.", "an Apple."},
        {"I have ２ cats.", "I have two cats."},
        {"I have 2.", "I have two."},
        {"I have 2, you have 3.", "I have two, you have three."},
        {"(2 cats)", "(two cats)"},
        // numbers the lexicon has no word for, or parts of larger ones
        {"I have 11 cats.", "I have 11 cats."},
        {"I have 0 cats.", "I have 0 cats."},
        {"I have 02 cats.", "I have 02 cats."},
        {"It costs 2.5 dollars.", "It costs 2.5 dollars."},
        {"I have 1,000 cats.", "I have 1,000 cats."},
        {"I go at 10:30.", "I go at 10:30."},
        {"The 2nd cat.", "The 2nd cat."},
        {"I have 2-3 cats.", "I have 2-3 cats."},
        {"It is 50% tired.", "It is 50% tired."},
        {"It costs $5.", "It costs $5."},
        {"Page 1.", "Page 1."},  // 1 becomes a/an only before a word
        {"mp3 files.", "mp3 files."},
        {"Mind your 3's.", "Mind your 3's."},
    };
    CASES(S2S_LANG_EN, c);
}

Test(normalize, en_contractions) {
    static const norm_case c[] = {
        {"The animal didnt cross the street because it was too tired.",
         "The animal didn't cross the street because it was too tired."},
        {"The animal did not cross the street because it was too tired.",
         "The animal didn't cross the street because it was too tired."},
        {"He did n't eat apples .", "He didn't eat apples ."},
        // A rule's first word at the very end (or before trailing spaces)
        // looped forever: past the end reads as 0, which is a space
        // (tests/fuzz/crashes/tokenizer/did-at-end-loops).
        {"The animal did", "The animal did"},
        {"sThe animal did", "sThe animal did"},
        {"The cat will  ", "The cat will  "},
        {"He did  not eat apples.", "He didn't eat apples."},
        {"I dont like cats.", "I don't like cats."},
        {"I do not like cats.", "I don't like cats."},
        {"He doesnt like fish.", "He doesn't like fish."},
        {"He does not like fish.", "He doesn't like fish."},
        {"He wont go to the park tomorrow.", "He won't go to the park tomorrow."},
        {"He will not go to the park tomorrow.", "He won't go to the park tomorrow."},
        {"It isn't tired.", "It is not tired."},
        {"It isnt tired.", "It is not tired."},
        {"They aren't students.", "They are not students."},
        {"It wasnt tired yesterday.", "It was not tired yesterday."},
        {"They weren't tired yesterday.", "They were not tired yesterday."},
        {"They weren’t tired yesterday.", "They were not tired yesterday."},
        {"It was n't tired yesterday.", "It was not tired yesterday."},
        // other contractions stay
        {"I'm tired, it's late.", "I'm tired, it's late."},
        // the case of what was typed
        {"Dont go.", "Don't go."},
        {"I DIDNT GO.", "I DIDN'T GO."},
        {"Did not he?", "Didn't he?"},
        // whole words only
        {"I like wonton soup.", "I like wonton soup."},
        {"I dontknow.", "I dontknow."},
        {"He did nothing.", "He did nothing."},
        {"Do notice it.", "Do notice it."},
        {"The cat likes its toy.", "The cat likes its toy."},
        {"They were tired.", "They were tired."},
        {"The didn't.", "The didn't."},
    };
    CASES(S2S_LANG_EN, c);
}

Test(normalize, en_question_mark) {
    static const norm_case c[] = {
        {"Do you like cats", "Do you like cats?"},
        {"did he eat apples", "did he eat apples?"},
        {"Will you go to the school tomorrow", "Will you go to the school tomorrow?"},
        {"Is it tired", "Is it tired?"},
        {"Is it tired  ", "Is it tired?  "},
        {"Do you have 2", "Do you have two?"},
        {"Do you like cats :)", "Do you like cats :)"},
        {"Do you like cats.", "Do you like cats."},
        // statements stay as typed: the models know them without a stop
        {"I like cats", "I like cats"},
        {"Dogs do like cats", "Dogs do like cats"},
        {"Island cats", "Island cats"},  // "is" only as a whole word
        {"I have 2", "I have two"},
        {"", ""},
        {"   ", "   "},
    };
    CASES(S2S_LANG_EN, c);
}

// ---- Chinese ----

Test(normalize, zh_punctuation_and_spaces) {
    static const norm_case c[] = {
        {"你喜欢猫吗?", "你喜欢猫吗？"},
        {"那只猫坐在垫子上,它看起来很舒服.", "那只猫坐在垫子上，它看起来很舒服。"},
        {"那只猫坐在垫子上, 它看起来很舒服 .", "那只猫坐在垫子上，它看起来很舒服。"},
        {"我爱吃苹果!", "我爱吃苹果！"},
        {"注意:猫;狗。", "注意：猫；狗。"},
        {"你 喜欢 猫 吗 ?", "你喜欢猫吗？"},
        {"你\u3000喜欢\u3000猫吗？", "你喜欢猫吗？"},
        {"它看 起来很累。", "它看起来很累。"},
        {"我爱猫｡", "我爱猫。"},
        {"我爱猫．", "我爱猫。"},
        {"猫､狗", "猫、狗"},
        {"我爱ＮＬＰ。", "我爱NLP。"},
        {"我喜欢Python, 你呢", "我喜欢Python，你呢？"},
        {"我喜欢 Python 和猫。", "我喜欢 Python 和猫。"},
        // left alone inside numbers, addresses and ellipses
        {"我有2.5个苹果。", "我有2.5个苹果。"},
        {"他有1,000本书。", "他有1,000本书。"},
        {"他有1，000本书。", "他有1,000本书。"},
        {"我在www.example.com上。", "我在www.example.com上。"},
        {"等等...", "等等..."},
    };
    CASES(S2S_LANG_ZH, c);
}

Test(normalize, zh_numbers) {
    static const norm_case c[] = {
        {"我有2只猫", "我有两只猫"},
        {"我有1个苹果。", "我有一个苹果。"},
        {"我有3本书。", "我有三本书。"},
        {"他有10辆车。", "他有十辆车。"},
        {"我喝了2杯水。", "我喝了两杯水。"},
        {"我有２只猫。", "我有两只猫。"},
        {"我有9条鱼，他有4头牛。", "我有九条鱼，他有四头牛。"},
        // not before a measure word, or no numeral in the lexicon
        {"我有11只猫。", "我有11只猫。"},
        {"我有0只猫。", "我有0只猫。"},
        {"第2只猫很累。", "第2只猫很累。"},
        {"我2点去。", "我2点去。"},
        {"我有2.5个苹果。", "我有2.5个苹果。"},
        {"猫有2", "猫有2"},
    };
    CASES(S2S_LANG_ZH, c);
}

Test(normalize, zh_traditional) {
    static const norm_case c[] = {
        {"我愛吃蘋果", "我爱吃苹果"},
        {"你喜歡貓嗎?", "你喜欢猫吗？"},
        {"這隻動物沒有過馬路，因為牠太累了。", "这只动物没有过马路，因为它太累了。"},
        {"那隻貓坐在墊子上，牠看起來很舒服。", "那只猫坐在垫子上，它看起来很舒服。"},
        {"我有2隻貓", "我有两只猫"},
        {"我有2只貓?", "我有两只猫？"},  // the example in s2s/normalize.h
        {"他們是學生。", "他们是学生。"},
    };
    CASES(S2S_LANG_ZH, c);
}

Test(normalize, zh_question_mark) {
    static const norm_case c[] = {
        {"你喜欢猫吗", "你喜欢猫吗？"},
        {"你呢", "你呢？"},
        {"你喜欢猫吗  ", "你喜欢猫吗？  "},
        {"你喜欢猫吗。", "你喜欢猫吗。"},
        {"我爱吃苹果", "我爱吃苹果"},
        {"我爱NLP", "我爱NLP"},
        {"", ""},
    };
    CASES(S2S_LANG_ZH, c);
}

Test(normalize, none_changes_nothing) {
    const char *texts[] = {"I didnt have 2 cats", "你喜欢猫吗?", "我愛吃蘋果", "Ｉ", ""};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        char *got = normalized(S2S_LANG_NONE, texts[i]);
        cr_expect_str_eq(got, texts[i]);
        free(got);
    }
}

// ---- the corpus ----

// Every source and target of every split: the rules must be a no-op on
// what the models were trained and tested on.
Test(normalize, corpus_unchanged, .timeout = 120) {
    static const struct {
        const char *file;
        s2s_lang col[2];
    } files[] = {
        {"train.zh-en.tsv", {S2S_LANG_ZH, S2S_LANG_EN}}, {"dev.zh-en.tsv", {S2S_LANG_ZH, S2S_LANG_EN}},
        {"test.zh-en.tsv", {S2S_LANG_ZH, S2S_LANG_EN}},  {"train.en-zh.tsv", {S2S_LANG_EN, S2S_LANG_ZH}},
        {"dev.en-zh.tsv", {S2S_LANG_EN, S2S_LANG_ZH}},   {"test.en-zh.tsv", {S2S_LANG_EN, S2S_LANG_ZH}},
    };
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        char path[512];
        snprintf(path, sizeof path, CORPUS_DIR "%s", files[f].file);
        FILE *fp = fopen(path, "r");
        cr_assert_not_null(fp, "%s", path);
        char *line = NULL;
        size_t cap = 0;
        long n = 0, changed = 0;
        while (getline(&line, &cap, fp) > 0) {
            n++;
            char *tab1 = strchr(line, '\t');
            cr_assert_not_null(tab1, "%s:%ld", path, n);
            char *tab2 = strchr(tab1 + 1, '\t');
            cr_assert_not_null(tab2, "%s:%ld", path, n);
            *tab1 = *tab2 = '\0';
            const char *side[2] = {line, tab1 + 1};
            for (int k = 0; k < 2; k++) {
                char *got = normalized(files[f].col[k], side[k]);
                if (strcmp(got, side[k]) != 0 && changed++ < 5)
                    cr_log_error("%s:%ld: \"%s\" -> \"%s\"", path, n, side[k], got);
                free(got);
            }
        }
        free(line);
        fclose(fp);
        cr_expect(n >= 1000, "%s: %ld lines", path, n);
        cr_expect_eq(changed, 0, "%s: %ld sentences changed", path, changed);
    }
}

// ---- the vocab's language ----

static s2s_vocab *vocab_of(const char *text) {
    s2s_vocab *v;
    cr_assert_eq(s2s_vocab_from_string(&v, text, "test"), S2S_OK, "%s", s2s_last_error());
    return v;
}

Test(normalize, vocab_lang) {
    static const struct {
        const char *file;
        s2s_lang want;
    } files[] = {{"en.txt", S2S_LANG_EN}, {"zh.txt", S2S_LANG_ZH}, {"bench.src.txt", S2S_LANG_NONE}};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[512];
        snprintf(path, sizeof path, VOCAB_DIR "%s", files[i].file);
        s2s_vocab *v;
        cr_assert_eq(s2s_vocab_load(&v, path), S2S_OK, "%s", s2s_last_error());
        cr_expect_eq(s2s_vocab_lang(v), files[i].want, "%s", path);
        s2s_vocab_free(v);
    }
    static const struct {
        const char *tokens;
        s2s_lang want;
    } small[] = {
        {"<pad>\n<unk>\n<s>\n</s>\nder\nhund\nsitzt", S2S_LANG_NONE},
        {"<pad>\n<unk>\n<s>\n</s>\nthe\ncat\n猫", S2S_LANG_EN},
        {"<pad>\n<unk>\n<s>\n</s>\n猫\n狗\nthe", S2S_LANG_ZH},
        {"<pad>\n<unk>\n<s>\n</s>", S2S_LANG_NONE},
    };
    for (size_t i = 0; i < sizeof small / sizeof *small; i++) {
        s2s_vocab *v = vocab_of(small[i].tokens);
        cr_expect_eq(s2s_vocab_lang(v), small[i].want, "vocab %zu", i);
        s2s_vocab_free(v);
    }
    cr_expect_eq(s2s_vocab_lang(NULL), S2S_LANG_NONE);
}

// ---- errors ----

Test(normalize, errors) {
    char *out = (char *)0x1;
    cr_expect_eq(s2s_normalize(S2S_LANG_EN, "ab\xff", &out), S2S_ERR_INVALID);
    cr_expect_null(out);
    cr_expect(strstr(s2s_last_error(), "byte 2") != NULL, "%s", s2s_last_error());
    out = (char *)0x1;
    cr_expect_eq(s2s_normalize(S2S_LANG_ZH, "\xe4\xbd", &out), S2S_ERR_INVALID);
    cr_expect_null(out);
    cr_expect_eq(s2s_normalize(S2S_LANG_COUNT, "a", &out), S2S_ERR_INVALID);
    cr_expect_eq(s2s_normalize((s2s_lang)-1, "a", &out), S2S_ERR_INVALID);
    cr_expect_eq(s2s_normalize(S2S_LANG_EN, NULL, &out), S2S_ERR_INVALID);
    cr_expect_eq(s2s_normalize(S2S_LANG_EN, "a", NULL), S2S_ERR_INVALID);
    cr_expect_str_eq(s2s_lang_name(S2S_LANG_ZH), "zh");
    cr_expect_str_eq(s2s_lang_name(S2S_LANG_COUNT), "?");
}

// ---- through the tokenizer ----

static s2s_vocab *en, *zh;

static void load_vocabs(void) {
    cr_assert_eq(s2s_vocab_load(&en, VOCAB_DIR "en.txt"), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_vocab_load(&zh, VOCAB_DIR "zh.txt"), S2S_OK, "%s", s2s_last_error());
}

static void free_vocabs(void) {
    s2s_vocab_free(en);
    s2s_vocab_free(zh);
}

// The tokens of text, joined by spaces, each marked "?" when unknown.
static char *tokens_of(const s2s_vocab *v, const char *text) {
    s2s_tokens t = {0};
    cr_assert_eq(s2s_tokenize(v, text, &t), S2S_OK, "%s", s2s_last_error());
    size_t n = 1;
    for (int i = 0; i < t.n; i++) n += strlen(t.pieces[i]) + 2;
    char *s = calloc(n, 1);
    cr_assert_not_null(s);
    for (int i = 0; i < t.n; i++) {
        if (i) strcat(s, " ");
        strcat(s, t.pieces[i]);
        if (t.ids[i] == S2S_UNK) strcat(s, "?");
    }
    s2s_tokens_free(&t);
    return s;
}

Test(normalize, tokenize_normalises, .init = load_vocabs, .fini = free_vocabs) {
    static const struct {
        int zh;
        const char *text, *want;
    } c[] = {
        {1, "我有2只猫", "我 有 两 只 猫"},
        {1, "我愛吃蘋果", "我 爱 吃 苹果"},
        {1, "你喜欢猫吗?", "你 喜欢 猫 吗 ？"},
        {1, "那只猫坐在垫子上,它看起来很舒服.",
         "那 只 猫 坐 在 垫子 上 ， 它 看起来 很 舒服 。"},
        {0, "The animal didnt cross the street because it was too tired.",
         "the animal didn't cross the street because it was too tired ."},
        {0, "I have 2 cats", "i have two cats"},
        {0, "Do you like cats", "do you like cats ?"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char *got = tokens_of(c[i].zh ? zh : en, c[i].text);
        cr_expect_str_eq(got, c[i].want, "\"%s\"", c[i].text);
        free(got);
    }
}

// What the rules write is in the vocab: every numeral before every measure
// word, and every English form the rules produce.
Test(normalize, outputs_in_vocab, .init = load_vocabs, .fini = free_vocabs) {
    static const char *const mw[] = {"只", "本", "个", "辆", "张", "把", "条", "件", "头",
                                     "匹", "根", "块", "封", "份", "台", "部", "扇", "支",
                                     "朵", "棵", "座", "顶", "列", "杯", "碗", "瓶"};
    static const char *const zh_num[] = {"一", "两", "三", "四", "五",
                                         "六", "七", "八", "九", "十"};
    for (int d = 1; d <= 10; d++)
        for (size_t m = 0; m < sizeof mw / sizeof *mw; m++) {
            char in[32], want[64];
            snprintf(in, sizeof in, "%d%s", d, mw[m]);
            snprintf(want, sizeof want, "%s %s", zh_num[d - 1], mw[m]);
            char *got = tokens_of(zh, in);
            cr_expect_str_eq(got, want, "\"%s\"", in);
            free(got);
        }
    static const char *const en_in[] = {
        "1 cat, 1 apple, 2 3 4 5 6 7 8 9 10",
        "didnt dont doesnt wont isnt arent wasnt werent",
    };
    static const char *const en_want[] = {
        "a cat , an apple , two three four five six seven eight nine ten",
        "didn't don't doesn't won't is not are not was not were not",
    };
    for (size_t i = 0; i < 2; i++) {
        char *got = tokens_of(en, en_in[i]);
        cr_expect_str_eq(got, en_want[i]);
        free(got);
    }
}
