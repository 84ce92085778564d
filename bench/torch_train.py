#!/usr/bin/env python3
"""PyTorch peer of `s2s train` for the training-speed table (bench/train_speed.sh).

The model of an s2s config, as scripts/ref_model.py defines it: sinusoidal
positions added to embeddings scaled by sqrt(d_model), pre-norm (or post-norm)
layers with biased projections and a final LayerNorm per stack, relu or gelu,
the output tied to tgt_embed.weight (plus generator.bias), dropout on the
embeddings and sublayer outputs (and on attention weights when the config
says so), label-smoothed cross-entropy averaged over the batch's target
tokens. Trained as s2s trains it: torch.optim.Adam with the config's betas,
eps and learning-rate schedule (linear warmup, then inverse square root), the
global gradient norm clipped to train.clip_norm. The guided alignment and
coreference terms and <unk> replacement are left out; the bench turns them off
on the s2s side too.

Batches as s2s makes them: the TSV's pairs tokenized (source: greedy longest
match over the source vocabulary, as s2s does on CJK text; target: lower-cased
words), sorted by length, cut so that sentences x (padded source + padded
target, </s> and <s> counted) stays within train.batch_tokens, in a seeded
order. The tokenizer is an approximation of s2s's (src/tokenizer): the batch
shapes agree, not every id.

    python3 bench/torch_train.py CONFIG [--steps N] [--threads N] [--dtype fp32|bf16]
        [--cache FILE]

bf16 is PyTorch's own autocast on CPU (torch.autocast("cpu", torch.bfloat16)):
the matrix products in bf16, the weights and Adam in fp32. Prints one line:
`tokens/s X` over the steps' time (forward, backward, update), the tokens being
s2s's: source + target tokens of the batch, </s> not counted. Exit 77 when
torch is missing (torch_decode.py's message).
"""

import argparse
import math
import os
import pickle
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
# The decoding peer's start: OMP/OpenBLAS threads from --threads before torch
# loads, Debian's python3 when another one runs, exit 77 without torch.
from torch_decode import ref_model, yaml  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

PAD, UNK, BOS, EOS = ref_model.PAD, ref_model.UNK, ref_model.BOS, ref_model.EOS


def read_vocab(path):
    toks = [line.rstrip("\n") for line in open(path, encoding="utf-8")]
    return toks, {t: i for i, t in enumerate(toks)}


def tokenize_src(text, index, longest):
    """Greedy longest match over the vocabulary, spaces dropped."""
    s, ids, i = "".join(text.split()), [], 0
    while i < len(s):
        for n in range(min(longest, len(s) - i), 0, -1):
            if s[i:i + n] in index:
                ids.append(index[s[i:i + n]])
                i += n
                break
        else:
            ids.append(UNK)
            i += 1
    return ids


def tokenize_tgt(text, index):
    return [index.get(w, UNK) for w in text.lower().split()]


def load_pairs(path, src_index, tgt_index, max_len):
    longest = max(len(t) for t in src_index)
    pairs = []
    for line in open(path, encoding="utf-8"):
        cols = line.rstrip("\n").split("\t")
        if len(cols) < 2:
            continue
        s, t = tokenize_src(cols[0], src_index, longest), tokenize_tgt(cols[1], tgt_index)
        if s and len(s) + 1 <= max_len and len(t) + 1 <= max_len:
            pairs.append((s, t))
    return pairs


def make_batches(pairs, batch_tokens, seed):
    """Length-sorted, cut at batch_tokens padded tokens, in a seeded order."""
    order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i][0]), len(pairs[i][1])))
    batches, cur, S, T = [], [], 0, 0
    for i in order:
        s, t = pairs[i]
        s2, t2 = max(S, len(s) + 1), max(T, len(t) + 1)
        if cur and (len(cur) + 1) * (s2 + t2) > batch_tokens:
            batches.append(cur)
            cur, s2, t2 = [], len(s) + 1, len(t) + 1
        cur.append(i)
        S, T = s2, t2
    if cur:
        batches.append(cur)
    random.Random(seed).shuffle(batches)
    return batches


def tensors(pairs, idx):
    S = max(len(pairs[i][0]) for i in idx) + 1
    T = max(len(pairs[i][1]) for i in idx) + 1
    src = torch.full((len(idx), S), PAD, dtype=torch.long)
    tin = torch.full((len(idx), T), PAD, dtype=torch.long)
    tout = torch.full((len(idx), T), PAD, dtype=torch.long)
    tokens = 0
    for r, i in enumerate(idx):
        s, t = pairs[i]
        src[r, :len(s) + 1] = torch.tensor(s + [EOS])
        tin[r, :len(t) + 1] = torch.tensor([BOS] + t)
        tout[r, :len(t) + 1] = torch.tensor(t + [EOS])
        tokens += len(s) + len(t)
    return src, tin, tout, tokens


class Seq2Seq(nn.Module):
    def __init__(self, m, vs, vt):
        super().__init__()
        d = m["d_model"]
        self.d = d
        self.src_embed = nn.Embedding(vs, d)
        self.tgt_embed = nn.Embedding(vt, d)
        for e in (self.src_embed, self.tgt_embed):  # as s2s: unit scale after * sqrt(d)
            nn.init.normal_(e.weight, 0.0, d ** -0.5)
        self.register_buffer("pe", torch.from_numpy(ref_model.positional_encoding(m["max_len"], d)).float())
        self.drop = nn.Dropout(m["dropout"])
        self.core = nn.Transformer(
            d_model=d, nhead=m["heads"], num_encoder_layers=m["encoder_layers"],
            num_decoder_layers=m["decoder_layers"], dim_feedforward=m["ffn_dim"],
            dropout=m["dropout"], activation=m["activation"], batch_first=True,
            norm_first=m["norm"] == "pre", layer_norm_eps=m["layer_norm_eps"])
        # nn.Transformer's attention dropout is its dropout; s2s's is its own key
        for mod in self.core.modules():
            if isinstance(mod, nn.MultiheadAttention):
                mod.dropout = m.get("attention_dropout", 0.0)
        self.tied = m["tie_output"]
        if not self.tied:
            self.generator = nn.Linear(d, vt, bias=False)
        self.gen_bias = nn.Parameter(torch.zeros(vt))

    def embed(self, table, ids):
        return self.drop(table(ids) * math.sqrt(self.d) + self.pe[:ids.shape[1]])

    def forward(self, src, tin):
        T = tin.shape[1]
        causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        h = self.core(self.embed(self.src_embed, src), self.embed(self.tgt_embed, tin),
                      tgt_mask=causal, src_key_padding_mask=src == PAD,
                      memory_key_padding_mask=src == PAD)
        w = self.tgt_embed.weight if self.tied else self.generator.weight
        return h @ w.t() + self.gen_bias


def lr_at(tc, step):
    lr, warm = tc["lr"], tc.get("warmup_steps", 0)
    if warm and step <= warm:
        return lr * step / warm
    if tc.get("schedule", "inverse_sqrt") == "inverse_sqrt" and warm:
        return lr * math.sqrt(warm / step)
    return lr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--cache", help="keep the tokenized pairs in this file (pickle) across runs")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    base = os.path.dirname(os.path.abspath(a.config))
    cfg = yaml.safe_load(open(a.config, encoding="utf-8"))
    m, tc = cfg["model"], cfg["train"]
    _, src_index = read_vocab(os.path.join(base, cfg["vocab"]["src"]))
    tgt_vocab, tgt_index = read_vocab(os.path.join(base, cfg["vocab"]["tgt"]))
    if a.cache and os.path.exists(a.cache):
        with open(a.cache, "rb") as f:
            pairs = pickle.load(f)
    else:
        pairs = load_pairs(os.path.join(base, cfg["data"]["train"]), src_index, tgt_index,
                           m["max_len"])
        if a.cache:
            with open(a.cache, "wb") as f:
                pickle.dump(pairs, f)
    batches = make_batches(pairs, tc["batch_tokens"], tc.get("seed", 1))
    torch.manual_seed(tc.get("seed", 1))
    model = Seq2Seq(m, len(src_index), len(tgt_vocab))
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=tc["lr"], betas=tuple(tc["adam_betas"]),
                           eps=tc["adam_eps"])
    smoothing, clip = tc.get("label_smoothing", 0.0), tc.get("clip_norm", 0.0)
    spent, tokens = 0.0, 0
    for step in range(1, a.steps + 1):
        src, tin, tout, n = tensors(pairs, batches[(step - 1) % len(batches)])
        t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = lr_at(tc, step)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.dtype == "bf16"):
            logits = model(src, tin)
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), tout.reshape(-1),
                               ignore_index=PAD, label_smoothing=smoothing)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        spent += time.perf_counter() - t0
        tokens += n
    print("tokens/s %.0f  loss %.4f  steps %d  threads %d  %s" %
          (tokens / spent, loss.item(), a.steps, a.threads, a.dtype))


if __name__ == "__main__":
    main()
