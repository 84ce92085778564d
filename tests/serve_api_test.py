#!/usr/bin/env python3
"""`s2s serve` over HTTP on 127.0.0.1 (a free port): the JSON API against
the s2s command line (translate, align --format json), every error code,
the queue and timeout limits, hostile clients (slow, vanishing, garbage,
invalid UTF-8, huge bodies), keep-alive, dynamic batching and SIGTERM.

    python3 tests/serve_api_test.py build/s2s
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import serve_client
from serve_client import check, finish

S2S = os.path.abspath(sys.argv[1])
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZH_EN = os.path.join(ROOT, "models", "zh-en.safetensors")
EN_ZH = os.path.join(ROOT, "models", "en-zh.safetensors")


class Server(serve_client.Server):
    def __init__(self, *args):
        super().__init__(S2S, *args)

    def request(self, method, path, body=None, headers=None, timeout=60):
        """(status, the body as JSON or None, the response)"""
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        st, data, r = self.send(method, path, body, headers, timeout)
        try:
            j = json.loads(data)
        except ValueError:
            j = None
        return st, j, r


def cli(*args, stdin=None):
    return subprocess.run([S2S, *args], input=stdin, capture_output=True, text=True).stdout


def error_is(name, got, status, code):
    st, j, r = got
    check(name, st == status and j is not None and j.get("error") == code and j.get("message"),
          f"got {st} {j}")
    return r


srv = Server("-m", ZH_EN, "-m", EN_ZH)

# ---- the API ----

st, j, _ = srv.request("GET", "/healthz")
check("healthz", st == 200 and j["status"] == "ok")
st, j, _ = srv.request("GET", "/v1/models")
names = [m["name"] for m in j["models"]]
check("models: both, by stem", st == 200 and names == ["zh-en", "en-zh"], names)
zh = j["models"][0]
check("models: vocab sizes as inspect says",
      f"source vocab: {zh['source_vocab_size']} tokens" in cli("inspect", ZH_EN) and
      f"target vocab: {zh['target_vocab_size']} tokens" in cli("inspect", ZH_EN))
check("models: calibrated head", zh["alignment_head"] == {"layer": 1, "head": 0}, zh["alignment_head"])
check("models: config", zh["config"]["model"]["heads"] == 4 and "beam_size" in zh["config"]["decode"])
check("models: config tables nested", zh["config"]["model"]["encoder_attention"] ==
      {"type": "full", "window": 16, "block": 64, "stride": 8, "heads": [], "layers": []}
      and "type" not in zh["config"]["model"], zh["config"]["model"])



def docs_example(heading):
    """The JSON block after `heading` in docs/serve.md, with `{...}` read as
    "anything" and `, ...` dropped."""
    text = open(os.path.join(os.path.dirname(__file__), "..", "docs", "serve.md")).read()
    block = text[text.index(heading):].split("```json\n", 1)[1].split("```", 1)[0]
    return json.loads(block.replace("{...}", '"..."').replace(", ...}", "}"))


def matches(docs, real, path="body"):
    """Where the docs' example differs from the real value, or None."""
    if docs == "...":
        return None
    if isinstance(docs, dict):
        for k, v in docs.items():
            if not isinstance(real, dict) or k not in real:
                return f"{path}.{k}: not in the reply"
            bad = matches(v, real[k], f"{path}.{k}")
            if bad:
                return bad
        return None
    if isinstance(docs, list):
        if not isinstance(real, list) or len(docs) != len(real):
            return f"{path}: {len(docs)} entries, the reply {real!r}"
        return next((b for b in (matches(d, r, f"{path}[{i}]")
                                 for i, (d, r) in enumerate(zip(docs, real))) if b), None)
    return None if docs == real else f"{path}: the docs say {docs!r}, the reply {real!r}"


bad = matches(docs_example("### GET /v1/models"), j)
check("docs/serve.md's /v1/models example is the reply", bad is None, bad)

st, j, _ = srv.request("POST", "/v1/translate", {"model": "zh-en", "text": "我爱吃苹果"})
r = j["results"][0]
check("translate: text", st == 200 and r["translation"] == "I love to eat apples.", j)
check("translate: tokens", r["source_tokens"] == ["我", "爱", "吃", "苹果"] and r["target_tokens"][3] == "eat")
check("translate: alignment at the calibrated head", r["alignment"] == "0-0 1-1 2-3 3-4" and
      r["alignment_layer"] == 1 and r["alignment_head"] == 0, r)

# The same sentences through the command line: same text, same scores.
with open(os.path.join(ROOT, "data", "corpus", "dev.zh-en.tsv"), encoding="utf-8") as f:
    dev = [line.split("\t")[0] for line in f][:12]
want = cli("translate", "-m", ZH_EN, "--beam", "3", "--n-best", "2", "--json", stdin="\n".join(dev) + "\n")
want = [json.loads(line) for line in want.splitlines()]
st, j, _ = srv.request("POST", "/v1/translate", {"model": "zh-en", "texts": dev, "beam_size": 3, "n_best": 2})
same = st == 200 and len(j["results"]) == len(dev)
for got, w in zip(j["results"] if same else [], want):
    for gh, wh in zip(got["hypotheses"], w["hypotheses"]):
        same = same and gh["translation"] == wh["text"] and abs(gh["score"] - wh["score"]) < 1e-4
    same = same and len(got["hypotheses"]) == len(w["hypotheses"]) == 2
check("translate: texts with beam 3, n-best 2 as `s2s translate --json` gives", same)
# Unknown words are put back as the command line puts them (replace_unknowns).
oov = ["我想吃巧克力。", "小明喜欢企鹅。"]
want = [json.loads(line) for line in cli("translate", "-m", ZH_EN, "-q", "--json", stdin="\n".join(oov) + "\n").splitlines()]
st, j, _ = srv.request("POST", "/v1/translate", {"model": "zh-en", "texts": oov})
got = [(r["translation"], r["target_tokens"]) for r in j["results"]] if st == 200 else None
check("translate: unknown words put back as `s2s translate --json` does",
      got == [(w["hypotheses"][0]["text"], w["hypotheses"][0]["tokens"]) for w in want] and "巧克力" in got[0][1], (got, want))
st, j, _ = srv.request("POST", "/v1/translate", {"model": "en-zh", "texts": ["", "i love apples ."]})
check("translate: an empty text stays empty", st == 200 and j["results"][0]["translation"] == "" and
      j["results"][0]["hypotheses"] == [] and j["results"][1]["translation"], j)

# Attention maps against `s2s align --format json` (one plane, the CLI's own code).
st, j, _ = srv.request("POST", "/v1/translate", {"model": "zh-en", "text": "我爱吃苹果", "attention": True})
maps = j["results"][0]["sentences"][0]["maps"]
kinds = {k: [m for m in maps if m["type"] == k] for k in ("cross", "self", "enc")}
check("attention: every layer and head of each map", all(len(v) == 8 for v in kinds.values()),
      {k: len(v) for k, v in kinds.items()})
ref = json.loads(cli("align", "-m", ZH_EN, "--format", "json", "--layer", "1", "--head", "2", "我爱吃苹果"))
mine = next(m for m in kinds["cross"] if m["layer"] == 1 and m["head"] == 2)
rm = ref["maps"][0]
check("attention: cross plane equals s2s align's", mine["rows"] == rm["rows"] and mine["cols"] == rm["cols"]
      and all(abs(a - b) < 2e-6 for ra, rb in zip(mine["weights"], rm["weights"]) for a, b in zip(ra, rb)))
ref = json.loads(cli("align", "-m", ZH_EN, "--format", "json", "--map", "enc", "--layer", "0", "--head", "3",
                     "我爱吃苹果"))
mine = next(m for m in kinds["enc"] if m["layer"] == 0 and m["head"] == 3)
check("attention: encoder plane equals s2s align's",
      all(abs(a - b) < 2e-6 for ra, rb in zip(mine["weights"], ref["maps"][0]["weights"]) for a, b in zip(ra, rb)))
check("attention: per sentence, not on the line nor in the hypotheses",
      "maps" not in j["results"][0] and "maps" not in j["results"][0]["hypotheses"][0] and
      "maps" not in j["results"][0]["sentences"][0]["hypotheses"][0])

# ---- several sentences in one text: the one translation path of `s2s translate` ----

# Issue 32: the server used to decode a text as one sentence ("Will I love
# to eat apples tomorrow?"). Now a text is split, translated and joined as
# the command does it, greedy and with beam search and n-best.
two = "我爱吃苹果。他明天看书吗？"
st, j, _ = srv.request("POST", "/v1/translate", {"model": "zh-en", "text": two})
r = j["results"][0] if st == 200 else {}
want = cli("translate", "-m", ZH_EN, two).strip()
check("sentences: the translation is `s2s translate`'s",
      r.get("translation") == want == "I love to eat apples. Will he read books tomorrow?", (r.get("translation"), want))
sents = r.get("sentences", [])
check("sentences: one entry each, with its source as sent",
      [s["source"] for s in sents] == ["我爱吃苹果。", "他明天看书吗？"], sents)
check("sentences: each its own translation and tokens",
      [s["translation"] for s in sents] == ["I love to eat apples.", "Will he read books tomorrow?"] and
      [s["source_tokens"] for s in sents] == [["我", "爱", "吃", "苹果", "。"], ["他", "明天", "看", "书", "吗", "？"]] and
      sents[1]["target_tokens"][:2] == ["will", "he"], sents)
check("sentences: the line's tokens are the sentences' one after the other",
      r["target_tokens"] == sents[0]["target_tokens"] + sents[1]["target_tokens"] and
      r["source_tokens"] == sents[0]["source_tokens"] + sents[1]["source_tokens"], r)
# Each sentence's alignment over its own tokens; the line's shifts the
# second sentence's links past the first's tokens (5 source, 6 target).
shift = " ".join(f"{int(a) + 5}-{int(b) + 6}" for a, b in (x.split("-") for x in sents[1]["alignment"].split()))
check("sentences: alignment per sentence, and over the line's tokens",
      all(re.fullmatch(r"\d+-\d+( \d+-\d+)*", s["alignment"]) for s in sents) and
      r["alignment"] == sents[0]["alignment"] + " " + shift, (r["alignment"], [s["alignment"] for s in sents]))
check("sentences: the line's score is the sum of theirs",
      abs(r["score"] - sents[0]["score"] - sents[1]["score"]) < 1e-5 and
      abs(r["logprob"] - sents[0]["logprob"] - sents[1]["logprob"]) < 1e-5, r)
st, j, _ = srv.request("POST", "/v1/translate", {"model": "zh-en", "text": two, "attention": True})
sents = j["results"][0]["sentences"] if st == 200 else []
check("sentences: attention maps per sentence, over its own tokens",
      len(sents) == 2 and all(len(s["maps"]) == 24 for s in sents) and
      next(m for m in sents[1]["maps"] if m["type"] == "cross")["cols"] == ["他", "明天", "看", "书", "吗", "？", "</s>"],
      [len(s.get("maps", [])) for s in sents])
ref = json.loads(cli("align", "-m", ZH_EN, "--format", "json", "--layer", "1", "--head", "0", "他明天看书吗？"))
mine = next(m for m in sents[1]["maps"] if m["type"] == "cross" and m["layer"] == 1 and m["head"] == 0)
check("sentences: the second sentence's cross plane equals s2s align's on it alone",
      mine["rows"] == ref["maps"][0]["rows"] and
      all(abs(a - b) < 2e-6 for ra, rb in zip(mine["weights"], ref["maps"][0]["weights"]) for a, b in zip(ra, rb)))
# n-best: the line's j-th hypothesis is its sentences' j-th, joined, scored
# by the sum (s2s translate --n-best on a split line).
lines = ["我爱吃苹果。他明天看书吗？", "猫很小。狗很大！", "我想吃巧克力。小明喜欢企鹅。"]
want = [json.loads(x) for x in cli("translate", "-m", ZH_EN, "-q", "--beam", "4", "--n-best", "3", "--json",
                                   stdin="\n".join(lines) + "\n").splitlines()]
st, j, _ = srv.request("POST", "/v1/translate", {"model": "zh-en", "texts": lines, "beam_size": 4, "n_best": 3})
ok = st == 200 and len(want) == len(lines)
for got, w in zip(j["results"] if ok else [], want):
    ok = ok and got["translation"] == w["hypotheses"][0]["text"] and len(got["hypotheses"]) == len(w["hypotheses"])
    for gh, wh in zip(got["hypotheses"], w["hypotheses"]):
        ok = ok and gh["translation"] == wh["text"] and gh["target_tokens"] == wh["tokens"] and \
            abs(gh["score"] - wh["score"]) < 1e-4
    ok = ok and [s["source"] for s in got["sentences"]] == w.get("sentences", [got["source"]])
    ok = ok and all(len(s["hypotheses"]) == 3 for s in got["sentences"])
check("sentences: n-best as `s2s translate --n-best --json` gives on split lines", ok,
      (j.get("results") if j else None, want))

# Input in the model's other language (issue 32 item 2): one warning in
# the result, the library's, word for word as `s2s translate --json` says it.
texts = ["I love to eat apples. Will he read books tomorrow?", "我爱吃巧克力。", ""]
st, j, _ = srv.request("POST", "/v1/translate", {"model": "zh-en", "texts": texts})
got = [r.get("language_warning", "absent") for r in j["results"]] if st == 200 else []
want = [json.loads(x)["language_warning"]
        for x in cli("translate", "-m", ZH_EN, "-q", "--json", stdin="\n".join(texts) + "\n").splitlines()]
check("language: English to zh-en is said to be English, once; Chinese and nothing are not",
      got == want == ["this looks like English; the model translates Chinese \u2192 English", None, None],
      (got, want))
st, j, _ = srv.request("POST", "/v1/translate", {"model": "en-zh", "text": "我爱吃苹果。他明天看书吗？"})
check("language: Chinese to en-zh is said to be Chinese",
      st == 200 and j["results"][0]["language_warning"] ==
      "this looks like Chinese; the model translates English \u2192 Chinese", j)

# Forced alignment, with and without gold.
body = {"model": "zh-en", "source": "我爱吃苹果", "target": "I love to eat apples."}
st, j, _ = srv.request("POST", "/v1/align", body)
check("align: links", st == 200 and j["alignment"] == "0-0 1-1 2-3 3-4" and "aer" not in j, j)
score = json.loads(cli("align", "-m", ZH_EN, "--format", "json", "我爱吃苹果"))
check("align: as s2s align", j["target_tokens"] == score["target_tokens"] and j["alignment"] == score["alignment"])
st, j, _ = srv.request("POST", "/v1/align", dict(body, gold="0-0 1-1 2-3 3-4"))
check("align: perfect gold, AER 0", st == 200 and j["aer"] == 0 and j["recall"] == 1, j)
st, j, _ = srv.request("POST", "/v1/align", dict(body, gold="0-0 1-2 2p3"))
# A = {0-0 1-1 2-3 3-4}, S = {0-0 1-2}, P = S + {2-3}: AER = 1 - (1 + 2) / (4 + 2) = 0.5
check("align: AER by Och & Ney", st == 200 and abs(j["aer"] - 0.5) < 1e-9 and j["gold"] == "0-0 1-2 2p3", j)
st, j, _ = srv.request("POST", "/v1/align", dict(body, attention=True))
check("align: maps", st == 200 and len(j["maps"]) == 24, len(j.get("maps", [])))

# ---- errors ----

error_is("400 malformed JSON", srv.request("POST", "/v1/translate", '{"model": "zh-en", "text": '), 400, "bad_request")
# the parser's error quotes the body cut at a byte count, here inside 苹:
# the message is still there, as valid UTF-8 (a fuzzer's find)
error_is("400 malformed JSON quoting half a character",
         srv.request("POST", "/v1/translate", '{"model": "zh-en", "text": "我爱吃\\\\\\\\\苹果"}'.encode()),
         400, "bad_request")
error_is("400 not an object", srv.request("POST", "/v1/translate", "[1, 2]"), 400, "bad_request")
error_is("400 empty body", srv.request("POST", "/v1/translate", ""), 400, "bad_request")
error_is("400 duplicate key", srv.request("POST", "/v1/translate", '{"text": "a", "text": "b"}'), 400, "bad_request")
st, j, _ = srv.request("POST", "/v1/translate", {"model": "zh-en", "text": "我", "beam_size": 0})
check("400 bad option value, naming the key", st == 400 and j["message"].startswith("\"beam_size\": 0 is out of range"), j)
st, j, _ = srv.request("POST", "/v1/translate", {"model": "zh-en", "text": "我", "beam_szie": 2})
check("400 unknown option, with a did-you-mean", st == 400 and "beam_size" in j["message"], j)
error_is("400 option of a wrong type", srv.request("POST", "/v1/translate", {"model": "zh-en", "text": "我", "n_best": [2]}), 400, "bad_request")
error_is("400 option as text out of range", srv.request("POST", "/v1/translate", {"model": "zh-en", "text": "我", "temperature": "-1"}), 400, "bad_request")
error_is("400 text and texts", srv.request("POST", "/v1/translate", {"model": "zh-en", "text": "我", "texts": ["我"]}), 400, "bad_request")
error_is("400 no text", srv.request("POST", "/v1/translate", {"model": "zh-en"}), 400, "bad_request")
error_is("400 text a number", srv.request("POST", "/v1/translate", {"model": "zh-en", "text": 5}), 400, "bad_request")
error_is("400 texts empty", srv.request("POST", "/v1/translate", {"model": "zh-en", "texts": []}), 400, "bad_request")
error_is("400 texts over the limit", srv.request("POST", "/v1/translate", {"model": "zh-en", "texts": ["我"] * 65}), 400, "bad_request")
error_is("400 a text longer than the model takes", srv.request("POST", "/v1/translate", {"model": "zh-en", "text": "我 " * 200}), 400, "bad_request")
error_is("400 attention not a boolean", srv.request("POST", "/v1/translate", {"model": "zh-en", "text": "我", "attention": 1}), 400, "bad_request")
error_is("400 invalid UTF-8", srv.request("POST", "/v1/translate", b'{"model": "zh-en", "text": "\xff\xfe"}'), 400, "bad_request")
error_is("400 a lone surrogate", srv.request("POST", "/v1/translate", '{"model": "zh-en", "text": "\\ud800"}'), 400, "bad_request")
error_is("400 bad gold", srv.request("POST", "/v1/align", dict(body, gold="0-x")), 400, "bad_request")
error_is("400 gold outside the sentence", srv.request("POST", "/v1/align", dict(body, gold="9-0")), 400, "bad_request")
error_is("400 align without a target", srv.request("POST", "/v1/align", {"model": "zh-en", "source": "我"}), 400, "bad_request")
error_is("404 unknown model", srv.request("POST", "/v1/translate", {"model": "fr-en", "text": "x"}), 404, "unknown_model")
error_is("400 model not a string", srv.request("POST", "/v1/translate", {"model": 1, "text": "x"}), 400, "bad_request")
error_is("404 unknown path", srv.request("GET", "/v2/nothing"), 404, "not_found")
r = error_is("405 GET /v1/translate", srv.request("GET", "/v1/translate"), 405, "method_not_allowed")
check("405 says Allow: POST", r.getheader("Allow") == "POST")
r = error_is("405 POST /healthz", srv.request("POST", "/healthz", "{}"), 405, "method_not_allowed")
check("405 says Allow: GET", r.getheader("Allow") == "GET")
error_is("405 DELETE /", srv.request("DELETE", "/"), 405, "method_not_allowed")
st, _, _ = srv.request("POST", "/v1/translate", {"model": "zh-en", "text": "我" + " " * ((1 << 20) - 100)})
check("a body just under 1 MB is read", st == 200, st)

# A body declared over 1 MB is refused before it is sent.
got = srv.raw(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (1 << 20 | 1))
check("413 a body over 1 MB, refused from its Content-Length", got.startswith(b"HTTP/1.1 413") and
      b'"error":"too_large"' in got, got[:200])
# A chunked body over the limit (no Content-Length to refuse it by).
chunk = b"%x\r\n%s\r\n" % (1 << 19, b"y" * (1 << 19))
got = srv.raw(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
          + chunk * 3 + b"0\r\n\r\n")
check("413 a chunked body over the limit", got.startswith(b"HTTP/1.1 413"), got[:80])
got = srv.raw(b"GARBAGE \x00\xff\r\n\r\n")
check("garbage gets 400 or a closed connection", got == b"" or got.startswith(b"HTTP/1.1 400"), got[:80])
got = srv.raw(b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: banana\r\n\r\n")
check("a bad Content-Length gets 400", got == b"" or got.startswith(b"HTTP/1.1 400"), got[:80])
# Clients that vanish: mid-headers, mid-body, and while their request decodes.
srv.raw(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Le", read=False)
srv.raw(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"model\":", read=False)
req = json.dumps({"model": "zh-en", "texts": dev * 5, "beam_size": 4}).encode()
srv.raw(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(req), req), read=False)
# Keep-alive: several requests on one connection.
c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
ok = True
for _ in range(3):
    c.request("POST", "/v1/translate", json.dumps({"model": "zh-en", "text": "我爱吃苹果"}))
    resp = c.getresponse()
    ok = ok and resp.status == 200 and json.loads(resp.read())["results"][0]["translation"] == "I love to eat apples."
c.close()
check("keep-alive: three requests on one connection", ok)
st, j, _ = srv.request("GET", "/healthz")
check("still up after the hostile clients", st == 200)
st, page, r = srv.request("GET", "/")
check("GET / is the page", st == 200 and r.getheader("Content-Type").startswith("text/html"))
check("stops with SIGTERM: exit 0", srv.stop() == 0)

# ---- models with and without a coreference head ----

with tempfile.TemporaryDirectory() as tmp:
    m = re.search(r"^coreference head \(encoder\): layer (\S+), head (\S+)$", cli("inspect", EN_ZH), re.M)
    want = {"layer": m[1] if m[1] == "avg" else int(m[1]), "head": m[2] if m[2] == "avg" else int(m[2])} if m else None
    bare = os.path.join(tmp, "zh-en.safetensors")  # the same model, its coreference head taken out
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "strip_coref_head.py"), ZH_EN, bare], check=True)
    srv = Server("-m", EN_ZH, "-m", bare)
    st, j, _ = srv.request("GET", "/v1/models")
    got = [x.get("coreference_head", "missing") for x in j["models"]]
    check("models: coreference head as inspect says, null without", want is not None and got == [want, None], got)
    check("exit 0", srv.stop() == 0)

# ---- attention variants: each map names its head's pattern ----

def sees(p, i, j):  # the semantics of docs/attention.md, spelled out again
    if p["causal"] and j > i:
        return False
    t, d = p["type"], i - j
    if t == "local":
        return abs(d) <= p["window"]
    if t == "block":
        return i // p["block"] == j // p["block"]
    if t == "strided":
        return abs(d) < p["stride"] or d % p["stride"] == 0
    return True


with tempfile.TemporaryDirectory() as tmp:
    # The shipped zh-en shape, random weights, the encoder's heads 1 and 2
    # local (window 1) and the decoder's self-attention of layer 1 strided.
    cfg = os.path.join(tmp, "v.yaml")
    with open(os.path.join(ROOT, "configs", "zh-en.yaml"), encoding="utf-8") as f:
        model = re.search(r"^model:\n(?:  .*\n)+", f.read(), re.M)[0]
    with open(cfg, "w", encoding="utf-8") as f:
        f.write(model + f"vocab:\n  src: {ROOT}/vocab/zh.txt\n  tgt: {ROOT}/vocab/en.txt\n")
    variant = os.path.join(tmp, "variant.safetensors")
    subprocess.run([S2S, "init", cfg, "-o", variant, "--set", "model.encoder_attention.type=local",
                    "--set", "model.encoder_attention.window=1", "--set", "model.encoder_attention.heads=[1, 2]",
                    "--set", "model.decoder_attention.type=strided", "--set", "model.decoder_attention.stride=2",
                    "--set", "model.decoder_attention.layers=[1]"], check=True, capture_output=True)
    srv = Server("-m", ZH_EN, "-m", variant)
    st, j, _ = srv.request("POST", "/v1/translate", {"model": "zh-en", "text": "我爱吃苹果", "attention": True})
    ms = j["results"][0]["sentences"][0]["maps"]
    check("patterns: a full model's maps all full, causal in the decoder",
          all(m["pattern"] == {"type": "full", "causal": m["type"] == "self"} for m in ms), ms[0].get("pattern"))
    body = {"model": "variant", "source": "我爱吃苹果", "target": "i love to eat apples .", "attention": True}
    st, j, _ = srv.request("POST", "/v1/align", body)
    want = {("enc", h): {"type": "local", "window": 1, "causal": False} for h in (1, 2)}
    want.update({("self", 1): {"type": "strided", "stride": 2, "causal": True}})
    bad = [(m["type"], m["layer"], m["head"], m["pattern"]) for m in j.get("maps", [])
           if m["pattern"] != want.get((m["type"], m["head"] if m["type"] == "enc" else m["layer"]),
                                       {"type": "full", "causal": m["type"] == "self"})]
    check("patterns: a variant model's maps name each head's", st == 200 and len(j["maps"]) == 24 and not bad, bad)
    wrong = [(m["type"], m["layer"], m["head"], i, k) for m in j["maps"] for i, row in enumerate(m["weights"])
             for k, w in enumerate(row) if (w > 0) != sees(m["pattern"], i, k)]
    check("patterns: weights 0 exactly where the pattern hides the key", not wrong, wrong[:5])
    ref = json.loads(cli("align", "-m", variant, "--ref", "--format", "json", "--map", "enc", "--layer", "0",
                         "--head", "1", stdin="我爱吃苹果\ti love to eat apples .\n"))
    mine = next(m for m in j["maps"] if m["type"] == "enc" and m["layer"] == 0 and m["head"] == 1)
    check("patterns: as s2s align gives them", mine["pattern"] == ref["maps"][0]["pattern"] and
          all(abs(a - b) < 2e-6 for ra, rb in zip(mine["weights"], ref["maps"][0]["weights"]) for a, b in zip(ra, rb)),
          (mine["pattern"], ref["maps"][0].get("pattern")))
    check("exit 0", srv.stop() == 0)

# ---- a slow client is dropped; others are served meanwhile ----

srv = Server("-m", ZH_EN, "--idle-timeout", "1", "--timeout", "300")
s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
s.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\n")  # and then nothing
t0 = time.monotonic()
st, _, _ = srv.request("GET", "/healthz")
check("served while a slow client hangs", st == 200)
try:
    closed = s.recv(100) == b""
except (socket.timeout, ConnectionResetError):
    closed = False
check("a silent client is dropped after --idle-timeout", closed and time.monotonic() - t0 < 8)
s.close()
# min_len makes every sentence run 40 steps or more; the beam grows until
# the request does take longer than the idle timeout (beam search got fast).
for beam in (16, 32, 64):
    t0 = time.monotonic()
    st, j, _ = srv.request("POST", "/v1/translate", {"model": "zh-en", "texts": dev * 5, "beam_size": beam,
                                                     "min_len": 40})
    took = time.monotonic() - t0
    if st != 200 or took > 1.5:
        break
check("a request that decodes longer than --idle-timeout is answered", st == 200 and took > 1, (st, took))
check("exit 0", srv.stop() == 0)

# ---- the queue: 503 with Retry-After when full ----


def burst(server, bodies):
    """Sends the bodies at once from threads; the (status, json, response) of each."""
    out = [None] * len(bodies)

    def one(i):
        out[i] = server.request("POST", "/v1/translate", bodies[i])
    ts = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


srv = Server("-m", ZH_EN, "--threads", "1", "--queue", "1", "--max-batch", "1")
full = None
for work in (2, 4, 8):  # more work when the machine outran the burst
    heavy = {"model": "zh-en", "texts": dev * work, "beam_size": 4}
    got = burst(srv, [heavy] * 6)
    full = [g for g in got if g[0] == 503]
    if full and all(g[0] in (200, 503) for g in got):
        break
check("503 when the queue is full", bool(full), [g[0] for g in got])
if full:
    check("503: error overloaded, Retry-After", full[0][1]["error"] == "overloaded" and
          int(full[0][2].getheader("Retry-After")) > 0)
check("exit 0", srv.stop() == 0)

# ---- timeout: a request not answered in time gets 503 "timeout" ----

srv = Server("-m", ZH_EN, "--threads", "1", "--timeout", "1")
timed_out = None
for work in (1, 2, 4):
    t0 = time.monotonic()
    got = burst(srv, [{"model": "zh-en", "texts": dev * 5, "beam_size": 8 * work, "min_len": 40}] * 3)
    timed_out = [g for g in got if g[0] == 503]
    if timed_out:
        break  # else the machine did it all within a second: redo with more work
check("503 timeout", bool(timed_out) and timed_out[0][1]["error"] == "timeout", [g[0] for g in got])
# The worker may still be finishing the abandoned requests: ask until it is free.
deadline = time.monotonic() + 120
while True:
    st, j, _ = srv.request("POST", "/v1/translate", {"model": "zh-en", "text": "我爱吃苹果"})
    if st == 200 or time.monotonic() > deadline:
        break
    time.sleep(0.5)
check("served after timeouts", st == 200, st)
check("exit 0", srv.stop() == 0)

# ---- dynamic batching: requests that wait together are decoded together ----

srv = Server("-m", ZH_EN, "--threads", "1")
for attempt in range(3):
    got = burst(srv, [{"model": "zh-en", "text": s} for s in dev * 2])
    st, h, _ = srv.request("GET", "/healthz")
    if h["batches"] < h["requests_decoded"]:
        break
check("all answered", all(g[0] == 200 for g in got))
check("batched across requests: fewer batches than requests", h["batches"] < h["requests_decoded"], h)
same = all(g[1]["results"][0]["translation"] == w["hypotheses"][0]["text"]
           for g, w in zip(got, [json.loads(x) for x in cli("translate", "-m", ZH_EN, "--json",
                                                                 stdin="\n".join(dev * 2) + "\n").splitlines()]))
check("batched translations equal the CLI's", same)
check("exit 0", srv.stop() == 0)

# ---- SIGTERM drains: the request in progress is answered ----

srv = Server("-m", ZH_EN, "--threads", "1", "--timeout", "300")
res = {}


def send(key, body):
    res[key] = srv.request("POST", "/v1/translate", body, timeout=300)


heavy = threading.Thread(target=send, args=("heavy", {"model": "zh-en", "texts": dev * 4, "beam_size": 4}))
heavy.start()
light = None
for _ in range(200):  # the light one is sent once the heavy one runs, and SIGTERM once it waits
    st, h, _ = srv.request("GET", "/healthz")
    if light is None and h["queued"] == 0 and "heavy" not in res:
        light = threading.Thread(target=send, args=("light", {"model": "zh-en", "text": "我爱吃苹果"}))
        light.start()
    if h["queued"] >= 1 or "heavy" in res:
        break
    time.sleep(0.01)
rc = srv.stop()
heavy.join()
if light:
    light.join()
check("SIGTERM: the request in progress is answered", res["heavy"][0] == 200, res["heavy"][0])
check("SIGTERM: the queued request is answered", light is None or res["light"][0] == 200)
check("SIGTERM: exit 0", rc == 0)

# ---- bad command lines ----

for args, why in ((["serve"], "no model"), (["serve", "-m", ZH_EN, "--port", "70000"], "port"),
                  (["serve", "-m", "/nonexistent.safetensors", "--port", "0"], "missing model"),
                  (["serve", "-m", ZH_EN, "-m", ZH_EN, "--port", "0"], "two models of one name"),
                  (["serve", "-m", ZH_EN, "--host", "no-such-host.invalid", "--port", "0"],
                   "a host name that does not resolve")):
    p = subprocess.run([S2S, *args], capture_output=True, text=True, timeout=60)
    check(f"exit 2: {why}", p.returncode == 2 and p.stderr.count("\n") == 1, (p.returncode, p.stderr))

# Issue 32: a host name that resolves to loopback (localhost) is taken.
p = subprocess.Popen([S2S, "serve", "-m", ZH_EN, "--host", "localhost", "--port", "0"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
line = p.stdout.readline()
check("--host localhost: listening", line.startswith("listening on http://localhost:"), line)
if line.startswith("listening on http://localhost:"):
    c = http.client.HTTPConnection("127.0.0.1", int(line.rsplit(":", 1)[1]), timeout=60)
    c.request("GET", "/healthz")
    check("--host localhost: answers on 127.0.0.1", c.getresponse().status == 200)
    c.close()
p.send_signal(signal.SIGTERM)
check("--host localhost: exit 0 on SIGTERM", p.wait(timeout=60) == 0)
p.stdout.close()
p.stderr.close()

finish("serve_api")
