#!/usr/bin/env python3
"""The half of scripts/compare_behaviour.sh that compares numbers.

  compare_behaviour.py jsonl BASE NEW [--tol X] [--drop KEY]...
      Two files of JSON lines, line by line: the same keys, strings,
      booleans and lengths, numbers within X (absolute; default 0, equal),
      after removing each KEY wherever it stands. Prints "same" (with the
      largest difference when it is not 0) or "DIFFERS line N: WHERE: base
      A new B"; exit 0 when the same, 1 when not.

  compare_behaviour.py speed FIGURES
      FIGURES: lines THREADS<TAB>ROW<TAB>UNIT<TAB>base|new<TAB>VALUE, one per
      measurement. Prints a row per (THREADS, ROW) in the order they first
      come: the median of each side, new/base, and the spread (the larger
      side's (max - min) / median).
"""
import argparse
import json
import statistics
import sys


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def drop(v, keys):
    if isinstance(v, dict):
        return {k: drop(x, keys) for k, x in v.items() if k not in keys}
    if isinstance(v, list):
        return [drop(x, keys) for x in v]
    return v


def difference(a, b, tol, where, worst):
    """Where a and b first differ beyond tol, as (where, base, new); None if nowhere.
    worst[0] grows to the largest difference between numbers seen."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b:
                return f"{where}.{k}", a[k], "(no such key)"
        for k in b:
            if k not in a:
                return f"{where}.{k}", "(no such key)", b[k]
        for k in a:
            d = difference(a[k], b[k], tol, f"{where}.{k}", worst)
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where} length", len(a), len(b)
        for i, (x, y) in enumerate(zip(a, b)):
            d = difference(x, y, tol, f"{where}[{i}]", worst)
            if d:
                return d
        return None
    if is_number(a) and is_number(b):
        d = abs(a - b)
        worst[0] = max(worst[0], d)
        # the slack absorbs the binary rounding of decimal figures (1e-6 apart
        # in print may be 1.0000000000287557e-06 apart as doubles)
        return None if d <= tol * (1 + 1e-9) else (where, a, b)
    return None if a == b else (where, a, b)


def jsonl(args):
    keys = set(args.drop)
    with open(args.base, encoding="utf-8") as f:
        base = f.read().splitlines()
    with open(args.new, encoding="utf-8") as f:
        new = f.read().splitlines()
    worst = [0.0]
    for n in range(max(len(base), len(new))):
        if n >= len(base) or n >= len(new):
            side = "base" if n >= len(base) else "new"
            print(f"DIFFERS line {n + 1}: {side} has no such line ({len(base)} lines in base, {len(new)} in new)")
            return 1
        try:
            a, b = (drop(json.loads(s), keys) for s in (base[n], new[n]))
        except json.JSONDecodeError as e:
            print(f"DIFFERS line {n + 1}: not JSON ({e})")
            return 1
        d = difference(a, b, args.tol, "", worst)
        if d:
            where, x, y = d
            print(f"DIFFERS line {n + 1}: {where or 'the line'}: base {json.dumps(x, ensure_ascii=False)}"
                  f" new {json.dumps(y, ensure_ascii=False)}")
            return 1
    print("same" + (f" (largest difference {worst[0]:.3g})" if worst[0] else ""))
    return 0


def speed(args):
    rows = {}  # (threads, row, unit) -> {"base": [...], "new": [...]}, in first-seen order
    with open(args.figures, encoding="utf-8") as f:
        for line in f:
            threads, row, unit, side, value = line.rstrip("\n").split("\t")
            rows.setdefault((threads, row, unit), {"base": [], "new": []})[side].append(float(value))
    print(f"{'threads':>7}  {'row':<28} {'unit':<8} {'base':>10} {'new':>10} {'new/base':>8} {'spread':>7}")
    for (threads, row, unit), v in rows.items():
        if not v["base"] or not v["new"]:
            continue
        b, n = statistics.median(v["base"]), statistics.median(v["new"])
        spread = max((max(x) - min(x)) / statistics.median(x) for x in v.values())
        digits = 0 if b >= 1000 else 1
        print(f"{threads:>7}  {row:<28} {unit:<8} {b:>10,.{digits}f} {n:>10,.{digits}f} {n / b:>7.2f}x"
              f" {100 * spread:>6.1f}%")
    return 0


def main():
    p = argparse.ArgumentParser(description="the number comparisons of scripts/compare_behaviour.sh")
    sub = p.add_subparsers(dest="command", required=True)
    j = sub.add_parser("jsonl")
    j.add_argument("base")
    j.add_argument("new")
    j.add_argument("--tol", type=float, default=0.0)
    j.add_argument("--drop", action="append", default=[])
    s = sub.add_parser("speed")
    s.add_argument("figures")
    args = p.parse_args()
    return jsonl(args) if args.command == "jsonl" else speed(args)


if __name__ == "__main__":
    sys.exit(main())
