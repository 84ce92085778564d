"""The toy corpus's lexicon and the grammar's constants and small helpers
(scripts/gen_corpus.py): the entries of data/lexicon.tsv, the shares the
sampler draws with, tokens with their alignment ids."""

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
