#!/usr/bin/env python3
"""The gradient norms of each attention's Q, K, V and output matrices, per
layer, from a training log's `grad_norms` (docs/training.md): one column
per logged step asked for (default: the first and the last that carry
norms). The text of docs/attention-lab.md's "Gradient flow".

    scripts/grad_norms_table.py LOG [STEP...]
"""
import json
import sys


def main(argv):
    if not argv:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    lines = {}
    with open(argv[0], encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                d = json.loads(line)
            except ValueError:
                print(f"{argv[0]}:{n}: skipped: not JSON", file=sys.stderr)
                continue
            if "grad_norms" in d:
                lines[d["step"]] = d["grad_norms"]
    if not lines:
        print(f"{argv[0]}: no line with grad_norms", file=sys.stderr)
        return 2
    steps = [int(s) for s in argv[1:]] or [min(lines), max(lines)]
    missing = [s for s in steps if s not in lines]
    if missing:
        print(f"{argv[0]}: no grad_norms at step {missing[0]}", file=sys.stderr)
        return 2
    mats = ("q_proj", "k_proj", "v_proj", "out_proj")
    print("attention".ljust(32) + "".join(f"{m[0] if m != 'out_proj' else 'out'} @{s}".rjust(10)
                                          for s in steps for m in mats))
    names = sorted({k.rsplit(".", 1)[0] for k in lines[steps[0]] if k.endswith(".q_proj")},
                   key=lambda k: (k.split(".")[0] != "encoder", int(k.split(".")[2]),
                                  not k.endswith("self_attn")))
    for a in names:
        print(a.ljust(32) + "".join(f"{lines[s][f'{a}.{m}']:10.4f}" for s in steps for m in mats))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
