#!/usr/bin/env python3
"""PyTorch side of the s2s decoding benchmark (bench/compare.sh runs both).

A straightforward PyTorch implementation of the architecture pinned in
docs/model-format.md, decoding the way fairseq does: the encoder runs once
per batch, cross-attention K/V are computed once per batch, and each
decoder layer keeps a self-attention K/V cache that grows by one
concatenated row per step. It loads the same safetensors file as s2s and
prints the same table rows as bench/bench_decode.c.

    python3 bench/torch_decode.py -m MODEL -i FILE [--threads N] [--max-len N]
        [--min-len N] [--beam K] [--repeat N] [--dump FILE]

Defaults follow bench_decode: max_len and length_penalty from the file's
`decode:` section, min_len 0, beam 4, repeat 3. --dump writes the greedy
(batch 1) translations, one line of space-separated target tokens per
input line, like bench_decode --dump; --dump-beam FILE the beam search's;
--dump-scores FILE the greedy log-prob of each output token (</s> included
when produced), for a check against `s2s score`.

Search, as s2s does it (src/decoding/):
- sentences sorted by source length, longest first, then cut into batches;
- a step never produces <pad> or <s>, nor </s> before min_len tokens;
- greedy stops a sentence at </s> or at its length limit;
- beam K: the 2K best continuations (by total log-prob) of a sentence's
  beams are ranked; a </s> among the first K ends a hypothesis, the best K
  others become the next beams; the search ends with K finished hypotheses
  or at the length limit (the live beams then end without </s>); the
  result is the finished hypothesis with the best logprob / n_out^alpha,
  n_out counting </s>.

Shapes: B batch rows, S source positions, t decoder step, d model width,
H heads, dh = d / H, V target vocab size, K beam size.
"""

import argparse
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _threads_from_argv(argv):
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


# OpenBLAS and OpenMP read their thread counts when the libraries load, so
# they are set before torch is imported; torch.set_num_threads follows.
_n = _threads_from_argv(sys.argv[1:])
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, _n)

sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
import debian_python  # noqa: E402

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:
    debian_python.reexec()
    sys.stderr.write("torch_decode.py: needs numpy and torch (Debian: apt-get install "
                     "python3-torch): %s\n" % e)
    sys.exit(77)

import ref_model  # noqa: E402  (the safetensors reader and config checks only)
import yaml  # noqa: E402

PAD, UNK, BOS, EOS = 0, 1, 2, 3


# ---- model ----

def positional_encoding(n, d):
    """(n, d) float32: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same)."""
    pos = np.arange(n, dtype=np.float64)[:, None]
    angle = pos / np.power(10000.0, np.arange(0, d, 2, dtype=np.float64) / d)
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d // 2])
    return torch.from_numpy(pe.astype(np.float32))


class Attention:
    """Multi-head attention weights; self-attention keeps Q, K, V as one [3d, d] product."""

    def __init__(self, w, prefix, heads, fused):
        def t(name):
            return w[prefix + "." + name]
        self.heads = heads
        self.fused = fused
        if fused:
            self.w_qkv = torch.cat([t("q_proj.weight"), t("k_proj.weight"), t("v_proj.weight")])
            self.b_qkv = torch.cat([t("q_proj.bias"), t("k_proj.bias"), t("v_proj.bias")])
        else:  # cross-attention: Q from the decoder, K/V (once per batch) from the encoder
            self.w_q, self.b_q = t("q_proj.weight"), t("q_proj.bias")
            self.w_kv = torch.cat([t("k_proj.weight"), t("v_proj.weight")])
            self.b_kv = torch.cat([t("k_proj.bias"), t("v_proj.bias")])
        self.w_o, self.b_o = t("out_proj.weight"), t("out_proj.bias")

    def split(self, x):
        """(B, T, d) -> (B, H, T, dh)."""
        B, T, d = x.shape
        return x.view(B, T, self.heads, d // self.heads).transpose(1, 2)

    def attend(self, q, k, v, mask):
        """q (B, H, Tq, dh), k/v (B', H, Tk, dh) with B' = B or 1; mask additive or None."""
        scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
        if mask is not None:
            scores = scores + mask
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)  # (B, H, Tq, dh)
        B, H, Tq, dh = ctx.shape
        return F.linear(ctx.transpose(1, 2).reshape(B, Tq, H * dh), self.w_o, self.b_o)

    def self_full(self, x, mask):
        """Encoder self-attention over all of x (B, S, d)."""
        q, k, v = F.linear(x, self.w_qkv, self.b_qkv).chunk(3, dim=-1)
        return self.attend(self.split(q), self.split(k), self.split(v), mask)

    def self_step(self, x, cache):
        """Decoder self-attention for one new row x (B, 1, d); cache[k|v] (B, H, t, dh) grows."""
        q, k, v = F.linear(x, self.w_qkv, self.b_qkv).chunk(3, dim=-1)
        k, v = self.split(k), self.split(v)
        if "k" in cache:
            k = torch.cat([cache["k"], k], dim=2)
            v = torch.cat([cache["v"], v], dim=2)
        cache["k"], cache["v"] = k, v
        return self.attend(self.split(q), k, v, None)  # every cached row is in the past

    def memory_kv(self, memory):
        """Cross-attention K, V (B, H, S, dh) of the encoder output, once per batch."""
        k, v = F.linear(memory, self.w_kv, self.b_kv).chunk(2, dim=-1)
        return self.split(k), self.split(v)

    def cross_step(self, x, k, v, mask):
        return self.attend(self.split(F.linear(x, self.w_q, self.b_q)), k, v, mask)


class Model:
    def __init__(self, path):
        tensors, meta = ref_model.read_safetensors(path)
        for key in ("s2s.format_version", "s2s.config", "s2s.src_vocab", "s2s.tgt_vocab"):
            if key not in meta:
                raise ref_model.RefError("%s: metadata %s missing" % (path, key))
        doc = yaml.safe_load(meta["s2s.config"])
        cfg = ref_model.parse_model_config(doc.get("model"), path + ": s2s.config")
        for table in ref_model.ATTENTION_TABLES:  # this peer runs full attention only
            if cfg[table]["type"] != "full":
                raise ref_model.RefError("%s: model.%s is %s: torch_decode.py runs full attention only"
                                         % (path, table, cfg[table]["type"]))
        self.decode_cfg = doc.get("decode") or {}
        self.cfg = cfg
        self.src_vocab = ref_model.split_vocab(meta["s2s.src_vocab"], path + ": s2s.src_vocab")
        self.tgt_vocab = ref_model.split_vocab(meta["s2s.tgt_vocab"], path + ": s2s.tgt_vocab")
        self.src_index = {tok: i for i, tok in enumerate(self.src_vocab)}
        w = {name: torch.from_numpy(a.copy()) for name, a in tensors.items()}  # float32
        self.w = w
        d, H = cfg["d_model"], cfg["heads"]
        self.d, self.eps, self.pre = d, cfg["layer_norm_eps"], cfg["norm"] == "pre"
        self.act = F.relu if cfg["activation"] == "relu" else F.gelu  # F.gelu is the exact (erf) one
        self.scale = math.sqrt(d)
        self.pe = positional_encoding(cfg["max_len"] + 1, d)
        self.src_embed, self.tgt_embed = w["src_embed.weight"], w["tgt_embed.weight"]
        self.out_w = w["tgt_embed.weight"] if cfg["tie_output"] else w["generator.weight"]
        self.out_b = w["generator.bias"]
        self.enc = []
        for i in range(cfg["encoder_layers"]):
            p = "encoder.layers.%d." % i
            self.enc.append({"attn": Attention(w, p + "self_attn", H, True),
                             "n1": self.norm(p + "norm1"), "n2": self.norm(p + "norm2"),
                             "ffn": self.ffn(p + "ffn")})
        self.dec = []
        for i in range(cfg["decoder_layers"]):
            p = "decoder.layers.%d." % i
            self.dec.append({"self": Attention(w, p + "self_attn", H, True),
                             "cross": Attention(w, p + "cross_attn", H, False),
                             "n1": self.norm(p + "norm1"), "n2": self.norm(p + "norm2"),
                             "n3": self.norm(p + "norm3"), "ffn": self.ffn(p + "ffn")})
        if self.pre:
            self.enc_norm, self.dec_norm = self.norm("encoder.norm"), self.norm("decoder.norm")

    def norm(self, prefix):
        return (self.w[prefix + ".weight"], self.w[prefix + ".bias"])

    def ffn(self, prefix):
        return tuple(self.w[prefix + s] for s in (".fc1.weight", ".fc1.bias", ".fc2.weight", ".fc2.bias"))

    def ln(self, x, n):
        return F.layer_norm(x, (self.d,), n[0], n[1], self.eps)

    def feed_forward(self, x, f):
        return F.linear(self.act(F.linear(x, f[0], f[1])), f[2], f[3])

    def residual(self, x, n, sublayer):
        """pre: x + f(LN(x)); post: LN(x + f(x))."""
        if self.pre:
            return x + sublayer(self.ln(x, n))
        return self.ln(x + sublayer(x), n)

    def encode(self, src):
        """src (B, S) ids padded with <pad> -> memory (B, S, d), key mask (B, 1, 1, S)."""
        S = src.shape[1]
        mask = torch.zeros(src.shape, dtype=torch.float32).masked_fill_(src == PAD, -math.inf)
        mask = mask[:, None, None, :]
        x = self.src_embed[src] * self.scale + self.pe[:S]
        for L in self.enc:
            x = self.residual(x, L["n1"], lambda y: L["attn"].self_full(y, mask))
            x = self.residual(x, L["n2"], lambda y: self.feed_forward(y, L["ffn"]))
        if self.pre:
            x = self.ln(x, self.enc_norm)
        return x, mask

    def start(self, memory):
        """Decoder state: per layer, cross K/V of memory and an empty self-attention cache."""
        return [{"mk": kv[0], "mv": kv[1], "cache": {}}
                for kv in (L["cross"].memory_kv(memory) for L in self.dec)]

    def step(self, state, ids, t, mask):
        """ids (B,) tokens at position t -> log-probs (B, V) of the next token."""
        x = (self.tgt_embed[ids] * self.scale + self.pe[t])[:, None, :]  # (B, 1, d)
        for L, s in zip(self.dec, state):
            x = self.residual(x, L["n1"], lambda y: L["self"].self_step(y, s["cache"]))
            x = self.residual(x, L["n2"], lambda y: L["cross"].cross_step(y, s["mk"], s["mv"], mask))
            x = self.residual(x, L["n3"], lambda y: self.feed_forward(y, L["ffn"]))
        if self.pre:
            x = self.ln(x, self.dec_norm)
        return torch.log_softmax(F.linear(x[:, 0], self.out_w, self.out_b), dim=-1)

    @staticmethod
    def reorder(state, index):
        """Self-attention caches follow the beams; cross K/V are shared and stay."""
        for s in state:
            s["cache"]["k"] = s["cache"]["k"].index_select(0, index)
            s["cache"]["v"] = s["cache"]["v"].index_select(0, index)


# ---- search ----

def mask_logprobs(lp, t, min_len):
    """Never <pad> or <s>; </s> only once min_len tokens are out."""
    lp[:, PAD] = -math.inf
    lp[:, BOS] = -math.inf
    if t < min_len:
        lp[:, EOS] = -math.inf


def pad_batch(sents):
    """Source id lists (without </s>) -> (B, S) tensor of ids + </s>, padded with <pad>."""
    S = max(len(s) for s in sents) + 1
    out = torch.full((len(sents), S), PAD, dtype=torch.long)
    for b, s in enumerate(sents):
        out[b, :len(s)] = torch.tensor(s, dtype=torch.long)
        out[b, len(s)] = EOS
    return out


def greedy_batch(model, sents, limits, min_len):
    """Returns, per sentence, (target ids without </s>, n_out, token log-probs)."""
    B = len(sents)
    memory, mask = model.encode(pad_batch(sents))
    state = model.start(memory)
    prev = torch.full((B,), BOS, dtype=torch.long)
    out = [[] for _ in range(B)]
    lps = [[] for _ in range(B)]
    done = [False] * B
    remaining, T = B, max(limits)
    for t in range(T):
        if remaining == 0:
            break
        lp = model.step(state, prev, t, mask)
        mask_logprobs(lp, t, min_len)
        prev = lp.argmax(dim=-1)
        chosen = lp.gather(1, prev[:, None])[:, 0].tolist()
        for b, tok in enumerate(prev.tolist()):
            if done[b]:
                continue
            lps[b].append(chosen[b])
            if tok != EOS:
                out[b].append(tok)
            if tok == EOS or t + 1 >= limits[b]:
                done[b] = True
                remaining -= 1
    return [(out[b], len(lps[b]), lps[b]) for b in range(B)]


def beam_one(model, sent, limit, min_len, K, alpha):
    """Beam search for one sentence; returns the best (target ids without </s>, n_out, None)."""
    memory, mask = model.encode(pad_batch([sent]))
    state = model.start(memory)  # (1, H, S, dh) cross K/V, broadcast over the K beams
    scores = torch.full((K,), -math.inf)
    scores[0] = 0.0  # one live beam to start
    toks = [[] for _ in range(K)]
    lps = [[] for _ in range(K)]
    finished = []  # (score, tokens, n_out)
    prev = torch.full((K,), BOS, dtype=torch.long)
    for t in range(limit):
        lp = model.step(state, prev, t, mask)  # (K, V)
        mask_logprobs(lp, t, min_len)
        total = (scores[:, None] + lp).view(-1)
        best, idx = total.topk(2 * K)
        V = lp.shape[1]
        new_toks, new_lps, new_scores, parents = [], [], [], []
        for r, (s, i) in enumerate(zip(best.tolist(), idx.tolist())):
            if s == -math.inf or len(new_toks) == K:
                break
            seq, tok = divmod(i, V)
            step_lp = float(lp[seq, tok])
            if tok == EOS:
                if r < K:
                    n = t + 1
                    logprob = sum(lps[seq]) + step_lp
                    finished.append((logprob / n ** alpha, toks[seq], n))
                continue
            new_toks.append(toks[seq] + [tok])
            new_lps.append(lps[seq] + [step_lp])
            new_scores.append(s)
            parents.append(seq)
        kept = len(new_toks)
        if len(finished) >= K or kept == 0:
            break
        if t + 1 >= limit:  # the live beams end without </s>
            for k in range(kept):
                n = t + 1
                finished.append((sum(new_lps[k]) / n ** alpha, new_toks[k], n))
            break
        for k in range(kept, K):  # fewer live continuations than beams
            new_toks.append([]), new_lps.append([]), new_scores.append(-math.inf), parents.append(k)
        toks, lps = new_toks, new_lps
        scores = torch.tensor(new_scores)
        prev = torch.tensor([tk[-1] if tk else PAD for tk in toks], dtype=torch.long)
        model.reorder(state, torch.tensor(parents, dtype=torch.long))
    best = max(finished, key=lambda f: f[0])
    return best[1], best[2], None


def length_limit(model, max_len, ratio, src_len):
    limit = min(max_len, model.cfg["max_len"])
    if ratio > 0:
        limit = min(limit, int(math.ceil(ratio * src_len)) + 1)
    return limit


def translate(model, sents, batch, beam, args):
    """All sentences, longest source first, in batches; results in input order."""
    order = sorted(range(len(sents)), key=lambda i: (-len(sents[i]), i))
    results = [None] * len(sents)
    for at in range(0, len(order), batch):
        part = order[at:at + batch]
        src = [sents[i] for i in part]
        limits = [length_limit(model, args.max_len, args.max_len_ratio, len(s)) for s in src]
        if beam > 1:
            got = [beam_one(model, s, lim, args.min_len, beam, args.length_penalty)
                   for s, lim in zip(src, limits)]
        else:
            got = greedy_batch(model, src, limits, args.min_len)
        for i, g in zip(part, got):
            results[i] = g
    return results


# ---- benchmark ----

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", dest="model", required=True)
    ap.add_argument("-i", dest="input", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-len", type=int, default=0, help="0: the file's decode.max_len")
    ap.add_argument("--min-len", type=int, default=0)
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dump")
    ap.add_argument("--dump-beam", help="also write the beam search's translations")
    ap.add_argument("--dump-scores", help="write the greedy translations' token log-probs")
    args = ap.parse_args(argv)
    if args.threads < 1 or args.repeat < 1 or args.beam < 1:
        ap.error("--threads, --repeat and --beam must be at least 1")
    torch.set_num_threads(args.threads)
    try:
        model = Model(args.model)
    except (ref_model.RefError, OSError, ValueError, KeyError, yaml.YAMLError) as e:
        sys.stderr.write("torch_decode.py: %s\n" % e)
        return 1
    dc = model.decode_cfg
    args.max_len = args.max_len or int(dc.get("max_len", 128))
    args.max_len_ratio = float(dc.get("max_len_ratio", 0.0))
    args.length_penalty = float(dc.get("length_penalty", 1.0))

    with open(args.input, encoding="utf-8") as f:
        # the bench input is already tokens: space-split through the source vocab
        sents = [[model.src_index.get(tok, UNK) for tok in line.split()] for line in f]
    c = model.cfg
    print("model %s: d_model %d, heads %d, layers %d+%d, ffn %d, vocab %d/%d"
          % (args.model, c["d_model"], c["heads"], c["encoder_layers"], c["decoder_layers"],
             c["ffn_dim"], len(model.src_vocab), len(model.tgt_vocab)))
    print("torch %s, %d threads (%s)" % (torch.__version__, torch.get_num_threads(),
                                         "BLAS: " + blas_name()))
    print("input %s: %d sentences, %d source tokens; max_len %d, min_len %d\n"
          % (args.input, len(sents), sum(map(len, sents)), args.max_len, args.min_len))

    with torch.inference_mode():
        translate(model, sents[:4], 1, 1, args)  # warm up
        print("| search | batch | sentences/s | target tokens/s | ms/sentence |")
        print("|---|---:|---:|---:|---:|")
        rows = [("greedy", 1, 1), ("greedy", 1, 32), ("beam", args.beam, 1)]
        ms_of = []
        for k, (name, beam, batch) in enumerate(rows):
            seconds, n_sent, n_tok = 0.0, 0, 0
            for rep in range(args.repeat):
                t0 = time.perf_counter()
                res = translate(model, sents, batch, beam, args)
                seconds += time.perf_counter() - t0
                n_sent += len(res)
                n_tok += sum(r[1] for r in res)
                path = args.dump if k == 0 else args.dump_beam if k == 2 else None
                if rep == 0 and path:
                    with open(path, "w", encoding="utf-8") as out:
                        for r in res:
                            out.write(" ".join(model.tgt_vocab[i] for i in r[0]) + "\n")
                if k == 0 and rep == 0 and args.dump_scores:
                    with open(args.dump_scores, "w", encoding="utf-8") as out:
                        for r in res:
                            out.write(" ".join("%.7g" % v for v in r[2]) + "\n")
            ms = 1e3 * seconds / n_sent
            ms_of.append(ms)
            print("| %s %d | %d | %.1f | %.0f | %.3f |"
                  % (name, beam, batch, n_sent / seconds, n_tok / seconds, ms))
            sys.stdout.flush()
    print("\nbeam %d / greedy time per sentence at batch 1: %.2fx" % (args.beam, ms_of[2] / ms_of[0]))
    return 0


def blas_name():
    """The BLAS library torch actually loaded (Debian's torch links the
    libblas.so.3 alternative: reference BLAS or OpenBLAS)."""
    torch.mm(torch.ones(2, 2), torch.ones(2, 2))
    try:
        with open("/proc/self/maps") as f:
            libs = sorted({line.split()[-1] for line in f if "blas" in line.split()[-1]})
        return ", ".join(libs) or "none"
    except OSError:
        return "unknown"

if __name__ == "__main__":
    sys.exit(main())
