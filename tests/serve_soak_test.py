#!/usr/bin/env python3
"""`s2s serve` under abuse, on 127.0.0.1 (issue 27), each part asserting
what a client sees:

- slow clients (a byte now and then, never idle) are closed at
  --request-timeout, and cannot keep a plain client out when they hold
  every connection; loopback clients are not held to --max-per-address;
- two different Content-Length headers are refused;
- a request that needs more memory than there is gets 413 naming its
  options, and the server goes on;
- mixed attention and beam requests under concurrency get what each gets
  alone (the batching key);
- after an outsized request, normal batches get a fresh server's replies
  (scores within 1e-4: batches of other sizes move their last digits;
  tests/test_serve.c compares one request at a time, byte for byte);
- SIGTERM under keep-alive load: the request in progress is answered,
  new ones are not taken, the server exits well within its grace period.

Bounded (about 30 s), loopback only.

    python3 tests/serve_soak_test.py build/s2s
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

import serve_client
from serve_client import check, finish

S2S = os.path.abspath(sys.argv[1])
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZH_EN = os.path.join(ROOT, "models", "zh-en.safetensors")
SENTENCES = ["我爱吃苹果", "它的猫昨天脏，它不聪明。", "玛丽哭，所以她是朋友。", "安静的牛今天追那只鸟。"]


class Server(serve_client.Server):
    def __init__(self, *args, memory=None):
        super().__init__(S2S, "-m", ZH_EN, *args, memory=memory, stderr=subprocess.DEVNULL)

    def request(self, body, path="/v1/translate", timeout=60):
        """A JSON body POSTed (None: a GET): (status, body bytes)"""
        st, data, _ = self.send("POST" if body is not None else "GET", path,
                                json.dumps(body) if body is not None else None, timeout=timeout)
        return st, data


def close(a, b, path="$"):
    """None when the replies a and b agree: every string, key and integer
    equal, every float within 1e-4 (a batch's padding moves the last digits
    of a score, as the CLI's --batch does); else where they differ."""
    if isinstance(a, float) or isinstance(b, float):
        ok = isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= 1e-4
        return None if ok else f"{path}: {a} vs {b}"
    if type(a) is not type(b):
        return f"{path}: {a!r} vs {b!r}"
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return f"{path}: keys {sorted(a)} vs {sorted(b)}"
        return next((d for k in a if (d := close(a[k], b[k], f"{path}.{k}"))), None)
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := close(x, y, f"{path}[{i}]"))),
                    None)
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def burst(server, bodies):
    out = [None] * len(bodies)

    def one(i):
        try:
            out[i] = server.request(bodies[i])
        except OSError as e:
            out[i] = (None, str(e).encode())
    ts = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


try:
    # ---- slow clients ----
    srv = Server("--max-connections", "16", "--request-timeout", "2", "--idle-timeout", "10",
                 "--max-per-address", "4")
    slow, stop_dribble = [], threading.Event()
    for _ in range(16):  # every connection taken by a client sending a byte every 0.3 s
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        s.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\n")
        slow.append(s)

    def dribble():
        while not stop_dribble.wait(0.3):
            for s in slow:
                try:
                    s.send(b"X")
                except OSError:
                    pass
    threading.Thread(target=dribble, daemon=True).start()
    time.sleep(1.2)  # the slow ones have been at it over a second: they give way
    t0 = time.monotonic()
    try:  # before issue 27: refused (the connection closed at once) for as long as they went on
        st, body = srv.request({"text": "我爱吃苹果"}, timeout=10)
    except (ConnectionError, http.client.HTTPException, OSError) as e:
        st, body = None, str(e).encode()
    check("slow clients holding every connection: a plain client is answered",
          st == 200 and json.loads(body)["results"][0]["translation"] == "I love to eat apples.",
          (st, body[:100]))
    closed, t_closed = 0, []
    for s in slow:
        try:
            s.settimeout(6)
            got = s.recv(4096)
            if got == b"" or got.startswith(b"HTTP/1.1 4"):
                closed += 1
                t_closed.append(time.monotonic() - t0)
        except ConnectionResetError:
            closed += 1
            t_closed.append(time.monotonic() - t0)
        except socket.timeout:
            pass
    stop_dribble.set()
    for s in slow:
        s.close()
    # (each waits at most 6 s for it: before issue 27, none was ever closed)
    check("every slow client is closed by --request-timeout 2", closed == 16, (closed, t_closed))

    # Loopback is not held to --max-per-address: 40 keep-alive clients at once.
    conns = [http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30) for _ in range(12)]
    ok = 0
    for c in conns:
        c.request("GET", "/healthz")
        ok += c.getresponse().read() != b"" and 1
    for c in conns:
        c.close()
    check("loopback: 12 connections at once of the 16, over --max-per-address 4", ok == 12, ok)

    # ---- two Content-Length headers ----
    got = srv.raw(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                  b"Content-Length: 40\r\n\r\n{}")
    check("two different Content-Length headers: 400 and closed",
          got.startswith(b"HTTP/1.1 400") and b"Content-Length" in got, got[:200])
    body = json.dumps({"text": "我爱吃苹果"}).encode()
    got = srv.raw(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                  b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n%s"
                  % (len(body), len(body), body))
    check("the same Content-Length twice is one", got.startswith(b"HTTP/1.1 200"), got[:100])
    check("exit 0", srv.stop() == 0)

    # ---- mixed attention and beam requests under concurrency ----
    srv = Server("--threads", "1")
    kinds = [(a, b) for a in (False, True) for b in (1, 2)]
    alone = {}
    for a, b in kinds:
        for s in SENTENCES:
            st, body = srv.request({"text": s, "attention": a, "beam_size": b})
            alone[(a, b, s)] = (st, body)
    check("alone: a beam with attention is 400, the rest 200",
          all(v[0] == (400 if k[0] and k[1] > 1 else 200) for k, v in alone.items()))
    bodies = [{"text": s, "attention": a, "beam_size": b} for s in SENTENCES for a, b in kinds] * 3
    got = burst(srv, bodies)
    diffs = [close(json.loads(g[1]),
                   json.loads(alone[(b["attention"], b["beam_size"], b["text"])][1]))
             for g, b in zip(got, bodies)]
    check("48 mixed requests at once: each gets its reply alone", not any(diffs) and
          all(g[0] == alone[(b["attention"], b["beam_size"], b["text"])][0]
              for g, b in zip(got, bodies)), [d for d in diffs if d][:3])
    st, h = srv.request(None, "/healthz")
    h = json.loads(h)
    check("... and some were batched", h["batches"] < h["requests_decoded"], h)
    check("exit 0", srv.stop() == 0)

    # ---- an outsized request, then normal batches ----
    normal = [{"texts": [SENTENCES[k % 4], SENTENCES[(k + 1) % 4]]} for k in range(16)] + \
             [{"text": s, "beam_size": 4, "n_best": 2} for s in SENTENCES]
    srv = Server("--threads", "1")
    fresh = burst(srv, normal)
    check("fresh server: normal batches answered", all(g[0] == 200 for g in fresh))
    st, _ = srv.request({"texts": [SENTENCES[k % 4] for k in range(64)], "beam_size": 64,
                         "n_best": 64})
    check("the largest request the schema allows is answered", st == 200, st)
    for rnd in range(2):
        after = burst(srv, normal)
        diff = close([json.loads(g[1]) for g in after], [json.loads(g[1]) for g in fresh])
        check(f"after it, normal batches get a fresh server's replies (round {rnd})", not diff,
              diff)
    st, body = srv.request({"text": "我", "beam_size": 10000})
    check("beam_size 10000: 400 naming the option", st == 400 and b"beam_size" in body, body)
    check("exit 0", srv.stop() == 0)

    # ---- a request larger than the memory there is: 413 naming its options ----
    srv = Server("--threads", "1", memory=384 << 20)
    st, _ = srv.request({"text": "我爱吃苹果"})
    check("384 MiB of address space: a plain request is answered", st == 200, st)
    st, body = srv.request({"texts": [SENTENCES[k % 4] for k in range(64)], "beam_size": 64,
                            "n_best": 64})
    j = json.loads(body) if body.startswith(b"{") else {}
    check("64 texts at beam 64 in 384 MiB: 413 too_large naming beam_size (was 500 internal)",
          st == 413 and j.get("error") == "too_large" and "beam_size 64" in j.get("message", ""),
          (st, body[:200]))
    st, body = srv.request({"texts": SENTENCES})
    check("... and the next request is answered", st == 200, (st, body[:100]))
    check("exit 0", srv.stop() == 0)

    # ---- SIGTERM under keep-alive load ----
    srv = Server("--threads", "1", "--timeout", "30")
    heavy_res, stats, lock = {}, {"ok": 0, "late": 0, "other": []}, threading.Lock()
    stopping, t_sig = threading.Event(), [float("inf")]

    def keep_alive():
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        while True:
            sent = time.monotonic()
            try:
                c.request("POST", "/v1/translate", json.dumps({"text": "我爱吃苹果"}))
                r = c.getresponse()
                data = r.read()
            except (ConnectionError, http.client.HTTPException, OSError):
                return  # closed while idle: the server took no request of it
            with lock:
                if r.status == 200 and json.loads(data)["results"]:
                    stats["ok"] += 1
                    stats["late"] += sent > t_sig[0] + 0.2
                elif r.status == 503 and json.loads(data)["error"] == "shutting_down":
                    pass
                else:
                    stats["other"].append((r.status, data[:80]))
            if r.getheader("Connection", "").lower() == "close":
                return

    def heavy():
        heavy_res["r"] = srv.request({"texts": SENTENCES * 8, "beam_size": 16, "min_len": 40},
                                     timeout=120)
    clients = [threading.Thread(target=keep_alive) for _ in range(64)]
    for t in clients:
        t.start()
    time.sleep(1)
    h = threading.Thread(target=heavy)
    h.start()
    time.sleep(0.3)
    stopping.set()
    t0 = t_sig[0] = time.monotonic()
    rc = srv.stop()
    took = time.monotonic() - t0
    for t in clients:
        t.join(timeout=60)
    h.join(timeout=120)
    check("SIGTERM under keep-alive load: exit 0", rc == 0, rc)
    # A bound far above the drain (the heavy request, about a second), far
    # below what it was: 31 s, --timeout and a second of grace, new requests
    # taken all along.
    check("... within 15 s, not the 31 s grace", took < 15, took)
    check("... the request in progress is answered", heavy_res.get("r", (None,))[0] == 200,
          heavy_res.get("r"))
    check("... every reply whole and as documented", not stats["other"], stats["other"][:3])
    check("... the clients were answered before it", stats["ok"] > 64, stats["ok"])
    # Before issue 27 it went on answering new requests on the open
    # connections until none was in progress, or the grace period ended.
    check("... no request sent after it is taken", stats["late"] == 0, stats["late"])
    check("... every client's connection ends", all(not t.is_alive() for t in clients))
finally:
    for p in serve_client.running:
        if p.poll() is None:
            p.kill()

finish("serve_soak")
