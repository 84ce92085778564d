#!/usr/bin/env python3
"""Copies a safetensors model without its calibrated coreference head
(metadata s2s.coref_layer / s2s.coref_head), for tests that need a model
without one now that the shipped models have one.
    strip_coref_head.py IN OUT"""
import json
import struct
import sys

src, dst = sys.argv[1], sys.argv[2]
with open(src, "rb") as f:
    data = f.read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
meta = header.get("__metadata__", {})
if "s2s.coref_layer" not in meta:
    sys.exit("strip_coref_head: %s has no coreference head" % src)
for k in ("s2s.coref_layer", "s2s.coref_head"):
    meta.pop(k, None)
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)  # the data stays 8-byte aligned
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + data[8 + n:])
