#!/usr/bin/env python3
"""Translate the probe set (tests/data/probe/) with the shipped models and
report, per group, exact matches and outputs that loop.

Each group is two files, GROUP.zh-en.tsv and GROUP.en-zh.tsv, of
`source<TAB>reference` lines (`#` lines and blank lines are skipped). Every
source is run through `s2s translate --json -m MODELS/DIRECTION.safetensors`.

- exact: the output equals the reference after trimming surrounding white
  space. Case counts: references are spelled as s2s prints them (first word
  and "I" capitalised, names in the corpus's lower case), so a difference in
  case is a different output.
- loop: the output's token list (the "tokens" of --json) holds one token three
  times in a row.

Targets (issue 15), checked with --require: 100% exact on worked, at least
95% exact on natural and read (both directions pooled, per group), no loop in
any group. Exit codes: 0 report printed (and, with --require, targets met);
1 a target missed (--require only); 2 a missing or malformed file, or s2s
failed.
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GROUPS = ("worked", "natural", "read", "oov")
DIRECTIONS = ("zh-en", "en-zh")
# group -> minimum exact match in percent; every group must also have no loop
EXACT_TARGET = {"worked": 100, "natural": 95, "read": 95}


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


def run_file(s2s, models, path, direction, extra):
    rows = read_pairs(path)
    model = os.path.join(models, direction + ".safetensors")
    outs = translate(s2s, model, [src for _, src, _ in rows], extra)
    results = []
    for (n, src, ref), (text, tokens) in zip(rows, outs):
        results.append({"line": n, "source": src, "reference": ref, "output": text,
                        "exact": text.strip() == ref.strip(), "loop": loops(tokens)})
    return results


def pct(k, n):
    return 100.0 * k / n if n else 0.0


def report(group, by_dir, out):
    """Prints the group's table; returns (n, exact, loops) over both directions."""
    print("== %s" % group, file=out)
    print("%-9s %5s %6s %8s %6s" % ("direction", "n", "exact", "exact %", "loops"), file=out)
    tot = [0, 0, 0]
    for d in DIRECTIONS:
        res = by_dir[d]
        n, e, lp = len(res), sum(r["exact"] for r in res), sum(r["loop"] for r in res)
        tot = [tot[0] + n, tot[1] + e, tot[2] + lp]
        print("%-9s %5d %6d %7.1f%% %6d" % (d, n, e, pct(e, n), lp), file=out)
    print("%-9s %5d %6d %7.1f%% %6d" % ("both", tot[0], tot[1], pct(tot[1], tot[0]), tot[2]),
          file=out)
    return tuple(tot)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="Default paths are relative to the repository root.")
    ap.add_argument("--s2s", default=os.path.join(ROOT, "build", "s2s"), help="the s2s binary")
    ap.add_argument("--models", default=os.path.join(ROOT, "models"),
                    help="directory of zh-en.safetensors and en-zh.safetensors")
    ap.add_argument("--data", default=os.path.join(ROOT, "tests", "data", "probe"),
                    help="directory of the probe files")
    ap.add_argument("--group", action="append", choices=GROUPS,
                    help="run only this group (repeatable; default: all)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="passed to s2s translate as --set KEY=VALUE (repeatable)")
    ap.add_argument("--failures", action="store_true",
                    help="list every sentence that is not exact or loops")
    ap.add_argument("--require", action="store_true",
                    help="exit 1 unless the targets of issue 15 hold")
    a = ap.parse_args(argv)

    extra = []
    for kv in a.set:
        extra += ["--set", kv]
    missed = []
    try:
        for group in a.group or GROUPS:
            by_dir = {}
            for d in DIRECTIONS:
                path = os.path.join(a.data, "%s.%s.tsv" % (group, d))
                by_dir[d] = run_file(a.s2s, a.models, path, d, extra)
            n, exact, nloops = report(group, by_dir, sys.stdout)
            if a.failures:
                for d in DIRECTIONS:
                    for r in by_dir[d]:
                        if r["exact"] and not r["loop"]:
                            continue
                        print("  %s.%s:%d%s  %s\n      got: %s\n     want: %s" %
                              (group, d, r["line"], " LOOP" if r["loop"] else "", r["source"],
                               r["output"], r["reference"]))
            target = EXACT_TARGET.get(group)
            if target is not None and 100 * exact < target * n:
                missed.append("%s: %.1f%% exact, target %d%%" % (group, pct(exact, n), target))
            if nloops:
                missed.append("%s: %d outputs loop, target 0" % (group, nloops))
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
