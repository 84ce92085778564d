#!/usr/bin/env python3
"""The structure of a picture `s2s plot` wrote, read with xml.etree.

    plot_check.py FILE [--runs A|B|...] [PANEL=N ...]

FILE is the SVG, or an HTML page holding one (its <svg> element is parsed).
It must be well-formed XML in the SVG namespace, self-contained (no
<script>, no href, no url(), no @import, no external font), with:
  - the legend naming the runs, in order (--runs, separated by |);
  - for each PANEL=N (PANEL: a quantity such as loss, dev_loss, bleu, lr,
    grad_norm, or a sublayer such as encoder.layers.0.self_attn), one
    panel with N series paths, its data-series saying N, and no other
    panel than those given;
  - every panel a title, an x label "step" and a y label, every series
    path a non-empty "d" naming a run of the legend, and every series of
    a sublayer panel a data-matrix.
Prints what differs and exits 1; exit 0 when all holds.
"""

import re
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def load(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith((".html", ".htm")):
        m = re.search(r"<svg\b.*</svg>", text, re.S)
        if not m or not text.startswith("<!DOCTYPE html>"):
            raise ValueError("no <svg> in the page, or no doctype")
        text = m.group(0)
    for bad in ("<script", "href", "url(", "@import", "@font-face", "http://", "https://"):
        rest = text.replace('xmlns="http://www.w3.org/2000/svg"', "")
        if bad in rest:
            raise ValueError("not self-contained: it holds %r" % bad)
    return ET.fromstring(text)


def cls(e):
    return (e.get("class") or "").split()


def main(argv):
    path, want_runs, want = argv[0], None, {}
    for a in argv[1:]:
        if a.startswith("--runs="):
            want_runs = a[len("--runs="):].split("|")
        else:
            k, v = a.rsplit("=", 1)
            want[k] = int(v)
    problems = []
    root = load(path)
    if root.tag != SVG + "svg":
        problems.append("the root is %s, not an SVG" % root.tag)
    runs = [g.get("data-run") for g in root.iter(SVG + "g") if "legend-run" in cls(g)]
    if want_runs is not None and runs != want_runs:
        problems.append("legend runs %s, wanted %s" % (runs, want_runs))
    seen = {}
    for g in root.iter(SVG + "g"):
        if "panel" not in cls(g):
            continue
        name = g.get("data-group") or g.get("data-quantity")
        paths = [p for p in g.iter(SVG + "path") if "series" in cls(p)]
        seen[name] = len(paths)
        if int(g.get("data-series", -1)) != len(paths):
            problems.append("%s: data-series %s, %d paths" % (name, g.get("data-series"), len(paths)))
        texts = {c: [t.text for t in g.iter(SVG + "text") if c in cls(t)]
                 for c in ("title", "xlabel", "ylabel")}
        if len(texts["title"]) != 1 or texts["xlabel"] != ["step"] or len(texts["ylabel"]) != 1:
            problems.append("%s: title, x and y labels %s" % (name, texts))
        for p in paths:
            if not (p.get("d") or "").startswith("M") or p.get("data-run") not in runs:
                problems.append("%s: a series path %s" % (name, p.attrib))
            if g.get("data-group") and not p.get("data-matrix"):
                problems.append("%s: a series without its matrix" % name)
    if want and seen != want:
        problems.append("panels and their series %s, wanted %s" % (seen, want))
    for p in problems:
        print("plot_check: %s: %s" % (path, p))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
