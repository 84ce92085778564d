"""Random clauses and sentences: verb phrases, adjective, locative,
copula and possession clauses, complements, the ambiguous-"it" and
set-phrase sentences, and the clause chains of one sentence."""

from toycorpus.lexicon import *  # noqa: F401,F403 (the constants and helpers)


class SampleClause:

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
