#!/usr/bin/env python3
"""Checks `s2s score` against the independent reference scripts/ref_model.py.

    python3 tests/score_reference_test.py PATH_TO_s2s_BINARY
    python3 tests/score_reference_test.py            # reference self-checks only

First the reference itself is checked: against hand-worked values, against a
second implementation written with explicit scalar loops, and against
properties (probabilities sum to 1, causality, use of the source), and its
attention variants (issue 29) the same way: by hand, key by key against the
scalar implementation's ranges, by the variants' properties, and on the
models of tests/data/ref/attention/*.yaml. Then, for
every config in tests/data/ref/*.yaml and tests/data/ref/attention/*.yaml, a
model written by `ref_model.py random`
and (when the binary has `init`) one written by `s2s init` are scored by both
programs on tests/data/ref/pairs.tsv: the tokens must match and every token
log-prob must agree within 1e-4.

The scalar implementation reads the attention tables of a `model:` section
(raw YAML or ref_model.py's parsed config) with lp_table(); lp_head_type()
says which heads of which layers follow a table, lp_keys() which keys a query
sees, lp_head_weights() gives one head's weights.

Prints one line per check and a final "N passed, M failed"; exits 1 on any
failure, 77 (ctest's skip code) when numpy is missing.
"""

import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep scripts/ free of __pycache__
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
import debian_python  # noqa: E402

try:
    import numpy as np
    import yaml
except ImportError as e:
    debian_python.reexec()
    print("score_reference_test: skipped, needs numpy and PyYAML (%s)" % e)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(HERE, "data", "ref")
REF_SCRIPT = os.path.join(ROOT, "scripts", "ref_model.py")
import ref_model as R  # noqa: E402

TOL = 1e-4          # C engine (float32) vs reference, per token
LOOP_TOL = 1e-10    # two float64 implementations
TIMEOUT = 120


class Check:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def run(self, name, fn, *args):
        """fn returns a short detail string or raises AssertionError/any error."""
        try:
            detail = fn(*args)
        except Exception as e:  # any error in a check is a failure of that check
            self.failed += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e))
        else:
            self.passed += 1
            print("PASS %s%s" % (name, ": " + detail if detail else ""))
        sys.stdout.flush()


# ---- a second implementation, scalar loops only ----
#
# Deliberately written differently from ref_model.py (no numpy, causality by
# loop bounds instead of a mask), so that a shared mistake is unlikely.

def lp_linear(W, b, x):
    return [sum(W[o][i] * x[i] for i in range(len(x))) + b[o] for o in range(len(W))]


def lp_layer_norm(g, b, x, eps):
    n = len(x)
    mean = sum(x) / n
    var = sum((v - mean) ** 2 for v in x) / n
    return [(x[i] - mean) / math.sqrt(var + eps) * g[i] + b[i] for i in range(n)]


# The attention variants (issue 29), read from the `model:` section's tables
# (raw YAML or ref_model.py's parsed config: the same keys) with their own
# defaults; which keys a query sees is a list of ranges, not a mask.
LP_ATTN_DEFAULTS = {"type": "full", "window": 16, "block": 64, "stride": 8, "heads": [], "layers": []}


def lp_table(section, name):
    table = dict(LP_ATTN_DEFAULTS)
    table.update(section.get(name) or {})
    return table


def lp_head_type(table, layer, head):
    """The table itself when head `head` of layer `layer` follows it, else full."""
    layer_in = not table["layers"] or layer in table["layers"]
    head_in = not table["heads"] or head in table["heads"]
    return table if layer_in and head_in else {"type": "full"}


def lp_keys(spec, t, n, causal):
    """Sorted key positions query t sees among keys 0..n-1 (n: the unpadded keys)."""
    end = min(n, t + 1) if causal else n   # keys [0, end)
    kind = spec["type"]
    if kind == "local":
        w = spec["window"]
        return list(range(max(0, t - w), min(end, t + w + 1)))
    if kind == "block":
        b = spec["block"]
        first = t // b * b
        return list(range(first, min(end, first + b)))
    if kind == "strided":
        s = spec["stride"]
        near = range(max(0, t - s + 1), min(end, t + s))
        same_column = range(t % s, end, s)  # (t - u) % s == 0
        return sorted(set(near) | set(same_column))
    return list(range(end))                  # full, linear


def lp_phi(z):
    return z + 1.0 if z > 0 else math.exp(z)


def lp_head_weights(q, k, lo, dh, spec, causal, n_keys=None):
    """[[weight of key u for query t]] of the head using columns lo..lo+dh-1;
    keys n_keys.. are padding. Keys not seen get weight 0.0."""
    n = len(k) if n_keys is None else n_keys
    rows = []
    for t in range(len(q)):
        keys = lp_keys(spec, t, n, causal)
        row = [0.0] * len(k)
        if spec["type"] == "linear":
            fq = [lp_phi(q[t][lo + c]) for c in range(dh)]
            sim = {u: sum(fq[c] * lp_phi(k[u][lo + c]) for c in range(dh)) for u in keys}
            den = sum(sim.values()) + 1e-6
            for u in keys:
                row[u] = sim[u] / den
        else:
            s = {u: sum(q[t][lo + c] * k[u][lo + c] for c in range(dh)) / math.sqrt(dh) for u in keys}
            m = max(s.values())
            e = {u: math.exp(z - m) for u, z in s.items()}
            tot = sum(e.values())
            for u in keys:
                row[u] = e[u] / tot
        rows.append(row)
    return rows


def lp_attention(P, p, xq, xkv, heads, causal, table=None, layer=0):
    q = [lp_linear(P[p + ".q_proj.weight"], P[p + ".q_proj.bias"], x) for x in xq]
    k = [lp_linear(P[p + ".k_proj.weight"], P[p + ".k_proj.bias"], x) for x in xkv]
    v = [lp_linear(P[p + ".v_proj.weight"], P[p + ".v_proj.bias"], x) for x in xkv]
    d = len(q[0])
    dh = d // heads
    table = table or dict(LP_ATTN_DEFAULTS)
    concat = [[0.0] * d for _ in q]
    for h in range(heads):
        lo = h * dh
        a = lp_head_weights(q, k, lo, dh, lp_head_type(table, layer, h), causal)
        for t in range(len(q)):
            for c in range(dh):
                concat[t][lo + c] = sum(a[t][u] * v[u][lo + c] for u in range(len(k)) if a[t][u])
    return [lp_linear(P[p + ".out_proj.weight"], P[p + ".out_proj.bias"], x) for x in concat]


def lp_ffn(P, p, x, act):
    hidden = lp_linear(P[p + ".fc1.weight"], P[p + ".fc1.bias"], x)
    if act == "relu":
        hidden = [max(0.0, z) for z in hidden]
    else:
        hidden = [0.5 * z * (1.0 + math.erf(z / math.sqrt(2.0))) for z in hidden]
    return lp_linear(P[p + ".fc2.weight"], P[p + ".fc2.bias"], hidden)


def lp_sublayer(cfg, P, norm, xs, f):
    eps = cfg["layer_norm_eps"]
    g, b = P[norm + ".weight"], P[norm + ".bias"]
    if cfg["norm"] == "post":
        ys = f(xs)
        return [lp_layer_norm(g, b, [x[i] + y[i] for i in range(len(x))], eps)
                for x, y in zip(xs, ys)]
    ys = f([lp_layer_norm(g, b, x, eps) for x in xs])
    return [[x[i] + y[i] for i in range(len(x))] for x, y in zip(xs, ys)]


def lp_embed(table, ids, d):
    rows = []
    for pos, tok in enumerate(ids):
        row = []
        for c in range(d):
            i2 = c - (c % 2)                       # the "2i" of the spec
            angle = pos / (10000.0 ** (i2 / d))
            pe = math.sin(angle) if c % 2 == 0 else math.cos(angle)
            row.append(table[tok][c] * math.sqrt(d) + pe)
        rows.append(row)
    return rows


def loop_logprobs(cfg, tensors, src_ids, tgt_ids, section=None):
    """[[logprob over the target vocab] per decoder position], src_ids without </s>.
    section: the `model:` section whose attention tables apply (default cfg)."""
    P = {k: v.astype(np.float64).tolist() for k, v in tensors.items()}
    d, H, act = cfg["d_model"], cfg["heads"], cfg["activation"]
    section = cfg if section is None else section
    enc_t, dec_t, cross_t = (lp_table(section, n) for n in
                             ("encoder_attention", "decoder_attention", "cross_attention"))
    x = lp_embed(P["src_embed.weight"], list(src_ids) + [R.EOS], d)
    for i in range(cfg["encoder_layers"]):
        p = "encoder.layers.%d" % i
        x = lp_sublayer(cfg, P, p + ".norm1", x, lambda y: lp_attention(P, p + ".self_attn", y, y, H, False, enc_t, i))
        x = lp_sublayer(cfg, P, p + ".norm2", x, lambda y: [lp_ffn(P, p + ".ffn", r, act) for r in y])
    if cfg["norm"] == "pre":
        x = [lp_layer_norm(P["encoder.norm.weight"], P["encoder.norm.bias"], r, cfg["layer_norm_eps"]) for r in x]
    mem = x
    x = lp_embed(P["tgt_embed.weight"], [R.BOS] + list(tgt_ids), d)
    for i in range(cfg["decoder_layers"]):
        p = "decoder.layers.%d" % i
        x = lp_sublayer(cfg, P, p + ".norm1", x, lambda y: lp_attention(P, p + ".self_attn", y, y, H, True, dec_t, i))
        x = lp_sublayer(cfg, P, p + ".norm2", x, lambda y: lp_attention(P, p + ".cross_attn", y, mem, H, False, cross_t, i))
        x = lp_sublayer(cfg, P, p + ".norm3", x, lambda y: [lp_ffn(P, p + ".ffn", r, act) for r in y])
    if cfg["norm"] == "pre":
        x = [lp_layer_norm(P["decoder.norm.weight"], P["decoder.norm.bias"], r, cfg["layer_norm_eps"]) for r in x]
    W = P["tgt_embed.weight"] if cfg["tie_output"] else P["generator.weight"]
    out = []
    for r in x:
        logits = lp_linear(W, P["generator.bias"], r)
        m = max(logits)
        lse = m + math.log(sum(math.exp(z - m) for z in logits))
        out.append([z - lse for z in logits])
    return out


# ---- reference self-checks ----

def tiny_cfg(norm="pre", activation="relu", tie=False, d=4, heads=2, enc=1, dec=1, ffn=6):
    return {"d_model": d, "heads": heads, "encoder_layers": enc, "decoder_layers": dec,
            "ffn_dim": ffn, "activation": activation, "norm": norm, "layer_norm_eps": 1e-5,
            "dropout": 0.0, "tie_output": tie, "max_len": 16}


def vocab(n):
    return R.SPECIALS + ["w%d" % i for i in range(n - 4)]


def make_model(cfg, vs, vt, seed, tmpdir):
    """Writes the random model to a file and reads it back, as the CLI would."""
    path = os.path.join(tmpdir, "m%d.safetensors" % seed)
    tensors = R.random_tensors(cfg, vs, vt, seed)
    R.write_safetensors(path, tensors, R.model_metadata(cfg, vocab(vs), vocab(vt)))
    return R.load_model(path), tensors


def check_safetensors_by_hand(tmpdir):
    # A file built byte by byte from the format description, with the header
    # not padded and the tensors stored out of name order.
    a = [1.5, -2.0, 0.25, 3.0, 4.0, -0.5]
    b = [7.0, 8.0]
    data = struct.pack("<2f", *b) + struct.pack("<6f", *a)
    header = json.dumps({"__metadata__": {"k": "v"},
                         "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [8, 32]},
                         "b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    path = os.path.join(tmpdir, "hand.safetensors")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)
    t, meta = R.read_safetensors(path)
    assert meta == {"k": "v"}, meta
    assert t["a"].shape == (2, 3) and t["a"].tolist() == [a[:3], a[3:]], t["a"]
    assert t["b"].tolist() == b, t["b"]
    # And what write_safetensors produces must parse the same way by hand.
    path2 = os.path.join(tmpdir, "rt.safetensors")
    R.write_safetensors(path2, {"b": np.array(b), "a": np.array(a).reshape(2, 3)}, {"k": "v"})
    raw = open(path2, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 8 == 0, "data start not 8-byte aligned"
    hdr = json.loads(raw[8:8 + n])
    lo, hi = hdr["a"]["data_offsets"]
    assert list(struct.unpack("<6f", raw[8 + n + lo:8 + n + hi])) == a
    assert hdr["a"]["dtype"] == "F32" and hdr["a"]["shape"] == [2, 3]
    return "hand-built file read, written file parsed by hand"


def check_positional_encoding():
    pe = R.positional_encoding(3, 4)
    want = [[0.0, 1.0, 0.0, 1.0],
            [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)],   # 10000^(2/4) = 100
            [math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)]]
    assert np.allclose(pe, want, atol=1e-15, rtol=0), pe
    return "PE[p,2i]=sin, PE[p,2i+1]=cos, 10000^(2i/d)"


def check_attention_by_hand():
    # d = 2, identity projections, zero biases except out_proj.
    I = np.eye(2)
    w = {}
    for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
        w["a.%s.weight" % proj] = I.copy()
        w["a.%s.bias" % proj] = np.zeros(2)
    w["a.out_proj.bias"] = np.array([0.5, -1.0])
    x = np.array([[1.0, 0.0], [0.0, 2.0]])
    # One head: query 0 scores (1, 0)/sqrt2 on keys 0 and 1.
    p = 1.0 / (1.0 + math.exp(-1.0 / math.sqrt(2)))
    out = R.attention(w, "a", x[:1], x, 1, False)
    want = [p * 1.0 + 0.5, (1 - p) * 2.0 - 1.0]
    assert np.allclose(out, [want], atol=1e-14), (out, want)
    # Causal: position 0 only sees itself, position 1 sees both.
    out = R.attention(w, "a", x, x, 1, True)
    p1 = 1.0 / (1.0 + math.exp(4.0 / math.sqrt(2)))   # weight on key 0 for query (0, 2)
    want = [[1.5, -1.0], [p1 * 1.0 + 0.5, (1 - p1) * 2.0 - 1.0]]
    assert np.allclose(out, want, atol=1e-14), (out, want)
    # Two heads of width 1: head 0 uses column 0 only, head 1 column 1 only.
    out = R.attention(w, "a", x[1:], x, 2, False)
    # head 0: q = 0 -> uniform over v[:,0] = (1, 0) -> 0.5
    # head 1: q = 2, k = (0, 2): scores (0, 4) -> weight e^4/(1+e^4) on v = 2
    p2 = math.exp(4) / (1 + math.exp(4))
    want = [[0.5 + 0.5, p2 * 2.0 - 1.0]]
    assert np.allclose(out, want, atol=1e-14), (out, want)
    return "1 head, causal mask, 2 heads column split"


def check_zero_model(tmpdir):
    # All weights zero except the last LayerNorm's bias v and the generator:
    # the decoder output is v at every position, so log-probs are
    # log_softmax(W v + b) whatever the input. Worked out here by hand.
    v = [0.5, -1.0, 2.0, 0.25]
    results = []
    for norm in ("pre", "post"):
        for tie in (False, True):
            cfg = tiny_cfg(norm=norm, tie=tie)
            vt = 6
            shapes = R.expected_shapes(cfg, 7, vt)
            t = {n: np.zeros(s, np.float32) for n, s in shapes.items()}
            last = "decoder.norm" if norm == "pre" else "decoder.layers.0.norm3"
            t[last + ".bias"] = np.array(v, np.float32)
            W = [[0.0] * 4 for _ in range(vt)]
            for k in range(vt):
                W[k][k % 4] = 1.0 + k          # logit k = (1+k) * v[k % 4]
            b = [0.1 * k for k in range(vt)]
            t["tgt_embed.weight" if tie else "generator.weight"] = np.array(W, np.float32)
            t["generator.bias"] = np.array(b, np.float32)
            path = os.path.join(tmpdir, "zero_%s_%s.safetensors" % (norm, tie))
            R.write_safetensors(path, t, R.model_metadata(cfg, vocab(7), vocab(vt)))
            m = R.load_model(path)
            # b is stored as float32, so the hand computation uses the stored values.
            logits = [(1.0 + k) * v[k % 4] + float(np.float32(b[k])) for k in range(vt)]
            lse = math.log(sum(math.exp(z) for z in logits))
            lp = R.forward_ids(m, [4, 5, 6], [4, 5])
            assert lp.shape == (3, vt), lp.shape
            for row in lp:
                for k in range(vt):
                    want = logits[k] - lse
                    assert abs(row[k] - want) < 1e-12, (norm, tie, k, row[k], want)
            results.append("%s/%s" % (norm, "tied" if tie else "untied"))
    return "log_softmax(Wv+b) for " + ", ".join(results)


def check_against_loops(tmpdir):
    n = 0
    worst = 0.0
    seed = 100
    for norm in ("pre", "post"):
        for act in ("relu", "gelu"):
            for tie in (False, True):
                for enc, dec in ((1, 1), (2, 2)):
                    seed += 1
                    cfg = tiny_cfg(norm=norm, activation=act, tie=tie, enc=enc, dec=dec,
                                   d=4 if seed % 2 else 6, heads=2 if seed % 2 else 3)
                    m, tensors = make_model(cfg, 9, 8, seed, tmpdir)
                    for src, tgt in (([4], []), ([4, 5, 6, 1], [7, 4, 5]), ([8, 8, 5], [6])):
                        a = R.forward_ids(m, src, tgt)
                        b = np.array(loop_logprobs(m.cfg, tensors, src, tgt))
                        assert a.shape == b.shape, (a.shape, b.shape)
                        diff = float(np.abs(a - b).max())
                        worst = max(worst, diff)
                        assert diff < LOOP_TOL, (cfg, src, tgt, diff)
                        n += 1
    return "%d cases (pre/post x relu/gelu x tied/untied x 1-2 layers), max |diff| %.1e" % (n, worst)


# ---- the attention variants (issue 29) ----

ATTN_DATA = os.path.join(DATA, "attention")


def spec(kind, **kw):
    return dict(LP_ATTN_DEFAULTS, type=kind, **kw)


def variant_grid(n):
    """(name, spec) of every type, with parameters below, at and above n."""
    out = [("full", spec("full")), ("linear", spec("linear"))]
    for p in sorted({1, 2, 3, max(1, n - 1), n, n + 4}):
        out.append(("local w%d" % p, spec("local", window=p)))
        out.append(("block b%d" % p, spec("block", block=p)))
        if p >= 2:
            out.append(("strided s%d" % p, spec("strided", stride=p)))
    return out


def random_qk(rng, tq, tk, dh):
    # Scale 1.5 so that softmax is far from uniform and phi sees both signs.
    return 1.5 * rng.normal(size=(tq, dh)), 1.5 * rng.normal(size=(tk, dh))


def check_variants_by_hand():
    # The keys a query sees, worked out by hand from the definitions.
    cases = [  # spec, causal, n, query, keys seen
        (spec("local", window=1), False, 5, 0, [0, 1]),
        (spec("local", window=1), False, 5, 2, [1, 2, 3]),
        (spec("local", window=2), True, 6, 4, [2, 3, 4]),
        (spec("block", block=3), False, 8, 4, [3, 4, 5]),
        (spec("block", block=3), False, 8, 7, [6, 7]),
        (spec("block", block=3), True, 8, 4, [3, 4]),
        (spec("strided", stride=3), False, 12, 7, [1, 4, 5, 6, 7, 8, 9, 10]),
        (spec("strided", stride=3), True, 12, 7, [1, 4, 5, 6, 7]),
        (spec("strided", stride=2), False, 5, 0, [0, 1, 2, 4]),
        (spec("linear"), True, 4, 2, [0, 1, 2]),
    ]
    for sp, causal, n, i, want in cases:
        got_np = [j for j in range(n) if R.visible(sp, i, j, causal)]
        got_lp = lp_keys(sp, i, n, causal)
        assert got_np == want and got_lp == want, (sp, causal, i, got_np, got_lp, want)
    # One linear head, dh = 1: phi(1) = 2, phi(-1) = e^-1, phi(0) = 1.
    q = np.array([[1.0]])
    k = np.array([[-1.0], [0.0], [2.0]])
    sims = [2 * math.exp(-1), 2.0, 6.0]
    want = [x / (sum(sims) + 1e-6) for x in sims]
    got = R.head_weights(q, k, spec("linear"), False)
    assert np.allclose(got, [want], atol=1e-15, rtol=0), (got, want)
    got = lp_head_weights(q.tolist(), k.tolist(), 0, 1, spec("linear"), False)
    assert np.allclose(got, [want], atol=1e-15, rtol=0), (got, want)
    return "%d masks (local, block, strided, causal) and one linear row" % len(cases)


def check_variant_masks():
    # visible() (a predicate on index arrays) against lp_keys() (ranges),
    # every query of every length up to 20, encoder and decoder.
    n_cases = 0
    for n in range(1, 21):
        for name, sp in variant_grid(n):
            for causal in (False, True):
                m = R.visible(sp, np.arange(n)[:, None], np.arange(n)[None, :], causal)
                for i in range(n):
                    assert sorted(np.nonzero(m[i])[0].tolist()) == lp_keys(sp, i, n, causal), \
                        (name, causal, n, i)
                n_cases += 1
    return "%d (type, parameter, length, causal) masks agree key by key" % n_cases


def check_variant_properties():
    rng = np.random.default_rng(29)
    full = spec("full")
    n_checks = 0
    for n in (1, 2, 5, 9, 13):
        for causal in (False, True):
            q, k = random_qk(rng, n, n, 4)
            a_full = R.head_weights(q, k, full, causal)
            # A window, block or stride reaching past the sequence is full.
            # (A stride of n - 1 too: |i - j| = n - 1 is a multiple of it.)
            for sp in (spec("local", window=n - 1 if n > 1 else 1), spec("local", window=n + 3),
                       spec("block", block=n), spec("block", block=n + 3),
                       spec("strided", stride=max(2, n - 1)), spec("strided", stride=n + 3)):
                assert np.array_equal(R.head_weights(q, k, sp, causal), a_full), (sp, n, causal)
                n_checks += 1
            # ... and one that does not reach is not (so the above could fail).
            if n >= 3:
                narrow = [spec("local", window=n - 2), spec("block", block=n - 1)]
                if n >= 4:
                    narrow.append(spec("strided", stride=n - 2))
                for sp in narrow:
                    a = R.head_weights(q, k, sp, causal)
                    if causal:  # the last query is the one that sees key 0 or not
                        assert a[n - 1, 0] == 0.0 or a[n - 1, 1] == 0.0, (sp, n)
                    assert not np.array_equal(a, a_full), (sp, n, causal)
                    n_checks += 1
            for name, sp in variant_grid(n):
                a = R.head_weights(q, k, sp, causal)
                assert (a >= 0).all()
                if causal:  # a decoder query never uses a later key
                    assert (np.triu(a, 1) == 0).all(), (name, n)
                    v = rng.normal(size=(n, 3))
                    for i in range(n - 1):
                        k2, v2 = k.copy(), v.copy()
                        k2[i + 1:] = rng.normal(size=k2[i + 1:].shape)
                        v2[i + 1:] = rng.normal(size=v2[i + 1:].shape)
                        a2 = R.head_weights(q, k2, sp, causal)
                        assert np.array_equal((a @ v)[:i + 1], (a2 @ v2)[:i + 1]), (name, n, i)
                if sp["type"] == "linear":
                    # Rows sum to S / (S + 1e-6), S = sum of phi(q).phi(k) seen.
                    phi_q = np.where(q > 0, q + 1, np.exp(q))
                    phi_k = np.where(k > 0, k + 1, np.exp(k))
                    sim = phi_q @ phi_k.T
                    if causal:
                        sim = np.tril(sim)
                    tot = sim.sum(axis=1)
                    assert np.allclose(a.sum(axis=1), tot / (tot + 1e-6), atol=1e-14, rtol=0)
                    assert np.allclose(a.sum(axis=1), 1.0, atol=1e-6 / tot.min() + 1e-14)
                else:
                    assert np.allclose(a.sum(axis=1), 1.0, atol=1e-14), (name, n)
                n_checks += 1
    # Padding: keys past the real ones get weight 0, and the others the
    # weights of the unpadded keys, whatever the padded rows hold.
    for n, pad in ((4, 1), (7, 3), (12, 5)):
        for causal in (False, True):
            q, k = random_qk(rng, n, n + pad, 4)
            valid = np.arange(n + pad) < n
            for name, sp in variant_grid(n):
                a = R.head_weights(q, k, sp, causal, valid)
                assert (a[:, n:] == 0).all(), (name, n, pad)
                assert np.allclose(a[:, :n], R.head_weights(q, k[:n], sp, causal), atol=1e-15, rtol=0)
                lp = lp_head_weights(q.tolist(), k.tolist(), 0, 4, sp, causal, n_keys=n)
                assert np.allclose(a, lp, atol=1e-13, rtol=0), (name, n, pad)
                n_checks += 1
    return "%d checks: wide local/block/strided = full, narrow ones not; causal; " \
        "linear rows sum to S/(S+1e-6); padding weight 0" % n_checks


def check_variant_heads_vs_loops():
    # One head's weights, numpy against scalar loops, at another column
    # offset (lo) so that the head's column slice is exercised too.
    rng = np.random.default_rng(30)
    worst, n = 0.0, 0
    for tq, tk, causal in ((1, 1, False), (6, 6, False), (6, 6, True), (11, 11, True),
                           (3, 9, False), (9, 4, False)):
        for name, sp in variant_grid(tk):
            if tq != tk and sp["type"] not in ("full", "linear"):
                continue  # cross-attention: full and linear only
            q, k = random_qk(rng, tq, tk, 5)
            qq = np.hstack([rng.normal(size=(tq, 5)), q])
            kk = np.hstack([rng.normal(size=(tk, 5)), k])
            a = R.head_weights(q, k, sp, causal)
            b = np.array(lp_head_weights(qq.tolist(), kk.tolist(), 5, 5, sp, causal))
            worst = max(worst, float(np.abs(a - b).max()))
            assert worst < LOOP_TOL, (name, tq, tk, causal, worst)
            n += 1
    return "%d heads, max |diff| %.1e" % (n, worst)


def check_variant_specs():
    # The heads and layers a table names follow its type; the rest are full.
    cfg = R.parse_model_config(dict(tiny_cfg(d=8, heads=4, enc=3, dec=2), encoder_attention={
        "type": "local", "window": 2, "heads": [1, 3], "layers": [0, 2]},
        cross_attention={"type": "linear", "layers": [1]}), "t")
    for layer in range(3):
        got = [sp["type"] for sp in R.head_specs(cfg, "encoder_attention", layer)]
        want = [lp_head_type(lp_table(cfg, "encoder_attention"), layer, h)["type"] for h in range(4)]
        assert got == want, (layer, got, want)
    assert [sp["type"] for sp in R.head_specs(cfg, "encoder_attention", 1)] == ["full"] * 4
    assert [sp["type"] for sp in R.head_specs(cfg, "encoder_attention", 2)] == \
        ["full", "local", "full", "local"]
    assert [sp["type"] for sp in R.head_specs(cfg, "cross_attention", 1)] == ["linear"] * 4
    assert [sp["type"] for sp in R.head_specs(cfg, "cross_attention", 0)] == ["full"] * 4
    assert [sp["type"] for sp in R.head_specs(cfg, "decoder_attention", 0)] == ["full"] * 4
    # Refused: each with the key named.
    bad = {"encoder_attention.kind": {"encoder_attention": {"kind": "local"}},
           "encoder_attention.type": {"encoder_attention": {"type": "sparse"}},
           "cross_attention.type": {"cross_attention": {"type": "local"}},
           "encoder_attention.window": {"encoder_attention": {"type": "local", "window": 0}},
           "decoder_attention.block": {"decoder_attention": {"block": 0}},
           "decoder_attention.stride": {"decoder_attention": {"type": "strided", "stride": 1}},
           "encoder_attention.heads": {"encoder_attention": {"heads": [0, 4]}},
           "decoder_attention.layers": {"decoder_attention": {"layers": [2]}},
           "cross_attention.layers": {"cross_attention": {"type": "linear", "layers": [0, 0]}},
           "encoder_attention.heads ": {"encoder_attention": {"heads": 1}},
           "decoder_attention.heads": {"decoder_attention": {"heads": [True]}},
           "encoder_attention": {"encoder_attention": "local"}}
    for key, extra in bad.items():
        try:
            R.parse_model_config(dict(tiny_cfg(d=8, heads=4, enc=3, dec=2), **extra), "t")
        except R.RefError as e:
            assert "model." + key.strip() in str(e), (key, str(e))
            continue
        raise AssertionError("accepted model.%s = %r" % (key, extra))
    # Absent tables (every file written before issue 29) are full, and a
    # full table is not written back, so such files are written as before.
    old = R.parse_model_config(tiny_cfg(), "t")
    assert all(old[t]["type"] == "full" for t in R.ATTENTION_TABLES)
    text = R.model_metadata(old, vocab(6), vocab(6))["s2s.config"]
    assert not any(t in text for t in R.ATTENTION_TABLES), text
    stored = yaml.safe_load(R.model_metadata(cfg, vocab(6), vocab(6))["s2s.config"])["model"]
    assert R.parse_model_config(stored, "t") == cfg, stored
    assert "decoder_attention" not in stored and stored["encoder_attention"]["heads"] == [1, 3]
    return "heads/layers select the variant heads; %d bad tables refused by key; " \
        "full tables not stored, others round-trip" % len(bad)


def check_variant_models(tmpdir):
    """tests/data/ref/attention/*.yaml: `random` models, numpy vs scalar loops
    (tables from the stored s2s.config), and the variant changes the scores."""
    with open(os.path.join(DATA, "pairs.tsv")) as f:
        pairs = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    pairs = [p for p in pairs if len(p[0].split()) >= 5][:3]  # long enough for every window
    done, worst = [], 0.0
    for name in sorted(os.listdir(ATTN_DATA)):
        if not name.endswith(".yaml"):
            continue
        path = os.path.join(ATTN_DATA, name)
        with open(path) as f:
            doc = yaml.safe_load(f)
        out = os.path.join(tmpdir, name + ".safetensors")
        rc, err = ref_cli("random", path, os.path.join(ATTN_DATA, doc["vocab"]["src"]),
                          os.path.join(ATTN_DATA, doc["vocab"]["tgt"]), out, "--seed", "11")
        assert rc == 0, "random %s: %s" % (name, err.strip())
        m = R.load_model(out)
        tensors, meta = R.read_safetensors(out)
        section = yaml.safe_load(meta["s2s.config"])["model"]
        assert any(t in section for t in R.ATTENTION_TABLES), name + ": no table stored"
        full = R.Model(dict(m.cfg, **{t: dict(R.ATTENTION_DEFAULTS) for t in R.ATTENTION_TABLES}),
                       m.src_vocab, m.tgt_vocab, m.w)
        differs = False
        for src, tgt in pairs:
            s_ids, t_ids = R.to_ids(m.src_index, src), R.to_ids(m.tgt_index, tgt)
            a = R.forward_ids(m, s_ids, t_ids)
            b = np.array(loop_logprobs(m.cfg, tensors, s_ids, t_ids, section=section))
            diff = float(np.abs(a - b).max())
            worst = max(worst, diff)
            assert diff < LOOP_TOL, (name, src, diff)
            differs = differs or np.abs(a - R.forward_ids(full, s_ids, t_ids)).max() > 1e-6
        assert differs, name + ": scores equal the full model's (variant ignored?)"
        done.append(name[:-5])
    return "%s: %d pairs each, max |diff| %.1e, each differs from full" % (", ".join(done), len(pairs), worst)


def check_properties(tmpdir):
    cfg = tiny_cfg(norm="pre", activation="gelu", d=8, heads=2, enc=2, dec=2, ffn=12)
    m, _ = make_model(cfg, 12, 11, 7, tmpdir)
    src, tgt = [4, 5, 6, 7, 1], [4, 5, 6, 7, 8, 9]
    lp = R.forward_ids(m, src, tgt)
    total = np.exp(lp).sum(axis=1)
    assert np.allclose(total, 1.0, atol=1e-12), total
    # Changing target token j changes no prediction made before seeing it
    # (rows 0..j) and does change the later ones.
    for j in range(len(tgt)):
        tgt2 = list(tgt)
        tgt2[j] = 10 if tgt[j] != 10 else 4
        lp2 = R.forward_ids(m, src, tgt2)
        assert np.array_equal(lp[:j + 1], lp2[:j + 1]), "row <= %d changed" % j
        assert np.abs(lp[j + 1:] - lp2[j + 1:]).min(axis=1).max() > 1e-9, "row > %d unchanged" % j
    # Every prediction depends on the source.
    lp3 = R.forward_ids(m, [4, 5, 6, 7, 2], tgt)
    assert (np.abs(lp - lp3).max(axis=1) > 1e-6).all(), "some row ignores the source"
    return "sum p = 1, causal in the target, every row uses the source"


def check_score_format(tmpdir):
    cfg = tiny_cfg(d=8, heads=2)
    m, _ = make_model(cfg, 8, 8, 3, tmpdir)
    # Lower-casing, extra spaces and an unknown word on each side.
    r = R.score_pair(m, "W0  ZZZ w1", "W2 qqq")
    assert r["tokens"] == ["w2", "<unk>", "</s>"], r["tokens"]
    ids = R.forward_ids(m, [4, 1, 5], [6, 1])
    want = [ids[0, 6], ids[1, 1], ids[2, R.EOS]]
    assert np.allclose(r["token_logprobs"], want, atol=0, rtol=0), (r, want)
    assert abs(r["logprob"] - sum(want)) < 1e-12
    # The CLI prints the same, one JSON object per input line.
    path = os.path.join(tmpdir, "m3.safetensors")
    out = subprocess.run([sys.executable, REF_SCRIPT, "score", path], input="W0  ZZZ w1\tW2 qqq\nw0\tw1\n",
                         capture_output=True, text=True, timeout=TIMEOUT, check=True).stdout
    lines = [json.loads(x) for x in out.splitlines()]
    assert len(lines) == 2 and lines[0] == r, lines
    assert lines[1]["tokens"] == ["w1", "</s>"], lines[1]
    return "tokens = target + </s>, unknown -> <unk>, CLI = function"


def check_rejects_bad_files(tmpdir):
    cfg = tiny_cfg(tie=True)
    t = R.random_tensors(cfg, 6, 6, 1)
    meta = R.model_metadata(cfg, vocab(6), vocab(6))
    bad = {"generator.weight present in a tied model": dict(t, **{"generator.weight": t["tgt_embed.weight"]}),
           "missing tensor": {k: a for k, a in t.items() if k != "decoder.layers.0.norm3.bias"},
           "wrong shape": dict(t, **{"generator.bias": np.zeros(5, np.float32)})}
    for what, tensors in bad.items():
        path = os.path.join(tmpdir, "bad.safetensors")
        R.write_safetensors(path, tensors, meta)
        try:
            R.load_model(path)
        except R.RefError:
            continue
        raise AssertionError("accepted a model with " + what)
    return ", ".join(bad)


def schema_table_names(text, array):
    """Names of the rows of the key array `array` in schema.c's text."""
    m = re.search(r"\b%s\[\]\s*=\s*\{(.*?)\n\};" % re.escape(array), text, re.S)
    assert m, "no %s table in src/config/schema.c" % array
    names = re.findall(r'\.name\s*=\s*"([^"]+)"', m.group(1))
    assert names, "no .name entries in " + array
    return names, m.group(1)


def schema_model_keys():
    """({model key: None, or the names of its nested table}) of src/config/schema.c."""
    with open(os.path.join(ROOT, "src", "config", "schema.c")) as f:
        text = f.read()
    names, body = schema_table_names(text, "model_keys")
    keys = {}
    for name in names:
        row = body[re.search(r'\.name\s*=\s*"%s"' % re.escape(name), body).start():]
        row = row[:row.index("},")] if "}," in row else row
        sub = re.search(r"\.sub\s*=\s*&(\w+)", row)
        if sub is None:
            keys[name] = None
            continue
        arr = re.search(r"\b%s\s*=\s*TABLE\((\w+)\)" % sub.group(1), text)
        assert arr, "schema.c: no TABLE() for %s" % sub.group(1)
        keys[name] = schema_table_names(text, arr.group(1))[0]
    return keys


def ref_cli(*args, stdin_text=""):
    """(exit code, stderr) of ref_model.py run as a program."""
    p = subprocess.run([sys.executable, REF_SCRIPT] + list(args), input=stdin_text,
                       capture_output=True, text=True, timeout=TIMEOUT)
    return p.returncode, p.stderr


def expect_refusal(args, key, where, stdin_text=""):
    rc, err = ref_cli(*args, stdin_text=stdin_text)
    lines = err.strip().splitlines()
    if rc == 0:
        raise AssertionError("ref_model.py %s accepted model.%s (exit 0)" % (args[0], key))
    if len(lines) != 1 or ("model." + key) not in lines[0] or where not in lines[0]:
        raise AssertionError("ref_model.py %s: expected one line naming model.%s and %s, got %r"
                             % (args[0], key, where, err))


def check_model_keys(tmpdir):
    # Every key of the C schema is one the reference reads, and no other;
    # the same for the keys of each attention table. Until schema.c has the
    # attention tables (issue 29, written apart from the references), their
    # absence from it is the one difference allowed.
    c_tables = schema_model_keys()
    c_keys = set(c_tables)
    pending = set(R.ATTENTION_TABLES) - c_keys
    if pending != set(R.ATTENTION_TABLES):
        pending = set()
    if c_keys | pending != set(R.MODEL_KEYS):
        raise AssertionError("model keys: schema.c has %s, ref_model.py %s"
                             % (sorted(c_keys - set(R.MODEL_KEYS)) or "nothing more",
                                sorted(set(R.MODEL_KEYS) - c_keys) or "nothing more"))
    for table in set(R.ATTENTION_TABLES) & c_keys:
        if set(c_tables[table] or []) != set(R.ATTENTION_DEFAULTS):
            raise AssertionError("model.%s keys: schema.c %s, ref_model.py %s"
                                 % (table, c_tables[table], sorted(R.ATTENTION_DEFAULTS)))
    src, tgt = os.path.join(DATA, "src.txt"), os.path.join(DATA, "tgt.txt")
    # A key it does not implement is refused, from a config (`random`) and
    # from a model file's s2s.config (`score`), naming the key and the file.
    key = "encoder_attention" if "encoder_attention" not in R.MODEL_KEYS else "not_a_model_key"
    cfg_path = os.path.join(tmpdir, "unknown_key.yaml")
    with open(cfg_path, "w") as f:
        f.write(yaml.safe_dump({"model": tiny_cfg()}, sort_keys=False).replace(
            "model:\n", "model:\n  %s: {kind: local}\n" % key, 1))
    out = os.path.join(tmpdir, "unknown_key.safetensors")
    expect_refusal(["random", cfg_path, src, tgt, out], key, cfg_path)
    if os.path.exists(out):
        raise AssertionError("`random` wrote %s for a config it refused" % out)
    cfg = tiny_cfg()
    meta = R.model_metadata(cfg, vocab(6), vocab(6))
    meta["s2s.config"] = meta["s2s.config"].replace("model:\n", "model:\n  %s: {kind: local}\n" % key, 1)
    R.write_safetensors(out, R.random_tensors(cfg, 6, 6, 1), meta)
    expect_refusal(["score", out], key, out, stdin_text="w0\tw1\n")
    # The same inside an attention table: model.encoder_attention.kind.
    meta = R.model_metadata(cfg, vocab(6), vocab(6))
    meta["s2s.config"] = meta["s2s.config"].replace(
        "model:\n", "model:\n  encoder_attention: {kind: local}\n", 1)
    R.write_safetensors(out, R.random_tensors(cfg, 6, 6, 1), meta)
    expect_refusal(["score", out], "encoder_attention.kind", out, stdin_text="w0\tw1\n")
    # attention_dropout: read, written back, range-checked; the identity in
    # the forward pass (inference), so the scores do not depend on it.
    base = make_model(tiny_cfg(), 7, 8, 5, tmpdir)[0]
    src_ids, tgt_ids = [4, 5, 6], [5, 4]
    for rate in (0.0, 0.3):
        cfg = dict(tiny_cfg(), attention_dropout=rate)
        path = os.path.join(tmpdir, "attn_drop.safetensors")
        R.write_safetensors(path, R.random_tensors(cfg, 7, 8, 5), R.model_metadata(cfg, vocab(7), vocab(8)))
        m = R.load_model(path)
        assert m.cfg["attention_dropout"] == rate, m.cfg
        assert np.array_equal(R.forward_ids(m, src_ids, tgt_ids), R.forward_ids(base, src_ids, tgt_ids))
    assert base.cfg["attention_dropout"] == 0.0, "absent attention_dropout is not the default 0.0"
    for rate in (1.0, -0.1):
        doc = dict(tiny_cfg(), attention_dropout=rate)
        with open(cfg_path, "w") as f:
            yaml.safe_dump({"model": doc}, f, sort_keys=False)
        expect_refusal(["random", cfg_path, src, tgt, out + ".2"], "attention_dropout", cfg_path)
    return "%d keys as in schema.c%s; model.%s and model.encoder_attention.kind refused; " \
        "attention_dropout kept, range-checked, no effect on scores" \
        % (len(c_keys), " (its attention tables still to come)" if pending else "", key)


def check_shipped(tmpdir):
    """configs/*.yaml give models with `random`; models/*.safetensors score."""
    done = []
    for name in sorted(os.listdir(os.path.join(ROOT, "configs"))):
        if not name.endswith(".yaml"):
            continue
        path = os.path.join(ROOT, "configs", name)
        with open(path) as f:
            doc = yaml.safe_load(f)
        base = os.path.dirname(path)
        out = os.path.join(tmpdir, name + ".safetensors")
        rc, err = ref_cli("random", path, os.path.join(base, doc["vocab"]["src"]),
                          os.path.join(base, doc["vocab"]["tgt"]), out)
        if rc != 0:
            raise AssertionError("ref_model.py random %s exited %d: %s" % (name, rc, err.strip()))
        R.load_model(out)
        done.append(name)
    for name in sorted(os.listdir(os.path.join(ROOT, "models"))):
        if name.endswith(".safetensors"):
            path = os.path.join(ROOT, "models", name)
            m = R.load_model(path)
            rc, err = ref_cli("score", path, stdin_text="%s\t%s\n" % (m.src_vocab[4], m.tgt_vocab[4]))
            if rc != 0:
                raise AssertionError("ref_model.py score %s exited %d: %s" % (name, rc, err.strip()))
            done.append(name)
    return ", ".join(done)


# ---- the C engine against the reference ----

def run(cmd, stdin_text=None):
    p = subprocess.run(cmd, input=stdin_text, capture_output=True, text=True, timeout=TIMEOUT)
    if p.returncode != 0:
        raise AssertionError("`%s` exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-2000:]))
    return p.stdout


def parse_scores(text, who, n):
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            raise AssertionError("%s printed a line that is not JSON: %r" % (who, line[:200]))
    if len(rows) != n:
        raise AssertionError("%s printed %d results for %d pairs" % (who, len(rows), n))
    return rows


def compare_scores(binary, model, pairs_text):
    n = len([x for x in pairs_text.splitlines() if x.strip()])
    ref = parse_scores(run([sys.executable, REF_SCRIPT, "score", model], pairs_text), "ref_model.py", n)
    got = parse_scores(run([binary, "score", "-m", model], pairs_text), "s2s score", n)
    worst, ntok = 0.0, 0
    for i, (r, g) in enumerate(zip(ref, got), 1):
        if g.get("tokens") != r["tokens"]:
            raise AssertionError("pair %d: tokens %s, reference %s" % (i, g.get("tokens"), r["tokens"]))
        glp = g.get("token_logprobs")
        if not isinstance(glp, list) or len(glp) != len(r["token_logprobs"]):
            raise AssertionError("pair %d: token_logprobs %r" % (i, glp))
        for k, (a, b) in enumerate(zip(glp, r["token_logprobs"])):
            if not (isinstance(a, (int, float)) and math.isfinite(a)) or abs(a - b) > TOL:
                raise AssertionError("pair %d token %d (%s): s2s %r, reference %.7f"
                                     % (i, k, r["tokens"][k], a, b))
            worst = max(worst, abs(a - b))
        if abs(g.get("logprob", float("nan")) - r["logprob"]) > TOL * len(glp):
            raise AssertionError("pair %d: logprob %r, reference %.7f" % (i, g.get("logprob"), r["logprob"]))
        ntok += len(glp)
    return "%d pairs, %d tokens, max |diff| %.1e" % (n, ntok, worst)


def binary_has_init(binary):
    try:
        p = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=TIMEOUT)
    except OSError:
        return False
    return re.search(r"\binit\b", p.stdout + p.stderr) is not None


def variant_configs():
    """The architectures of tests/data/ref/*.yaml, then the attention
    variants of tests/data/ref/attention/*.yaml, as paths."""
    return [os.path.join(d, f) for d in (DATA, ATTN_DATA)
            for f in sorted(os.listdir(d)) if f.endswith(".yaml")]


def check_ref_random_model(binary, cfg_path, tmpdir, pairs_text):
    with open(cfg_path) as f:
        doc = yaml.safe_load(f)
    base = os.path.dirname(cfg_path)
    src = os.path.join(base, doc["vocab"]["src"])
    tgt = os.path.join(base, doc["vocab"]["tgt"])
    model = os.path.join(tmpdir, "ref.safetensors")
    run([sys.executable, REF_SCRIPT, "random", cfg_path, src, tgt, model, "--seed", "7"])
    return compare_scores(binary, model, pairs_text)


def check_init_model(binary, cfg_path, tmpdir, pairs_text):
    model = os.path.join(tmpdir, "init.safetensors")
    run([binary, "init", cfg_path, "-o", model, "--seed", "1"])
    return compare_scores(binary, model, pairs_text)


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else None
    if binary is not None and not os.access(binary, os.X_OK):
        print("score_reference_test: %s is not an executable" % binary)
        return 1
    c = Check()
    with tempfile.TemporaryDirectory(prefix="s2s_ref_") as tmp:
        c.run("ref safetensors", check_safetensors_by_hand, tmp)
        c.run("ref positional encoding", check_positional_encoding)
        c.run("ref attention by hand", check_attention_by_hand)
        c.run("ref zero model by hand", check_zero_model, tmp)
        c.run("ref vs scalar loops", check_against_loops, tmp)
        c.run("ref properties", check_properties, tmp)
        c.run("ref attention variants by hand", check_variants_by_hand)
        c.run("ref attention masks vs ranges", check_variant_masks)
        c.run("ref attention variant properties", check_variant_properties)
        c.run("ref attention heads vs scalar loops", check_variant_heads_vs_loops)
        c.run("ref attention tables", check_variant_specs)
        c.run("ref attention models vs scalar loops", check_variant_models, tmp)
        c.run("ref score output", check_score_format, tmp)
        c.run("ref rejects bad files", check_rejects_bad_files, tmp)
        c.run("ref model keys", check_model_keys, tmp)
        c.run("ref shipped configs and models", check_shipped, tmp)
        if binary is None:
            print("(no s2s binary given: reference self-checks only)")
        else:
            with open(os.path.join(DATA, "pairs.tsv")) as f:
                pairs_text = f.read()
            has_init = binary_has_init(binary)
            for cfg_path in variant_configs():
                variant = os.path.relpath(cfg_path, DATA)[:-len(".yaml")]
                d = os.path.join(tmp, variant.replace("/", "_"))
                os.mkdir(d)
                c.run("%s [ref_model.py random model]" % variant,
                      check_ref_random_model, binary, cfg_path, d, pairs_text)
                if has_init:
                    c.run("%s [s2s init model]" % variant, check_init_model, binary, cfg_path, d, pairs_text)
            if not has_init:
                print("(`%s --help` does not mention init: s2s init models not tested)" % binary)
    print("%d passed, %d failed" % (c.passed, c.failed))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
