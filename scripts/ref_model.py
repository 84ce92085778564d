#!/usr/bin/env python3
"""Independent float64 reference of the s2s Transformer, for checking `s2s score`.

Written from the model spec alone (not from the C engine), so that the two
implementations can only agree if both follow the spec.

    python3 scripts/ref_model.py score MODEL.safetensors < pairs.tsv
        Reads "source<TAB>target" lines and prints, per line, one JSON object
        {"logprob": sum, "token_logprobs": [...], "tokens": [...]} where the
        tokens are the target tokens + "</s>" as vocab strings.

    python3 scripts/ref_model.py random CONFIG.yaml SRC_VOCAB TGT_VOCAB OUT.safetensors --seed N
        Writes a model with random weights (the `model:` section of CONFIG
        gives the architecture). Biases and LayerNorm parameters are far from
        0 and 1 so that a forgotten bias or gain changes the scores.

Shapes: S source positions, T target positions, d model width, f FFN width,
Vs / Vt vocab sizes, h heads, dh = d / h.

Attention variants (issue 29). The `model:` section may hold three tables,
`encoder_attention`, `decoder_attention` (the decoder's causal
self-attention) and `cross_attention`, each with the keys

    type: full | local | block | strided | linear   (cross: full | linear)
    window: 16    block: 64    stride: 8            (local, block, strided)
    heads: []     layers: []                        (index lists; [] = all)

A head whose index is in `heads` (or `heads` is []) of a layer in `layers`
(or []) runs `type`; every other head is full softmax attention. An absent
table, or an absent key of a table, has the default above (so a model file
written before these tables existed is all full). Any other key is refused.

Which keys query i sees (positions from 0, </s> included; the decoder's
self-attention adds j <= i, cross-attention has no causal cut):
    full, linear   every key
    local  w       |i - j| <= w
    block  b       i // b == j // b
    strided s      |i - j| < s or (i - j) % s == 0   (s >= 2)
Softmax heads: softmax(q.k / sqrt(dh)) over the keys seen. Linear heads:
phi(x) = elu(x) + 1 on the head's projected q and k (no 1/sqrt(dh)),
a_ij = phi(q_i).phi(k_j) / (sum_j' phi(q_i).phi(k_j') + 1e-6) over the keys
seen, o_i = sum_j a_ij v_j.

To check one variant from Python: `visible(spec, i, j, causal)` is the mask
predicate, `head_weights(q, k, spec, causal, key_valid)` one head's (Tq, Tk)
weights, `head_specs(cfg, table, layer)` the spec of every head of a layer,
and `forward_ids(model, src, tgt, maps={})` fills `maps` with every layer's
(h, Tq, Tk) weights. A spec is a dict {"type", "window", "block", "stride"}.
"""

import argparse
import json
import math
import os
import struct
import sys

sys.dont_write_bytecode = True  # keep scripts/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import debian_python  # noqa: E402

try:
    import numpy as np
    import yaml
except ImportError as e:
    debian_python.reexec()
    sys.stderr.write("ref_model.py: needs numpy and PyYAML (%s)\n" % e)
    sys.exit(77)

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]
FORMAT_VERSION = "1"

# key -> type of every entry of the `model:` section (src/config/schema.c,
# model_keys; docs/config.md). Any other key is refused: a key this reference
# does not implement would otherwise be dropped silently and the comparison
# with the C engine would check a different model than the file describes.
MODEL_KEYS = {
    "d_model": int, "heads": int, "encoder_layers": int, "decoder_layers": int,
    "ffn_dim": int, "activation": str, "norm": str, "layer_norm_eps": float,
    "dropout": float, "attention_dropout": float, "tie_output": bool, "max_len": int,
    "encoder_attention": dict, "decoder_attention": dict, "cross_attention": dict,
}
# The attention tables: table -> (the layer count its `layers` indexes, the
# types it allows). Cross-attention has no position order between a target
# query and the source keys, so only the unmasked types make sense there.
ATTN_TYPES = ("full", "local", "block", "strided", "linear")
ATTENTION_TABLES = {
    "encoder_attention": ("encoder_layers", ATTN_TYPES),
    "decoder_attention": ("decoder_layers", ATTN_TYPES),
    "cross_attention": ("decoder_layers", ("full", "linear")),
}
# key -> default of every entry of an attention table (include/s2s/config.h,
# s2s_attention_config), and the least value each parameter allows.
ATTENTION_DEFAULTS = {"type": "full", "window": 16, "block": 64, "stride": 8,
                      "heads": [], "layers": []}
ATTENTION_MINIMA = {"window": 1, "block": 1, "stride": 2}
MAX_INDICES = 64  # S2S_MAX_INDICES: the most entries of a list, and its largest index + 1
LINEAR_EPS = 1e-6  # added to a linear head's denominator
# Training-only keys: read and range-checked (0 <= p < 1, as the C loader
# does), then ignored, with their defaults when absent. The reference only
# computes forward passes as at inference (`score`, and the step-1 loss of
# tests/train_reference_test.py, whose s2s run sets both rates to 0), where
# dropout on the embeddings/sublayer outputs (`dropout`) and on the attention
# probabilities after the softmax (`attention_dropout`) is the identity.
TRAINING_ONLY_DEFAULTS = {"dropout": 0.1, "attention_dropout": 0.0}
DEFAULT_DROPOUT = TRAINING_ONLY_DEFAULTS["dropout"]


class RefError(Exception):
    pass


# ---- safetensors ----

def read_safetensors(path):
    """Returns ({name: float32 array}, {metadata key: str})."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise RefError("%s: shorter than the 8-byte header length" % path)
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise RefError("%s: header length %d past end of file" % (path, n))
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    metadata = header.pop("__metadata__", {}) or {}
    tensors = {}
    for name, info in header.items():
        if info["dtype"] != "F32":
            raise RefError("%s: tensor %s has dtype %s, expected F32" % (path, name, info["dtype"]))
        shape = tuple(int(s) for s in info["shape"])
        begin, end = info["data_offsets"]
        count = int(np.prod(shape, dtype=np.int64))
        if end - begin != 4 * count or begin < 0 or end > len(data):
            raise RefError("%s: tensor %s: offsets %s do not fit shape %s / data size %d"
                           % (path, name, info["data_offsets"], shape, len(data)))
        tensors[name] = np.frombuffer(data, dtype="<f4", count=count, offset=begin).reshape(shape)
    return tensors, metadata


def write_safetensors(path, tensors, metadata):
    """Tensors are stored in name order, each F32 little-endian."""
    header = {"__metadata__": dict(metadata)}
    chunks, offset = [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        raw = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # keeps tensor data 8-byte aligned, as safetensors does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in chunks:
            f.write(raw)


# ---- model file ----

def parse_model_config(model_section, where):
    """Checks and types the `model:` section (a dict from YAML)."""
    if not isinstance(model_section, dict):
        raise RefError("%s: no `model:` section" % where)
    unknown = [str(k) for k in model_section if k not in MODEL_KEYS]
    if unknown:
        raise RefError("%s: unknown key%s %s (ref_model.py implements only model.%s)"
                       % (where, "s" if len(unknown) > 1 else "",
                          ", ".join("model." + k for k in unknown), ", ".join(MODEL_KEYS)))
    cfg = {}
    for key, typ in MODEL_KEYS.items():
        if typ is dict:
            continue  # the attention tables, read below: they need heads and layers
        if key not in model_section:
            if key in TRAINING_ONLY_DEFAULTS:
                cfg[key] = TRAINING_ONLY_DEFAULTS[key]
                continue
            raise RefError("%s: model.%s missing" % (where, key))
        v = model_section[key]
        if typ is bool:
            if isinstance(v, str) and v.lower() in ("true", "false"):
                v = v.lower() == "true"
            if not isinstance(v, bool):
                raise RefError("%s: model.%s must be true or false" % (where, key))
        elif typ is float:
            v = float(v)  # PyYAML reads "1e-5" (no dot) as a string
        else:
            v = typ(v)
        cfg[key] = v
    for key in TRAINING_ONLY_DEFAULTS:
        if not 0.0 <= cfg[key] < 1.0:
            raise RefError("%s: model.%s must be >= 0 and < 1" % (where, key))
    if cfg["activation"] not in ("relu", "gelu"):
        raise RefError("%s: model.activation must be relu or gelu" % where)
    if cfg["norm"] not in ("pre", "post"):
        raise RefError("%s: model.norm must be pre or post" % where)
    if cfg["d_model"] % cfg["heads"] != 0:
        raise RefError("%s: d_model %% heads != 0" % where)
    for table in ATTENTION_TABLES:
        cfg[table] = parse_attention_table(model_section.get(table), cfg, table, where)
    return cfg


def parse_index_list(v, name, bound, what, where):
    """A list of distinct ints in [0, bound): the heads or layers a variant covers."""
    if not isinstance(v, list):
        raise RefError("%s: %s must be a list of %s indices, e.g. [0, 2]" % (where, name, what))
    if len(v) > MAX_INDICES:
        raise RefError("%s: %s has %d entries, at most %d" % (where, name, len(v), MAX_INDICES))
    for x in v:
        if isinstance(x, bool) or not isinstance(x, int):
            raise RefError("%s: %s: %r is not an integer" % (where, name, x))
        if not 0 <= x < min(bound, MAX_INDICES):
            raise RefError("%s: %s: %s index %d out of range [0, %d)"
                           % (where, name, what, x, min(bound, MAX_INDICES)))
    if len(set(v)) != len(v):
        raise RefError("%s: %s lists an index twice" % (where, name))
    return list(v)


def parse_attention_table(v, cfg, table, where):
    """Checks and types one attention table; None (absent) is all defaults."""
    name = "model." + table
    if v is None:
        v = {}
    if not isinstance(v, dict):
        raise RefError("%s: %s must be a table (type, window, block, stride, heads, layers)"
                       % (where, name))
    unknown = [str(k) for k in v if k not in ATTENTION_DEFAULTS]
    if unknown:
        raise RefError("%s: unknown key%s %s (ref_model.py implements only %s.%s)"
                       % (where, "s" if len(unknown) > 1 else "",
                          ", ".join(name + "." + k for k in unknown), name,
                          ", ".join(ATTENTION_DEFAULTS)))
    spec = dict(ATTENTION_DEFAULTS, **v)
    layer_key, types = ATTENTION_TABLES[table]
    if spec["type"] not in types:
        raise RefError("%s: %s.type must be %s, not %r"
                       % (where, name, " or ".join(types), spec["type"]))
    for key, least in ATTENTION_MINIMA.items():
        x = spec[key]
        if isinstance(x, bool) or not isinstance(x, int) or x < least:
            raise RefError("%s: %s.%s must be an integer >= %d, not %r" % (where, name, key, least, x))
    spec["heads"] = parse_index_list(spec["heads"], name + ".heads", cfg["heads"], "head", where)
    spec["layers"] = parse_index_list(spec["layers"], name + ".layers", cfg[layer_key], "layer", where)
    return spec


def split_vocab(text, where):
    tokens = text.split("\n")
    if tokens and tokens[-1] == "":
        tokens.pop()
    if tokens[:4] != SPECIALS:
        raise RefError("%s: vocab must start with %s" % (where, " ".join(SPECIALS)))
    return tokens


def expected_shapes(cfg, vs, vt):
    """{tensor name: shape} for a model; the file must hold exactly these."""
    d, f = cfg["d_model"], cfg["ffn_dim"]
    shapes = {"src_embed.weight": (vs, d), "tgt_embed.weight": (vt, d), "generator.bias": (vt,)}
    if not cfg["tie_output"]:
        shapes["generator.weight"] = (vt, d)

    def attn(p):
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            shapes["%s.%s.weight" % (p, proj)] = (d, d)
            shapes["%s.%s.bias" % (p, proj)] = (d,)

    def norm(p):
        shapes[p + ".weight"] = (d,)
        shapes[p + ".bias"] = (d,)

    def ffn(p):
        shapes.update({p + ".fc1.weight": (f, d), p + ".fc1.bias": (f,),
                       p + ".fc2.weight": (d, f), p + ".fc2.bias": (d,)})

    for i in range(cfg["encoder_layers"]):
        p = "encoder.layers.%d" % i
        attn(p + ".self_attn"), norm(p + ".norm1"), norm(p + ".norm2"), ffn(p + ".ffn")
    for i in range(cfg["decoder_layers"]):
        p = "decoder.layers.%d" % i
        attn(p + ".self_attn"), attn(p + ".cross_attn")
        norm(p + ".norm1"), norm(p + ".norm2"), norm(p + ".norm3"), ffn(p + ".ffn")
    if cfg["norm"] == "pre":
        norm("encoder.norm"), norm("decoder.norm")
    return shapes


class Model:
    """cfg: typed `model:` section; src_vocab/tgt_vocab: token lists; w: float64 weights."""

    def __init__(self, cfg, src_vocab, tgt_vocab, weights):
        self.cfg = cfg
        self.src_vocab = src_vocab
        self.tgt_vocab = tgt_vocab
        self.src_index = {t: i for i, t in enumerate(src_vocab)}
        self.tgt_index = {t: i for i, t in enumerate(tgt_vocab)}
        self.w = weights


def load_model(path):
    tensors, meta = read_safetensors(path)
    for key in ("s2s.format_version", "s2s.config", "s2s.src_vocab", "s2s.tgt_vocab"):
        if key not in meta:
            raise RefError("%s: metadata %s missing" % (path, key))
    if meta["s2s.format_version"] != FORMAT_VERSION:
        raise RefError("%s: format version %r, expected %r"
                       % (path, meta["s2s.format_version"], FORMAT_VERSION))
    doc = yaml.safe_load(meta["s2s.config"])
    cfg = parse_model_config(doc.get("model") if isinstance(doc, dict) else None,
                             path + ": s2s.config")
    src_vocab = split_vocab(meta["s2s.src_vocab"], path + ": s2s.src_vocab")
    tgt_vocab = split_vocab(meta["s2s.tgt_vocab"], path + ": s2s.tgt_vocab")
    want = expected_shapes(cfg, len(src_vocab), len(tgt_vocab))
    for name, shape in want.items():
        if name not in tensors:
            raise RefError("%s: tensor %s missing" % (path, name))
        if tensors[name].shape != shape:
            raise RefError("%s: tensor %s has shape %s, expected %s"
                           % (path, name, tensors[name].shape, shape))
    extra = sorted(set(tensors) - set(want))
    if extra:
        raise RefError("%s: unexpected tensors %s" % (path, ", ".join(extra)))
    weights = {name: a.astype(np.float64) for name, a in tensors.items()}
    return Model(cfg, src_vocab, tgt_vocab, weights)


# ---- blocks (float64 throughout) ----

def positional_encoding(n, d):
    """(n, d): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same)."""
    pe = np.zeros((n, d))
    pos = np.arange(n)[:, None]
    two_i = np.arange(0, d, 2)
    angle = pos / np.power(10000.0, two_i / d)
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d // 2])
    return pe


def embed(table, ids, d_model):
    """(n, d) = table[ids] * sqrt(d) + PE[0..n)."""
    return table[np.asarray(ids)] * math.sqrt(d_model) + positional_encoding(len(ids), d_model)


def linear(w, prefix, x):
    """x · W^T + b with PyTorch's [out, in] weight layout."""
    return x @ w[prefix + ".weight"].T + w[prefix + ".bias"]


def layer_norm(w, prefix, x, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # biased, as LayerNorm uses
    return (x - mean) / np.sqrt(var + eps) * w[prefix + ".weight"] + w[prefix + ".bias"]


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x):
    """Exact GELU (numpy has no erf, so math.erf element by element)."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def relu(x):
    return np.maximum(x, 0.0)


FULL = {"type": "full"}


def head_specs(cfg, table, layer):
    """[spec per head] of layer `layer` of the attention `table` describes:
    the table's type on its heads of its layers, full elsewhere."""
    t = cfg[table]
    if t["layers"] and layer not in t["layers"]:
        return [FULL] * cfg["heads"]
    return [t if not t["heads"] or h in t["heads"] else FULL for h in range(cfg["heads"])]


def visible(spec, i, j, causal):
    """Whether query i sees key j (ints or broadcasting index arrays); the
    one mask predicate of the reference. Padding is the caller's key_valid."""
    typ = spec["type"]
    if typ == "local":
        seen = np.abs(i - j) <= spec["window"]
    elif typ == "block":
        seen = (i // spec["block"]) == (j // spec["block"])
    elif typ == "strided":
        s = spec["stride"]
        seen = (np.abs(i - j) < s) | ((i - j) % s == 0)
    else:  # full, linear
        seen = np.ones(np.broadcast(i, j).shape, dtype=bool)
    if causal:
        seen = seen & (j <= i)
    return seen


def elu_plus_one(x):
    """phi(x) = elu(x) + 1: x + 1 for x > 0, exp(x) otherwise; always > 0."""
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def head_weights(q, k, spec, causal, key_valid=None):
    """(Tq, Tk) attention weights of one head, q (Tq, dh), k (Tk, dh);
    key_valid (Tk,) bool, False on padded keys (default: none padded).
    Every weight on a key the query does not see is exactly 0."""
    tq, tk = q.shape[0], k.shape[0]
    seen = visible(spec, np.arange(tq)[:, None], np.arange(tk)[None, :], causal)
    if key_valid is not None:
        seen = seen & np.asarray(key_valid, dtype=bool)[None, :]
    if not seen.any(axis=1).all():
        raise RefError("a query sees no key (%s attention)" % spec["type"])
    if spec["type"] == "linear":
        sim = elu_plus_one(q) @ elu_plus_one(k).T  # (Tq, Tk) phi(q_i).phi(k_j)
        sim = np.where(seen, sim, 0.0)
        return sim / (sim.sum(axis=1, keepdims=True) + LINEAR_EPS)
    scores = q @ k.T / math.sqrt(q.shape[1])  # (Tq, Tk)
    # Training applies model.attention_dropout to these weights; at
    # inference, all this reference computes, it is the identity.
    return softmax(np.where(seen, scores, -np.inf))


def attention(w, prefix, x_q, x_kv, heads, causal, specs=None, key_valid=None, maps=None):
    """(Tq, d) multi-head attention of x_q (Tq, d) over x_kv (Tk, d).
    specs: one spec per head (default: all full); key_valid: see head_weights;
    maps: a list to which the (h, Tq, Tk) weights are appended."""
    q = linear(w, prefix + ".q_proj", x_q)
    k = linear(w, prefix + ".k_proj", x_kv)
    v = linear(w, prefix + ".v_proj", x_kv)
    d = q.shape[1]
    dh = d // heads
    tq, tk = q.shape[0], k.shape[0]
    specs = specs or [FULL] * heads
    out = np.zeros((tq, d))
    weights = np.zeros((heads, tq, tk))
    for j in range(heads):
        cols = slice(j * dh, (j + 1) * dh)
        weights[j] = head_weights(q[:, cols], k[:, cols], specs[j], causal, key_valid)
        out[:, cols] = weights[j] @ v[:, cols]
    if maps is not None:
        maps.append(weights)
    return linear(w, prefix + ".out_proj", out)


def feed_forward(w, prefix, x, activation):
    act = gelu if activation == "gelu" else relu
    return linear(w, prefix + ".fc2", act(linear(w, prefix + ".fc1", x)))


def residual(cfg, w, norm_prefix, x, sublayer):
    """post: LN(x + f(x)); pre: x + f(LN(x))."""
    eps = cfg["layer_norm_eps"]
    if cfg["norm"] == "post":
        return layer_norm(w, norm_prefix, x + sublayer(x), eps)
    return x + sublayer(layer_norm(w, norm_prefix, x, eps))


def encoder_layer(cfg, w, p, x, layer, maps):
    h = cfg["heads"]
    specs = head_specs(cfg, "encoder_attention", layer)
    x = residual(cfg, w, p + ".norm1", x,
                 lambda y: attention(w, p + ".self_attn", y, y, h, False, specs, maps=maps["encoder"]))
    x = residual(cfg, w, p + ".norm2", x, lambda y: feed_forward(w, p + ".ffn", y, cfg["activation"]))
    return x


def decoder_layer(cfg, w, p, x, memory, layer, maps):
    h = cfg["heads"]
    self_specs = head_specs(cfg, "decoder_attention", layer)
    cross_specs = head_specs(cfg, "cross_attention", layer)
    x = residual(cfg, w, p + ".norm1", x,
                 lambda y: attention(w, p + ".self_attn", y, y, h, True, self_specs,
                                     maps=maps["decoder"]))
    x = residual(cfg, w, p + ".norm2", x,
                 lambda y: attention(w, p + ".cross_attn", y, memory, h, False, cross_specs,
                                     maps=maps["cross"]))
    x = residual(cfg, w, p + ".norm3", x, lambda y: feed_forward(w, p + ".ffn", y, cfg["activation"]))
    return x


def new_maps():
    """{sublayer: [(h, Tq, Tk) weights per layer]}, filled by encode/decode."""
    return {"encoder": [], "decoder": [], "cross": []}


def encode(model, src_ids, maps=None):
    """(S, d) final encoder output for src_ids (</s> already appended)."""
    cfg, w = model.cfg, model.w
    maps = new_maps() if maps is None else maps
    x = embed(w["src_embed.weight"], src_ids, cfg["d_model"])
    for i in range(cfg["encoder_layers"]):
        x = encoder_layer(cfg, w, "encoder.layers.%d" % i, x, i, maps)
    if cfg["norm"] == "pre":
        x = layer_norm(w, "encoder.norm", x, cfg["layer_norm_eps"])
    return x


def decode(model, memory, dec_ids, maps=None):
    """(T, Vt) log-probs of the next token after each prefix of dec_ids (<s> first)."""
    cfg, w = model.cfg, model.w
    maps = new_maps() if maps is None else maps
    x = embed(w["tgt_embed.weight"], dec_ids, cfg["d_model"])
    for i in range(cfg["decoder_layers"]):
        x = decoder_layer(cfg, w, "decoder.layers.%d" % i, x, memory, i, maps)
    if cfg["norm"] == "pre":
        x = layer_norm(w, "decoder.norm", x, cfg["layer_norm_eps"])
    out_w = w["tgt_embed.weight"] if cfg["tie_output"] else w["generator.weight"]
    return log_softmax(x @ out_w.T + w["generator.bias"])


# ---- scoring ----

def to_ids(index, text):
    """Space-separated, lower-cased words; unknown words -> <unk>."""
    return [index.get(tok, UNK) for tok in text.lower().split()]


def forward_ids(model, src_ids, tgt_ids, maps=None):
    """(T+1, Vt) log-probs predicting tgt_ids + </s>; src_ids without </s>.
    maps: a dict to fill as new_maps() describes (every head's weights)."""
    src = list(src_ids) + [EOS]
    dec_in = [BOS] + list(tgt_ids)
    n = max(len(src), len(dec_in))
    if n > model.cfg["max_len"]:
        raise RefError("sequence of %d positions exceeds max_len %d" % (n, model.cfg["max_len"]))
    if maps is not None:
        maps.update(new_maps())
    return decode(model, encode(model, src, maps), dec_in, maps)


def score_ids(model, src_ids, tgt_ids):
    logp = forward_ids(model, src_ids, tgt_ids)
    targets = list(tgt_ids) + [EOS]
    token_lp = [float(logp[t, tok]) for t, tok in enumerate(targets)]
    return {"logprob": float(sum(token_lp)),
            "token_logprobs": token_lp,
            "tokens": [model.tgt_vocab[tok] for tok in targets]}


def score_pair(model, source, target):
    return score_ids(model, to_ids(model.src_index, source), to_ids(model.tgt_index, target))


def cmd_score(args):
    model = load_model(args.model)
    for lineno, line in enumerate(sys.stdin, 1):
        line = line.rstrip("\r\n")
        if "\t" not in line:
            raise RefError("<stdin>:%d: expected source<TAB>target" % lineno)
        source, target = line.split("\t", 1)
        print(json.dumps(score_pair(model, source, target)))
    return 0


# ---- random model ----

def random_tensors(cfg, vs, vt, seed):
    """float32 weights: N(0, 1/in) matrices, N(0, 0.3^2) biases, LN gains 1 + N(0, 0.3^2)."""
    rng = np.random.default_rng(seed)
    d = cfg["d_model"]
    out = {}
    for name, shape in sorted(expected_shapes(cfg, vs, vt).items()):
        is_norm = ".norm" in name or name.startswith(("encoder.norm", "decoder.norm"))
        if name.endswith("_embed.weight"):
            a = rng.normal(0.0, 1.0 / math.sqrt(d), shape)  # * sqrt(d) gives unit scale
        elif is_norm and name.endswith(".weight"):
            a = 1.0 + 0.3 * rng.normal(size=shape)
        elif name.endswith(".bias"):
            a = 0.3 * rng.normal(size=shape)
        else:
            a = rng.normal(0.0, 1.0 / math.sqrt(shape[1]), shape)
        out[name] = a.astype(np.float32)
    return out


def read_vocab_file(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return split_vocab(text.replace("\r\n", "\n"), path)


def model_metadata(cfg, src_vocab, tgt_vocab):
    """An attention table of all defaults (full) is left out of s2s.config,
    as files written before the tables existed have it: same model either way."""
    stored = {k: v for k, v in cfg.items()
              if k not in ATTENTION_TABLES or v != dict(ATTENTION_DEFAULTS)}
    return {"s2s.format_version": FORMAT_VERSION,
            "s2s.config": yaml.safe_dump({"model": stored}, sort_keys=False),
            "s2s.src_vocab": "\n".join(src_vocab),
            "s2s.tgt_vocab": "\n".join(tgt_vocab)}


def cmd_random(args):
    with open(args.config, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    cfg = parse_model_config(doc.get("model") if isinstance(doc, dict) else None, args.config)
    src_vocab = read_vocab_file(args.src_vocab)
    tgt_vocab = read_vocab_file(args.tgt_vocab)
    tensors = random_tensors(cfg, len(src_vocab), len(tgt_vocab), args.seed)
    write_safetensors(args.out, tensors, model_metadata(cfg, src_vocab, tgt_vocab))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("score", help="score source<TAB>target lines from stdin")
    s.add_argument("model")
    r = sub.add_parser("random", help="write a model with random weights")
    r.add_argument("config")
    r.add_argument("src_vocab")
    r.add_argument("tgt_vocab")
    r.add_argument("out")
    r.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        return cmd_score(args) if args.cmd == "score" else cmd_random(args)
    except (RefError, OSError, yaml.YAMLError, ValueError, KeyError) as e:
        sys.stderr.write("ref_model.py: %s\n" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
