#!/usr/bin/env python3
"""Generates the toy zh<->en parallel corpus with gold word alignments.

    python3 scripts/gen_corpus.py                       # the shipped corpus
    python3 scripts/gen_corpus.py --seed 1 --train 100000 --dev 1000 --test 1000 \\
        --lexicon data/lexicon.tsv --out data/corpus --vocab-dir vocab

Reads the bilingual lexicon (data/lexicon.tsv) and a small grammar
(scripts/toycorpus/), samples sentence structures with a seeded
random.Random, renders each structure in both languages and writes

    OUT/{train,dev,test}.zh-en.tsv   zh <TAB> en <TAB> alignment (zh index-en index)
                                     [<TAB> coref zh|en: pronoun index-antecedent index]
    OUT/{train,dev,test}.en-zh.tsv   en <TAB> zh <TAB> alignment (en index-zh index)
                                     [<TAB> coref en|zh]
    The coref column is there only on lines with a pronoun that refers back.
    The train files also hold a tenth of their statements again with the
    source's final full stop left out (unpunctuated()).
    VOCAB/zh.txt, VOCAB/en.txt       <pad> <unk> <s> </s>, then train tokens by
                                     frequency (descending), ties alphabetically

The conventions (articles, tense, 这/那, alignment) are in docs/toy-corpus.md.
Translation is a function in both directions: every structure renders to one
Chinese and one English string, and the conventions are chosen so that two
different structures never share either string (checked here while
generating and again by tests/test_corpus.py).

Standard library only; same arguments -> byte-identical files (nothing
iterates over a set or a hash-ordered container).
"""

import argparse
import os
import random  # noqa: F401 (tests/test_corpus.py seeds Gen through gen_corpus.random)
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.dont_write_bytecode = True  # keep scripts/ free of __pycache__
sys.path.insert(0, HERE)

from toycorpus.lexicon import *  # noqa: E402,F401,F403 (Lexicon, the constants, helpers)
from toycorpus.en import EnRender  # noqa: E402
from toycorpus.sample_clause import SampleClause  # noqa: E402
from toycorpus.sample_np import SampleNP  # noqa: E402
from toycorpus.structures import Structures  # noqa: E402
from toycorpus.zh import ZhRender  # noqa: E402


class Gen(SampleClause, SampleNP, Structures, ZhRender, EnRender):
    """Builds sentence structures (dicts) and renders them in both languages:
    the structures (toycorpus/structures.py), their Chinese and English
    (zh.py, en.py) and the random choices (sample_np.py, sample_clause.py)
    are its parts; here the ids, the draws they share and the rendering of
    a whole sentence into a corpus pair."""

    def __init__(self, lex, rng):
        self.lex = lex
        self.r = rng
        self._id = 0
        L = lex
        # 它们 only ever refers back to a noun of its sentence (coref()): a
        # "they" without an antecedent is 他们
        self.prons = [p for p in L.pos("pron") if p.get("coref") != "1"]
        self.names = L.pos("name")
        self.kins = L.pos("kin")
        self.nouns = L.pos("noun", "mass", "place", "field")
        self.verbs = L.pos("verb")
        self.adjs = L.pos("adj")
        self.nums = L.pos("num")
        self.times = {t: [e for e in L.pos("time") if e.get("tense") == t] for t in ("pres", "past", "fut")}
        self.loc_nouns = [e for e in self.nouns if e.get("loc")]
        self.phrases = L.pos("phrase")
        self.poss_prons = [p for p in self.prons if p.get("poss")]
        self.humans = [e for e in self.nouns if e.pos == "noun" and e.get("cat") == "human"]
        self.animals = [e for e in self.nouns if e.pos == "noun" and e.get("cat") == "animal"]
        self.kin_de = True       # 我的妈妈; False renders the zh -> en source lines 我妈妈 (kin_variants)
        self.kin_poss = False    # the sentence being built has a pronoun + kin (a kin variant may differ)
        self.coord_subj = False  # 和 may join subjects (first clause of a one-clause sentence)

    def nid(self):
        self._id += 1
        return self._id

    def reset_ids(self):
        self._id = 0
        self.kin_poss = False


    def pick(self, seq):
        return seq[self.r.randrange(len(seq))]

    def wpick(self, pairs):
        """Weighted choice from [(weight, value), ...]."""
        total = sum(w for w, _ in pairs)
        x = self.r.random() * total
        for w, v in pairs:
            x -= w
            if x < 0:
                return v
        return pairs[-1][1]

    # ---- sentences ----

    def render(self, s):
        """(zh tokens, en tokens), each a list of (token, ids)."""
        tense, kind, cs = s["tense"], s["kind"], s["clauses"]
        q = kind == "q"
        zh = [self.zh_clause(c, tense, q) for c in cs]
        en = [self.en_clause(c, tense, q) for c in cs]
        pid, cid, bid, sid = s["pid"], s["cid"], s["bid"], s["sid"]
        if kind == "single":
            Z = zh[0] + [T("。", pid)]
            E = en[0] + [T(".", pid)]
        elif kind == "q":
            Z = zh[0] + [T("？", pid)]
            E = en[0] + [T("?", pid)]
        elif kind == "comma":
            Z = zh[0] + [T("，", cid)] + zh[1] + [T("。", pid)]
            E = en[0] + [T(",", cid)] + en[1] + [T(".", pid)]
        elif kind == "because_after":
            Z = zh[0] + [T("，"), T("因为", bid)] + zh[1] + [T("。", pid)]
            E = en[0] + [T("because", bid)] + en[1] + [T(".", pid)]
        elif kind == "because_first":
            Z = [T("因为", bid)] + zh[0] + [T("，", cid), T("所以")] + zh[1] + [T("。", pid)]
            E = [T("because", bid)] + en[0] + [T(",", cid)] + en[1] + [T(".", pid)]
        elif kind == "so":
            Z = zh[0] + [T("，", cid), T("所以", sid)] + zh[1] + [T("。", pid)]
            E = en[0] + [T(",", cid), T("so", sid)] + en[1] + [T(".", pid)]
        elif kind == "phrase":
            # 你好。 = hello .; 你好，大卫。 = hello , david .; 对不起，我不知道。 = sorry , i don't know .
            ph = s["phrase"]
            Z, E = [T(ph.zh, s["phid"])], words(ph.en, s["phid"])
            if s["voc"] or cs:
                Z.append(T("，", cid))
                E.append(T(",", cid))
                Z += self.zh_np(s["voc"]) if s["voc"] else zh[0]
                E += self.en_np(s["voc"]) if s["voc"] else en[0]
            Z.append(T("。", pid))
            E.append(T(".", pid))
        else:
            raise ValueError(kind)
        # a -> an before a vowel
        for j in range(len(E) - 1):
            if E[j][0] == "a" and E[j + 1][0][0] in VOWELS:
                E[j] = ("an", E[j][1])
        return Z, E

    def strings(self, s):
        Z, E = self.render(s)
        return "".join(t for t, _ in Z), " ".join(t for t, _ in E)

    def coref_links(self, s, toks, zh):
        """'p-a' links of one side: pronoun token -> the antecedent's head noun
        token, the nearest one before it. On the Chinese side a repeated noun
        (np_rep) is no pronoun and has no link."""
        out = []
        clauses = []
        for c in s["clauses"]:
            clauses += [c] + ([c["comp"]] if c.get("comp") else [])  # 大卫说他很饿: 他 -> 大卫
        for c in clauses:
            np = c["subj"]
            a = np.get("ante")
            if a is None or (zh and np["k"] == "rep"):
                continue
            p = [i for i, (_, ids) in enumerate(toks) if np["id"] in ids]
            h = [i for i, (_, ids) in enumerate(toks) if a["id"] in ids and i < p[0]]
            assert len(p) == 1 and h, (s, toks)
            out.append("%d-%d" % (p[0], h[-1]))
        return " ".join(out)

    def pair(self, s):
        """(zh string, en string, alignment string zh-en, zh tokens, en tokens,
        coref column zh|en or "", ambiguous reading or "")."""
        Z, E = self.render(s)
        links = []
        for i, (_, zi) in enumerate(Z):
            if not zi:
                continue
            for j, (_, ej) in enumerate(E):
                if set(zi) & set(ej):
                    links.append("%d-%d" % (i, j))
        zc, ec = self.coref_links(s, Z, True), self.coref_links(s, E, False)
        coref = "%s|%s" % (zc, ec) if zc or ec else ""
        return ("".join(t for t, _ in Z), " ".join(t for t, _ in E), " ".join(links),
                [t for t, _ in Z], [t for t, _ in E], coref, s.get("ambig", ""))


# ---- the sample sentences of the issue, built explicitly ----

def sample_sentences(g):
    """The three sentences the shipped models must translate, as structures."""
    g.reset_ids()
    s1 = g.sentence("single", "pres", [g.clause(
        "vp", g.np_pron("我"), mv=g.lex["爱"], v=g.lex["吃"], obj=g.np_noun("苹果"))])
    g.reset_ids()
    cat = g.np_noun("猫", "det", det="那")
    s2 = g.sentence("comma", "pres", [
        g.clause("vp", cat, v=g.lex["坐"], la=g.make_loc("垫子")),
        g.clause("look", g.coref(cat), adj=g.lex["舒服"], deg="很")])
    g.reset_ids()
    animal = g.np_noun("动物", "det", det="这")
    s3 = g.sentence("because_after", "past", [
        g.clause("vp", animal, v=g.lex["过"], obj=g.np_noun("马路"), neg=True),
        g.clause("adj", g.coref(animal), adj=g.lex["累"], deg="太")])
    return [s1, s2, s3]


def phrase_samples(g):
    """The set phrases alone (你好。 = hello .), always in train."""
    return [g.phrase_sentence(ph.zh, "alone") for ph in g.phrases]


def reads_as_built(p):
    """False when a set phrase's characters occur where the generator put
    other words (你 + 好 would be read as 你好 = hello)."""
    return all(p[0].count(w) == p[3].count(w) for w in PHRASES)


# ---- output ----

def vocab_lines(rows, side):
    counts = {}
    for r in rows:
        for t in r[side]:
            counts[t] = counts.get(t, 0) + 1
    toks = sorted(counts, key=lambda t: (-counts[t], t))
    return SPECIALS + toks


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            fh.write(line + "\n")


def flip(align):
    pairs = []
    for p in align.split():
        i, j = p.split("-")
        pairs.append((int(j), int(i)))
    pairs.sort()
    return " ".join("%d-%d" % p for p in pairs)


def unpunctuated(rows, seed, zh_source, share=0.1, always=()):
    """Extra training lines whose source has no final full stop (people
    often type 我爱吃苹果 without 。): a seeded tenth of the statements, in
    one direction only, so that each source still has one translation. The
    target keeps its punctuation; the stop's alignment link goes. Sources
    in always (the sample sentences) are always among them."""
    r = random.Random(seed + (104729 if zh_source else 1299709))
    out = []
    for zh, en, align, zh_toks, en_toks, coref, _ in rows:
        src, tgt = (zh, en) if zh_source else (en, zh)
        stop = "。" if zh_source else " ."
        if not src.endswith(stop) or (r.random() >= share and src not in always):
            continue
        last = len(zh_toks if zh_source else en_toks) - 1
        links = align if zh_source else flip(align)
        kept = " ".join(l for l in links.split() if int(l.split("-")[0]) != last)
        row = (src[:-len(stop)], tgt, kept)
        out.append(tsv_line(row, coref if zh_source else flip_coref(coref)))
    return out


def flip_coref(coref):
    """zh|en -> en|zh (the coref column's sides swap with the columns)."""
    if not coref:
        return coref
    zc, ec = coref.split("|")
    return "%s|%s" % (ec, zc)


def tsv_line(cols, coref):
    """3 columns, and the coref column SRC|TGT only when there is a link."""
    return "\t".join(cols) + ("\t" + coref if coref else "")


def generate(seed, n_train, n_dev, n_test, lexicon, max_len=20):
    """Returns (train, dev, test, stats); each row is (zh, en, align, zh_toks,
    en_toks, coref, ambiguous reading) as Gen.pair gives it."""
    lex = Lexicon(lexicon)
    g = Gen(lex, random.Random(seed))
    zh2en, en2zh = {}, {}
    rows = []
    conflicts = 0
    too_long = 0

    samples = [g.pair(s) for s in sample_sentences(g) + phrase_samples(g)]
    for p in samples:
        zh2en[p[0]] = p[1]
        en2zh[p[1]] = p[0]

    need = n_train + n_dev + n_test - len(samples)
    tries = 0
    variants = {}  # zh of a pair with 我的妈妈 -> the pair with 我妈妈 (kin_variants)
    while len(rows) < need:
        tries += 1
        if tries > 50 * need + 1000:
            raise RuntimeError("cannot find %d distinct sentences (got %d)" % (need, len(rows)))
        s = g.rand_sentence()
        if s is None:
            continue
        p = g.pair(s)
        if len(p[3]) > max_len or len(p[4]) > max_len:
            too_long += 1
            continue
        if not reads_as_built(p):
            continue  # 你好吗？ (are you good ?) would read as the set phrase
        zh, en = p[0], p[1]
        if zh in zh2en or en in en2zh:
            if zh2en.get(zh) != en or en2zh.get(en) != zh:
                conflicts += 1  # a convention bug: two structures share a string
            continue
        zh2en[zh] = en
        en2zh[en] = zh
        rows.append(p)
        if g.kin_poss:
            g.kin_de = False
            v = g.pair(s)
            g.kin_de = True
            if v[0] != zh:
                variants[zh] = v
    r = random.Random(seed + 7919)
    r.shuffle(rows)
    test = rows[:n_test]
    dev = rows[n_test:n_test + n_dev]
    train = samples + rows[n_test + n_dev:]
    r.shuffle(train)
    for v in variants.values():
        if v[0] in zh2en or not reads_as_built(v):
            conflicts += 1  # a kin variant must be no pair's source
    stats = {"conflicts": conflicts, "too_long": too_long, "tries": tries,
             "samples": [p[:2] for p in samples], "variants": variants}
    return train, dev, test, stats


def kin_variants(rows, variants):
    """zh -> en lines of the train pairs with a pronoun + 的 + kin word again
    without that 的 (我的妈妈很累。 -> 我妈妈很累。 = my mom is very tired .): both
    spellings are common, but my mom has one rendering in the pairs; like the
    unpunctuated lines, these are sources only, so translation stays a function."""
    return [tsv_line((v[0], v[1], v[2]), v[5]) for v in (variants.get(r[0]) for r in rows) if v]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--train", type=int, default=100000)
    ap.add_argument("--dev", type=int, default=1000)
    ap.add_argument("--test", type=int, default=1000)
    ap.add_argument("--lexicon", default=os.path.join(ROOT, "data", "lexicon.tsv"))
    ap.add_argument("--out", default=os.path.join(ROOT, "data", "corpus"))
    ap.add_argument("--vocab-dir", default=os.path.join(ROOT, "vocab"))
    a = ap.parse_args(argv)

    train, dev, test, stats = generate(a.seed, a.train, a.dev, a.test, a.lexicon)
    if stats["conflicts"]:
        print("gen_corpus: %d ambiguous pairs dropped (a convention bug)" % stats["conflicts"],
              file=sys.stderr)
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.vocab_dir, exist_ok=True)
    for name, rows in (("train", train), ("dev", dev), ("test", test)):
        zh_en = [tsv_line((r[0], r[1], r[2]), r[5]) for r in rows]
        en_zh = [tsv_line((r[1], r[0], flip(r[2])), flip_coref(r[5])) for r in rows]
        if name == "train":
            zh_en += kin_variants(rows, stats["variants"])
            zh_en += unpunctuated(rows, a.seed, zh_source=True, always=[p[0] for p in stats["samples"]])
            en_zh += unpunctuated(rows, a.seed, zh_source=False, always=[p[1] for p in stats["samples"]])
        write_lines(os.path.join(a.out, name + ".zh-en.tsv"), zh_en)
        write_lines(os.path.join(a.out, name + ".en-zh.tsv"), en_zh)
    write_lines(os.path.join(a.vocab_dir, "zh.txt"), vocab_lines(train, 3))
    write_lines(os.path.join(a.vocab_dir, "en.txt"), vocab_lines(train, 4))
    print("gen_corpus: train %d, dev %d, test %d pairs in %s; vocab zh %d, en %d in %s" %
          (len(train), len(dev), len(test), a.out, len(vocab_lines(train, 3)),
           len(vocab_lines(train, 4)), a.vocab_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
