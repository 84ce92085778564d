"""English rendering of the structures: noun phrases (articles, number,
case, possessives), locatives, verb groups (tense, do-support, questions)
and clauses, as (token, alignment ids) lists."""

from toycorpus.lexicon import *  # noqa: F401,F403 (the constants and helpers)


class EnRender:

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
