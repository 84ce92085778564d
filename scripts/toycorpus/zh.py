"""Chinese rendering of the structures: noun phrases (classifiers, 的,
这/那), locatives and clauses, as (token, alignment ids) lists."""

from toycorpus.lexicon import *  # noqa: F401,F403 (the constants and helpers)


class ZhRender:

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

    def zh_clause(self, c, tense, q):
        subj = self.zh_np(c["subj"])
        time = [T(c["time"].zh, c["timeid"])] if c.get("time") else []
        bu = [T("不", c["negid"])] if c.get("neg") else []  # the negation of all but vp
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
            out = subj + time + bu
            a = c["adj"]
            if a.get("pred") == "color":
                out += [T("是", c["beid"]), T(a.zh, c["aid"]), T("的")]
            else:
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
            out = subj + time + bu
            out += self.zh_loc(c["loc"])
        elif t == "cop":
            out = subj + time + bu
            out.append(T("是", c["beid"]))
            out += self.zh_pred(c)
        elif t == "posspred":
            # 那辆车是他的 = that car is his; 这本书是医生的 = the book is the doctor's
            out = subj + time + bu
            out.append(T("是", c["beid"]))
            out += self.zh_poss(c["pred"])
        elif t == "comp":
            # 他知道我很累 = he knows i am very tired: the object is a clause
            out = subj + time + bu
            out.append(T(c["v"].zh, c["vid"]))
            out += self.zh_clause(c["comp"], tense, False)
        else:
            raise ValueError(t)
        if q:
            out.append(T("吗", c["qid"]))
        return out

    def zh_pred(self, c):
        return self.zh_np(c["pred"])
