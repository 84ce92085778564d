#!/usr/bin/env python3
"""libs2s exports exactly its documented API (issue 33).

    exported_symbols_test.py LIBRARY NM INCLUDE_DIR

Every function declared in INCLUDE_DIR/*.h (include/s2s/) must carry
S2S_API, and at most MAX_API of them. For a shared LIBRARY (libs2s.so) the
symbols `nm -D --defined-only` lists must be exactly those functions: an
internal function exported, or a public one missing, fails, naming it.
For a static library (the sanitizer builds) every S2S_API function must be
defined in it.
"""

import glob
import os
import re
import subprocess
import sys

MAX_API = 100


def declarations(include_dir):
    """{name: (header, marked)} for every function declared in the headers."""
    found = {}
    for path in sorted(glob.glob(os.path.join(include_dir, "*.h"))):
        text = open(path, encoding="utf-8").read()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"//[^\n]*", "", text)
        text = re.sub(r"^\s*#(?:[^\n]*\\\n)*[^\n]*", "", text, flags=re.M)  # directives
        text = re.sub(r'extern\s+"C"\s*\{|^\}\s*$', "", text, flags=re.M)
        # Statements at file level: drop bodies of structs, enums and inline
        # functions, then split on ';'.
        flat, depth = [], 0
        for ch in text:
            if ch == "{":
                depth += 1
                flat.append(";" if depth == 1 else "")
            elif ch == "}":
                depth -= 1
            elif depth == 0:
                flat.append(ch)
        for stmt in "".join(flat).split(";"):
            stmt = " ".join(stmt.split())
            if not stmt or stmt.startswith("typedef") or "static inline" in stmt:
                continue
            m = re.search(r"\b(s2s_\w+)\s*\(", stmt)
            if m and "(*" not in stmt[: m.start()]:
                found[m.group(1)] = (os.path.basename(path), stmt.startswith("S2S_API "))
    return found


def defined(nm, lib, dynamic):
    args = [nm, "--defined-only"] + (["-D"] if dynamic else ["-g"]) + [lib]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            names.add(parts[2].split("@")[0])
    return names


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    lib, nm, include_dir = sys.argv[1:]
    decls = declarations(include_dir)
    problems = []
    for name, (header, marked) in sorted(decls.items()):
        if not marked:
            problems.append(f"{header}: {name} is declared without S2S_API")
    api = set(decls)
    if len(api) > MAX_API:
        problems.append(f"{len(api)} public functions, more than {MAX_API}")
    if lib.endswith(".a"):
        have = defined(nm, lib, dynamic=False)
        for name in sorted(api - have):
            problems.append(f"{decls[name][0]}: {name} is not defined in {os.path.basename(lib)}")
    else:
        have = defined(nm, lib, dynamic=True)
        for name in sorted(have - api):
            problems.append(f"{os.path.basename(lib)} exports {name}, which include/s2s/ does not declare")
        for name in sorted(api - have):
            problems.append(f"{decls[name][0]}: {name} is not exported by {os.path.basename(lib)}")
    for p in problems:
        print("FAIL: " + p)
    print(f"exported_symbols: {len(api)} public functions, {len(have)} defined "
          f"({'static' if lib.endswith('.a') else 'exported'}), {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
