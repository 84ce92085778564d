#!/usr/bin/env python3
"""Translate the probe set (tests/data/probe/) with the shipped models and
report, per group and direction, exact matches and outputs that loop or
repeat a token.

Each group is two files, GROUP.zh-en.tsv and GROUP.en-zh.tsv, of
`source<TAB>reference` lines (`#` lines and blank lines are skipped). Every
source is run through `s2s translate --json -m MODELS/DIRECTION.safetensors`.

- exact: the output equals the reference after trimming surrounding white
  space. Case counts: references are spelled as s2s prints them (first word
  and "I" capitalised, names in the corpus's lower case), so a difference in
  case is a different output.
- loop: the output's token list (the "tokens" of --json) holds one token three
  times in a row.
- repeat: the output's tokens hold one token twice in a row while the
  source's tokens hold no two equal tokens in a row (issue 34: "no output
  repeats a word twice in a row unless its source does"). The source is
  split here as s2s splits it: Chinese runs by greedy longest match against
  --zh-vocab (a run of characters that start no word is one word), Latin
  words lower-cased with inner apostrophes, each punctuation mark alone;
  full-width forms are folded first. Traditional characters are not
  converted (no OpenCC here): they start no word, so a run of them is one
  unknown word, which never repeats the word before it.

Targets, checked with --require: issue 15's, 100% exact on worked and at
least 95% exact on natural and read (both directions pooled, per group);
issue 34's, at least 90% exact in each direction on each construction class
(possessor kin posspred plural and clause noobj locative phrase); and in
every group no loop and no repeat. Exit codes: 0 report printed (and, with
--require, targets met); 1 a target missed (--require only); 2 a missing or
malformed file, or s2s failed.
"""

import argparse
import json
import os
import subprocess
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# issue 34's construction classes, one group each (tests/data/probe/README.md)
CLASS_GROUPS = ("possessor", "kin", "posspred", "plural", "and", "clause", "noobj", "locative",
                "phrase")
GROUPS = ("worked", "natural", "read", "oov") + CLASS_GROUPS
DIRECTIONS = ("zh-en", "en-zh")
# group -> minimum exact match in percent, both directions pooled (issue 15)
EXACT_TARGET = {"worked": 100, "natural": 95, "read": 95}
# group -> minimum exact match in percent in each direction (issue 34: "every class translates
# exactly in at least 90% of its probe sentences, in both directions")
DIRECTION_TARGET = {g: 90 for g in CLASS_GROUPS}
# every group must also have no loop and no repeat


class ProbeError(Exception):
    pass


def read_pairs(path):
    """[(line number, source, reference)] of a probe TSV file."""
    if not os.path.isfile(path):
        raise ProbeError("%s: missing" % path)
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.rstrip("\n").rstrip("\r")
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 2 or not cols[0].strip() or not cols[1].strip():
                raise ProbeError("%s:%d: expected 'source<TAB>reference'" % (path, n))
            rows.append((n, cols[0], cols[1]))
    if not rows:
        raise ProbeError("%s: no sentences" % path)
    return rows


def translate(s2s, model, sources, extra):
    """The (text, tokens) of the best hypothesis of each source."""
    if not os.path.isfile(model):
        raise ProbeError("%s: missing" % model)
    cmd = [s2s, "translate", "--json", "-m", model] + extra
    try:
        p = subprocess.run(cmd, input="".join(s + "\n" for s in sources), capture_output=True,
                           text=True, encoding="utf-8")
    except OSError as e:
        raise ProbeError("%s: %s" % (s2s, e))
    # 3: finished, but some lines were skipped or cut; each still has its output line
    if p.returncode not in (0, 3):
        raise ProbeError("%s exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
    lines = p.stdout.splitlines()
    if len(lines) != len(sources):
        raise ProbeError("%s: %d output lines for %d sources" % (model, len(lines), len(sources)))
    out = []
    for i, line in enumerate(lines, 1):
        try:
            hyps = json.loads(line)["hypotheses"] if line.strip() else []
        except (ValueError, KeyError, TypeError):
            raise ProbeError("%s: output line %d is not the JSON of --json: %s" % (model, i, line))
        best = hyps[0] if hyps else {"text": "", "tokens": []}
        out.append((best.get("text", ""), best.get("tokens", [])))
    return out


def loops(tokens):
    """True when one token stands three times in a row."""
    return any(tokens[i] == tokens[i + 1] == tokens[i + 2] for i in range(len(tokens) - 2))


def twice(tokens):
    """True when one token stands twice in a row."""
    return any(a == b for a, b in zip(tokens, tokens[1:]))


def read_cjk_words(path):
    """The words of a vocab file (one token a line) made of CJK characters only."""
    if not os.path.isfile(path):
        raise ProbeError("%s: missing" % path)
    with open(path, encoding="utf-8") as fh:
        return {w for w in (line.rstrip("\n") for line in fh) if w and all(is_cjk(c) for c in w)}


def is_cjk(c):
    o = ord(c)
    return 0x3400 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF or 0x20000 <= o <= 0x2FFFF


def source_tokens(text, cjk_words, longest):
    """The tokens s2s makes of a source line (near enough to tell a repeat): full-width forms
    folded; Chinese runs by greedy longest match against cjk_words, characters that start no
    word merged into one unknown word; Latin words lower-cased, apostrophes between letters
    kept; every other mark alone."""
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'")
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif is_cjk(c):
            start, unknown = i, False
            while i < n and is_cjk(text[i]):
                word = next((k for k in range(min(longest, n - i), 0, -1)
                             if text[i:i + k] in cjk_words), 0)
                if word:
                    if unknown:
                        out.append(text[start:i])
                        unknown = False
                    out.append(text[i:i + word])
                    i += word
                    start = i
                else:
                    unknown = True
                    i += 1
            if unknown:
                out.append(text[start:i])
        elif c.isalnum():
            j = i
            while j < n and (text[j].isalnum() and not is_cjk(text[j]) or
                             (text[j] == "'" and j + 1 < n and text[j + 1].isalpha() and
                              text[j - 1].isalpha())):
                j += 1
            out.append(text[i:j].lower())
            i = j
        else:
            out.append(c)
            i += 1
    return out


def run_file(s2s, models, path, direction, extra, cjk_words):
    rows = read_pairs(path)
    model = os.path.join(models, direction + ".safetensors")
    outs = translate(s2s, model, [src for _, src, _ in rows], extra)
    longest = max((len(w) for w in cjk_words), default=1)
    results = []
    for (n, src, ref), (text, tokens) in zip(rows, outs):
        repeat = twice(tokens) and not twice(source_tokens(src, cjk_words, longest))
        results.append({"line": n, "source": src, "reference": ref, "output": text,
                        "exact": text.strip() == ref.strip(), "loop": loops(tokens),
                        "repeat": repeat})
    return results


def pct(k, n):
    return 100.0 * k / n if n else 0.0


def counts(res):
    """(n, exact, loops, repeats) of a list of results."""
    return (len(res), sum(r["exact"] for r in res), sum(r["loop"] for r in res),
            sum(r["repeat"] for r in res))


def report(group, by_dir, out):
    """Prints the group's table; returns {direction or "both": (n, exact, loops, repeats)}."""
    print("== %s" % group, file=out)
    print("%-9s %5s %6s %8s %6s %7s" % ("direction", "n", "exact", "exact %", "loops", "repeats"),
          file=out)
    rows = {d: counts(by_dir[d]) for d in DIRECTIONS}
    rows["both"] = counts(by_dir[DIRECTIONS[0]] + by_dir[DIRECTIONS[1]])
    for d in DIRECTIONS + ("both",):
        n, e, lp, rp = rows[d]
        print("%-9s %5d %6d %7.1f%% %6d %7d" % (d, n, e, pct(e, n), lp, rp), file=out)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="Default paths are relative to the repository root.")
    ap.add_argument("--s2s", default=os.path.join(ROOT, "build", "s2s"), help="the s2s binary")
    ap.add_argument("--models", default=os.path.join(ROOT, "models"),
                    help="directory of zh-en.safetensors and en-zh.safetensors")
    ap.add_argument("--data", default=os.path.join(ROOT, "tests", "data", "probe"),
                    help="directory of the probe files")
    ap.add_argument("--zh-vocab", default=os.path.join(ROOT, "vocab", "zh.txt"),
                    help="the Chinese words a Chinese source is split into, to tell whether it "
                         "repeats a word (the models' vocab)")
    ap.add_argument("--group", action="append", choices=GROUPS,
                    help="run only this group (repeatable; default: all)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="passed to s2s translate as --set KEY=VALUE (repeatable)")
    ap.add_argument("--failures", action="store_true",
                    help="list every sentence that is not exact, loops or repeats a token")
    ap.add_argument("--require", action="store_true",
                    help="exit 1 unless the targets of issues 15 and 34 hold")
    a = ap.parse_args(argv)

    extra = []
    for kv in a.set:
        extra += ["--set", kv]
    missed = []
    try:
        cjk_words = read_cjk_words(a.zh_vocab)
        for group in a.group or GROUPS:
            by_dir = {}
            for d in DIRECTIONS:
                path = os.path.join(a.data, "%s.%s.tsv" % (group, d))
                by_dir[d] = run_file(a.s2s, a.models, path, d, extra, cjk_words)
            rows = report(group, by_dir, sys.stdout)
            if a.failures:
                for d in DIRECTIONS:
                    for r in by_dir[d]:
                        if r["exact"] and not r["loop"] and not r["repeat"]:
                            continue
                        flag = " LOOP" if r["loop"] else " REPEAT" if r["repeat"] else ""
                        print("  %s.%s:%d%s  %s\n      got: %s\n     want: %s" %
                              (group, d, r["line"], flag, r["source"], r["output"],
                               r["reference"]))
            n, exact, nloops, nrepeats = rows["both"]
            target = EXACT_TARGET.get(group)
            if target is not None and 100 * exact < target * n:
                missed.append("%s: %.1f%% exact, target %d%%" % (group, pct(exact, n), target))
            target = DIRECTION_TARGET.get(group)
            if target is not None:
                for d in DIRECTIONS:
                    dn, de = rows[d][:2]
                    if 100 * de < target * dn:
                        missed.append("%s %s: %.1f%% exact, target %d%% in each direction" %
                                      (group, d, pct(de, dn), target))
            if nloops:
                missed.append("%s: %d outputs loop, target 0" % (group, nloops))
            if nrepeats:
                missed.append("%s: %d outputs repeat a token the source does not, target 0" %
                              (group, nrepeats))
            print()
    except ProbeError as e:
        print("probe: %s" % e, file=sys.stderr)
        return 2
    for m in missed:
        print("probe: target missed: %s" % m)
    if not missed:
        print("probe: all targets met")
    return 1 if missed and a.require else 0


if __name__ == "__main__":
    sys.exit(main())
