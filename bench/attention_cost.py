#!/usr/bin/env python3
"""Cost against length of the attention variants (issue 29, docs/attention.md).

    bench/attention_cost.py [--build build] [--runs 3] [--lengths 32,128,...]
                            [--dec-lengths 16,128,1024] [--clock cpu|wall]
                            [--min-time 0.5] [--no-decoder] [--no-encoder]
                            [--no-score]

Makes random models of configs/bench.yaml with model.max_len 8,192, one per
variant (encoder: full, local w 16, block 64, strided 64, linear; decoder:
full, local w 16, linear), and runs build/bench_attention_cost once per
(variant, length, mode) per run, a process each so that its peak RSS is
its own, at 1 thread. Runs are interleaved (each run takes every cell once,
so that a change in the machine's load hits them all); each figure is the
median over the runs of each process's median call. Prints markdown
tables: time (the process's CPU time per call with --clock cpu, the
default, which a loaded machine disturbs less than wall time), peak RSS
and the RSS above the loaded model's (the state, scratch and oneDNN's
buffers), the log-log slope of each between consecutive lengths and from
2,048 to 8,192, the speed-up over full, and the length from which each
variant is faster than full (interpolated in log-log between the lengths
measured).

The encoder tables time the encoder stack alone (--encoder: embedding,
layers, final LayerNorm), what the issue's target names; the s2s_score
tables (--encode, left out with --no-score) time the public API's nearest,
s2s_score of an empty target, which adds every decoder layer's
cross-attention K/V and one decoder row.
"""
import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ENCODERS = [
    ("full", []),
    ("local w 16", ["type=local", "window=16"]),
    ("block 64", ["type=block", "block=64"]),
    ("strided 64", ["type=strided", "stride=64"]),
    ("linear", ["type=linear"]),
]
DECODERS = [
    ("full", []),
    ("local w 16", ["type=local", "window=16"]),
    ("linear", ["type=linear"]),
]


def make_model(build, path, section, sets):
    cmd = [os.path.join(build, "s2s"), "init", os.path.join(ROOT, "configs/bench.yaml"),
           "-o", path, "--seed", "1", "--set", "model.max_len=8192"]
    for s in sets:
        cmd += ["--set", "model.%s.%s" % (section, s)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def measure(build, model, mode, n, min_time):
    env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    out = subprocess.run([os.path.join(build, "bench_attention_cost"), "-m", model,
                          "--" + mode, str(n), "--min-time", str(min_time)],
                         check=True, capture_output=True, text=True, env=env).stdout
    return {k: float(v) for k, v in (f.split("=") for f in out.split())}


def slope(a, b, la, lb):
    return math.log(b / a) / math.log(lb / la) if a > 0 and b > 0 else float("nan")


def crossover(lengths, t, full):
    """The length from which t stays below full, interpolated in log-log."""
    r = [math.log(t[i] / full[i]) for i in range(len(lengths))]
    slower = [i for i in range(len(lengths)) if r[i] >= 0]
    if not slower:
        return "<= %d" % lengths[0]
    i = slower[-1]
    if i == len(lengths) - 1:
        return "> %d" % lengths[-1]
    x0, x1 = math.log(lengths[i]), math.log(lengths[i + 1])
    return "%d" % round(math.exp(x0 + (x1 - x0) * r[i] / (r[i] - r[i + 1])))


def fmt(x, unit=""):
    if x >= 100:
        return "{:,.0f}{}".format(x, unit)
    if x >= 10:
        return "{:.1f}{}".format(x, unit)
    return "{:.2f}{}".format(x, unit)


def table(title, lengths, names, cells, key, scale, unit, slopes=True, ratio=None):
    print("\n%s\n" % title)
    head = ["variant"] + ["{:,}".format(l) for l in lengths]
    pairs = list(zip(lengths, lengths[1:]))
    if slopes:
        head += ["slope %s-%s" % (a, b) for a, b in pairs]
        if 2048 in lengths and 8192 in lengths:
            head.append("slope 2048-8192")
    print("| " + " | ".join(head) + " |")
    print("|---" + "|---:" * (len(head) - 1) + "|")
    for name in names:
        v = [statistics.median(r[key] for r in cells[name, l]) for l in lengths]
        row = [name] + [fmt(x * scale, unit) for x in v]
        if slopes:
            row += ["%.2f" % slope(v[i], v[i + 1], lengths[i], lengths[i + 1])
                    for i in range(len(pairs))]
            if 2048 in lengths and 8192 in lengths:
                i, j = lengths.index(2048), lengths.index(8192)
                row.append("%.2f" % slope(v[i], v[j], 2048, 8192))
        print("| " + " | ".join(row) + " |")


def encoder_tables(what, cells, mode, lengths, tkey):
    names = [n for n, _ in ENCODERS]
    enc = {(name, n): cells[mode, name, n] for name in names for n in lengths}
    table("%s, ms (one sentence of N rows)" % what, lengths, names, enc, tkey, 1e3, "")
    print("\n%s: speed-up over full\n" % what)
    print("| variant | " + " | ".join("x full at {:,}".format(l) for l in lengths)
          + " | faster than full from |")
    print("|---" + "|---:" * (len(lengths) + 1) + "|")
    full = [statistics.median(r[tkey] for r in enc["full", l]) for l in lengths]
    for name in names[1:]:
        t = [statistics.median(r[tkey] for r in enc[name, l]) for l in lengths]
        print("| %s | %s | %s |" % (name, " | ".join("%.1f" % (f / x) for f, x in zip(full, t)),
                                    crossover(lengths, t, full)))
    table("%s: peak RSS, MB" % what, lengths, names, enc, "rss_peak_kib", 1 / 1024, "")
    for cell in enc.values():
        for r in cell:
            r["above"] = r["rss_peak_kib"] - r["rss_model_kib"]
    table("%s: peak RSS above the loaded model, MB" % what, lengths, names, enc, "above",
          1 / 1024, "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--lengths", default="32,128,512,1024,2048,4096,8192")
    ap.add_argument("--dec-lengths", default="16,128,1024")
    ap.add_argument("--clock", choices=["cpu", "wall"], default="cpu")
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--no-decoder", action="store_true")
    ap.add_argument("--no-encoder", action="store_true")
    ap.add_argument("--no-score", action="store_true",
                    help="time the encoder stack alone, not s2s_score too")
    a = ap.parse_args()
    lengths = [int(x) for x in a.lengths.split(",")]
    dec_lengths = [int(x) for x in a.dec_lengths.split(",")]
    tkey = "cpu_seconds" if a.clock == "cpu" else "seconds"
    jobs = []  # (table, name, model, mode, n)
    with tempfile.TemporaryDirectory() as tmp:
        enc_modes = ["encoder"] + ([] if a.no_score else ["encode"])
        for section, variants, modes, lens, on in (
                ("encoder_attention", ENCODERS, enc_modes, lengths, not a.no_encoder),
                ("decoder_attention", DECODERS, ["decode"], dec_lengths, not a.no_decoder)):
            if not on:
                continue
            for i, (name, sets) in enumerate(variants):
                path = os.path.join(tmp, "%s-%d.safetensors" % (section, i))
                make_model(a.build, path, section, sets)
                jobs += [(mode, name, path, n) for n in lens for mode in modes]
        cells = {}
        for run in range(a.runs):
            for mode, name, path, n in jobs:
                r = measure(a.build, path, mode, n, a.min_time)
                cells.setdefault((mode, name, n), []).append(r)
            print("run %d of %d done (load average %.2f)" % (run + 1, a.runs, os.getloadavg()[0]),
                  file=sys.stderr)
    print("machine: %d cores online, load average %.2f at the end; %s time, median of %d "
          "interleaved runs, 1 thread" % (os.cpu_count(), os.getloadavg()[0], a.clock, a.runs))

    if not a.no_encoder:
        encoder_tables("Encoder stack alone", cells, "encoder", lengths, tkey)
        if not a.no_score:
            encoder_tables("s2s_score of an empty target (encoder, cross-attention K/V, one "
                           "decoder row)", cells, "encode", lengths, tkey)
    if not a.no_decoder:
        names = [n for n, _ in DECODERS]
        dec = {(name, n): cells["decode", name, n] for name in names for n in dec_lengths}
        for cell in dec.values():
            for r in cell:
                r["tok_s"] = r["decode"] / r[tkey]
                r["above"] = r["rss_peak_kib"] - r["rss_model_kib"]
        table("Greedy decoding of N target tokens (16-row source): target tokens/s",
              dec_lengths, names, dec, "tok_s", 1, "", slopes=False)
        table("Decoding: peak RSS above the loaded model, MB", dec_lengths, names, dec, "above",
              1 / 1024, "")


if __name__ == "__main__":
    main()
