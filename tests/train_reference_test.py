#!/usr/bin/env python3
"""One step of `s2s train` against an independent float64 computation.

From a model with random weights (scripts/ref_model.py random: biases and
LayerNorm gains far from 0 and 1), with dropout 0, shuffle off and the whole
data file in one batch, `s2s train` takes one step. Then:

  - the step-1 loss in train.log equals the label-smoothed cross-entropy
    (1-eps) * -log p[gold] + eps * mean_v -log p[v], averaged over every
    target position (</s> included), computed by ref_model.py's forward pass,
    to 1e-4 relative;
  - every sampled weight moved as Adam's first step says: with m_hat = g and
    v_hat = g^2, p1 = p0 - lr * g / (|g| + eps), where g is a central finite
    difference of that reference loss (float64), to 1e-4 relative of lr;
  - weights that get no gradient (embedding rows of tokens the batch never
    feeds in, <pad> included) did not move.

The same runs again for models whose attentions are variants (issue 29:
VARIANTS below, which ref_model.py computes from their definitions).

Then the log's grad_norms (train.grad_norms_every: 1) of one step of a
smaller model with two layers in each stack: one key per attention
Q, K, V and output matrix and per feed-forward matrix of every layer
(2 x 6 + 2 x 10 = 32), each the L2 norm of that matrix's gradient as the
central finite differences of the reference loss give it, element by
element (float64), to 1e-4 relative, though the step clips the gradient
(the norms are taken before clipping).

    train_reference_test.py PATH_TO_s2s      (exit 77: numpy missing, skipped)
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import ref_model as R  # noqa: E402  (exits 77 without numpy)

np = R.np
DATA = os.path.join(HERE, "data", "train")
EPS_LS = 0.1
LR = 0.01
PAIRS = 12


def central_difference(model, pairs, flat, idx, h):
    """d loss / d flat[idx], flat a view of one of model's weights."""
    keep = flat[idx]
    flat[idx] = keep + h
    lp = ref_loss(model, pairs)
    flat[idx] = keep - h
    lm = ref_loss(model, pairs)
    flat[idx] = keep
    return (lp - lm) / (2 * h)


def ref_loss(model, pairs):
    total, count = 0.0, 0
    for src, tgt in pairs:
        logp = R.forward_ids(model, src, tgt)
        gold = list(tgt) + [R.EOS]
        for t, g in enumerate(gold):
            total += (1 - EPS_LS) * -logp[t, g] + EPS_LS * -logp[t].mean()
            count += 1
    return total / count


# model: tables added to reverse.yaml: every variant in some table, on all
# heads and on some.
VARIANTS = {
    "full": "",
    "local, strided, linear cross": (
        "  encoder_attention: {type: local, window: 1}\n"
        "  decoder_attention: {type: strided, stride: 2}\n"
        "  cross_attention: {type: linear, heads: [1, 3]}\n"),
    "linear": (
        "  encoder_attention: {type: linear}\n"
        "  decoder_attention: {type: linear, heads: [0, 2]}\n"),
    "block, local": (
        "  encoder_attention: {type: block, block: 2, heads: [0, 1]}\n"
        "  decoder_attention: {type: local, window: 1}\n"),
}


def variant_config(tmp, name, tables, sizes=()):
    """reverse.yaml with the model: tables added and sizes ((key, value)
    pairs) changed, beside its data."""
    with open(os.path.join(DATA, "reverse.yaml"), encoding="utf-8") as f:
        text = f.read()
    text = text.replace("vocab:\n", tables + "vocab:\n", 1)
    for key, value in sizes:
        lines = text.split("\n")
        at = [i for i, l in enumerate(lines) if l.startswith("  %s:" % key)]
        assert len(at) == 1, key
        lines[at[0]] = "  %s: %s" % (key, value)
        text = "\n".join(lines)
    for rel in ("digits.txt", "reverse_train.tsv", "reverse_dev.tsv"):
        text = text.replace(" " + rel, " " + os.path.join(DATA, rel))
    path = os.path.join(tmp, name.replace(" ", "_").replace(",", "") + ".yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def main():
    s2s = sys.argv[1]
    failures = 0
    for name, tables in VARIANTS.items():
        print("%s:" % name)
        failures += check(s2s, name, tables)
    print("grad_norms:")
    failures += check_grad_norms(s2s)
    return 1 if failures else 0


def one_step(s2s, tmp, cfg, n_pairs, more_sets=()):
    """A random model (init.safetensors in tmp) and one step of s2s train on
    the first n_pairs of reverse_train.tsv: (the model as ref_model reads
    it, the pairs as ids, the step's log line)."""
    digits = os.path.join(DATA, "digits.txt")
    init = os.path.join(tmp, "init.safetensors")
    if R.main(["random", cfg, digits, digits, init, "--seed", "3"]) != 0:
        raise RuntimeError("ref_model.py random failed")

    with open(os.path.join(DATA, "reverse_train.tsv"), encoding="utf-8") as f:
        lines = [next(f) for _ in range(n_pairs)]
    train = os.path.join(tmp, "train.tsv")
    with open(train, "w", encoding="utf-8") as f:
        f.writelines(lines)

    out = os.path.join(tmp, "out.safetensors")
    log = os.path.join(tmp, "train.log")
    sets = ["model.dropout=0", "model.attention_dropout=0", "train.shuffle=false",
            "train.batch_tokens=1000000", "train.max_steps=1", "train.schedule=constant",
            "train.lr=%g" % LR, "train.label_smoothing=%g" % EPS_LS, "train.valid_every=0",
            "train.clip_norm=0", "train.weight_decay=0", "data.train=" + train,
            "train.log=" + log] + list(more_sets)
    cmd = [s2s, "train", cfg, "--init", init, "-o", out, "--quiet", "--threads", "1"]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True)

    model = R.load_model(init)
    pairs = []
    for line in lines:
        src, tgt = line.rstrip("\n").split("\t")[:2]
        pairs.append((R.to_ids(model.src_index, src), R.to_ids(model.tgt_index, tgt)))
    with open(log, encoding="utf-8") as f:
        step1 = json.loads(f.readline())
    return model, pairs, step1


def check_grad_norms(s2s):
    tmp = tempfile.mkdtemp(prefix="s2s_train_ref_")
    sizes = (("d_model", 8), ("heads", 2), ("encoder_layers", 2), ("decoder_layers", 2),
             ("ffn_dim", 16))
    cfg = variant_config(tmp, "grad norms", "", sizes)
    # clip_norm 0.01 clips this step: the norms must be the unclipped ones.
    model, pairs, step1 = one_step(s2s, tmp, cfg, 4, ["train.grad_norms_every=1", "train.clip_norm=0.01"])
    got = step1.get("grad_norms", {})
    failures = []
    want_keys = ["%s.layers.%d.%s" % (stack, layer, m)
                 for stack, subs in (("encoder", ("self_attn",)),
                                     ("decoder", ("self_attn", "cross_attn")))
                 for layer in range(2)
                 for m in ["%s.%s" % (sub, p) for sub in subs
                           for p in ("q_proj", "k_proj", "v_proj", "out_proj")]
                 + ["ffn.fc1", "ffn.fc2"]]
    if len(got) != 32 or sorted(got) != sorted(want_keys):
        failures.append("grad_norms has %d keys %s, wanted the 32 %s"
                        % (len(got), sorted(got), sorted(want_keys)))
    h = 1e-5
    worst = 0.0
    for key in want_keys:
        flat = model.w[key + ".weight"].reshape(-1)  # a view, as in check()
        sq = sum(central_difference(model, pairs, flat, idx, h) ** 2 for idx in range(flat.size))
        want = sq ** 0.5
        have = got.get(key)
        rel = abs(have - want) / want if isinstance(have, float) and want > 0 else float("inf")
        worst = max(worst, rel)
        if rel > 1e-4:
            failures.append("grad_norms[%s] = %s, finite differences say %.9g" % (key, have, want))
    for msg in failures:
        print("FAIL:", msg)
    print("grad_norms: %d matrices, largest relative difference %.2g; %d failures"
          % (len(want_keys), worst, len(failures)))
    subprocess.run(["rm", "-rf", tmp], check=False)
    return 1 if failures else 0


def check(s2s, name, tables):
    tmp = tempfile.mkdtemp(prefix="s2s_train_ref_")
    cfg = variant_config(tmp, name, tables)
    model, pairs, step1 = one_step(s2s, tmp, cfg, PAIRS)
    init = os.path.join(tmp, "init.safetensors")
    out = os.path.join(tmp, "out.safetensors")
    failures = []
    want = ref_loss(model, pairs)
    if abs(step1["loss"] - want) > 1e-4 * abs(want):
        failures.append("step-1 loss %.9g, reference %.9g" % (step1["loss"], want))

    w0, _ = R.read_safetensors(init)
    w1, _ = R.read_safetensors(out)
    rng = np.random.default_rng(5)
    checked = 0
    h = 1e-5
    for name in sorted(w0):
        flat = model.w[name].reshape(-1)  # a view: perturbing it perturbs the model
        for idx in rng.choice(flat.size, size=min(3, flat.size), replace=False):
            g = central_difference(model, pairs, flat, idx, h)
            if abs(g) < 1e-6:
                continue  # the sign is not reliable; zero-gradient rows are checked below
            moved = float(w1[name].reshape(-1)[idx]) - float(w0[name].reshape(-1)[idx])
            expect = -LR * g / (abs(g) + 1e-9)
            checked += 1
            if abs(moved - expect) > 1e-4 * LR:
                failures.append("%s[%d]: moved %.9g, Adam step 1 says %.9g (g = %.3g)"
                                % (name, idx, moved, expect, g))
    # <pad>, <unk> and <s> never enter the encoder: their rows get no gradient.
    for row in (R.PAD, R.UNK, R.BOS):
        if not np.array_equal(w0["src_embed.weight"][row], w1["src_embed.weight"][row]):
            failures.append("src_embed.weight row %d moved without a gradient" % row)
    if checked < 40:
        failures.append("only %d weights had a usable finite difference" % checked)
    for msg in failures:
        print("FAIL:", msg)
    print("train_reference: loss %.9g vs %.9g; %d weights checked; %d failures"
          % (step1["loss"], want, checked, len(failures)))
    subprocess.run(["rm", "-rf", tmp], check=False)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
