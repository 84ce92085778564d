#!/usr/bin/env python3
"""Time to the first translated line: `s2s translate` of one short sentence,
whole process, for each command given, runs interleaved (A B C A B C ...)
so that a change in the machine's load hits every command alike. Prints the
median wall time, the median CPU time (user + system of the child) and the
ratio of each median to the first command's.

    bench/first_line.py [--runs N] 'CMD A' 'CMD B' ...
    bench/first_line.py --runs 9 \\
        '/work/wt-speed-base/build/s2s translate -m models/zh-en.safetensors 我爱吃苹果' \\
        'build/s2s translate -m models/zh-en.safetensors 我爱吃苹果'
"""
import os
import shlex
import statistics
import subprocess
import sys
import time

args = sys.argv[1:]
runs = 7
if args[:1] == ["--runs"]:
    runs, args = int(args[1]), args[2:]
if not args:
    sys.exit(__doc__)
wall = {c: [] for c in args}
cpu = {c: [] for c in args}
first = {}
for _ in range(runs):
    for c in args:
        t0 = time.perf_counter()
        r0 = os.times()
        p = subprocess.Popen(shlex.split(c), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = p.stdout.readline()  # the first translated line
        t1 = time.perf_counter()
        p.stdout.read()
        p.wait()
        r1 = os.times()
        wall[c].append(t1 - t0)
        cpu[c].append((r1.children_user - r0.children_user) + (r1.children_system - r0.children_system))
        first.setdefault(c, line.decode().strip())
w0, c0 = statistics.median(wall[args[0]]), statistics.median(cpu[args[0]])
print(f"| command | first line | median wall ms | ratio | median CPU ms | ratio |")
print("|---|---|---:|---:|---:|---:|")
for c in args:
    w, u = statistics.median(wall[c]), statistics.median(cpu[c])
    print(f"| `{c}` | {first[c]} | {w*1e3:.1f} | {w/w0:.2f} | {u*1e3:.1f} | {u/c0:.2f} |")
print(f"\n{runs} runs each, interleaved; load average {os.getloadavg()[0]:.1f}")
