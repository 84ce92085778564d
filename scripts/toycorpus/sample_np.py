"""Random noun phrases: nouns with their adjectives, numbers and
possessors, relative clauses, coordination, the pronouns that refer back
(coref) and the locatives a verb takes, drawn with the generator's seeded
random.Random."""

from toycorpus.lexicon import *  # noqa: F401,F403 (the constants and helpers)


class SampleNP:

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
