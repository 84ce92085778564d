#!/usr/bin/env python3
"""Copies a model file without some keys of its stored config, so that an
older build (which refuses keys it does not know) reads the same weights:
bench/compute_types.sh's BASE runs on the shipped models this way.

    python3 bench/drop_config_keys.py IN OUT KEY...

Each KEY is a config line's key (e.g. repetition_penalty); the lines that
set it are left out of the s2s.config metadata. The tensors are copied
byte for byte.
"""
import json
import struct
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: drop_config_keys.py IN OUT KEY...")
    src, dst, keys = sys.argv[1], sys.argv[2], set(sys.argv[3:])
    with open(src, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    meta = header["__metadata__"]
    lines = meta["s2s.config"].split("\n")
    kept = [l for l in lines if l.strip().split(":")[0] not in keys]
    meta["s2s.config"] = "\n".join(kept)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)  # data stays 8-byte aligned
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
    print(f"{dst}: {len(lines) - len(kept)} config lines left out", file=sys.stderr)


if __name__ == "__main__":
    main()
