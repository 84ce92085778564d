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
        self.data, self.extra = {}, {}
        for sp in SPLITS:
            for d in ("zh-en", "en-zh"):
                path = os.path.join(CORPUS, "%s.%s.tsv" % (sp, d))
                rows = read_tsv(path) if os.path.exists(path) else None
                # train files end with extra lines whose source lacks its
                # final full stop (gen_corpus.unpunctuated); checked apart
                self.extra[(sp, d)] = [r for r in rows or [] if not ends_punct(r[0])]
                self.data[(sp, d)] = [r for r in rows if ends_punct(r[0])] if rows else rows
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
            assert 0.05 * len(main) < len(extra) < 0.15 * len(main), (d, len(extra))
            for src, tgt, align in extra:
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

    def test_three_columns(self):
        for (sp, d), rows in self.data.items():
            for k, r in enumerate(rows):
                assert len(r) == 3 and r[0] and r[1], "%s.%s line %d: %r" % (sp, d, k + 1, r)

    def test_en_zh_is_zh_en_swapped_and_flipped(self):
        for sp in SPLITS:
            a, b = self.zhen(sp), self.data[(sp, "en-zh")]
            assert len(a) == len(b), sp
            for k, (x, y) in enumerate(zip(a, b)):
                assert y[0] == x[1] and y[1] == x[0], "%s line %d" % (sp, k + 1)
                want = sorted((j, i) for i, j in parse_align(x[2]))
                assert sorted(parse_align(y[2])) == want, "%s line %d" % (sp, k + 1)

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
            for key in ("pl", "obj", "poss", "3sg", "past", "ing"):
                if e.get(key):
                    f |= set(e.words(key))
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
                assert seg == r[3], "%s: %s segments as %s, meant %s" % (sp, r[0], seg, r[3])
                seg = segment(r[0], lexv)
                assert seg == r[3], "%s: %s segments as %s with the lexicon" % (sp, r[0], seg)
                assert r[1].split(" ") == r[4], r[1]

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
