#!/usr/bin/env python3
"""Checks the toy zh<->en corpus (data/corpus), its vocabularies (vocab/) and
its generator (scripts/gen_corpus.py) against the conventions of
docs/toy-corpus.md.

    python3 tests/test_corpus.py          # all checks (regenerates the corpus in memory, ~30 s)
    python3 tests/test_corpus.py --quick  # skips the full regeneration

Prints one line per check and a final "N passed, M failed"; exits 1 on any
failure. Standard library only.
"""

import os
import re
import subprocess
import sys
import tempfile
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import gen_corpus  # noqa: E402

CORPUS = os.path.join(ROOT, "data", "corpus")
VOCAB = os.path.join(ROOT, "vocab")
LEXICON = os.path.join(ROOT, "data", "lexicon.tsv")
GEN = os.path.join(ROOT, "scripts", "gen_corpus.py")
SPLITS = ("train", "dev", "test")

REQUIRED_WORDS = """我 你 他 她 它 我们 你们 他们 猫 狗 动物 苹果 书 垫子 马路 街 公园 学校 老师 学生
朋友 妈妈 爸爸 水 茶 饭 手机 房子 车 爱 喜欢 吃 喝 看 读 写 坐 过 买 去 来 有 是 想 知道 看起来 大 小
红色 累 舒服 好 新 旧 快 慢 今天 昨天 明天 很 太 不 没有 因为 所以 在 上 里 一 两 三 只 本 个 杯 辆 这
那 的 了 吗 正在""".split()

SAMPLES = [
    ("我爱吃苹果。", "i love to eat apples ."),
    ("那只猫坐在垫子上，它看起来很舒服。", "that cat sits on the mat , it looks very comfortable ."),
    ("这只动物没有过马路，因为它太累了。", "the animal didn't cross the street because it was too tired ."),
]

# the coref column of the samples (zh-en: zh side | en side): 它 -> 猫, it -> animal
SAMPLE_COREF = {"我爱吃苹果。": "", "那只猫坐在垫子上，它看起来很舒服。": "8-2|7-1",
                "这只动物没有过马路，因为它太累了。": "8-2|7-1"}

ZH_PUNCT = set("，。？")
EN_PUNCT = set(",.?")


# ---- helpers ----

def read_tsv(path):
    rows = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            cols = line.rstrip("\n").split("\t")
            rows.append(tuple(cols))
    return rows


def ends_punct(src):
    return src.endswith(("。", "？", " .", " ?"))


def read_vocab(path):
    with open(path, encoding="utf-8") as fh:
        return [l.rstrip("\n") for l in fh]


def is_cjk(ch):
    return 0x4E00 <= ord(ch) <= 0x9FFF


def segment(text, vocab):
    """s2s's Chinese segmentation: greedy longest match inside runs of CJK
    characters (window = the longest all-CJK vocab token), else one
    character; punctuation is a token of its own. Written independently of
    the generator."""
    maxc = max([len(t) for t in vocab if t and all(is_cjk(c) for c in t)] + [1])
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if not is_cjk(ch):
            out.append(ch)
            i += 1
            continue
        end = i
        while end < len(text) and is_cjk(text[end]):
            end += 1
        p = i
        while p < end:
            n = min(maxc, end - p)
            while n > 1 and text[p:p + n] not in vocab:
                n -= 1
            out.append(text[p:p + n])
            p += n
        i = end
    return out


def tsv_line(r):
    return "\t".join(r)


def parse_align(s):
    pairs = []
    for p in s.split():
        a, b = p.split("-")
        pairs.append((int(a), int(b)))
    return pairs


# ---- the checks ----

class Checks:
    def __init__(self, quick):
        self.quick = quick
        self.data, self.extra, self.raw = {}, {}, {}
        self.coref, self.extra_coref = {}, {}
        self.variants = {}  # split -> zh-en lines of gen_corpus.kin_variants (我妈妈 = my mom)
        for sp in SPLITS:
            n_pairs = None
            for d in ("en-zh", "zh-en"):
                path = os.path.join(CORPUS, "%s.%s.tsv" % (sp, d))
                rows = read_tsv(path) if os.path.exists(path) else None
                self.raw[(sp, d)] = rows
                # train files end with extra lines whose source lacks its
                # final full stop (gen_corpus.unpunctuated); checked apart.
                # data/extra hold the first 3 columns, coref/extra_coref the
                # 4th ("" when the line has none)
                full = [r for r in rows or [] if ends_punct(r[0])]
                extra = [r for r in rows or [] if not ends_punct(r[0])]
                if d == "en-zh":
                    n_pairs = len(full)
                else:  # zh-en: the pairs, then the kin-without-的 lines, then the unpunctuated ones
                    self.variants[sp] = full[n_pairs:]
                    full = full[:n_pairs]
                self.extra[(sp, d)] = [tuple(r[:3]) for r in extra]
                self.extra_coref[(sp, d)] = [r[3] if len(r) > 3 else "" for r in extra]
                self.data[(sp, d)] = [tuple(r[:3]) for r in full] if rows else rows
                self.coref[(sp, d)] = [r[3] if len(r) > 3 else "" for r in full]
        self.vzh = read_vocab(os.path.join(VOCAB, "zh.txt"))
        self.ven = read_vocab(os.path.join(VOCAB, "en.txt"))
        self.lex = gen_corpus.Lexicon(LEXICON)
        self._segs = {}

    def segs(self, sp):
        """s2s's segmentation of the split's Chinese side with vocab/zh.txt (cached)."""
        if sp not in self._segs:
            vz = set(self.vzh)
            self._segs[sp] = [segment(r[0], vz) for r in self.zhen(sp)]
        return self._segs[sp]

    def zhen(self, sp):
        rows = self.data[(sp, "zh-en")]
        assert rows is not None, "missing %s.zh-en.tsv" % sp
        return rows

    def test_files_exist_and_split_sizes(self):
        for key, rows in self.data.items():
            assert rows is not None, "missing %s.%s.tsv" % key
        assert len(self.zhen("train")) >= 100000, len(self.zhen("train"))
        assert len(self.zhen("dev")) == 1000, len(self.zhen("dev"))
        assert len(self.zhen("test")) == 1000, len(self.zhen("test"))

    def test_unpunctuated_extras(self):
        for d, stop in (("zh-en", "。"), ("en-zh", " .")):
            main = {r[0]: r for r in self.data[("train", d)]}
            extra = self.extra[("train", d)]
            cref = dict(zip((r[0] for r in self.data[("train", d)]), self.coref[("train", d)]))
            assert 0.05 * len(main) < len(extra) < 0.15 * len(main), (d, len(extra))
            for (src, tgt, align), co in zip(extra, self.extra_coref[("train", d)]):
                assert co == cref[src + stop], "%s: '%s' has coref %r, its full line %r" % (
                    d, src, co, cref[src + stop])
                full = main.get(src + stop)
                assert full is not None, "%s: no full line for '%s'" % (d, src)
                assert full[1] == tgt, "%s: '%s' has another target" % (d, src)
                last = len(full[0].split(" ")) - 1 if d == "en-zh" else None
                links = parse_align(full[2])
                if last is None:  # zh source: the stop is the last segmented token
                    last = max(i for i, _ in links)
                want = sorted(l for l in links if l[0] != last)
                assert sorted(parse_align(align)) == want, "%s: '%s'" % (d, src)
        for sp in ("dev", "test"):
            for d in ("zh-en", "en-zh"):
                assert not self.extra[(sp, d)], "%s.%s has unpunctuated sources" % (sp, d)

    def test_three_columns_or_four_with_coref(self):
        side = r"(\d+-\d+( \d+-\d+)*)?"
        fourth = re.compile("^%s\\|%s$" % (side, side))
        for (sp, d), rows in self.raw.items():
            for k, r in enumerate(rows):
                assert len(r) in (3, 4) and r[0] and r[1], "%s.%s line %d: %r" % (sp, d, k + 1, r)
                if len(r) == 4:
                    assert fourth.match(r[3]) and r[3] != "|", "%s.%s line %d: %r" % (sp, d, k + 1, r[3])

    def test_en_zh_is_zh_en_swapped_and_flipped(self):
        for sp in SPLITS:
            a, b = self.zhen(sp), self.data[(sp, "en-zh")]
            assert len(a) == len(b), sp
            for k, (x, y) in enumerate(zip(a, b)):
                assert y[0] == x[1] and y[1] == x[0], "%s line %d" % (sp, k + 1)
                want = sorted((j, i) for i, j in parse_align(x[2]))
                assert sorted(parse_align(y[2])) == want, "%s line %d" % (sp, k + 1)
                cx, cy = self.coref[(sp, "zh-en")][k], self.coref[(sp, "en-zh")][k]
                assert cy == ("|".join(cx.split("|")[::-1]) if cx else ""), "%s line %d" % (sp, k + 1)

    def test_translation_is_a_function_both_ways(self):
        zh2en, en2zh = {}, {}
        for sp in SPLITS:
            for zh, en, _ in self.zhen(sp):
                assert zh2en.setdefault(zh, en) == en, "zh '%s' -> '%s' and '%s'" % (zh, zh2en[zh], en)
                assert en2zh.setdefault(en, zh) == zh, "en '%s' -> '%s' and '%s'" % (en, en2zh[en], zh)

    def test_no_source_shared_between_splits(self):
        for col in (0, 1):  # zh sources (zh-en), en sources (en-zh)
            seen = {}
            for sp in SPLITS:
                for r in self.zhen(sp):
                    other = seen.setdefault(r[col], sp)
                    assert other == sp, "'%s' in %s and %s" % (r[col], other, sp)
            # and no duplicates inside a split either
            for sp in SPLITS:
                srcs = [r[col] for r in self.zhen(sp)]
                assert len(srcs) == len(set(srcs)), "duplicate source in %s" % sp

    def test_english_is_lowercase_tokenized(self):
        tok = re.compile(r"^([a-z]+('[a-z]+)?|[,.?])$")
        for sp in SPLITS:
            for zh, en, _ in self.zhen(sp):
                toks = en.split(" ")
                assert all(tok.match(t) for t in toks), en
                assert toks[-1] in (".", "?"), en

    def test_chinese_is_written_normally(self):
        for sp in SPLITS:
            for zh, en, _ in self.zhen(sp):
                assert all(is_cjk(c) or c in ZH_PUNCT for c in zh), zh
                assert zh[-1] in "。？", zh
                assert (zh[-1] == "？") == (en.endswith(" ?")), (zh, en)

    def test_vocab_files(self):
        for name, v, side in (("zh", self.vzh, 0), ("en", self.ven, 1)):
            assert v[:4] == ["<pad>", "<unk>", "<s>", "</s>"], name
            assert len(v) == len(set(v)), "duplicate token in vocab/%s.txt" % name
            assert all(t and not any(c.isspace() for c in t) for t in v), name
            assert len(v) <= 620, "vocab/%s.txt has %d tokens" % (name, len(v))
        # en: rebuilt from train, frequency descending then alphabetical
        counts = {}
        for _, en, _ in self.zhen("train"):
            for t in en.split(" "):
                counts[t] = counts.get(t, 0) + 1
        want = sorted(counts, key=lambda t: (-counts[t], t))
        assert self.ven[4:] == want, "vocab/en.txt is not the train tokens by frequency"
        counts = {}
        for seg in self.segs("train"):
            for t in seg:
                counts[t] = counts.get(t, 0) + 1
        want = sorted(counts, key=lambda t: (-counts[t], t))
        assert self.vzh[4:] == want, "vocab/zh.txt is not the train tokens by frequency"

    def test_dev_and_test_tokens_are_in_vocab(self):
        vz, ve = set(self.vzh), set(self.ven)
        for sp in ("dev", "test"):
            for (zh, en, _), seg in zip(self.zhen(sp), self.segs(sp)):
                for t in seg:
                    assert t in vz, "%s: zh token '%s' not in vocab (%s)" % (sp, t, zh)
                for t in en.split(" "):
                    assert t in ve, "%s: en token '%s' not in vocab (%s)" % (sp, t, en)

    def test_vocab_tokens_are_lexicon_words(self):
        lexwords = set(e.zh for e in self.lex.entries) | ZH_PUNCT
        extra = [t for t in self.vzh[4:] if t not in lexwords]
        assert not extra, "zh vocab tokens outside the lexicon: %s" % extra[:20]

    def test_lengths(self):
        for sp in SPLITS:
            for (zh, en, _), seg in zip(self.zhen(sp), self.segs(sp)):
                assert len(en.split(" ")) <= 25, en
                assert len(seg) <= 25, zh

    def test_alignments_in_range_and_punctuation(self):
        for sp in SPLITS:
            for (zh, en, al), zt in zip(self.zhen(sp), self.segs(sp)):
                et = en.split(" ")
                pairs = parse_align(al)
                assert len(pairs) == len(set(pairs)), al
                for i, j in pairs:
                    assert 0 <= i < len(zt) and 0 <= j < len(et), (zh, en, al)
                    assert (zt[i] in ZH_PUNCT) == (et[j] in EN_PUNCT), (zh, en, zt[i], et[j])
                assert (len(zt) - 1, len(et) - 1) in pairs, "final punctuation unaligned: %s" % zh

    def test_content_words_align_to_their_translations(self):
        """Every noun, verb, adjective, pronoun, name, number and time word is
        aligned, and only to one of its English forms from the lexicon."""
        forms = {}
        for e in self.lex.entries:
            if e.pos in ("func", "mw"):
                continue
            f = set(e.en)
            for key in ("pl", "obj", "poss", "pposs", "3sg", "past", "ing"):
                if e.get(key):
                    f |= set(e.words(key))
            if e.pos in ("noun", "name", "kin"):
                f.add(e.en[-1] + "'s")  # 医生的车 = the doctor's car
            if e.get("read"):
                f |= set(e.get("read").split(":")[1].split(","))
            if e.zh == "一":
                f.add("an")
            if e.zh == "有":
                f |= {"don't", "doesn't", "didn't", "won't"}  # 没有 = don't have
            if e.zh == "是":
                f |= {"am", "are", "were"}
            forms[e.zh] = f
        vz = set(self.vzh)
        for sp in ("dev", "test"):
            for zh, en, al in self.zhen(sp):
                zt, et = segment(zh, vz), en.split(" ")
                linked = {}
                for i, j in parse_align(al):
                    linked.setdefault(i, []).append(et[j])
                for i, t in enumerate(zt):
                    if t not in forms:
                        continue
                    assert i in linked, "'%s' unaligned in %s / %s" % (t, zh, en)
                    for w in linked[i]:
                        if w == "it" and zt.index(t) < i:
                            continue  # the repeated noun of an ambiguous sentence = it
                        assert w in forms[t], "'%s' aligned to '%s' in %s / %s" % (t, w, zh, en)

    def test_lexicon_size_and_required_words(self):
        zh = [e.zh for e in self.lex.entries]
        assert len(zh) >= 250, len(zh)
        missing = [w for w in REQUIRED_WORDS if w not in zh]
        assert not missing, missing
        for e in self.lex.pos("noun"):
            assert e.get("mw") and e.get("pl") and e.get("cat"), e.zh
            assert self.lex[e.get("mw")].pos == "mw", e.zh
        for e in self.lex.pos("verb"):
            assert e.get("3sg") and e.get("past") and e.get("ing") and e.get("type"), e.zh

    def test_english_forms_are_unambiguous(self):
        """Two content words never share an English form, or en->zh would not
        be a function (马路 = street, so 街 = avenue)."""
        owner = {}
        for e in self.lex.entries:
            if e.pos not in ("noun", "mass", "place", "field", "adj", "name", "kin"):
                continue
            for w in [" ".join(e.en)] + ([e.get("pl")] if e.get("pl") else []):
                if w in owner and owner[w] != e.zh and w != "fish":
                    raise AssertionError("'%s' is %s and %s" % (w, owner[w], e.zh))
                owner[w] = e.zh

    def test_samples_render_exactly(self):
        g = gen_corpus.Gen(self.lex, gen_corpus.random.Random(0))
        got = [g.strings(s) for s in gen_corpus.sample_sentences(g)]
        assert got == SAMPLES, got

    def test_samples_are_in_train_and_consistent(self):
        train = {zh: en for zh, en, _ in self.zhen("train")}
        for zh, en in SAMPLES:
            assert train.get(zh) == en, (zh, train.get(zh))
        seg = segment("我爱吃苹果", set(self.vzh))
        assert seg == ["我", "爱", "吃", "苹果"], seg
        seg = segment("那只猫坐在垫子上，它看起来很舒服。", set(self.vzh))
        assert seg == ["那", "只", "猫", "坐", "在", "垫子", "上", "，", "它", "看起来", "很", "舒服", "。"], seg

    def test_sample_alignment_links_eat_to_chi(self):
        for zh, en, al in self.zhen("train"):
            if zh == "我爱吃苹果。":
                zt, et = segment(zh, set(self.vzh)), en.split(" ")
                pairs = [(zt[i], et[j]) for i, j in parse_align(al)]
                assert ("吃", "eat") in pairs and ("爱", "love") in pairs, pairs
                assert ("苹果", "apples") in pairs and ("。", ".") in pairs, pairs
                return
        raise AssertionError("sample not found")

    def test_every_construction_occurs(self):
        rows = self.zhen("train")

        def has(zpat, epat):
            zr, er = re.compile(zpat), re.compile(epat)
            return any(zr.search(zh) and er.search(en) for zh, en, _ in rows)

        cases = [
            ("pronoun subject SVO", r"^我吃", r"^i eat "),
            ("noun subject", r"^猫[^的]", r"^cats "),
            ("adjective", r"大猫", r"big cat"),
            ("adjective with 的", r"红色的车", r"red car"),
            ("possessive", r"我的书", r"my book"),
            ("number + measure word", r"两本书", r"two books"),
            ("a/an", r"一个苹果", r"an apple"),
            ("yesterday = past", r"昨天", r"yesterday"),
            ("tomorrow = will", r"明天", r" will .*tomorrow"),
            ("了 = past", r"吃了", r" ate "),
            ("正在 = progressive", r"正在", r" (is|are|am) [a-z]+ing"),
            ("locative reorders", r"^[他她我你]在(公园|学校)里[^，]*。$",
             r"^(he|she|i|you) (?!is |am |are |was |were )[a-z]+ .*in the (park|school)( [a-z]+)? \.$"),
            ("不 = don't", r"不吃", r"(don't|doesn't) eat"),
            ("没有 = didn't", r"没有吃", r"didn't eat"),
            ("question", r"吗？$", r"^(do|does) .* \?$"),
            ("很 + adjective", r"很累", r"very tired"),
            ("太 + adjective", r"太累了", r"too tired"),
            ("verb + verb", r"爱吃", r"love to eat"),
            ("because ... so", r"^因为.*，所以", r"^because .* , "),
            ("..., because", r"，因为", r" because "),
            ("relative clause", r"[我你他她]买的书", r"the book that (i|you|he|she) bought"),
            ("comma + pronoun clause", r"，它看起来很", r", it looks very"),
            ("这 = the", r"^这只猫", r"^the cat "),
            ("它们 = they (animals, things)", r"[猫狗书车]，它们", r"s , they "),
            ("他们 = they (people)", r"[生师]，他们", r"s , they "),
            ("ambiguous it, animal", r"没有过马路，因为它太累了", r"didn't cross the street because it was too tired"),
            ("ambiguous it, place", r"没有过马路，因为马路太长了", r"didn't cross the street because it was too long"),
            ("看书 = read books", r"看书", r" read(s)? books"),
            ("那 = that", r"^那只猫", r"^that cat "),
        ]
        missing = [name for name, z, e in cases if not has(z, e)]
        assert not missing, missing

    def test_corpus_size(self):
        total = sum(os.path.getsize(os.path.join(CORPUS, f)) for f in os.listdir(CORPUS))
        # ~120 bytes a line (zh, en, alignment) x 102k lines x 2 directions
        assert total < 30 * 1024 * 1024, total

    def test_generator_is_deterministic(self):
        outs = []
        with tempfile.TemporaryDirectory() as tmp:
            for k, seed in enumerate((5, 5, 6)):
                d = os.path.join(tmp, str(k))
                subprocess.run([sys.executable, GEN, "--seed", str(seed), "--train", "2000", "--dev", "100",
                                "--test", "100", "--out", d, "--vocab-dir", d], check=True,
                               stdout=subprocess.DEVNULL)
                files = {}
                for f in sorted(os.listdir(d)):
                    with open(os.path.join(d, f), "rb") as fh:
                        files[f] = fh.read()
                outs.append(files)
        assert outs[0] == outs[1], "same seed, different files"
        assert outs[0]["train.zh-en.tsv"] != outs[2]["train.zh-en.tsv"], "seed ignored"
        assert len(outs[0]) == 8, sorted(outs[0])

    def test_shipped_corpus_regenerates_and_segments_as_intended(self):
        """Regenerates the shipped corpus in memory: the files must match, and
        s2s's greedy segmentation with vocab/zh.txt must give back exactly the
        words the generator put together (no accidental merges such as
        看+起来 or 在+上)."""
        if self.quick:
            return "skipped (--quick)"
        train, dev, test, stats = gen_corpus.generate(1, 100000, 1000, 1000, LEXICON)
        assert stats["conflicts"] == 0, stats
        # and with every lexicon word in the vocab (a stricter vocab than the
        # corpus needs: words that never occurred must not merge either)
        lexv = set(e.zh for e in self.lex.entries)
        for sp, rows in (("train", train), ("dev", dev), ("test", test)):
            shipped = self.zhen(sp)
            assert len(shipped) == len(rows), sp
            for k, (r, s, seg) in enumerate(zip(rows, shipped, self.segs(sp))):
                assert (r[0], r[1], r[2]) == s, "%s line %d differs from the generator" % (sp, k + 1)
                assert r[5] == self.coref[(sp, "zh-en")][k], "%s line %d: coref differs" % (sp, k + 1)
                assert seg == r[3], "%s: %s segments as %s, meant %s" % (sp, r[0], seg, r[3])
                seg = segment(r[0], lexv)
                assert seg == r[3], "%s: %s segments as %s with the lexicon" % (sp, r[0], seg)
                assert r[1].split(" ") == r[4], r[1]
        want = gen_corpus.kin_variants(train, stats["variants"])
        got = [tsv_line(r) for r in self.variants["train"]]
        assert got == want, "the kin-without-的 lines differ from the generator's"

    # ---- coreference (the 4th column) and 看 = read/watch ----

    def classes(self):
        """zh word -> semantic class of nouns, names and kin (people: human);
        English noun form -> zh word; English adjective -> zh adjective."""
        cls, en_noun, en_adj = {}, {}, {}
        for e in self.lex.entries:
            if e.pos in ("noun", "mass", "place", "field", "name", "kin"):
                cls[e.zh] = "human" if e.pos in ("name", "kin") else e.get("cat")
                for w in [" ".join(e.en)] + ([e.get("pl")] if e.get("pl") else []):
                    en_noun[w] = e.zh
            if e.pos == "adj":
                en_adj[" ".join(e.en)] = e.zh
        return cls, en_noun, en_adj

    def coref_rows(self, splits=SPLITS):
        """(split, zh, en, alignment, zh tokens, zh links, en links) of every zh-en line with a link."""
        for sp in splits:
            for k, ((zh, en, al), co) in enumerate(zip(self.zhen(sp), self.coref[(sp, "zh-en")])):
                if co:
                    zc, ec = co.split("|")
                    yield sp, zh, en, al, self.segs(sp)[k], parse_align(zc), parse_align(ec)

    def test_coref_links(self):
        """Every link: indices in range, pronoun -> an earlier noun, the
        pronoun fits the antecedent's class (它/它们 things and animals,
        他/她/他们 people; English they -> 它们 or 他们 by it), and an adjective
        predicate of the pronoun describes the antecedent's class."""
        cls, en_noun, _ = self.classes()
        adj_cats = {e.zh: e.lst("cats") for e in self.lex.entries if e.pos == "adj"}
        skip = {"昨天", "今天", "明天", "每天", "不", "很", "太", "看起来", "是", "没有", "正在"}
        zh_human = {"他": True, "她": True, "他们": True, "它": False, "它们": False}
        n = 0
        for sp, zh, en, al, zt, zc, ec in self.coref_rows():
            et = en.split(" ")
            where = "%s: %s / %s" % (sp, zh, en)
            for p, a in zc:
                assert 0 <= a < p < len(zt), where
                assert zt[p] in zh_human, "not a pronoun: %s in %s" % (zt[p], where)
                assert zt[a] in cls, "antecedent %s is no noun in %s" % (zt[a], where)
                assert zh_human[zt[p]] == (cls[zt[a]] == "human"), "%s for %s in %s" % (zt[p], zt[a], where)
                q = p + 1
                while q < len(zt) and zt[q] in skip:
                    q += 1
                if zt[q] in adj_cats:
                    assert cls[zt[a]] in adj_cats[zt[q]], "%s %s in %s" % (zt[a], zt[q], where)
                n += 1
            z_of = {}
            for i, j in parse_align(al):
                z_of.setdefault(j, []).append(zt[i])
            for p, a in ec:
                assert 0 <= a < p < len(et), where
                assert et[p] in ("it", "they", "he", "she"), "not a pronoun: %s in %s" % (et[p], where)
                assert et[a] in en_noun, "antecedent %s is no noun in %s" % (et[a], where)
                human = cls[en_noun[et[a]]] == "human"
                assert (et[p] in ("he", "she")) == human or et[p] == "they", where
                if et[p] == "they":
                    assert z_of[p] == ["他们" if human else "它们"], where
                elif et[p] == "it" and z_of[p] != ["它"]:
                    # the place/thing reading: Chinese repeats the noun, no pronoun, no link
                    assert z_of[p] == [en_noun[et[a]]] and not zc, where
                n += 1
        assert n > 10000, n

    def test_every_it_or_they_with_an_antecedent_is_linked(self):
        """它们 only ever refers back, and always carries its link; a line
        with a link has one on each side unless Chinese repeats the noun."""
        for sp in SPLITS:
            for k, (zh, en, al) in enumerate(self.zhen(sp)):
                co = self.coref[(sp, "zh-en")][k]
                zt = self.segs(sp)[k]
                if "它们" in zt:
                    i = zt.index("它们")
                    assert co and "%d-" % i in co.split("|")[0], "%s: %s" % (sp, zh)
                if co:
                    zc, ec = co.split("|")
                    assert ec and len(zc.split()) <= len(ec.split()), "%s: %s %r" % (sp, zh, co)

    def test_ambiguous_it_sentences(self):
        """The animal didn't cross the street because it was too tired / too
        long: the predicate alone picks the antecedent; for the place or
        thing, Chinese repeats the noun. Both readings occur often."""
        cls, en_noun, en_adj = self.classes()
        animate = set(gen_corpus.AMBIG_ANIMATE)
        thing = set(a for _, _, adjs in gen_corpus.AMBIG_FRAMES for a in adjs)
        pat = re.compile(r"^(the|that|my|your|his|her|our|their) ([a-z]+) (?:[a-z]+ )?(didn't|doesn't|won't) "
                         r"(cross|drink) .* (because|,) it (was|is|will be) too ([a-z]+)( [a-z]+)? \.$")
        counts = {"animate": 0, "thing": 0}
        for sp, zh, en, al, zt, zc, ec in self.coref_rows():
            m = pat.match(en)
            if not m or en_adj.get(m.group(7)) not in animate | thing:
                continue
            et = en.split(" ")
            it = et.index("it")
            ante = dict(ec)[it]
            z_of = {}
            for i, j in parse_align(al):
                z_of.setdefault(j, []).append(zt[i])
            where = "%s: %s / %s" % (sp, zh, en)
            if en_adj[m.group(7)] in animate:
                assert ante == 1 and cls[en_noun[et[1]]] == "animal", where
                assert z_of[it] == ["它"] and [cls[zt[a]] for p, a in zc] == ["animal"], where
                counts["animate"] += 1
            else:
                assert ante > 3 and cls[en_noun[et[ante]]] in ("place", "drink"), where
                noun = en_noun[et[ante]]
                assert not zc and z_of[it] == [noun] and zt.count(noun) == 2, where
                assert zt[zt.index("，") + 1:].count(noun) == 1, where
                counts["thing"] += 1
        assert counts["animate"] > 800 and counts["thing"] > 800, counts
        return "%(animate)d animate, %(thing)d place/thing" % counts

    def test_samples_coref(self):
        got = {zh: co for (zh, _, _), co in zip(self.zhen("train"), self.coref[("train", "zh-en")])
               if zh in SAMPLE_COREF}
        assert got == SAMPLE_COREF, got

    def test_kan_is_read_for_readables_else_watch(self):
        """看 + something to read = read, otherwise watch; and read is about as
        frequent as watch in train (it was a quarter of it)."""
        cls = self.classes()[0]
        read = {"read", "reads", "reading"}
        watch = {"watch", "watches", "watched", "watching"}
        stop = set("，。？") | {"因为", "所以"}
        for sp in SPLITS:
            for (zh, en, al), zt in zip(self.zhen(sp), self.segs(sp)):
                if "看" not in zt:
                    continue
                et = en.split(" ")
                for i, t in enumerate(zt):
                    if t != "看":
                        continue
                    obj = None
                    end = i + 1
                    while end < len(zt) and zt[end] not in stop:
                        end += 1
                    u = i + 1
                    if u < end and zt[u] in ("了", "的"):  # 看了书; 我看的书 (head after 的)
                        u += 1
                    while u < end:
                        if self.lex.by_zh.get(zt[u]) is not None and self.lex[zt[u]].pos == "verb":
                            # a relative clause inside the object (看了需要地图的大象): head after 的
                            u = zt.index("的", u) + 1
                            continue
                        if (u + 1 < end and zt[u + 1] == "的" and cls.get(zt[u]) in ("human", "animal")
                                and cls.get(next((t for t in zt[u + 2:end] if t in cls), None))
                                not in ("human", "animal")):
                            u += 2  # a possessor: 看妈妈的信 reads mom's letter (看猫的男孩: a relative)
                            continue
                        if zt[u] in cls or (zt[u] in ("它", "它们") and zt[u + 1] != "的"):
                            obj = zt[u]
                            break
                        u += 1
                    ws = [et[j] for a, j in parse_align(al) if a == i]
                    want = read if cls.get(obj) == "readable" else watch
                    assert len(ws) == 1 and ws[0] in want, "%s: %s / %s" % (sp, zh, en)
        train = [r[1].split(" ") for r in self.zhen("train")]
        n_read = sum(1 for et in train if read & set(et) or "read" in et)
        n_watch = sum(1 for et in train if watch & set(et))
        assert n_read > 1400 and n_read > 0.75 * n_watch, (n_read, n_watch)
        return "train: %d pairs with read, %d with watch" % (n_read, n_watch)

    # ---- issue 34: possessors, 们, 和, clause objects, verbs without objects, set phrases ----

    def test_kin_variants(self):
        """zh-en train holds every pair with a pronoun + 的 + kin word again
        without that 的 (我妈妈很累。 = my mom is very tired .), as a source only."""
        pairs = {en: zh for zh, en, _ in self.zhen("train")}
        zh_src = set(pairs.values())
        vz = set(self.vzh)
        kin = re.compile(r"(我们|你们|他们|我|你|他|她)的(妈妈|爸爸|爷爷|奶奶|哥哥|姐姐)")
        want = [zh for zh in pairs.values() if kin.search(zh)]
        rows = self.variants["train"]
        assert len(rows) == len(want), (len(rows), len(want))
        for r in rows:
            zh, en, al = r[:3]
            assert en in pairs and kin.sub(r"\1\2", pairs[en]) == zh, "%s / %s" % (zh, en)
            assert zh not in zh_src, zh
            zt, et = segment(zh, vz), en.split(" ")
            for i, j in parse_align(al):
                assert 0 <= i < len(zt) and 0 <= j < len(et), (zh, en, al)
        for sp in ("dev", "test"):
            assert not self.variants[sp], "%s has kin-without-的 lines" % sp
        assert len(rows) > 0.01 * len(self.zhen("train")), len(rows)
        return "%d lines" % len(rows)

    CLASSES = [
        ("possessor 's", r"", r"\b(?!all's)[a-z]+'s\b"),
        ("你们的 = you all's", r"你们的", r"you all's"),
        ("possessive predicate", r"是[^，。？是]*的(吗)?[。？]$",
         r"\b(is|are)( not)? (mine|yours|his|hers|ours|theirs|you all's|[a-z ]*?[a-z]+'s) [.?]$"),
        ("们 = the + plural", r"(?<![我你他它])们", r"\bthe [a-z]+\b"),
        ("和 = and", r"和", r"\band\b"),
        ("clause object", r"(说|觉得|知道)(我|你|他|她|它|我们|你们|他们|小明|小红|大卫|玛丽|汤姆|安娜)",
         r"\b(says?|said|thinks?|thought|knows?|knew) (i|you|he|she|it|we|they|xiaoming|xiaohong|david|mary|"
         r"tom|anna) (am|is|are|was|were|will|don't|doesn't|didn't|[a-z]+)\b"),
        ("verb without object", r"(来|来了|知道|睡|睡了)(吗)?[，。？]", r""),
        ("locative with possessor, 那 or a number", r"在",
         r"\b(in|on) (that|a|an|two|three|four|five|six|seven|eight|nine|ten|my|your|his|her|its|our|"
         r"their|you all's|[a-z]+'s|the [a-z]+'s)\b"),
        ("set phrase", r"^(你好|谢谢|再见|对不起)", r"^(hello|thank you|goodbye|sorry) "),
    ]

    def test_issue34_classes_have_a_share_of_train(self):
        """Each new construction is in at least 1% of the train pairs (a model
        of 766k parameters needs examples), and occurs in dev and test."""
        out = []
        for name, zp, ep in self.CLASSES:
            zr, er = re.compile(zp), re.compile(ep)
            n = {sp: sum(1 for zh, en, _ in self.zhen(sp) if zr.search(zh) and er.search(en)) for sp in SPLITS}
            assert n["train"] > 0.01 * len(self.zhen("train")), (name, n)
            assert n["dev"] and n["test"], (name, n)
            out.append("%s %d" % (name, n["train"]))
        return "train: " + ", ".join(out)

    def test_issue34_constructions_occur(self):
        rows = self.zhen("train")

        def has(zpat, epat):
            zr, er = re.compile(zpat), re.compile(epat)
            return any(zr.search(zh) and er.search(en) for zh, en, _ in rows)

        names = "小明|小红|大卫|玛丽|汤姆|安娜"
        cases = [
            ("noun possessor", r"医生的", r"the doctor's "),
            ("name possessor", r"大卫的", r"david's "),
            ("kin possessor", r"(?<![我你他她们])妈妈的", r"(?<!my )mom's "),
            ("pronoun + noun possessor", r"我朋友的", r"my friend's "),
            ("pronoun + kin possessor", r"我妈妈的", r"my mom's "),
            ("name + kin", r"大卫的妈妈", r"david's mom"),
            ("你们的", r"你们的老师", r"you all's teacher"),
            ("possessive predicate, pronoun", r"是他的。$", r" is his \.$"),
            ("possessive predicate, mine", r"是我的。$", r" is mine \.$"),
            ("possessive predicate, noun", r"是医生的。$", r" is the doctor's \.$"),
            ("们 subject", r"^孩子们", r"^the children "),
            ("们 object", r"[^，]孩子们。$", r" the children \.$"),
            ("和 subjects", r"^[^，]+和[^，]+。$", r"^[a-z' ]+ and [a-z' ]+ (are|were|will|don't|didn't|won't) "),
            ("和 pronouns", r"(我|你|他|她)和(我|你|他|她)", r"\b(i|you|he|she|me|him|her) and (i|you|he|she|me|him|her)\b"),
            ("和 objects", r"喜欢[^，]+和", r"like [a-z' ]+ and "),
            ("知道 + clause", r"知道(我|你|他|她)很", r"knows? (i|you|he|she) (am|is|are) very"),
            ("说 + clause", r"说", r"\b(say|says)\b"),
            ("觉得 + clause", r"觉得", r"\b(think|thinks)\b"),
            ("past clause object has yesterday", r"昨天(说|觉得)", r"\b(said|thought)\b.* yesterday \.$"),
            ("clause object coref", r"^(%s)(说|觉得|知道)(他|她)" % names, r"^[a-z]+ (says|thinks|knows) (he|she) "),
            ("来 without place", r"来了。$", r" came \.$"),
            ("知道 without object", r"不知道。$", r"(don't|doesn't) know \.$"),
            ("睡 = fall asleep", r"睡了。$", r" fell asleep \.$"),
            ("locative with possessor", r"在他的床上", r"on his bed"),
            ("locative with noun possessor", r"在[^在，]+的车里", r"in ([a-z]+'s|the [a-z]+'s|my [a-z]+'s) car"),
            ("locative with 那", r"在那张床上", r"on that bed"),
            ("locative with a number", r"在两张床上", r"on two beds"),
            ("phrase + name", r"^你好，(%s)。$" % names, r"^hello , [a-z]+ \.$"),
            ("phrase + statement", r"^对不起，我", r"^sorry , i "),
        ]
        missing = [name for name, z, e in cases if not has(z, e)]
        assert not missing, missing
        train = {zh: en for zh, en, _ in rows}
        for zh, en in (("你好。", "hello ."), ("谢谢。", "thank you ."), ("再见。", "goodbye ."),
                       ("对不起。", "sorry .")):
            assert train.get(zh) == en, (zh, train.get(zh))
        srcs = set(r[0] for r in self.extra[("train", "zh-en")])
        assert {"你好", "谢谢", "再见", "对不起"} <= srcs, "set phrases without 。 missing"
        srcs = set(r[0] for r in self.extra[("train", "en-zh")])
        assert {"hello", "thank you", "goodbye", "sorry"} <= srcs, "set phrases without . missing"

    def test_issue34_alignments(self):
        """和 = and; 们 = the + the plural noun; an 's word = the possessor and its
        的; set phrases to their words; 你好 only ever as the set phrase."""
        for sp in SPLITS:
            for (zh, en, al), zt in zip(self.zhen(sp), self.segs(sp)):
                et = en.split(" ")
                links = {}
                for i, j in parse_align(al):
                    links.setdefault(i, []).append(et[j])
                back = {}
                for i, j in parse_align(al):
                    back.setdefault(j, []).append(zt[i])
                where = "%s: %s / %s" % (sp, zh, en)
                for i, t in enumerate(zt):
                    if t == "和":
                        assert links.get(i) == ["and"], where
                    elif t == "们":
                        ws = links.get(i, [])
                        assert len(ws) == 2 and ws[0] == "the" and ws[1] == self.lex[zt[i - 1]].get("pl"), where
                    elif t in ("你好", "再见", "对不起", "谢谢"):
                        assert i == 0, where
                        assert links.get(i) == {"你好": ["hello"], "再见": ["goodbye"], "对不起": ["sorry"],
                                                "谢谢": ["thank", "you"]}[t], where
                for j, w in enumerate(et):
                    if w.endswith("'s") and w != "all's":
                        zs = back.get(j, [])
                        assert len(zs) == 2 and zs[1] == "的" and self.lex[zs[0]].en[-1] + "'s" == w, where
                assert "你好" not in zh or zt.count("你好") == zh.count("你好"), where

    def test_segmentation_catches_merges(self):
        # the checker itself: a merge the generator did not intend is seen
        v = {"看", "起来", "看起来", "在", "上", "马路"}
        assert segment("看起来", v) == ["看起来"]
        assert segment("在马路上。", v) == ["在", "马路", "上", "。"]
        assert segment("看马", v) == ["看", "马"]
        assert segment("起来看", v) == ["起来", "看"]


def main():
    quick = "--quick" in sys.argv[1:]
    c = Checks(quick)
    names = [n for n in sorted(dir(c)) if n.startswith("test_")]
    passed = failed = 0
    for n in names:
        try:
            note = getattr(c, n)()
            print("ok   %s%s" % (n, " (%s)" % note if note else ""))
            passed += 1
        except Exception as e:  # a failed check is reported, the others still run
            failed += 1
            msg = str(e) if isinstance(e, AssertionError) else traceback.format_exc()
            print("FAIL %s: %s" % (n, msg[:2000]))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
