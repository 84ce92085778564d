#!/usr/bin/env python3
"""The figures the docs state about the shipped models, from the commands.

    scripts/doc_figures.py S2S [--write] [FILE.md ...]

Runs s2s on the shipped models and the test splits (eval, align --eval,
probe coref) and compares each marked figure of README.md and docs/*.md
with what the commands print now. A figure is marked in the Markdown as

    <!--fig NAME-->VALUE<!--/fig-->

(inline, in prose or in a table cell; not after a backquote, which
quotes it), or, for a whole table, with the markers on lines of their
own. The names: MODEL.bleu, .exact, .token_accuracy, .aer, .precision,
.recall, .share, .aer_avg, .aer_share1 (and its precision_/recall_share1),
.coref, .eval_table for MODEL zh-en and en-zh; sym.aer, sym.precision,
sym.recall (grow-diag-final); readme.table. Without --write it prints each figure that differs (file:line, name, the docs'
value and the measured one) and exits 1, or 0 when all agree: CI runs it
(tests/CMakeLists.txt, doc_figures). With --write it rewrites the files
that differ (a temporary file in the same folder, fsync, rename), as after
retraining a model. A figure counts as the same when each of its numbers
is within 3 units of its last digit or 0.2% (another CPU's kernels round
differently). Exit codes: 0 agree (or written), 1 differ, 2 usage
or a command failed, or a marker names no figure.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ("zh-en", "en-zh")
MARK = re.compile(r"(?<!`)<!--fig ([\w.-]+)-->(.*?)<!--/fig-->", re.S)


def run(s2s, *args):
    r = subprocess.run([s2s, *args], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"doc_figures: s2s {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def aer_rows(text):
    """The rows of an `align --eval` table: {(layer, head): (aer, p, r, marks)}."""
    rows, share = {}, None
    for line in text.splitlines():
        m = re.match(r"# AER against .*, share ([\d.]+)", line)
        if m:
            share = m.group(1)
        f = line.split()
        if len(f) >= 5 and re.fullmatch(r"\d\.\d{4}", f[2]):
            rows[(f[0], f[1])] = (f[2], f[3], f[4], f[5:])
    return rows, share


def model_figures(s2s, m):
    model, test = f"models/{m}.safetensors", f"data/corpus/test.{m}.tsv"
    fig = {}
    ev = json.loads(run(s2s, "eval", "-m", model, test, "--json"))
    fig["bleu"] = f"{ev['bleu']:.2f}"
    fig["exact"] = f"{100 * ev['exact_match']:.2f}%"
    fig["token_accuracy"] = f"{100 * ev['token_accuracy']:.2f}%"
    table = run(s2s, "align", "-m", model, "--eval", test)
    fig["eval_table"] = "\n```\n" + table + "```\n"
    rows, share = aer_rows(table)
    stored = [(k, v) for k, v in rows.items() if "stored" in v[3]]
    if len(stored) != 1:
        sys.exit(f"doc_figures: no stored head in the --eval table of {model}")
    (layer, head), (aer, p, r, _) = stored[0]
    fig.update(aer=aer, precision=p, recall=r, share=share, layer=layer, head=head)
    fig["aer_avg"] = rows[("avg", "avg")][0]
    one, _ = aer_rows(run(s2s, "align", "-m", model, "--eval", test, "--share", "1"))
    fig["aer_share1"], fig["precision_share1"], fig["recall_share1"], _ = one[(layer, head)]
    co = json.loads(run(s2s, "probe", "coref", "-m", model, test, "--json"))
    st = co["stored"]
    fig["coref"] = f"{100 * st['accuracy']:.0f}% of {co['links']} links"
    fig["coref_head"] = f"{st['layer']}, head {st['head']}"
    return fig


def symmetrised(s2s):
    out = run(s2s, "align", "-m", "models/zh-en.safetensors", "--eval",
              "data/corpus/test.zh-en.tsv", "--reverse", "models/en-zh.safetensors",
              "--symmetrize", "grow-diag-final")
    f = out.strip().splitlines()[-1].split()
    if f[0] != "grow-diag-final":
        sys.exit("doc_figures: no symmetrised row in the --eval table")
    return {"aer": f[1], "precision": f[2], "recall": f[3]}


def readme_table(fig):
    lines = ["| model | test BLEU | exact match | token accuracy | test AER (default head: "
             "layer 1, head 0, calibrated share) | antecedent accuracy (encoder layer 1, head 0) |",
             "|---|---:|---:|---:|---:|---:|"]
    for m, name in (("zh-en", "zh → en"), ("en-zh", "en → zh")):
        f = fig[m]
        lines.append(f"| {name} | {f['bleu']} | {f['exact']} | {f['token_accuracy']} | "
                     f"{f['aer']} (precision {f['precision']}, recall {f['recall']}) | {f['coref']} |")
    return "\n" + "\n".join(lines) + "\n"


def figures(s2s):
    fig = {m: model_figures(s2s, m) for m in MODELS}
    names = {f"{m}.{k}": v for m in MODELS for k, v in fig[m].items()}
    names.update({f"sym.{k}": v for k, v in symmetrised(s2s).items()})
    names["readme.table"] = readme_table(fig)
    return names


NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def same_number(a, b):
    """Two numbers as printed (a from the docs): within 3 units of a's last
    digit or 0.2%; two numbers both below 1e-5 in size (rounding errors)
    count as the same."""
    x, y = float(a), float(b)
    if abs(x) < 1e-5 and abs(y) < 1e-5:
        return True
    m = re.match(r"[-+]?\d*\.?(\d*)(?:[eE]([-+]?\d+))?$", a)
    unit = 10.0 ** (-len(m.group(1)) + int(m.group(2) or 0))
    return abs(x - y) <= max(3 * unit, 0.002 * abs(x))


def close(docs, now):
    """Whether the docs' text is the measured one, up to the rounding noise
    of another CPU (oneDNN's kernels differ by ISA): the same text around
    the numbers, and each number the same by same_number."""
    if NUMBER.sub("#", docs) != NUMBER.sub("#", now):
        return False
    return all(same_number(a, b) for a, b in zip(NUMBER.findall(docs), NUMBER.findall(now)))


def check_file(path, names, write):
    text = open(path, encoding="utf-8").read()
    bad, unknown = [], []

    def sub(m):
        name, value = m.group(1), m.group(2)
        if name not in names:
            unknown.append((text.count("\n", 0, m.start()) + 1, name))
            return m.group(0)
        if not close(value, names[name]):
            bad.append((text.count("\n", 0, m.start()) + 1, name, value, names[name]))
        return f"<!--fig {name}-->{names[name]}<!--/fig-->"

    new = MARK.sub(sub, text)
    rel = os.path.relpath(path, ROOT)
    for line, name in unknown:
        print(f"{rel}:{line}: no figure named {name}", file=sys.stderr)
    for line, name, old, now in bad:
        if not write:
            print(f"{rel}:{line}: {name}: the docs say {old.strip()!r}, the command gives "
                  f"{now.strip()!r}", file=sys.stderr)
    if write and bad:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".doc_figures.")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(new)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, os.stat(path).st_mode & 0o777)
        os.replace(tmp, path)
        print(f"{rel}: {len(bad)} figure(s) rewritten", file=sys.stderr)
    return len(bad), len(unknown)


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    flags = [a for a in argv if a.startswith("--")]
    if not args or any(f != "--write" for f in flags):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    s2s, files = os.path.abspath(args[0]), args[1:]
    if not files:
        docs = os.path.join(ROOT, "docs")
        files = [os.path.join(ROOT, "README.md")] + sorted(
            os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    names = figures(s2s)
    bad = unknown = 0
    for path in files:
        b, u = check_file(path, names, "--write" in flags)
        bad, unknown = bad + b, unknown + u
    if unknown:
        return 2
    if bad and "--write" not in flags:
        print(f"doc_figures: {bad} figure(s) differ; scripts/doc_figures.py S2S --write "
              "rewrites them", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
