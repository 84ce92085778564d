"""Sentence structures (dicts) built explicitly: noun phrases, locatives,
clauses and sentences, each part with the alignment ids its words take.
The random choices (sample_np.py, sample_clause.py) and the sample
sentences of gen_corpus.py build through these."""

from toycorpus.lexicon import *  # noqa: F401,F403 (the constants and helpers)


class Structures:

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

    # ---- clause constructors (explicit; the random ones call these) ----

    def clause(self, t, subj, **kw):
        c = {"t": t, "subj": subj, "neg": False, "prog": False, "mv": None, "v": None, "obj": None,
             "place": None, "la": None, "loc": None, "time": None, "deg": None, "adj": None,
             "comp": None, "pred": None}
        c.update(kw)
        for key in ("negid", "qid", "progid", "leid", "vid", "mvid", "aid", "degid", "beid", "timeid"):
            c[key] = self.nid()
        return c

    def sentence(self, kind, tense, clauses):
        return {"kind": kind, "tense": tense, "clauses": clauses, "pid": self.nid(), "cid": self.nid(),
                "bid": self.nid(), "sid": self.nid()}
