#!/usr/bin/env python3
"""Generates the toy zh<->en parallel corpus with gold word alignments.

    python3 scripts/gen_corpus.py                       # the shipped corpus
    python3 scripts/gen_corpus.py --seed 1 --train 100000 --dev 1000 --test 1000 \\
        --lexicon data/lexicon.tsv --out data/corpus --vocab-dir vocab

Reads the bilingual lexicon (data/lexicon.tsv) and a small grammar (this
file), samples sentence structures with a seeded random.Random, renders each
structure in both languages and writes

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
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]
# ambiguous(): verb, its objects, the adjectives that fit only the object
AMBIG_FRAMES = [("过", ["马路", "街", "河", "桥"], ["长", "宽", "干净", "脏"]),
                ("喝", ["水", "茶", "咖啡", "牛奶", "果汁"], ["热", "冷"])]
AMBIG_ANIMATE = ["累", "饿"]  # adjectives that fit only the animal
KAN_SHARE = 0.058   # share of verb draws that pick 看 (some are redrawn: 看 needs a person subject)
READ_SHARE = 0.5   # share of 看's objects that are readable (看书 = read books)
AMBIG_SHARE = 0.03  # share of sentences that are ambiguous-"it" sentences (ambiguous())
PHRASE_SHARE = 0.02  # share of sentences that open with a set phrase (phrase_sentence())
OBJLESS_SHARE = 0.05  # share of vp clauses whose verb stands without its object (来 知道 睡)
LOC_DECO_SHARE = 0.35  # share of count-noun locatives with a possessor, 那 or a number
POSSR_SHARE = 0.45  # share of possessed count nouns whose possessor is no pronoun (医生的车)
PHRASES = ["你好", "谢谢", "再见", "对不起"]  # lexicon words that are set phrases
CHAIN_HEADS = ["朋友", "老师", "邻居", "孩子", "医生", "司机"]  # 我朋友的: people one has (and kin)
VOWELS = "aeiou"


# ---- lexicon ----

class Entry:
    """One lexicon line: .zh, .pos, .en (list of English tokens), .f (fields)."""

    def __init__(self, zh, pos, en, fields):
        self.zh, self.pos, self.f = zh, pos, fields
        self.en = [] if en == "-" else en.split("_")

    def get(self, key, default=None):
        return self.f.get(key, default)

    def words(self, key):
        """A field holding an English form, as tokens."""
        return self.f[key].split("_")

    def lst(self, key):
        v = self.f.get(key)
        return v.split(",") if v else []

    def __repr__(self):
        return "Entry(%s)" % self.zh


class Lexicon:
    def __init__(self, path):
        self.entries = []
        self.by_zh = {}
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                line = line.rstrip("\n")
                if not line.strip() or line.startswith("#"):
                    continue
                cols = line.split("\t")
                if len(cols) < 3 or len(cols) > 4:
                    raise ValueError("%s:%d: expected 3 or 4 tab-separated columns" % (path, lineno))
                fields = {}
                if len(cols) == 4 and cols[3].strip():
                    for kv in cols[3].split():
                        if "=" not in kv:
                            raise ValueError("%s:%d: field '%s' is not key=value" % (path, lineno, kv))
                        k, v = kv.split("=", 1)
                        fields[k] = v
                e = Entry(cols[0], cols[1], cols[2], fields)
                if e.zh in self.by_zh:
                    raise ValueError("%s:%d: duplicate Chinese word '%s'" % (path, lineno, e.zh))
                self.entries.append(e)
                self.by_zh[e.zh] = e

    def pos(self, *names):
        return [e for e in self.entries if e.pos in names]

    def __getitem__(self, zh):
        return self.by_zh[zh]


# ---- rendering helpers ----
# A rendered phrase is a list of (token, ids): ids is a tuple of link ids;
# a zh token and an en token are aligned when they share an id.

def T(tok, *ids):
    return (tok, tuple(i for i in ids if i))


def words(ws, *ids):
    return [T(w, *ids) for w in ws]


def agr_of(np):
    """English agreement class of a subject NP: 1sg, 3sg or other."""
    if np["num"] == "sg" and np["per"] == 1:
        return "1sg"
    if np["num"] == "sg" and np["per"] == 3:
        return "3sg"
    return "other"


def verb_forms(v, obj=None):
    """base/3sg/past/ing token lists of verb entry v; the read= field swaps in
    another English verb for some object classes (看书 = read books)."""
    alt = v.get("read")
    if alt and obj is not None:
        cats, forms = alt.split(":")
        if obj_cat(obj) in cats.split(","):
            b, s, p, g = forms.split(",")
            return {"base": [b], "3sg": [s], "past": [p], "ing": [g]}
    return {"base": v.en, "3sg": v.words("3sg"), "past": v.words("past"), "ing": v.words("ing")}


def obj_cat(np):
    return np["cat"]


class Gen:
    """Builds sentence structures (dicts) and renders them in both languages."""

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

    # ---- noun phrases ----

    def np_pron(self, zh, cat=None):
        e = self.lex[zh]
        return {"k": "pron", "e": e, "id": self.nid(), "num": e.get("num"), "per": int(e.get("per")),
                "cat": cat or e.get("cat"), "gender": e.get("gender")}

    def np_name(self, zh):
        e = self.lex[zh]
        return {"k": "name", "e": e, "id": self.nid(), "num": "sg", "per": 3, "cat": "human",
                "gender": e.get("gender")}

    def np_kin(self, zh, poss=None):
        """Kin: 妈妈; 我的妈妈 (poss a pronoun); 大卫的妈妈 (poss a possessor, np_possr)."""
        e = self.lex[zh]
        np = {"k": "kin", "e": e, "id": self.nid(), "num": "sg", "per": 3, "cat": "human",
              "gender": e.get("gender"), "poss": None, "pnp": None}
        self.set_poss(np, poss)
        if np["poss"] and np["poss"].zh != "它":
            self.kin_poss = True
        return np

    def set_poss(self, np, poss):
        """poss: a pronoun (zh) -> np["poss"] = its entry; a possessor dict (np_possr) -> np["pnp"]."""
        if isinstance(poss, dict):
            np["pnp"] = poss
        elif poss:
            np["poss"] = self.lex[poss]
            np["pid"] = self.nid()

    def np_possr(self, head, pron=None):
        """A possessor that is no lone pronoun: 医生的 = the doctor's, 大卫的 = david's,
        妈妈的 = mom's, 我朋友的 = my friend's (no 的 after the pronoun)."""
        d = {"k": "possr", "e": self.lex[head], "hid": self.nid(), "pron": None}
        if pron:
            d["pron"] = self.lex[pron]
            d["prid"] = self.nid()
        return d

    def np_coord(self, a, b):
        """和 = and: two noun phrases of one class, plural as a whole."""
        return {"k": "coord", "parts": [a, b], "e": a["e"], "id": self.nid(), "num": "pl", "per": 3,
                "cat": a["cat"], "gender": None}

    def np_noun(self, zh, form="bare", num=None, det=None, poss=None, adj=None):
        """A count, mass, place or field noun. form: bare | num | det | detnum | poss | men
        (孩子们 = the children); poss: a pronoun (zh) or a possessor (np_possr)."""
        e = self.lex[zh]
        np = {"k": e.pos, "e": e, "id": self.nid(), "form": form, "per": 3, "cat": e.get("cat"),
              "gender": e.get("gender"), "adj": None, "num_e": None, "det": None, "poss": None,
              "pnp": None}
        if adj:
            np["adj"] = self.lex[adj]
            np["aid"] = self.nid()
        if form in ("num", "detnum"):
            np["num_e"] = self.lex[num]
            np["numid"] = self.nid()
        if form in ("det", "detnum"):
            np["det"] = det
            np["detid"] = self.nid()
        if form == "poss":
            self.set_poss(np, poss)
        if form == "men":
            np["menid"] = self.nid()
        if e.pos == "noun":
            plural = form in ("bare", "men") or (form in ("num", "detnum") and num != "一")
        elif e.pos == "mass":
            # two cups of tea are ...: the container sets the agreement
            plural = form in ("num", "detnum") and num != "一"
            if form != "bare" and form != "poss":
                np["mwid"] = self.nid()  # the container (杯 = cup) is a word of its own
        else:
            plural = False
        np["num"] = "pl" if plural else "sg"
        return np

    def np_rep(self, ante):
        """The pronoun 'it' of an ambiguous sentence's place/thing reading:
        English says it, Chinese repeats the antecedent noun phrase
        (因为马路太长了 = because it was too long)."""
        return {"k": "rep", "e": self.lex["它"], "id": self.nid(), "num": "sg", "per": 3,
                "cat": ante["cat"], "gender": None, "ante": ante}

    def np_rel(self, head, subj, verb):
        """Object relative: 我买的书 = the book that i bought."""
        e = self.lex[head]
        return {"k": "rel", "e": e, "id": self.nid(), "subj": subj, "v": self.lex[verb],
                "vid": self.nid(), "deid": self.nid(), "num": "sg", "per": 3, "cat": e.get("cat"),
                "gender": e.get("gender")}

    def np_srel(self, head, verb, obj=None):
        """Subject relative: 吃苹果的猫 = the cat that eats apples."""
        e = self.lex[head]
        return {"k": "srel", "e": e, "id": self.nid(), "v": self.lex[verb], "obj": obj,
                "vid": self.nid(), "deid": self.nid(), "num": "sg", "per": 3, "cat": e.get("cat"),
                "gender": e.get("gender")}

    # ---- rendering noun phrases ----

    def zh_adj(self, np):
        a = np.get("adj")
        if not a:
            return []
        out = [T(a.zh, np["aid"])]
        if a.get("attr") == "de":
            out.append(T("的"))
        return out

    def zh_np(self, np):
        k, e = np["k"], np["e"]
        if k == "rep":
            # the antecedent again, its head noun aligned to 'it', the rest unaligned
            a = dict(np["ante"], id=np["id"])
            for key in ("aid", "numid", "detid", "pid", "mwid"):
                if key in a:
                    a[key] = 0
            return self.zh_np(a)
        if k in ("pron", "name"):
            return [T(e.zh, np["id"])]
        if k == "coord":
            a, b = np["parts"]
            return self.zh_np(a) + [T("和", np["id"])] + self.zh_np(b)
        if k == "kin":
            if np["poss"] and not self.kin_de and np["poss"].zh != "它":  # 叫它奶奶 = call it grandma
                return [T(np["poss"].zh, np["pid"]), T(e.zh, np["id"])]  # 我妈妈 (kin_variants)
            return self.zh_poss(np) + [T(e.zh, np["id"])]
        if k == "rel":
            return self.zh_np(np["subj"]) + [T(np["v"].zh, np["vid"]), T("的", np["deid"]),
                                              T(e.zh, np["id"])]
        if k == "srel":
            out = [T(np["v"].zh, np["vid"])]
            if np["obj"]:
                out += self.zh_np(np["obj"])
            return out + [T("的", np["deid"]), T(e.zh, np["id"])]
        form = np["form"]
        out = []
        mw = T(e.get("mw"), np.get("mwid"))
        if form == "num":
            out += [T(np["num_e"].zh, np["numid"]), mw]
        elif form == "det":
            out += [T(np["det"], np["detid"]), mw]
        elif form == "detnum":
            out += [T(np["det"], np["detid"]), T(np["num_e"].zh, np["numid"]), mw]
        elif form == "poss":
            out += self.zh_poss(np)
        elif form == "men":
            return [T(e.zh, np["id"]), T("们", np["menid"])]
        return out + self.zh_adj(np) + [T(e.zh, np["id"])]

    def zh_poss(self, np):
        """The possessor of np (or of a locative) with its 的; [] when it has none."""
        if np.get("pnp"):
            return self.zh_possr(np["pnp"])
        if np.get("poss"):
            return [T(np["poss"].zh, np["pid"]), T("的", np["pid"])]
        return []

    def zh_possr(self, d):
        out = [T(d["pron"].zh, d["prid"])] if d["pron"] else []  # 我朋友的: no 的 after 我
        return out + [T(d["e"].zh, d["hid"]), T("的", d["hid"])]

    def en_poss(self, np):
        if np.get("pnp"):
            return self.en_possr(np["pnp"])
        if np.get("poss"):
            return words(np["poss"].words("poss"), np["pid"])
        return []

    def en_possr(self, d):
        """the doctor's, david's, mom's, my friend's: 's on the last word, one token."""
        e = d["e"]
        if d["pron"]:
            out = words(d["pron"].words("poss"), d["prid"])
        else:
            out = [T("the")] if e.pos == "noun" else []
        return out + words(e.en[:-1], d["hid"]) + [T(e.en[-1] + "'s", d["hid"])]

    def en_np(self, np, case="subj"):
        k, e = np["k"], np["e"]
        if k in ("pron", "rep"):
            return words(e.en if case == "subj" else e.words("obj"), np["id"])
        if k == "name":
            return words(e.en, np["id"])
        if k == "coord":
            a, b = np["parts"]
            return self.en_np(a, case) + [T("and", np["id"])] + self.en_np(b, case)
        if k == "kin":
            return self.en_poss(np) + words(e.en, np["id"])
        if k == "rel":
            s = np["subj"]
            v = np["v"]
            f = verb_forms(v, np)
            if v.get("le", "1") == "1":
                vf = f["past"]  # finished action: 我买的书 = the book that i bought
            else:
                vf = f["3sg"] if agr_of(s) == "3sg" else f["base"]
            return ([T("the")] + words(e.en, np["id"]) + [T("that", np["deid"])] +
                    self.en_np(s, "subj") + words(vf, np["vid"]))
        if k == "srel":
            f = verb_forms(np["v"], np["obj"])
            out = [T("the")] + words(e.en, np["id"]) + [T("that", np["deid"])] + words(f["3sg"], np["vid"])
            if np["obj"]:
                out += self.en_np(np["obj"], "obj")
            return out
        form = np["form"]
        adj = words(np["adj"].en, np["aid"]) if np.get("adj") else []
        noun = words(e.en if np["num"] == "sg" or k == "mass" else e.words("pl"), np["id"])
        if k == "place":
            return [T("the")] + adj + noun
        if k == "field":
            return noun
        if k == "mass":
            mw = self.lex[e.get("mw")]
            if form == "bare":
                return adj + noun
            if form == "poss":
                return self.en_poss(np) + adj + noun
            plural = form in ("num", "detnum") and np["num_e"].zh != "一"
            cont = [T((mw.words("pl") if plural else mw.en)[0], np["mwid"]), T("of")]
            if form == "num":
                return [self.en_num(np)] + cont + adj + noun
            if form == "det":
                return [self.en_det(np, False)] + cont + adj + noun
            return [self.en_det(np, True), self.en_num(np)] + cont + adj + noun
        # count nouns
        if form == "bare":
            return adj + noun
        if form == "num":
            return [self.en_num(np)] + adj + noun
        if form == "det":
            return [self.en_det(np, False)] + adj + noun
        if form == "detnum":
            return [self.en_det(np, True), self.en_num(np)] + adj + noun
        if form == "men":
            return [T("the", np["menid"])] + words(e.words("pl"), np["id"], np["menid"])
        return self.en_poss(np) + adj + noun

    def en_num(self, np):
        return T(np["num_e"].en[0], np["numid"])  # 一 -> a (a/an fixed at the end)

    def en_det(self, np, plural):
        d = self.lex[np["det"]]
        tok = d.get("pl") if plural and d.get("pl") else d.en[0]
        return T(tok, np["detid"])

    # ---- clauses ----
    # A clause is a dict with "t": vp | adj | look | locpred | cop | have.

    def zh_loc(self, loc, absorb_zai=False):
        """在公园里, 在他的床上, 在那张床上, 在两张床上 (在 merged into 正在 when absorb_zai)."""
        out = [] if absorb_zai else [T("在", loc["zaiid"])]
        n, form = loc["n"], loc["form"]
        if form == "det":
            out += [T("那", loc["detid"]), T(n.get("mw"))]
        elif form == "num":
            out += [T(loc["num_e"].zh, loc["numid"]), T(n.get("mw"))]
        elif form == "poss":
            out += self.zh_poss(loc)
        return out + [T(n.zh, loc["nid"]), T(n.get("loc"), loc["locid"])]

    def en_loc(self, loc):
        n, form = loc["n"], loc["form"]
        prep = self.lex[n.get("loc")].en[0]
        noun = n.en
        if form == "det":
            mid = [T("that", loc["detid"])]
        elif form == "num":
            mid = [T(loc["num_e"].en[0], loc["numid"])]
            if loc["num_e"].zh != "一":
                noun = n.words("pl")
        elif form == "poss":
            mid = self.en_poss(loc)
        else:
            mid = [T("the")]
        return [T(prep, loc["zaiid"], loc["locid"])] + mid + words(noun, loc["nid"])

    def make_loc(self, zh, form=None, num=None, poss=None):
        """A locative noun: bare (the), or form det (那), num, poss (pronoun or possessor)."""
        loc = {"n": self.lex[zh], "nid": self.nid(), "zaiid": self.nid(), "locid": self.nid(),
               "form": form, "poss": None, "pnp": None}
        if form == "det":
            loc["detid"] = self.nid()
        elif form == "num":
            loc["num_e"] = self.lex[num]
            loc["numid"] = self.nid()
        elif form == "poss":
            self.set_poss(loc, poss)
        return loc

    def zh_clause(self, c, tense, q):
        subj = self.zh_np(c["subj"])
        time = [T(c["time"].zh, c["timeid"])] if c.get("time") else []
        t = c["t"]
        if t == "vp":
            head = c["mv"] or c["v"]
            out = subj + time
            if c["neg"]:
                if head.get("type") == "have":
                    pass  # 没有 replaces 有 below
                elif tense == "past" and head.get("neg", "没有") == "没有":
                    out.append(T("没有", c["negid"]))
                else:
                    out.append(T("不", c["negid"]))
            prog = c["prog"]
            if prog:
                ids = [c["progid"]]
                if c["loc"]:
                    ids.append(c["loc"]["zaiid"])  # 正在公园里: 正在 also carries 在
                out.append(T("正在", *ids))
            if c["mv"]:
                out.append(T(c["mv"].zh, c["mvid"]))
            if c["loc"]:
                out += self.zh_loc(c["loc"], absorb_zai=prog)
            v = c["v"]
            if v.get("type") == "have" and c["neg"]:
                out.append(T("没有", c["negid"], c["vid"]))
            else:
                out.append(T(v.zh, c["vid"]))
            if (tense == "past" and not c["neg"] and not c["mv"] and v.get("le", "1") == "1"):
                out.append(T("了", c["leid"]))
            if c["obj"]:
                out += self.zh_np(c["obj"])
            if c["place"]:
                out += self.zh_np(c["place"])
            if c["la"]:
                out += self.zh_loc(c["la"])
        elif t == "adj":
            out = subj + time
            a = c["adj"]
            if a.get("pred") == "color":
                if c["neg"]:
                    out.append(T("不", c["negid"]))
                out += [T("是", c["beid"]), T(a.zh, c["aid"]), T("的")]
            else:
                if c["neg"]:
                    out.append(T("不", c["negid"]))
                if c["deg"]:
                    out.append(T(c["deg"], c["degid"]))
                out.append(T(a.zh, c["aid"]))
                if c["deg"] == "太":
                    out.append(T("了"))
        elif t == "look":
            out = subj + time + [T("看起来", c["vid"]), T(c["deg"], c["degid"]), T(c["adj"].zh, c["aid"])]
            if c["deg"] == "太":
                out.append(T("了"))
        elif t == "locpred":
            out = subj + time
            if c["neg"]:
                out.append(T("不", c["negid"]))
            out += self.zh_loc(c["loc"])
        elif t == "cop":
            out = subj + time
            if c["neg"]:
                out.append(T("不", c["negid"]))
            out.append(T("是", c["beid"]))
            out += self.zh_pred(c)
        elif t == "posspred":
            # 那辆车是他的 = that car is his; 这本书是医生的 = the book is the doctor's
            out = subj + time
            if c["neg"]:
                out.append(T("不", c["negid"]))
            out.append(T("是", c["beid"]))
            out += self.zh_poss(c["pred"])
        elif t == "comp":
            # 他知道我很累 = he knows i am very tired: the object is a clause
            out = subj + time
            if c["neg"]:
                out.append(T("不", c["negid"]))
            out.append(T(c["v"].zh, c["vid"]))
            out += self.zh_clause(c["comp"], tense, False)
        else:
            raise ValueError(t)
        if q:
            out.append(T("吗", c["qid"]))
        return out

    def zh_pred(self, c):
        return self.zh_np(c["pred"])

    def en_vgroup(self, forms, vids, tense, c, q, agr):
        """(tokens before the subject, tokens after it) of a lexical verb."""
        neg, prog = c["neg"], c["prog"]

        def V(form, *extra):
            return words(forms[form], *(list(vids) + list(extra)))

        if prog:
            be = {"1sg": "am", "3sg": "is", "other": "are"}[agr]
            if q:
                return [T(be, c["progid"], c["qid"])], V("ing")
            return [], [T(be, c["progid"])] + V("ing")
        if tense == "pres":
            if neg:
                return [], [T("doesn't" if agr == "3sg" else "don't", c["negid"])] + V("base")
            if q:
                return [T("does" if agr == "3sg" else "do", c["qid"])], V("base")
            return [], V("3sg" if agr == "3sg" else "base")
        if tense == "past":
            if neg:
                return [], [T("didn't", c["negid"])] + V("base")
            if q:
                return [T("did", c["qid"])], V("base")
            return [], V("past", c.get("leid") if c.get("le_here") else None)
        if neg:
            return [], [T("won't", c["negid"])] + V("base")
        if q:
            return [T("will", c["qid"])], V("base")
        return [], [T("will")] + V("base")

    def en_be(self, tense, c, q, agr, beid=None):
        neg = c.get("neg")
        if tense == "fut":
            if neg:
                return [], [T("won't", c["negid"]), T("be", beid)]
            if q:
                return [T("will", c["qid"])], [T("be", beid)]
            return [], [T("will"), T("be", beid)]
        if tense == "pres":
            be = {"1sg": "am", "3sg": "is", "other": "are"}[agr]
        else:
            be = "was" if agr in ("1sg", "3sg") else "were"
        if q:
            return [T(be, beid, c["qid"])], []
        return [], [T(be, beid)] + ([T("not", c["negid"])] if neg else [])

    def en_clause(self, c, tense, q):
        s = c["subj"]
        subj = self.en_np(s, "subj")
        agr = agr_of(s)
        time = words(c["time"].en, c["timeid"]) if c.get("time") else []
        t = c["t"]
        if t == "vp":
            v = c["v"]
            c["le_here"] = tense == "past" and not c["neg"] and not c["mv"] and v.get("le", "1") == "1"
            if c["mv"]:
                pre, post = self.en_vgroup(verb_forms(c["mv"]), [c["mvid"]], tense, c, q, agr)
                post = post + [T("to")] + words(verb_forms(v, c["obj"])["base"], c["vid"])
            else:
                vids = [c["vid"]]
                if v.get("type") == "have" and c["neg"]:
                    vids.append(c["negid"])  # 没有 = don't have
                pre, post = self.en_vgroup(verb_forms(v, c["obj"]), vids, tense, c, q, agr)
            out = pre + subj + post
            if c["obj"]:
                out += self.en_np(c["obj"], "obj")
            if c["place"]:
                out += [T("to")] + self.en_np(c["place"], "obj")
            if c["la"]:
                out += self.en_loc(c["la"])
            if c["loc"]:
                out += self.en_loc(c["loc"])
            return out + time
        if t == "look":
            c2 = dict(c, neg=False, prog=False)
            pre, post = self.en_vgroup(verb_forms(self.lex["看起来"]), [c["vid"]], tense, c2, q, agr)
            return pre + subj + post + [T(self.lex[c["deg"]].en[0], c["degid"])] + \
                words(c["adj"].en, c["aid"]) + time
        if t == "adj":
            beid = c.get("beid") if c["adj"].get("pred") == "color" else None
            pre, post = self.en_be(tense, c, q, agr, beid)
            deg = [T(self.lex[c["deg"]].en[0], c["degid"])] if c.get("deg") else []
            return pre + subj + post + deg + words(c["adj"].en, c["aid"]) + time
        if t == "locpred":
            pre, post = self.en_be(tense, c, q, agr)
            return pre + subj + post + self.en_loc(c["loc"]) + time
        if t == "cop":
            pre, post = self.en_be(tense, c, q, agr, c["beid"])
            return pre + subj + post + self.en_pred(c) + time
        if t == "posspred":
            pre, post = self.en_be(tense, c, q, agr, c["beid"])
            p = c["pred"]
            own = self.en_possr(p["pnp"]) if p["pnp"] else words(p["poss"].words("pposs"), p["pid"])
            return pre + subj + post + own + time
        if t == "comp":
            pre, post = self.en_vgroup(verb_forms(c["v"]), [c["vid"]], tense, c, q, agr)
            return pre + subj + post + self.en_clause(c["comp"], tense, False) + time
        raise ValueError(t)

    def en_pred(self, c):
        p = c["pred"]
        if p["k"] == "noun" and p["form"] == "bare":
            # 他是老师 = he is a teacher; 他们是老师 = they are teachers
            if c["subj"]["num"] == "sg":
                return [T("a")] + words(p["e"].en, p["id"])
            return words(p["e"].words("pl"), p["id"])
        return self.en_np(p, "obj")

    # ---- clause constructors (explicit; the random ones call these) ----

    def clause(self, t, subj, **kw):
        c = {"t": t, "subj": subj, "neg": False, "prog": False, "mv": None, "v": None, "obj": None,
             "place": None, "la": None, "loc": None, "time": None, "deg": None, "adj": None,
             "comp": None, "pred": None}
        c.update(kw)
        for key in ("negid", "qid", "progid", "leid", "vid", "mvid", "aid", "degid", "beid", "timeid"):
            c[key] = self.nid()
        return c

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

    def sentence(self, kind, tense, clauses):
        return {"kind": kind, "tense": tense, "clauses": clauses, "pid": self.nid(), "cid": self.nid(),
                "bid": self.nid(), "sid": self.nid()}

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

    # ---- random structures ----

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

    def noun_matches(self, e, cats):
        return e.get("cat") in cats or e.zh in cats

    def rand_adj_for(self, e, p=0.2):
        if self.r.random() >= p:
            return None
        cands = [a for a in self.adjs if a.get("attr") != "none" and e.get("cat") in a.lst("cats")]
        return self.pick(cands).zh if cands else None

    def rand_num(self):
        return self.wpick([(5, "一"), (4, "两"), (3, "三"), (1, "四"), (1, "五"), (1, "六"), (1, "七"),
                           (1, "八"), (1, "九"), (1, "十")])

    def rand_noun_np(self, e, allow_forms=None):
        """A count/mass/place/field NP headed by entry e."""
        if e.pos == "field":
            return self.np_noun(e.zh)
        if e.pos == "place":
            return self.np_noun(e.zh, adj=self.rand_adj_for(e, 0.12))
        poss_prons = self.poss_prons
        if e.pos == "mass":
            forms = [(5, "bare"), (3, "num"), (2, "det"), (0.4, "detnum"), (1, "poss")]
        else:
            forms = [(4, "bare"), (3, "num"), (2.5, "det"), (0.6, "detnum"), (1.5, "poss")]
        if allow_forms:
            forms = [(w, f) for w, f in forms if f in allow_forms]
        form = self.wpick(forms)
        adj = self.rand_adj_for(e)
        if form == "bare":
            return self.np_noun(e.zh, adj=adj)
        if form == "num":
            return self.np_noun(e.zh, "num", num=self.rand_num(), adj=adj)
        if form == "det":
            return self.np_noun(e.zh, "det", det=self.pick(["这", "那"]), adj=adj)
        if form == "detnum":
            n = self.pick(["两", "三", "四", "五"])
            return self.np_noun(e.zh, "detnum", num=n, det=self.pick(["这", "那"]), adj=adj)
        if e.pos == "noun" and self.r.random() < POSSR_SHARE:
            possr = self.rand_possr(animals=e.get("cat") != "human", avoid=e.zh)
            return self.np_noun(e.zh, "poss", poss=possr, adj=adj)
        if e.get("cat") == "human":
            poss_prons = [p for p in poss_prons if p.zh != "它"]  # its child: not for people
        return self.np_noun(e.zh, "poss", poss=self.pick(poss_prons).zh, adj=adj)

    def rand_possr(self, animals=True, avoid=None):
        """A possessor that is no lone pronoun (np_possr); never the word avoid."""
        while True:
            k = self.wpick([(35, "noun"), (10 if animals else 0, "animal"), (25, "name"), (15, "kin"),
                            (15, "pron")])
            if k == "noun":
                head, pron = self.pick(self.humans).zh, None
            elif k == "animal":
                head, pron = self.pick(self.animals).zh, None
            elif k == "name":
                head, pron = self.pick(self.names).zh, None
            elif k == "kin":
                head, pron = self.pick([x for x in self.kins if x.get("bare") == "1"]).zh, None
            else:  # 我朋友的, 他妈妈的 (你们 and 它 are not used here)
                head = self.pick([e for e in self.humans if e.zh in CHAIN_HEADS] + self.kins).zh
                pron = self.pick([p for p in self.poss_prons if p.zh not in ("你们", "它")]).zh
            if head != avoid:
                return self.np_possr(head, pron)

    def rand_rel_subj(self, verb):
        cats = verb.lst("subj")
        opts = []
        if "human" in cats:
            opts += [(6, "pron"), (1, "name"), (1, "kin")]
        if not opts:
            return None
        k = self.wpick(opts)
        if k == "pron":
            return self.np_pron(self.pick([p for p in self.prons if p.get("cat") == "human"]).zh)
        if k == "name":
            return self.np_name(self.pick(self.names).zh)
        return self.np_kin(self.pick([x for x in self.kins if x.get("bare") == "1"]).zh)

    def rand_rel(self, cats):
        """An object relative whose head is in cats, or None."""
        heads = [e for e in self.nouns if e.pos in ("noun", "mass") and self.noun_matches(e, cats)]
        if not heads:
            return None
        head = self.pick(heads)
        verbs = [v for v in self.verbs if v.get("type") == "tr" and v.get("subj") and
                 (head.get("cat") in v.lst("obj") or head.zh in v.lst("obj"))]
        verbs = [v for v in verbs if "human" in v.lst("subj")]
        if not verbs:
            return None
        v = self.pick(verbs)
        subj = self.rand_rel_subj(v)
        return self.np_rel(head.zh, subj, v.zh)

    def rand_srel(self, cats):
        """A subject relative whose head (human or animal) is in cats, or None."""
        heads = [e for e in self.nouns if e.pos == "noun" and e.get("cat") in ("human", "animal")
                 and self.noun_matches(e, cats)]
        if not heads:
            return None
        head = self.pick(heads)
        verbs = [v for v in self.verbs if v.get("type") in ("tr", "intr") and head.get("cat") in v.lst("subj")
                 and not v.get("only")]
        v = self.pick(verbs)
        obj = None
        if v.get("type") == "tr":
            objs = [e for e in self.nouns if self.noun_matches(e, v.lst("obj"))]
            obj = self.np_noun(self.pick(objs).zh)
        return self.np_srel(head.zh, v.zh, obj)

    def rand_np(self, cats, role, avoid=None, rel=True, extra=True):
        """An NP whose class is in cats (classes and/or zh words); extra: 们 nouns and
        coordinations (objects; subjects when coord_subj) may be drawn."""
        opts = []
        human, animal = "human" in cats, "animal" in cats
        prons = [p for p in self.prons if (human and p.get("cat") == "human") or (animal and p.zh == "它")]
        if avoid is not None:
            prons = [p for p in prons if p.zh != avoid]
        if prons:
            opts.append((3.5 if role == "subj" else 1.2, "pron"))
        if human:
            opts += [(0.6, "name"), (0.6, "kin")]
        nouns = [e for e in self.nouns if self.noun_matches(e, cats)]
        if nouns:
            opts.append((5, "noun"))
        if rel:
            opts.append((0.4, "rel"))
            if human or animal:
                opts.append((0.2, "srel"))
        if extra and human:
            opts.append((0.35, "men"))
        if extra and (role == "obj" or self.coord_subj):
            opts.append((0.45, "coord"))
        while True:
            k = self.wpick(opts)
            if k == "pron":
                return self.np_pron(self.pick(prons).zh)
            if k == "name":
                return self.np_name(self.pick(self.names).zh)
            if k == "kin":
                e = self.pick(self.kins)
                if e.get("bare") == "1" and self.r.random() < 0.5:
                    return self.np_kin(e.zh)
                if self.r.random() < 0.2:  # 大卫的妈妈 = david's mom
                    return self.np_kin(e.zh, poss=self.np_possr(self.pick(self.names).zh))
                return self.np_kin(e.zh, poss=self.pick(self.poss_prons).zh)
            if k == "noun":
                return self.rand_noun_np(self.pick(nouns))
            if k == "men":  # 孩子们 = the children
                return self.np_noun(self.pick(self.humans).zh, "men")
            if k == "coord":
                np = self.rand_coord(cats, role, avoid)
                if np:
                    return np
                continue
            np = self.rand_rel(cats) if k == "rel" else self.rand_srel(cats)
            if np:
                return np

    def rand_coord(self, cats, role, avoid=None):
        """猫和狗, 我和你: two NPs of one class, different words, neither 它, 们 or
        a relative clause; two pronouns only when both are singular."""
        for _ in range(10):
            a = self.rand_np(cats, role, avoid=avoid, rel=False, extra=False)
            b = self.rand_np(cats, role, avoid=avoid, rel=False, extra=False)
            if a["cat"] != b["cat"] or a["e"].zh == b["e"].zh or "它" in (a["e"].zh, b["e"].zh):
                continue
            if a["k"] == "pron" and b["k"] == "pron" and "pl" in (a["num"], b["num"]):
                continue
            return self.np_coord(a, b)
        return None

    def coref(self, np):
        """The pronoun that refers back to np, or None (no pronoun for non-human plurals)."""
        k = np["k"]
        if k == "pron":
            return self.np_pron(np["e"].zh, np["cat"])
        cat = np["cat"]
        if cat == "human":
            if np["num"] == "pl":
                p = self.np_pron("他们")
            else:
                g = np.get("gender") or self.pick(["m", "f"])
                p = self.np_pron("他" if g == "m" else "她")
        else:
            p = self.np_pron("它们" if np["num"] == "pl" else "它", cat)
        p["ante"] = np
        return p

    def refers_back(self, pron, np):
        """Whether a 3rd-person pronoun pron can refer to the non-pronoun np
        (number, class, gender): then it does, and carries a coref link."""
        if np["k"] == "pron" or pron["k"] != "pron" or pron["per"] != 3:
            return False
        if pron["num"] != np["num"]:
            return False
        human = np["cat"] == "human"
        if (pron["cat"] == "human") != human:
            return False
        g = np.get("gender")
        return not (human and g and pron.get("gender") and g != pron["gender"])

    def loc_for(self, cats=None):
        """A locative; a count noun may take a possessor, 那 or a number (躺在他的床上)."""
        cands = self.loc_nouns if cats is None else [e for e in self.loc_nouns if self.noun_matches(e, cats)]
        e = self.pick(cands)
        if e.pos != "noun" or self.r.random() >= LOC_DECO_SHARE:
            return self.make_loc(e.zh)
        form = self.wpick([(45, "poss"), (25, "det"), (20, "num")])
        if form == "det":
            return self.make_loc(e.zh, "det")
        if form == "num":
            return self.make_loc(e.zh, "num", num=self.rand_num())
        if self.r.random() < 0.55:
            return self.make_loc(e.zh, "poss", poss=self.pick(self.poss_prons).zh)
        return self.make_loc(e.zh, "poss", poss=self.rand_possr())

    def pick_verb(self, cands):
        """A verb of cands; 看 (read/watch) has a fixed share of its own, so
        that *read* is about as frequent as the other common verbs rather
        than one verb in fifty split over two translations."""
        kan = [v for v in cands if v.zh == "看"]
        if kan and self.r.random() < KAN_SHARE:
            return kan[0]
        return self.pick([v for v in cands if v.zh != "看"])

    def rand_vp(self, tense, subj=None, q=False):
        """A vp clause; subj, when given, is a pronoun whose class must fit."""
        r = self.r
        core_types = ("tr", "intr", "loc", "motion", "have")
        vv = r.random() < 0.15
        noobj = r.random() < OBJLESS_SHARE  # 我们来了, 她不知道, 猫睡了
        for _ in range(50):
            if noobj:
                mv = None
                v = self.pick([v for v in self.verbs if v.get("noobj") == "1"])
                cats = v.lst("subj")
            elif vv:
                mv = self.pick([v for v in self.verbs if v.get("vv") == "1"])
                v = self.pick_verb([v for v in self.verbs if (v.get("type") in ("tr", "intr", "loc", "motion")
                                    and v.get("le", "1") == "1" or v.get("type") == "loc")
                                    and not v.get("only")])
                cats = [x for x in mv.lst("subj") if x in v.lst("subj")]
            else:
                mv = None
                v = self.pick_verb([v for v in self.verbs if v.get("type") in core_types])
                cats = v.lst("subj")
            if v.get("only", tense) != tense:
                continue  # 睡 = fall asleep: past only
            if subj is not None and subj["cat"] not in cats:
                continue
            if not cats:
                continue
            break
        else:
            return None
        if subj is None:
            subj = self.rand_np(cats, "subj")
        head = mv or v
        obj = place = la = loc = None
        t = v.get("type")
        if noobj:
            pass
        elif t in ("tr", "have"):
            avoid = subj["e"].zh if subj["k"] == "pron" else None
            if v.zh == "看" and r.random() < READ_SHARE:
                obj = self.rand_noun_np(self.pick([e for e in self.nouns if e.get("cat") == "readable"]))
            elif v.zh == "看":
                obj = self.rand_np([c for c in v.lst("obj") if c != "readable"], "obj", avoid=avoid)
            else:
                obj = self.rand_np(v.lst("obj"), "obj", avoid=avoid)
        elif t == "motion":
            places = [e for e in self.nouns if e.pos == "place" and self.noun_matches(e, v.lst("obj"))]
            place = self.np_noun(self.pick(places).zh)
        elif t == "loc":
            la = self.loc_for(v.lst("obj"))
        if t in ("tr", "intr") and v.get("le", "1") == "1" and r.random() < 0.2:  # actions only
            loc = self.loc_for(["place", "house", "vehicle"])  # where the action happens
        neg = (not q) and r.random() < 0.22
        prog = (tense == "pres" and not neg and mv is None and head.get("prog", "1") == "1"
                and not noobj and r.random() < 0.25)
        return self.clause("vp", subj, v=v, mv=mv, obj=obj, place=place, la=la, loc=loc, neg=neg,
                           prog=prog)

    def rand_adj_clause(self, subj=None, q=False, look=False):
        if subj is None:
            a = self.pick([a for a in self.adjs if not (look and a.get("pred") == "color")])
            cats = a.lst("cats")
            subj = self.rand_np(cats, "subj")
        else:
            cands = [a for a in self.adjs if subj["cat"] in a.lst("cats")
                     and not (look and a.get("pred") == "color")]
            if not cands:
                return None
            a = self.pick(cands)
        if look:
            deg = "太" if (not q and self.r.random() < 0.3) else "很"
            return self.clause("look", subj, adj=a, deg=deg)
        if a.get("pred") == "color":
            return self.clause("adj", subj, adj=a, neg=(not q) and self.r.random() < 0.25)
        x = self.r.random()
        if x < 0.4:
            return self.clause("adj", subj, adj=a, deg="很")
        if x < 0.6 and not q:
            return self.clause("adj", subj, adj=a, deg="太")
        if x < 0.8 and not q:
            return self.clause("adj", subj, adj=a, neg=True)
        return self.clause("adj", subj, adj=a)

    def rand_locpred(self, subj=None, q=False):
        cats = ["human", "animal", "thing", "readable", "food", "clothes", "vehicle", "bike"]
        if subj is None:
            subj = self.rand_np(cats, "subj", rel=False)
        elif subj["cat"] not in cats:
            return None
        loc = self.loc_for()
        if loc["n"].zh == subj["e"].zh:
            return None
        return self.clause("locpred", subj, loc=loc, neg=(not q) and self.r.random() < 0.2)

    def rand_cop(self, subj=None, q=False):
        if subj is None:
            subj = self.rand_np(["human"], "subj", rel=False)
        elif subj["cat"] != "human":
            return None
        humans = [e for e in self.nouns if e.pos == "noun" and e.get("cat") == "human"]
        x = self.r.random()
        if subj["num"] == "pl" or x < 0.6:
            pred = self.np_noun(self.pick(humans).zh)
        elif x < 0.8:
            pred = self.np_noun(self.pick(humans).zh, "poss",
                                poss=self.pick([p for p in self.prons if p.get("poss")]).zh)
        elif x < 0.9:
            pred = self.np_kin(self.pick(self.kins).zh,
                               poss=self.pick([p for p in self.prons if p.get("poss")]).zh)
        else:
            pred = self.np_name(self.pick(self.names).zh)
        if subj["k"] == pred["k"] and subj["e"].zh == pred["e"].zh:
            return None
        return self.clause("cop", subj, pred=pred, neg=(not q) and self.r.random() < 0.2)

    def rand_posspred(self, q=False):
        """这本书是我的 = the book is mine: a 这/那 thing, animal or plant + 是 + possessor."""
        cats = ("thing", "readable", "vehicle", "bike", "clothes", "furniture", "animal", "food", "plant")
        e = self.pick([x for x in self.nouns if x.pos == "noun" and x.get("cat") in cats])
        if self.r.random() < 0.75:
            subj = self.np_noun(e.zh, "det", det=self.pick(["这", "那"]), adj=self.rand_adj_for(e))
        else:
            subj = self.np_noun(e.zh, "detnum", num=self.pick(["两", "三", "四", "五"]),
                                det=self.pick(["这", "那"]), adj=self.rand_adj_for(e))
        pred = {"poss": None, "pnp": None}
        if self.r.random() < 0.5:
            self.set_poss(pred, self.pick([p for p in self.prons if p.get("pposs")]).zh)
        else:
            self.set_poss(pred, self.rand_possr(animals=False, avoid=e.zh))
        return self.clause("posspred", subj, pred=pred, neg=(not q) and self.r.random() < 0.2)

    def rand_comp(self, tense, q=False):
        """他知道我很累 = he knows i am very tired: 知道 说 觉得 + a clause, one tense,
        present or past; the clause's pronoun subject refers back to the main
        subject when it can (大卫说他很饿)."""
        if tense == "fut" or (q and tense != "pres"):
            return None
        v = self.pick([x for x in self.verbs if x.get("comp") == "1"])
        subj = self.rand_np(["human"], "subj", rel=False)
        saved, self.coord_subj = self.coord_subj, False
        inner = self.rand_clause(tense, q=q)  # built as a question's: no 太, no negation
        self.coord_subj = saved
        if inner is None:
            return None
        s2 = inner["subj"]
        heads = [p["e"].zh for p in subj.get("parts", [subj])]
        if s2["k"] == "pron":
            if subj["k"] == "coord" and s2["e"].zh == "他们":
                return None  # 大卫和玛丽说他们很累: no pronoun refers back to a coordination
            if subj["k"] not in ("pron", "coord") and self.refers_back(s2, subj):
                s2["ante"] = subj
        elif s2["e"].zh in heads or s2["k"] == "coord":
            return None
        neg = v.get("neg") != "-" and not q and self.r.random() < 0.2
        return self.clause("comp", subj, v=v, comp=inner, neg=neg)

    def rand_clause(self, tense, subj=None, q=False, prefer=None, top=False):
        """A clause; top: the only clause of its sentence, which may also be a
        possessive predicate or have a clause as object."""
        kinds = [(5, "vp"), (2.2, "adj"), (1.2, "look"), (1, "locpred")]
        if tense == "pres":
            kinds.append((0.8, "cop"))
        if top and subj is None:
            kinds.append((1.0, "comp"))
            if tense == "pres":
                kinds.append((0.75, "posspred"))
        if prefer:
            kinds = prefer
        for _ in range(50):
            k = self.wpick(kinds)
            if k == "vp":
                c = self.rand_vp(tense, subj, q)
            elif k == "adj":
                c = self.rand_adj_clause(subj, q)
            elif k == "look":
                c = self.rand_adj_clause(subj, q, look=True)
            elif k == "locpred":
                c = self.rand_locpred(subj, q)
            elif k == "cop":
                if tense != "pres":
                    continue
                c = self.rand_cop(subj, q)
            elif k == "comp":
                c = self.rand_comp(tense, q)
            elif k == "posspred":
                c = self.rand_posspred(q)
            if c is not None:
                return c
        return None

    def ambiguous(self):
        """A two-clause sentence whose 'it' could refer to either noun; only the
        predicate's class picks the antecedent: 这只动物没有过马路，因为它太累了 =
        the animal didn't cross the street because it was too tired (it = the
        animal); 这只动物没有过马路，因为马路太长了 = ... because it was too long
        (it = the street: Chinese repeats the noun)."""
        r = self.r
        self.reset_ids()
        tense = self.wpick([(30, "pres"), (55, "past"), (15, "fut")])
        kind = self.wpick([(75, "because_after"), (25, "comma")])
        animal = self.pick([e for e in self.nouns if e.pos == "noun" and e.get("cat") == "animal"])
        if r.random() < 0.25:
            poss = self.pick([p for p in self.poss_prons if p.get("cat") == "human" and p.zh != "你们"])
            subj = self.np_noun(animal.zh, "poss", poss=poss.zh)
        else:
            subj = self.np_noun(animal.zh, "det", det=self.pick(["这", "那"]))
        verb, objs, adjs = self.pick(AMBIG_FRAMES)
        o = self.lex[self.pick(objs)]
        obj = self.np_noun(o.zh) if o.pos == "place" else self.np_noun(o.zh, "det", det="这")
        c1 = self.clause("vp", subj, v=self.lex[verb], obj=obj, neg=True)
        if r.random() < 0.5:
            reading = "animate"
            c2 = self.clause("adj", self.coref(subj), adj=self.lex[self.pick(AMBIG_ANIMATE)], deg="太")
        else:
            reading = "thing"
            c2 = self.clause("adj", self.np_rep(obj), adj=self.lex[self.pick(adjs)], deg="太")
        s = self.sentence(kind, tense, [c1, c2])
        s["ambig"] = reading
        self.place_time(s)
        return s

    def link_back(self, c1, c2):
        """For a second clause with a subject of its own: links a pronoun that
        can refer to the first clause's subject to it; False when the sentence
        must not be used (it would read like another structure's)."""
        s1, s2 = c1["subj"], c2["subj"]
        if s2["k"] == "pron":
            if s1["k"] != "pron" and self.refers_back(s2, s1):
                if s2["cat"] != s1["cat"]:
                    return False  # 电脑…，它看起来太危险了: 它 would read as the computer
                s2["ante"] = s1
            # they after plural animals or things is 它们, never a 他们 of its own
            return not (s2["e"].zh == "他们" and s1["k"] != "pron" and s1["num"] == "pl"
                        and s1["cat"] != "human")
        # 这只猫没有过马路，因为马路太长了 repeats the noun for 'it' (ambiguous())
        heads = [np for np in (s1, c1["obj"], c1["place"]) if np]
        heads = [p for np in heads for p in np.get("parts", [np])]  # both sides of 猫和狗
        heads = [np["e"].zh for np in heads] + [l["n"].zh for l in (c1["la"], c1["loc"]) if l]
        return s2["e"].zh not in heads

    def rand_sentence(self):
        r = self.r
        x = r.random()
        if x < AMBIG_SHARE:
            return self.ambiguous()
        if x < AMBIG_SHARE + PHRASE_SHARE:
            return self.phrase_sentence()
        self.reset_ids()
        kind = self.wpick([(46, "single"), (18, "q"), (13, "comma"), (9, "because_after"),
                           (6, "because_first"), (8, "so")])
        tense = self.wpick([(50, "pres"), (35, "past"), (15, "fut")])
        q = kind == "q"
        top = kind in ("single", "q")
        self.coord_subj = top  # 猫和狗很饿: 和 joins subjects of one-clause sentences only
        c1 = self.rand_clause(tense, q=q, top=top)
        self.coord_subj = False
        if c1 is None:
            return None
        clauses = [c1]
        if kind not in ("single", "q"):
            subj2 = self.coref(c1["subj"]) if r.random() < 0.75 else None
            if kind == "comma":
                prefer = [(4.5, "look"), (3.5, "adj"), (2, "vp")]
            else:
                prefer = None
            c2 = self.rand_clause(tense, subj=subj2, prefer=prefer)
            if c2 is None:
                return None
            if subj2 is None and not self.link_back(c1, c2):
                return None
            clauses.append(c2)
        if tense != "pres" and any(c["t"] == "cop" for c in clauses):
            return None
        if any(c["prog"] for c in clauses) and tense != "pres":
            return None
        s = self.sentence(kind, tense, clauses)
        self.place_time(s)
        return s

    def phrase_sentence(self, ph=None, tail=None):
        """你好。 = hello .; a set phrase alone, before a name or kin word
        (你好，大卫。), or before a statement (对不起，我不知道。)."""
        r = self.r
        self.reset_ids()
        ph = self.lex[ph] if ph else self.pick(self.phrases)
        tail = tail or self.wpick([(8, "alone"), (22, "voc"), (70, "clause")])
        tense = self.wpick([(50, "pres"), (35, "past"), (15, "fut")])
        voc, clauses = None, []
        if tail == "voc":
            if r.random() < 0.6:
                voc = self.np_name(self.pick(self.names).zh)
            else:
                voc = self.np_kin(self.pick([x for x in self.kins if x.get("bare") == "1"]).zh)
        elif tail == "clause":
            c = self.rand_clause(tense)
            if c is None or (tense != "pres" and c["t"] == "cop"):
                return None
            clauses = [c]
        s = self.sentence("phrase", tense, clauses)
        s["phrase"], s["phid"], s["voc"] = ph, self.nid(), voc
        if clauses:
            self.place_time(s)
        return s

    def place_time(self, s):
        """Time words: 明天 always for the future; 昨天 whenever the past would
        otherwise read like the present in either language, and in every past
        sentence with a clause as object; else optional."""
        tense = s["tense"]
        first = s["clauses"][0]
        if tense == "fut":
            need = True
        elif tense == "past" and first["t"] == "comp":
            need = True  # 她昨天说他很饿: 说 cannot show the past itself
        elif tense == "past":
            past = self.strings(s)
            s["tense"] = "pres"
            pres = self.strings(s)
            s["tense"] = "past"
            need = past[0] == pres[0] or past[1] == pres[1]
        else:
            need = False
        if need or (tense == "past" and self.r.random() < 0.25) or \
                (tense == "pres" and not first["prog"] and first["t"] not in ("cop", "posspred")
                 and self.r.random() < 0.12):
            first["time"] = self.pick(self.times[tense])


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
