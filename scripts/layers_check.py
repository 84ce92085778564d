#!/usr/bin/env python3
"""The architecture rule of src/: floors, dependencies pointing down, no circles.

    python3 scripts/layers_check.py [--build DIR] [--source DIR] [--nm NM]

The folders of src/ are floors, from the bottom up (FLOORS below):

    core, ops, tokenizer, config, model, layers, decoding, align, train,
    tools, serve, cli

A file may depend on its own folder and on lower floors (and on the public
headers of include/s2s/, allowed anywhere), never on a higher floor. serve
sits between train and cli: it includes decoding/ and align/ headers and calls
decoding, align, config, model and tokenizer; nothing of train, and nothing
in the library but the cli calls it. So it belongs above align and below cli;
above train rather than below it because it is the library's side of one
command (`s2s serve`), and train, a library feature of its own, has no
business calling it. tools (the HTML report and the terminal heatmap,
the viewer the report and the served page share) sits below serve, which
serves the viewer, and above align, whose maps it draws. tools and serve
are the static s2s_tools of the command, not part of libs2s.

A folder of src/ missing from FLOORS is itself a violation: a new folder
gets its floor here first.

Two maps are checked:

1. Includes. Every `#include "..."` of every .c and .h file under src/
   (comments ignored) is resolved as the compiler does: beside the including
   file, then src/, then include/. An include of a header of a higher floor
   is reported with the file, the line and both folders. Headers of
   include/ ("s2s/...") are allowed anywhere.

2. Calls, from the compiled objects. For each object file of a src/*.c file
   under the build directory (CMake's CMakeFiles/<target>.dir/src/...c.o;
   other targets that compile the same source again, such as the fuzz
   targets, are the same file and are read once), `nm` gives the functions
   it defines (T, W, i) and the symbols it uses (U). File A calls file B when
   A uses a function B defines. Reported:
   - every call that climbs a floor (a lower file calling a function of a
     higher one), with the functions and the line of their first use;
   - every circle: each strongly connected component of the file graph with
     more than one file, with one function (and the line of its first use)
     for each edge inside it.
   Taking the address of another file's function counts as a call (the
   object names it as U); a call through a pointer variable names nothing
   and is not seen, nor are shared global variables (only functions tie
   files here). Objects older than their source give the old calls (a note
   on stderr names them).

Output: one line per violation (`file:line: ...`), then a summary line.
Notes (stale or missing objects, unresolved includes) go to stderr.

Exit status: 0 no violation; 1 at least one violation; 2 no object file of
a src/*.c file found under the build directory (build it first: this check
reads the objects), or a usage error.

--build DIR   the CMake build directory (default: build/ of this repository)
--source DIR  the source tree (default: the one the build directory was
              configured from, CMAKE_HOME_DIRECTORY of its CMakeCache.txt,
              else this repository)
--nm NM       the nm program (default: $NM, else nm); llvm-nm for LTO objects
"""

import argparse
import os
import re
import subprocess
import sys

FLOORS = ["core", "ops", "tokenizer", "config", "model", "layers",
          "decoding", "align", "train", "tools", "serve", "cli"]
FLOOR = {name: i for i, name in enumerate(FLOORS)}

# nm types of a function defined in the object: text, weak, indirect (ifunc).
FUNC_DEFINED = {"T", "W", "i"}

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def note(msg):
    print("layers_check: note: " + msg, file=sys.stderr)


# ---- C text ----

C_TOKEN_RE = re.compile(r"""//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?""", re.S)


def strip_c(text, keep_strings):
    """The text with comments (and, unless keep_strings, string and character
    literals) blanked to spaces, newlines kept, so line numbers stay."""
    def blank(m):
        tok = m.group(0)
        if tok[0] in "\"'":
            if keep_strings:
                return tok
            return tok[0] + re.sub(r"[^\n]", " ", tok[1:-1]) + tok[-1] if len(tok) > 1 else tok
        return re.sub(r"[^\n]", " ", tok)
    return C_TOKEN_RE.sub(blank, text)


INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


class Tree:
    """The files of src/, their folders and their includes."""

    def __init__(self, source):
        self.source = source
        self.src = os.path.join(source, "src")
        self.files = []            # src-relative paths of .c and .h, e.g. "core/util.c"
        for root, dirs, names in os.walk(self.src):
            dirs.sort()
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    self.files.append(os.path.relpath(os.path.join(root, name), self.src))
        self._code = {}

    @staticmethod
    def folder(rel):
        parts = rel.split(os.sep)
        return parts[0] if len(parts) > 1 else ""

    def text(self, rel):
        with open(os.path.join(self.src, rel), encoding="utf-8", errors="replace") as f:
            return f.read()

    def code(self, rel):
        """Comments and literals blanked: identifiers only where they are code."""
        if rel not in self._code:
            self._code[rel] = strip_c(self.text(rel), keep_strings=False)
        return self._code[rel]

    def resolve(self, rel, name):
        """("src", path) for a header of src/, ("public", path) for include/,
        (None, name) when neither holds it."""
        here = os.path.dirname(os.path.join(self.src, rel))
        for base, kind in ((here, "src"), (self.src, "src"),
                           (os.path.join(self.source, "include"), "public")):
            path = os.path.normpath(os.path.join(base, name))
            if os.path.isfile(path):
                if kind == "src" and not path.startswith(self.src + os.sep):
                    return "outside", path
                return kind, (os.path.relpath(path, self.src) if kind == "src" else path)
        return None, name

    def includes(self, rel):
        """(line, name, kind, target) for each #include "..." of the file."""
        text = strip_c(self.text(rel), keep_strings=True)
        for m in INCLUDE_RE.finditer(text):
            kind, target = self.resolve(rel, m.group(1))
            yield line_of(text, m.start()), m.group(1), kind, target

    def first_use(self, rel, symbol, seen=None):
        """'file:line' of the first use of symbol in rel (a call if there is
        one), else in the src headers it includes; None if nowhere."""
        code = self.code(rel)
        m = (re.search(r"\b%s\s*\(" % re.escape(symbol), code)
             or re.search(r"\b%s\b" % re.escape(symbol), code))
        if m:
            return "%s:%d" % (os.path.join("src", rel), line_of(code, m.start()))
        seen = set() if seen is None else seen
        seen.add(rel)
        for _, _, kind, target in self.includes(rel):
            if kind == "src" and target not in seen:
                where = self.first_use(target, symbol, seen)
                if where:
                    return where
        return None


# ---- objects ----

def cmake_home(build):
    try:
        with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


def find_objects(build, tree):
    """{src-relative .c path: object path}, one object per source file.

    CMake puts the object of SOURCE (relative to the CMakeLists.txt of the
    target's folder, `..` spelt `__`) at <build>/<folder>/CMakeFiles/
    <target>.dir/SOURCE.o; the build folder mirrors the source folder."""
    found = {}
    for root, dirs, names in os.walk(build):
        dirs.sort()
        parts = root.split(os.sep)
        try:
            at = len(parts) - 1 - parts[::-1].index("CMakeFiles")
        except ValueError:
            continue
        if at + 1 >= len(parts) or not parts[at + 1].endswith(".dir"):
            continue
        folder = os.path.relpath(os.sep.join(parts[:at]) or os.sep, build)
        inside = parts[at + 2:]
        for name in names:
            if not name.endswith((".c.o", ".c.obj")):
                continue
            rel_source = os.path.join(folder, *inside, name[: name.rindex(".c.") + 2])
            rel_source = os.path.normpath(os.sep.join(
                ".." if p == "__" else p for p in rel_source.split(os.sep)))
            path = os.path.normpath(os.path.join(tree.source, rel_source))
            if not path.startswith(tree.src + os.sep):
                continue
            rel = os.path.relpath(path, tree.src)
            obj = os.path.join(root, name)
            if not os.path.isfile(path):
                note("%s: its source src/%s is gone (stale object, ignored)" % (obj, rel))
                continue
            # Prefer the object of the shallowest CMake folder (the library's
            # own target over a test that compiles the same file again).
            key = (len(obj.split(os.sep)), obj)
            if rel not in found or key < found[rel][0]:
                found[rel] = (key, obj)
    return {rel: obj for rel, (_, obj) in found.items()}


def read_symbols(nm, objs):
    """{object: (defined functions, undefined symbols)}, from one run of nm."""
    try:
        out = subprocess.run([nm, "-P", "-A"] + objs, check=True, capture_output=True,
                             text=True).stdout
    except FileNotFoundError:
        print("layers_check: %s not found (--nm)" % nm, file=sys.stderr)
        sys.exit(2)
    except subprocess.CalledProcessError as e:
        print("layers_check: %s failed: %s" % (nm, e.stderr.strip()), file=sys.stderr)
        sys.exit(2)
    syms = {obj: (set(), set()) for obj in objs}
    for line in out.splitlines():
        # "OBJECT: NAME TYPE [VALUE SIZE]"; a symbol name holds no ": ".
        obj, sep, rest = line.rpartition(": ")
        f = rest.split()
        if not sep or obj not in syms or len(f) < 2:
            continue
        name, kind = f[0], f[1]
        if kind in FUNC_DEFINED:
            syms[obj][0].add(name)
        elif kind == "U":
            syms[obj][1].add(name)
    return syms


# ---- graph ----

def strongly_connected(nodes, edges):
    """Tarjan's components (iterative), each a sorted list."""
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(sorted(comp))
    return comps


def floor_name(folder):
    return "%s (floor %d)" % (folder, FLOOR[folder])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--source")
    ap.add_argument("--nm", default=os.environ.get("NM") or "nm")
    args = ap.parse_args()
    args.nm = args.nm or "nm"   # CMake's CMAKE_NM may be empty

    build = os.path.abspath(args.build)
    source = os.path.abspath(args.source or cmake_home(build) or REPO)
    if not os.path.isdir(os.path.join(source, "src")):
        print("layers_check: %s has no src/ folder (--source)" % source, file=sys.stderr)
        return 2
    tree = Tree(source)
    violations = []   # (sort key, line)
    counts = {"include": 0, "call": 0, "circle": 0, "unplaced": 0}

    for folder in sorted({tree.folder(f) for f in tree.files}):
        if folder not in FLOOR:
            counts["unplaced"] += 1
            first = next(f for f in tree.files if tree.folder(f) == folder)
            violations.append((("", 0, folder), "src/%s: the folder %r has no floor "
                               "(add it to FLOORS in scripts/layers_check.py)"
                               % (first, folder or "src/")))

    # ---- 1. includes ----
    n_includes = 0
    for rel in tree.files:
        src_floor = tree.folder(rel)
        for line, name, kind, target in tree.includes(rel):
            n_includes += 1
            if kind == "public":
                continue
            if kind == "outside":
                note('src/%s:%d: "%s" resolves outside src/ (%s)' % (rel, line, name, target))
                continue
            if kind is None:
                # Not on disk (generated?): take its folder from the name.
                target = os.path.normpath(name)
                if tree.folder(target) not in FLOOR:
                    note('src/%s:%d: "%s" not found in src/ or include/' % (rel, line, name))
                    continue
            dst_floor = tree.folder(target)
            if src_floor in FLOOR and dst_floor in FLOOR and FLOOR[dst_floor] > FLOOR[src_floor]:
                counts["include"] += 1
                violations.append(((rel, line, ""), 'src/%s:%d: include climbs a floor: "%s": %s includes %s'
                                   % (rel, line, name, floor_name(src_floor), floor_name(dst_floor))))

    # ---- 2. calls ----
    objects = find_objects(build, tree)
    if not objects:
        print("layers_check: no object file of a src/*.c file under %s: build it first "
              "(cmake --build %s)" % (build, args.build), file=sys.stderr)
        return 2
    for rel in tree.files:
        if rel.endswith(".c") and rel not in objects:
            note("src/%s has no object under %s (not built here): its calls are not checked"
                 % (rel, build))
    older = [rel for rel, obj in objects.items()
             if os.path.getmtime(obj) < os.path.getmtime(os.path.join(tree.src, rel))]
    if older:
        note("objects older than their source (rebuild for an exact call map): "
             + ", ".join("src/" + r for r in sorted(older)))

    defined_by = {}   # function -> [src-relative .c files]
    uses = {}
    symbols = read_symbols(args.nm, [objects[rel] for rel in sorted(objects)])
    for rel in sorted(objects):
        defined, undefined = symbols[objects[rel]]
        uses[rel] = undefined
        for sym in defined:
            defined_by.setdefault(sym, []).append(rel)
    for sym, files in sorted(defined_by.items()):
        if len(files) > 1:
            note("%s is defined in %s" % (sym, " and ".join("src/" + f for f in files)))

    calls = {}        # caller -> callee -> sorted functions
    for rel in sorted(uses):
        for sym in sorted(uses[rel]):
            for callee in defined_by.get(sym, ()):
                if callee != rel:
                    calls.setdefault(rel, {}).setdefault(callee, []).append(sym)
    n_edges = sum(len(v) for v in calls.values())

    def where(caller, sym):
        return tree.first_use(caller, sym) or "src/" + caller

    for caller in sorted(calls):
        for callee, syms in sorted(calls[caller].items()):
            a, b = tree.folder(caller), tree.folder(callee)
            if a in FLOOR and b in FLOOR and FLOOR[b] > FLOOR[a]:
                counts["call"] += 1
                wheres = [where(caller, s) for s in syms]
                first = wheres[0]
                more = "".join(", %s (%s)" % (s, w) for s, w in zip(syms[1:], wheres[1:]))
                violations.append(((caller, 0, callee), "%s: call climbs a floor: %s calls %s: "
                                   "%s defined in src/%s%s"
                                   % (first, floor_name(a), floor_name(b), syms[0], callee, more)))

    edges = {c: set(d) for c, d in calls.items()}
    for comp in strongly_connected(sorted(objects), edges):
        if len(comp) < 2:
            continue
        counts["circle"] += 1
        inside = set(comp)
        ties = []
        for caller in comp:
            for callee in sorted(calls.get(caller, {})):
                if callee in inside:
                    sym = calls[caller][callee][0]
                    ties.append("%s -> src/%s (%s)" % (where(caller, sym), callee, sym))
        violations.append(((comp[0], 0, "~circle"), "src/%s: circle of %d files: %s; ties: %s"
                           % (comp[0], len(comp), (" <-> " if len(comp) == 2 else ", ").join("src/" + f for f in comp),
                              "; ".join(ties))))

    for _, line in sorted(violations):
        print(line)
    total = sum(counts.values())
    print("layers_check: %d files under src/ (%d .c with objects), %d includes, %d call edges "
          "between files; %d violations: %d climbing includes, %d climbing calls, %d circles%s"
          % (len(tree.files), len(objects), n_includes, n_edges, total, counts["include"],
             counts["call"], counts["circle"],
             ", %d folders without a floor" % counts["unplaced"] if counts["unplaced"] else ""))
    print("layers_check: floors, bottom to top: " + " < ".join(FLOORS))
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
