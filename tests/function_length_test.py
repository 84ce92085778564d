#!/usr/bin/env python3
"""Functions in src/ stay under 80 lines (issue 33), but for the few named
in ALLOWED, which must still be long: an exception that got short is taken
off the list, so the list says what is true.

A function's length is its lines from the first line of its signature to
its closing brace. Functions are found with a brace matcher over the code
with comments, strings, character literals and preprocessor lines blanked
out: a `{` at file scope after a `)` opens a function (`= {`, `struct x {`
and `enum {` do not).

    function_length_test.py [SRC_DIR]      (default: the src/ beside tests/)
    function_length_test.py --list [SRC_DIR]   every function over the limit
"""

import os
import re
import sys

LIMIT = 80
MAX_ALLOWED = 4
# file (under src/) and function: the long ones that stay, at most MAX_ALLOWED.
ALLOWED = {
    ("model/safetensors.c", "s2s_st_open"),
    ("config/walk.c", "load_base"),
    ("cli/cmd_serve.c", "s2s_cmd_serve"),
}


def blank(text):
    """text with comments, string and char literals and preprocessor
    lines replaced by spaces (newlines kept, so line numbers hold)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            # a directive, with its backslash-continued lines
            j = i
            while True:
                k = text.find("\n", j)
                if k < 0:
                    k = n
                if k > 0 and text[k - 1] == "\\" and k < n:
                    j = k + 1
                    continue
                break
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
            continue
        if text.startswith("//", i):
            k = text.find("\n", i)
            k = n if k < 0 else k
            out.append(" " * (k - i))
            i = k
            continue
        if text.startswith("/*", i):
            k = text.find("*/", i + 2)
            k = n if k < 0 else k + 2
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
            continue
        if c in "\"'":
            k = i + 1
            while k < n and text[k] != c:
                k += 2 if text[k] == "\\" else 1
            k = min(k + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:k - 1]) + c)
            i = k
            line_start = False
            continue
        out.append(c)
        if c == "\n":
            line_start = True
        elif not c.isspace():
            line_start = False
        i += 1
    return "".join(out)


def functions(path):
    """(name, first line, length in lines) of each function defined in path."""
    code = blank(open(path, encoding="utf-8").read())
    found, depth = [], 0
    open_fn = None  # (name, first line) of the function being read
    for m in re.finditer(r"[{}]", code):
        if m.group() == "{":
            if depth == 0:
                before = code[:m.start()].rstrip()
                if before.endswith(")"):
                    # the matching '(' of the parameter list, then the name
                    level, k = 0, len(before) - 1
                    while k >= 0:
                        if before[k] == ")":
                            level += 1
                        elif before[k] == "(":
                            level -= 1
                            if level == 0:
                                break
                        k -= 1
                    name = re.search(r"(\w+)\s*$", before[:k])
                    if name:
                        first = code.count("\n", 0, name.start(1)) + 1
                        open_fn = (name.group(1), first)
            depth += 1
        else:
            depth -= 1
            if depth == 0 and open_fn:
                last = code.count("\n", 0, m.start()) + 1
                found.append((open_fn[0], open_fn[1], last - open_fn[1] + 1))
                open_fn = None
    return found


def long_functions(src):
    """{(file under src, name): (line, length)} of the functions over LIMIT."""
    out = {}
    for folder, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(folder, f)
            rel = os.path.relpath(path, src)
            for name, line, length in functions(path):
                if length > LIMIT:
                    out[(rel, name)] = (line, length)
    return out


def main(argv):
    listing = "--list" in argv
    args = [a for a in argv if a != "--list"]
    src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    long = long_functions(src)
    if listing:
        for (rel, name), (line, length) in sorted(long.items(), key=lambda x: -x[1][1]):
            print("%4d  src/%s:%d %s" % (length, rel, line, name))
        return 0
    bad = []
    if len(ALLOWED) > MAX_ALLOWED:
        bad.append("%d exceptions listed; at most %d" % (len(ALLOWED), MAX_ALLOWED))
    for (rel, name), (line, length) in sorted(long.items()):
        if (rel, name) not in ALLOWED:
            bad.append("src/%s:%d: %s is %d lines (limit %d): split it" % (rel, line, name, length, LIMIT))
    for rel, name in sorted(ALLOWED - set(long)):
        bad.append("src/%s: %s is no longer over %d lines: take it off ALLOWED" % (rel, name, LIMIT))
    for b in bad:
        print(b)
    if bad:
        return 1
    print("function_length: no function in src/ over %d lines but the %d allowed (%s)"
          % (LIMIT, len(ALLOWED), ", ".join(sorted(n for _, n in ALLOWED))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
