#!/usr/bin/env python3
"""Checks the probe set's references (tests/data/probe/) against the corpus, without a model.

The references are written by hand from docs/toy-corpus.md; this is the
cross-check. For every source<TAB>reference line:

- spelling: an English reference is spelled as s2s_detokenize prints it
  (first word and "i" capitalised, no space before , . ?);
- vocab: outside the oov group, every reference token is a word of
  vocab/{zh,en}.txt, and so is every source token of the construction
  classes of issue 34 (their sources use no spelling the normalisation
  rewrites);
- repeats: no reference holds one token twice in a row (it could never meet
  probe.py's repeat target) unless its source does;
- corpus: when the source, normalised as below, is a source of
  data/corpus/{train,dev,test}.DIRECTION.tsv (also with its final . or ?
  added when it has none), the reference must equal that line's target,
  detokenised;
- pattern: nouns, names, kin words, adjectives, numbers 2-10, measure words
  and ordinary action verbs replaced by their class (a place keeps 里/上, a
  verb its type and whether it takes 了, a noun whether it is a person or
  something to read, and a noun whose plural is its singular is a class of
  its own), the pair's pattern is looked up among the corpus's
  pairs; when the pattern is there, the reference's must be one the corpus
  gives it. When it is not, a coarser pattern is tried in which pronouns
  keep only person and number (他 她 它 = he she it in any case).

Normalisation here is the part of s2s's that the probe sources need: ASCII
, . ? ! in Chinese (! as a statement), full-width forms, spaces between
Chinese words; English lower-cased and split into words and marks. Sources
in traditional characters or with digits, contractions to rewrite and the
like are left unnormalised, so they are simply not found in the corpus.

Prints a line per group and direction and every problem; exits 1 on any.
"""

import argparse
import collections
import glob
import os
import re
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import probe  # noqa: E402  (read_pairs, source_tokens, CLASS_GROUPS)

AUX = {"do", "does", "did", "will", "is", "are", "am", "was", "were"}
ZH_MARKS = {",": "，", ".": "。", "?": "？", "!": "。"}
# verbs that stay words of their own: a class's own verbs, 看 (read/watch) and the stative ones
KEEP_VERBS = set("看 来 知道 睡 说 觉得 爱 喜欢 想 需要 有 是 看起来".split())


def norm_zh(s):
    s = unicodedata.normalize("NFKC", s).replace("｡", "。")
    s = "".join(ZH_MARKS.get(c, c) for c in s)
    return re.sub(r"(?<=[\u4e00-\u9fff，。？])\s+(?=[\u4e00-\u9fff，。？])", "", s).strip()


def tok_en(s):
    s = unicodedata.normalize("NFKC", s).replace("’", "'").replace("。", ".").replace("，", ",")
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)*|[\u4e00-\u9fff]+|[^\sa-z0-9]", s.lower())


def detok_en(toks):
    out = ""
    for i, t in enumerate(toks):
        w = t[:1].upper() + t[1:] if i == 0 or t == "i" or t.startswith("i'") else t
        out += ("" if not out or t in (",", ".", "?") else " ") + w
    return out


def with_stop_zh(s):
    return s if s[-1:] in ("。", "？") else s + ("？" if s.endswith("吗") else "。")


def with_stop_en(toks):
    return toks if toks[-1:] in (["."], ["?"]) else toks + (["?"] if toks[0] in AUX else ["."])


class Classes:
    """Token -> class maps of both languages, from the lexicon."""

    def __init__(self, lexicon, coarse):
        zh, en = {}, {}
        for line in open(lexicon, encoding="utf-8"):
            if line.startswith("#") or not line.strip():
                continue
            w, pos, e, *rest = line.rstrip("\n").split("\t")
            f = dict(kv.split("=", 1) for kv in (rest[0].split() if rest else []))
            if pos == "noun":
                # 看 + something to read = read; they = 他们 for people, 它们 for the rest
                c = ("N=" if f["pl"] == e else "N") + {"readable": ":r",
                                                        "human": ":h"}.get(f["cat"], "")
                zh[w] = c
                en.update({e: c, f["pl"]: c if f["pl"] == e else c + "s", e + "'s": c + "'s"})
            elif pos == "place":
                zh[w] = en[e] = "P:" + f["loc"]
            elif pos == "mass":
                zh[w], en[e] = "M:" + f["mw"], "M"
            elif pos in ("field", "name", "kin"):
                c = {"field": "F", "name": "NM", "kin": "K"}[pos]
                zh[w] = en[e] = c
                en[e + "'s"] = c + "'s"
            elif pos == "adj":
                zh[w], en[e] = "A:" + f["pred"], "A"
            elif pos == "num" and w != "一":
                zh[w] = en[e] = "NUM"
            elif pos == "mw" and e == "-":
                zh[w] = "MW"
            elif (pos == "verb" and f["type"] in ("tr", "intr", "loc", "motion")
                  and w not in KEEP_VERBS and "_" not in e):
                c = "V:%s:%s" % (f["type"], f.get("le", "1"))
                zh[w] = c
                for form, suf in ((e, ""), (f["3sg"], ":3"), (f["past"], ":d"), (f["ing"], ":g")):
                    en[form] = c + suf
        # she/her as he/him/his: the gender of a pronoun is no rule of rendering
        zh["她"] = "他"
        en.update({"she": "he", "him": "HIM", "his": "HIM", "her": "HIM", "hers": "HIM"})
        if coarse:
            for w, c in (("我", "P1"), ("你", "P2"), ("他", "P3"), ("它", "P3"),
                         ("我们", "Ppl"), ("你们", "Ppl"), ("他们", "Ppl"), ("它们", "Ppl")):
                zh[w] = c
            for ws, c in (("i me my mine", "P1"), ("you your yours", "P2"),
                          ("he him his her hers it its", "P3"),
                          ("you_all you_all's we us our ours they them their theirs", "Ppl")):
                for w in ws.split():
                    en[w] = c
        self.zh, self.en = zh, en

    def zh_pattern(self, s, words):
        return tuple(self.zh.get(t, t) for t in probe.source_tokens(s, words[0], words[1]))

    def en_pattern(self, toks):
        merged, i = [], 0
        while i < len(toks):  # you all, you all's: one pronoun
            if toks[i] == "you" and i + 1 < len(toks) and toks[i + 1] in ("all", "all's"):
                merged.append("you_" + toks[i + 1])
                i += 2
            else:
                merged.append(toks[i])
                i += 1
        return tuple(self.en.get("a" if t == "an" else t, "a" if t == "an" else t) for t in merged)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(ROOT, "tests", "data", "probe"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "data", "corpus"))
    ap.add_argument("--group", action="append", choices=probe.GROUPS,
                    help="check only this group (repeatable; default: all)")
    a = ap.parse_args(argv)

    vocab = {}
    for lang in ("zh", "en"):
        with open(os.path.join(ROOT, "vocab", lang + ".txt"), encoding="utf-8") as fh:
            vocab[lang] = {line.rstrip("\n") for line in fh}
    cjk = probe.read_cjk_words(os.path.join(ROOT, "vocab", "zh.txt"))
    words = (cjk, max(len(w) for w in cjk))
    lexicon = os.path.join(ROOT, "data", "lexicon.tsv")
    levels = [Classes(lexicon, False), Classes(lexicon, True)]

    # the corpus: source -> target per direction; pattern -> patterns, both ways, per level
    targets = {d: {} for d in probe.DIRECTIONS}
    pat = [{"zh-en": collections.defaultdict(set), "en-zh": collections.defaultdict(set)}
           for _ in levels]
    for d in probe.DIRECTIONS:
        for split in ("train", "dev", "test"):
            with open(os.path.join(a.corpus, "%s.%s.tsv" % (split, d)), encoding="utf-8") as fh:
                for line in fh:
                    src, tgt = line.rstrip("\n").split("\t")[:2]
                    targets[d].setdefault(src, tgt)
                    zh, en = (src, tgt) if d == "zh-en" else (tgt, src)
                    for lv, p in zip(levels, pat):
                        zp, ep = lv.zh_pattern(zh, words), lv.en_pattern(en.split())
                        if d == "zh-en":
                            p["zh-en"][zp].add(ep)
                        else:
                            p["en-zh"][ep].add(zp)

    problems = []
    for group in a.group or probe.GROUPS:
        for d in probe.DIRECTIONS:
            path = os.path.join(a.data, "%s.%s.tsv" % (group, d))
            n = in_corpus = corpus_ok = found = found_ok = 0
            for ln, src, ref in probe.read_pairs(path):
                n += 1
                where = "%s.%s.tsv:%d" % (group, d, ln)
                if d == "zh-en":
                    key = norm_zh(src)
                    keys = [key, with_stop_zh(key)]
                    ref_toks, src_toks = tok_en(ref), probe.source_tokens(key, *words)
                    ref_lang, src_lang = "en", "zh"
                    if detok_en(ref_toks) != ref:
                        problems.append("%s: not spelled as s2s prints it: %s" %
                                        (where, detok_en(ref_toks)))
                else:
                    toks = tok_en(src)
                    keys = [" ".join(toks), " ".join(with_stop_en(toks))]
                    ref_toks, src_toks = probe.source_tokens(ref, *words), toks
                    ref_lang, src_lang = "zh", "en"
                if group != "oov":
                    # source_tokens folds ，？ to , ?: the Chinese vocab has them as ，？
                    def unknown(toks, lang):
                        return [t for t in toks
                                if (ZH_MARKS.get(t, t) if lang == "zh" else t) not in vocab[lang]]
                    bad = unknown(ref_toks, ref_lang)
                    if group in probe.CLASS_GROUPS:
                        bad += unknown(src_toks, src_lang)
                    if bad:
                        problems.append("%s: not in the vocab: %s" % (where, " ".join(bad)))
                if probe.twice(ref_toks) and not probe.twice(src_toks):
                    problems.append("%s: the reference holds a token twice in a row" % where)
                hit = next((targets[d][k] for k in keys if k in targets[d]), None)
                if hit is not None:
                    in_corpus += 1
                    want = detok_en(hit.split()) if d == "zh-en" else hit
                    if want == ref:
                        corpus_ok += 1
                    else:
                        problems.append("%s: the corpus has %s -> %s" % (where, src, want))
                for lv, p in zip(levels, pat):
                    if d == "zh-en":
                        k, mine = lv.zh_pattern(keys[1], words), lv.en_pattern(ref_toks)
                    else:
                        k, mine = lv.en_pattern(keys[1].split()), lv.zh_pattern(ref, words)
                    if k in p[d]:
                        found += 1
                        if mine in p[d][k]:
                            found_ok += 1
                        else:
                            problems.append("%s: pattern %s; the corpus gives %s, the reference %s"
                                            % (where, " ".join(k),
                                               " | ".join(" ".join(x) for x in sorted(p[d][k])),
                                               " ".join(mine)))
                        break
            print("%-10s %s %4d sentences; in the corpus %3d, agree %3d; pattern in the corpus "
                  "%3d, agrees %3d" % (group, d, n, in_corpus, corpus_ok, found, found_ok))
    for p in problems:
        print("probe_refs: %s" % p)
    print("probe_refs: %d problems" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
