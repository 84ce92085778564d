#!/usr/bin/env bash
# `s2s align` end to end on random-weight models: Pharaoh, JSON and CSV
# outputs parse back and agree, the terminal heatmap keeps one width with
# CJK tokens, bad --layer/--head values exit 2 with one clear line,
# --eval's table matches AER recomputed from the JSON output, --calibrate
# stores the best head (shown by s2s inspect), symmetrisation, --html.
#   cli_align_test.sh PATH_TO_s2s
set -u
s2s=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
py=/usr/bin/python3
one_line_err() { [ "$(wc -l <"$tmp/err")" -eq 1 ] || { echo "  stderr has $(wc -l <"$tmp/err") lines:"; cat "$tmp/err"; return 1; }; }
pycheck() {  # pycheck SCRIPT ARGS... (the script reads files named in sys.argv)
  local script=$1; shift
  "$py" -c "$script" "$@" || { echo "  python check failed"; return 1; }
}

model=$tmp/m.safetensors
rmodel=$tmp/r.safetensors
dev=$here/data/align/dev.tsv
check "init forward model" run 0 "$s2s" init "$here/data/ref/pre_relu_tied.yaml" -o "$model" --seed 1
check "init reverse model" run 0 "$s2s" init "$here/data/align/reverse.yaml" -o "$rmodel" --seed 2
A=("$s2s" align -m "$model" --max-len 8)

# ---- Pharaoh, JSON, CSV agree and parse back ----
printf 'der hund sitzt auf der matte\n\ndie katze ist klein\n' >"$tmp/in.txt"
check "pharaoh: exit 0" run 0 "${A[@]}" <"$tmp/in.txt"
cp "$tmp/out" "$tmp/ph.txt"
check "pharaoh: a line per input line" lines 3
check "pharaoh: empty input, empty line" test -z "$(sed -n 2p "$tmp/ph.txt")"
check "pharaoh: syntax" bash -c "! grep -qvE '^([0-9]+-[0-9]+( [0-9]+-[0-9]+)*)?\$' '$tmp/ph.txt'"
check "json: exit 0" run 0 "${A[@]}" --format json <"$tmp/in.txt"
cp "$tmp/out" "$tmp/j.json"
check "json: one object per line, alignment = pharaoh, links in range, rows sum to 1" pycheck '
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1])]
ph = open(sys.argv[2]).read().split("\n")[:-1]
assert len(objs) == 3 == len(ph), (len(objs), len(ph))
for o, p in zip(objs, ph):
    assert o["alignment"] == p, (o["alignment"], p)
    ns, nt = len(o["source_tokens"]), len(o["target_tokens"])
    for l in p.split():
        i, j = map(int, l.split("-"))
        assert 0 <= i < ns and 0 <= j < nt, (l, ns, nt)
    links = [tuple(map(int, l.split("-"))) for l in p.split()]
    assert len({j for _, j in links}) == len(links), "one link per target token at most"
    (m,) = o["maps"]
    assert m["type"] == "cross" and m["layer"] == "avg" and m["head"] == "avg"
    assert m["cols"] == o["source_tokens"] + ["</s>"], m["cols"]
    assert m["rows"][:nt] == o["target_tokens"]
    assert len(m["weights"]) == len(m["rows"])
    for row in m["weights"]:
        assert len(row) == len(m["cols"]) and abs(sum(row) - 1) < 1e-4, row
    # argmax per target row (first on ties), </s> column = no link
    want = []
    for j, row in enumerate(m["weights"][:nt]):
        c = max(range(len(row)), key=lambda k: (row[k], -k))
        if c < ns: want.append((c, j))
    assert sorted(want) == sorted(links), (want, links)
assert objs[0]["source_tokens"] == "der hund sitzt auf der matte".split()
' "$tmp/j.json" "$tmp/ph.txt"

check "json --no-eos: exit 0" run 0 "${A[@]}" --format json --no-eos --layer 1 --head 2 "der hund sitzt" "die katze"
check "json --no-eos: no </s> column, rows renormalised, every token aligned" pycheck '
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    (m,) = o["maps"]
    assert m["layer"] == 1 and m["head"] == 2 and o["alignment_layer"] == 1
    assert "</s>" not in m["cols"], m["cols"]
    for row in m["weights"]:
        assert abs(sum(row) - 1) < 1e-4
    assert len(o["alignment"].split()) == len(o["target_tokens"])
' "$tmp/out"

check "csv: exit 0" run 0 "${A[@]}" --format csv --layer all --head all "der hund sitzt" "die katze"
cp "$tmp/out" "$tmp/c.csv"
check "json all/all: exit 0" run 0 "${A[@]}" --format json --layer all --head all "der hund sitzt" "die katze"
check "csv parses back and equals the JSON maps; 3 x 5 planes" pycheck '
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
objs = [json.loads(l) for l in open(sys.argv[2])]
assert set(rows[0]) == {"sentence","map","layer","head","row","row_token","col","col_token","weight"}
cells = {}
for r in rows:
    cells[(int(r["sentence"]), r["layer"], r["head"], int(r["row"]), int(r["col"]))] = (float(r["weight"]), r["row_token"], r["col_token"])
n = 0
for o in objs:
    planes = {(str(m["layer"]), str(m["head"])) for m in o["maps"]}
    assert planes == {(l, h) for l in ["0","1","avg"] for h in ["0","1","2","3","avg"]}, planes
    for m in o["maps"]:
        for i, row in enumerate(m["weights"]):
            for j, w in enumerate(row):
                cw, rt, ct = cells[(o["sentence"], str(m["layer"]), str(m["head"]), i, j)]
                assert abs(cw - w) < 2e-6 and rt == m["rows"][i] and ct == m["cols"][j]
                n += 1
assert n == len(rows), (n, len(rows))
# the average plane is the mean of the single ones
for o in objs:
    by = {(str(m["layer"]), str(m["head"])): m["weights"] for m in o["maps"]}
    avg = by[("avg", "avg")]
    for i in range(len(avg)):
        for j in range(len(avg[0])):
            mean = sum(by[(l, h)][i][j] for l in "01" for h in "0123") / 8
            assert abs(mean - avg[i][j]) < 1e-5
' "$tmp/c.csv" "$tmp/out"

printf 'die katze\tthe cat\nder hund sitzt\tthe dog sits on\n' >"$tmp/pairs.tsv"
check "--ref: exit 0" run 0 "${A[@]}" --ref --format json <"$tmp/pairs.tsv"
check "--ref: forced targets and </s> row" pycheck '
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1])]
assert [o["target_tokens"] for o in objs] == [["the","cat"], ["the","dog","sits","on"]]
assert [o["target"] for o in objs] == ["the cat", "the dog sits on"]
assert [o["source"] for o in objs] == ["die katze", "der hund sitzt"]
for o in objs:
    assert o["maps"][0]["rows"] == o["target_tokens"] + ["</s>"]
' "$tmp/out"
check "--map self: exit 0" run 0 "${A[@]}" --ref --format json --map self --layer 0 --head 1 <"$tmp/pairs.tsv"
check "--map self: causal and labelled by decoder inputs" pycheck '
import json, sys
for l in open(sys.argv[1]):
    m = json.loads(l)["maps"][0]
    assert m["type"] == "self" and m["rows"][0] == "<s>" and m["rows"] == m["cols"]
    for i, row in enumerate(m["weights"]):
        assert abs(sum(row) - 1) < 1e-4 and all(w == 0 for w in row[i + 1:])
' "$tmp/out"
check "--map enc: exit 0" run 0 "${A[@]}" --ref --format json --map enc --no-eos <"$tmp/pairs.tsv"
check "--map enc: source x source without </s>" pycheck '
import json, sys
for l in open(sys.argv[1]):
    o = json.loads(l); m = o["maps"][0]
    assert m["rows"] == o["source_tokens"] + ["</s>"] and m["cols"] == o["source_tokens"]
' "$tmp/out"

# ---- the terminal heatmap with CJK tokens ----
check "text: exit 0" run 0 "${A[@]}" --format text --layer all --head avg "我爱 吃苹果 der hund" "猫"
check "text: heatmap rows have one display width" pycheck '
import sys, unicodedata
def width(s):
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)
blocks, cur = [], None
for line in open(sys.argv[1], encoding="utf-8").read().split("\n"):
    if line.startswith("cross-attention, layer"):
        cur = []; blocks.append(cur)
    elif line.startswith("alignment") or line.startswith("[") or not line:
        cur = None
    elif cur is not None:
        cur.append(line)
assert len(blocks) == 6, len(blocks)   # 2 sentences x (layers 0, 1, avg)
for b in blocks:
    assert len(b) >= 2
    ws = {width(l) for l in b}
    assert len(ws) == 1, (ws, b)
assert "\x1b" not in open(sys.argv[1]).read(), "no colour when stdout is not a terminal"
' "$tmp/out"
check "text: CJK column labels" out_has "我"
# ---- every layer and head as text: --layer all --head all ----
# The grid's blocks parsed back: one per layer and head of the model's
# config, each cell the shade of its weight in the JSON maps, every line
# within $COLUMNS (wrapping heads to a further band when narrow).
grid_check='
import json, re, sys, unicodedata
text, js, cfg, cols_limit, kind, want = sys.argv[1:7]
cols_limit = int(cols_limit)
def cells(s):  # one entry per display column
    out = []
    for c in s:
        if unicodedata.combining(c): continue
        out.append(c)
        if unicodedata.east_asian_width(c) in "WF": out.append("")
    return out
conf = open(cfg).read()
key = lambda k: int(re.search(r"^  " + k + r": (\d+)", conf, re.M).group(1))
H = key("heads"); L = key("encoder_layers" if kind == "enc" else "decoder_layers")
lines = open(text, encoding="utf-8").read().split("\n")
start = next(i for i, l in enumerate(lines) if l.startswith("columns:"))
end = next(i for i, l in enumerate(lines) if i > start and "alignment (layer" in l)
grid = lines[start:end]
for l in grid:
    assert len(cells(l)) <= cols_limit, (len(cells(l)), l)
(o,) = [json.loads(l) for l in open(js)]
maps = {(m["layer"], m["head"]): m for m in o["maps"] if m["layer"] != "avg" and m["head"] != "avg"}
shade = lambda w: " " if w < 0.05 else "\u2591" if w < 0.25 else "\u2592" if w < 0.5 else "\u2593" if w < 0.75 else "\u2588"
seen_blocks, hidden = set(), 0
i = 1
while i < len(grid):
    head = cells(grid[i])
    title = "".join(head)
    layer = int(re.match(r"layer (\d+)", title).group(1))
    starts = [m.start() for m in re.finditer(r"head \d+", "".join(c or "\0" for c in head))]
    heads = [int(h) for h in re.findall(r"head (\d+)", title)]
    m0 = maps[(layer, heads[0])]
    R, C = len(m0["rows"]), len(m0["cols"])
    rows = [cells(grid[i + 1 + r]) for r in range(R)]
    for k, (h, at) in enumerate(zip(heads, starts)):
        assert (layer, h) not in seen_blocks
        seen_blocks.add((layer, h))
        w = maps[(layer, h)]["weights"]
        bw = (starts[k + 1] - 2 if k + 1 < len(starts) else len(rows[0])) - at
        # two columns a cell (each drawn twice) or one
        cw = 2 if bw >= 2 * C and all(row[at + 2 * c] == row[at + 2 * c + 1] for row in rows for c in range(C)) else 1
        for r in range(R):
            for c in range(C):
                x = rows[r][at + c * cw]
                if x == "\u00b7":
                    hidden += 1
                    continue
                assert x == shade(w[r][c]), (layer, h, r, c, x, w[r][c])
    i += 1 + R
assert seen_blocks == {(l, h) for l in range(L) for h in range(H)}, (sorted(seen_blocks), L, H)
if want == "causal":  # the keys after each query, in every block
    want = len(seen_blocks) * len(m0["rows"]) * (len(m0["rows"]) - 1) // 2
assert hidden == int(want), (hidden, want)
print(len(seen_blocks), "blocks,", hidden, "hidden keys")
'
grid() {  # grid NAME MODEL COLUMNS MAP EXPECT_HIDDEN: the text grid against the JSON maps
  local name=$1 m=$2 cols=$3 map=$4 hid=$5 src="der hund sitzt auf der matte"
  "$s2s" inspect "$m" >"$tmp/cfg.txt" || return 1
  "$s2s" align -m "$m" --max-len 8 --map "$map" --format json --layer all --head all "$src" >"$tmp/grid.json" || return 1
  check "$name: exit 0" run 0 env COLUMNS="$cols" "$s2s" align -m "$m" --max-len 8 --map "$map" --format text \
    --layer all --head all "$src"
  check "$name: a block per layer and head of the config, cells as the weights, lines within $cols columns" \
    /usr/bin/python3 -c "$grid_check" "$tmp/out" "$tmp/grid.json" "$tmp/cfg.txt" "$cols" "$map" "$hid"
}
grid "grid, 80 columns" "$model" 80 cross 0
grid "grid, 40 columns (heads wrap)" "$model" 40 cross 0
check "grid, 40 columns: two bands a layer" test "$(grep -c '^layer 0 ' "$tmp/out")" -eq 2
grid "grid, 20 columns (a block a band)" "$model" 20 cross 0
grid "grid of decoder self-attention: the causal cut hidden" "$model" 80 self causal
# encoder heads 1 and 2 local, window 1, in each of 2 layers: 7 x 7 keys, 30 hidden a head
"$s2s" init "$here/data/ref/pre_relu_tied.yaml" -o "$tmp/local.safetensors" --seed 1 \
  --set model.encoder_attention.type=local --set model.encoder_attention.window=1 \
  --set 'model.encoder_attention.heads=[1, 2]' >/dev/null
grid "grid of a local encoder head: its hidden keys" "$tmp/local.safetensors" 80 enc 120
check "grid: no average block" bash -c "! grep '^layer ' '$tmp/out' | grep -q avg"

# On a terminal (util-linux `script` gives one): text is the default, in colour.
if command -v script >/dev/null; then
  script -qec "'$s2s' align -m '$model' --max-len 3 'die katze'" /dev/null >"$tmp/tty.txt" 2>&1 </dev/null
  check "tty: text heatmap by default" grep -q "cross-attention, layer avg, head avg" "$tmp/tty.txt"
  check "tty: ANSI colour" grep -q $'\x1b\[38;5;' "$tmp/tty.txt"
  NO_COLOR=1 script -qec "'$s2s' align -m '$model' --max-len 3 'die katze'" /dev/null >"$tmp/tty2.txt" 2>&1 </dev/null
  check "tty with NO_COLOR: no colour" bash -c "! grep -q $'\x1b' '$tmp/tty2.txt'"
fi

# ---- bad values: exit 2, one line naming the problem ----
check "--layer 5: exit 2" run 2 "${A[@]}" --layer 5 "die katze"
check "--layer 5: clear message" err_has "s2s align: --layer 5: the model has 2 decoder layers (use 0-1, all or avg)"
check "--layer 5: one line" one_line_err
check "--head 4: exit 2" run 2 "${A[@]}" --head 4 "die katze"
check "--head 4: clear message" err_has "head 4: the model has 4 heads (use 0-3, all or avg)"
check "--layer x: exit 2" run 2 "${A[@]}" --layer x "die katze"
check "--layer x: clear message" err_has "layer needs a number >= 0, all or avg, got 'x'"
check "--head -1: exit 2" run 2 "${A[@]}" --head -1 "die katze"
check "--head without value: exit 2" run 2 "${A[@]}" --head
check "--head without value: one line" one_line_err
# Issue 32: the alignment under the encoder map is the cross-attention's: labelled.
check "--map enc text: exit 0" run 0 "${A[@]}" --map enc --format text "die katze"
check "--map enc text: the alignment is labelled cross-attention" \
  out_has "^cross-attention alignment (layer"
check "--map cross text: exit 0" run 0 "${A[@]}" --format text "die katze"
check "--map cross text: plain label" out_has "^alignment (layer"
check "--map enc --layer 2: exit 2" run 2 "${A[@]}" --map enc --layer 2 "die katze"
check "--map enc --layer 2: encoder layers" err_has "2 encoder layers"
check "pharaoh with all: exit 2" run 2 "${A[@]}" --format pharaoh --layer all "die katze"
check "pharaoh with all: says why" err_has "prints one alignment"
check "bad --format: exit 2" run 2 "${A[@]}" --format xml "die katze"
check "bad --format: lists formats" err_has "pharaoh|json|csv|text"
check "--symmetrize without --reverse: exit 2" run 2 "${A[@]}" --symmetrize union "die katze"
check "bad --symmetrize: exit 2" run 2 "${A[@]}" --reverse "$rmodel" --symmetrize grow "die katze"
check "--n-best 2: exit 2" run 2 "${A[@]}" --n-best 2 "die katze"
check "unknown option: exit 2" run 2 "${A[@]}" --frobnicate
check "no model: exit 2" run 2 "$s2s" align "die katze"
check "--ref without tab: exit 3" run 3 "${A[@]}" --ref <<<"no tab here"
check "--ref without tab: names the line" err_has "s2s align: <stdin>:1: skipped: expected source<TAB>target, found no tab"
check "--ref without tab: one empty line" bash -c "[ \"\$(cat '$tmp/out')\" = '' ] && [ \$(wc -l <'$tmp/out') -eq 1 ]"

# ---- the bad-line rule (cli.h): 150 lines with bad ones at the first line,
# the first line of the second 64-line chunk, 101 and the last; line 100 is
# too long and cut. Every format keeps one output line (an empty one) per
# skipped line; every good line comes out as it does alone; exit 3. ----
words=(die der katze hund sitzt auf matte ein)
for i in $(seq 1 150); do
  echo "${words[i % 8]} ${words[(i * 3) % 8]} ${words[(i * 5 + 1) % 8]}"
done >"$tmp/clean150.txt"
long70=$(printf 'die %.0s' $(seq 1 70))  # the models take 63 tokens
cut63=$(printf 'die %.0s' $(seq 1 63))
edit "$tmp/clean150.txt" 1 'die \377 katze' 65 'der hund\000 sitzt' 100 "$long70" 101 '\300\200' \
  150 'katze \355\240\200' >"$tmp/bad150.txt"
check "150 lines with bad ones: exit 3" run 3 "${A[@]}" <"$tmp/bad150.txt"
check "150 lines in, 150 out" lines 150
cp "$tmp/out" "$tmp/bad150.ph"
for n in 1 65 101 150; do
  check "line $n skipped: empty output line" test -z "$(sed -n ${n}p "$tmp/bad150.ph")"
  check "line $n skipped: warning names <stdin>:$n" grep -q "^s2s align: <stdin>:$n: skipped: " "$tmp/err"
done
check "line 100 cut: warning" grep -q "^s2s align: <stdin>:100: cut to 63 tokens (the model takes at most 63)$" "$tmp/err"
check "five warnings, nothing else" test "$(wc -l <"$tmp/err")" -eq 5
check "the clean lines: exit 0" run 0 "${A[@]}" <"$tmp/clean150.txt"
check "every good line as in the clean file" bash -c "paste -d'|' '$tmp/out' '$tmp/bad150.ph' | awk -F'|' 'NR!=1 && NR!=65 && NR!=100 && NR!=101 && NR!=150 && \$1 != \$2 { bad=1 } END { exit bad }'"
for n in 2 64 66 99 102 149; do
  check "line $n as aligned alone" test "$(sed -n ${n}p "$tmp/bad150.ph")" = "$("${A[@]}" "$(sed -n ${n}p "$tmp/clean150.txt")")"
done
check "line 100 as its cut alone" test "$(sed -n 100p "$tmp/bad150.ph")" = "$("${A[@]}" "$cut63")"
check "an argument too long: cut, named" run 3 "${A[@]}" "$long70"
check "an argument too long: warning" err_has "s2s align: argument:1: cut to 63 tokens"
check "an invalid argument: skipped, named" run 3 "${A[@]}" "der hund" $'die \377'
check "an invalid argument: warning" err_has "s2s align: argument:2: skipped: "
check "an invalid argument: 2 lines, the second empty" bash -c "[ \$(wc -l <'$tmp/out') -eq 2 ] && [ -z \"\$(sed -n 2p '$tmp/out')\" ]"
# A 3 MiB line (over the 1 MiB line limit) is skipped, read through.
{ echo "die katze"; head -c $((3 << 20)) /dev/zero | tr '\0' a; echo; echo "der hund"; } >"$tmp/huge.txt"
check "a 3 MiB line: exit 3" run 3 "${A[@]}" <"$tmp/huge.txt"
check "a 3 MiB line: 3 lines out, its own empty" bash -c "[ \$(wc -l <'$tmp/out') -eq 3 ] && [ -z \"\$(sed -n 2p '$tmp/out')\" ]"
check "a 3 MiB line: the line before as alone" test "$(sed -n 1p "$tmp/out")" = "$("${A[@]}" "die katze")"
check "a 3 MiB line: the line after as alone" test "$(sed -n 3p "$tmp/out")" = "$("${A[@]}" "der hund")"
check "a 3 MiB line: the warning" err_has "^s2s align: <stdin>:2: skipped: line longer than 1048576 bytes$"
for f in json csv text; do
  check "$f: bad lines: exit 3" run 3 "${A[@]}" --format $f <"$tmp/bad150.txt"
  cp "$tmp/out" "$tmp/bad150.$f"
  check "$f: clean lines: exit 0" run 0 "${A[@]}" --format $f <"$tmp/clean150.txt"
  cp "$tmp/out" "$tmp/clean150.$f"
done
check "json: one line per input line, skipped ones empty, the others as in the clean run" pycheck '
import json, sys
def close(x, y):  # equal, but for float rounding of a different batch (about 1e-6)
    if isinstance(x, float) or isinstance(y, float): return abs(x - y) < 1e-5
    if isinstance(x, list): return len(x) == len(y) and all(map(close, x, y))
    if isinstance(x, dict): return x.keys() == y.keys() and all(close(x[k], y[k]) for k in x)
    return x == y
bad = open(sys.argv[1]).read().split("\n")[:-1]
clean = open(sys.argv[2]).read().split("\n")[:-1]
assert len(bad) == len(clean) == 150, (len(bad), len(clean))
for n, (b, c) in enumerate(zip(bad, clean), 1):
    if n in (1, 65, 101, 150): assert b == "", (n, b)
    elif n != 100: assert close(json.loads(b), json.loads(c)), n
' "$tmp/bad150.json" "$tmp/clean150.json"
check "csv: one empty line per skipped line, the rows of the others as in the clean run" pycheck '
import sys
bad = open(sys.argv[1]).read().split("\n")[:-1]
clean = open(sys.argv[2]).read().split("\n")[:-1]
assert bad.count("") == 4, bad.count("")
def rows(lines, k): return [l.rsplit(",", 1) for l in lines if l.startswith(f"{k},")]
for k in range(150):
    if k + 1 in (1, 65, 100, 101, 150): continue
    b, c = rows(bad, k), rows(clean, k)  # weights equal but for float rounding (about 1e-6)
    assert b and len(b) == len(c) and all(x[0] == y[0] and abs(float(x[1]) - float(y[1])) < 1e-5 for x, y in zip(b, c)), k
' "$tmp/bad150.csv" "$tmp/clean150.csv"
check "text: the heatmaps of the good sentences as in the clean run" pycheck '
import re, sys
def blocks(path):
    out = {}
    for b in re.split(r"\n(?=\[\d+\] )", "\n" + open(path).read()):
        m = re.match(r"\n?\[(\d+)\] ", b)
        if m: out[int(m.group(1))] = b.strip("\n")
    return out
bad, clean = blocks(sys.argv[1]), blocks(sys.argv[2])
skipped = {0, 64, 99, 100, 149}
assert set(bad) == set(range(150)) - {0, 64, 100, 149}, sorted(set(range(150)) - set(bad))
for k in set(range(150)) - skipped: assert bad[k] == clean[k], k
' "$tmp/bad150.text" "$tmp/clean150.text"

# ---- symmetrisation with a reverse model ----
for m in intersection union grow-diag grow-diag-final grow-diag-final-and; do
  check "--symmetrize $m: exit 0" run 0 "${A[@]}" --ref --format json --reverse "$rmodel" --symmetrize $m <"$tmp/pairs.tsv"
  cp "$tmp/out" "$tmp/sym_$m.json"
done
check "symmetrised alignments nest: intersection <= grow-diag <= gdf <= union, forward inside union" pycheck '
import json, sys
d = sys.argv[1]
def load(m):
    return [json.loads(l) for l in open(f"{d}/sym_{m}.json")]
def links(s): return {tuple(map(int, l.split("-"))) for l in s.split()}
I, U, G, F = load("intersection"), load("union"), load("grow-diag"), load("grow-diag-final")
for k in range(len(I)):
    fw = links(I[k]["forward_alignment"])
    assert I[k]["symmetrize"] == "intersection"
    i, u, g, f = (links(x[k]["alignment"]) for x in (I, U, G, F))
    assert i <= fw <= u and i <= g <= f <= u, (i, g, f, u)
' "$tmp"
check "free decoding with --reverse: exit 0" run 0 "${A[@]}" --reverse "$rmodel" --symmetrize grow-diag-final "der hund" "die katze ist alt"
check "free decoding with --reverse: 2 lines" lines 2

# ---- --eval: the table, checked against the JSON output ----
check "--eval: exit 0" run 0 "${A[@]}" --eval "$dev"
cp "$tmp/out" "$tmp/eval.txt"
check "--eval: 2x4 heads + 2 + 4 + 1 averages" bash -c "[ \$(grep -cE '^([0-9]+|avg) +([0-9]+|avg) +[0-9.]+ +[0-9.]+ +[0-9.]+' '$tmp/eval.txt') -eq 15 ]"
check "--eval: marks the best head" out_has "  best"
check "--ref json with gold: exit 0" run 0 "${A[@]}" --ref --format json --layer avg --head avg <"$dev"
check "--eval avg/avg row = AER recomputed from the JSON alignments (Och & Ney)" pycheck '
import json, sys
a = s = a_s = a_p = 0
for line in open(sys.argv[1]):
    o = json.loads(line)
    hyp = {tuple(map(int, l.split("-"))) for l in o["alignment"].split()}
    sure, poss = set(), set()
    for l in o["gold"].split():
        if "p" in l: poss.add(tuple(map(int, l.split("p"))))
        else: sure.add(tuple(map(int, l.split("-"))))
    P = sure | poss
    a += len(hyp); s += len(sure); a_s += len(hyp & sure); a_p += len(hyp & P)
aer, prec, rec = 1 - (a_s + a_p) / (a + s), a_p / a, a_s / s
row = [l.split() for l in open(sys.argv[2]) if l.startswith("avg   avg")][0]
got = tuple(map(float, row[2:5]))
assert all(abs(x - y) < 6e-5 for x, y in zip(got, (aer, prec, rec))), (got, (aer, prec, rec))
' "$tmp/out" "$tmp/eval.txt"
check "eval-align alias: same table" bash -c "'$s2s' eval-align -m '$model' --max-len 8 '$dev' | cmp -s - '$tmp/eval.txt'"
check "--ref --eval on stdin: same rows" bash -c "'$s2s' align -m '$model' --max-len 8 --ref --eval <'$dev' | tail -n +2 | cmp -s - <(tail -n +2 '$tmp/eval.txt')"
printf 'die katze\tthe cat\t0-0 1-x\n' >"$tmp/badgold.tsv"
check "bad gold only: exit 2 (nothing to evaluate)" run 2 "${A[@]}" --eval "$tmp/badgold.tsv"
check "bad gold: file, line and link" err_has "badgold.tsv:1: skipped: gold: bad alignment link '1-x'"
check "bad gold only: says so" err_has "badgold.tsv: no sentence with a gold alignment to evaluate"
printf 'die katze\tthe cat\t0-0\nder hund\tthe dog\t0-0 5-1\n' >"$tmp/rangegold.tsv"
check "gold out of range: exit 3" run 3 "${A[@]}" --eval "$tmp/rangegold.tsv"
check "gold out of range: named" err_has "rangegold.tsv:2: skipped: gold: alignment link 5-1 out of range (2 source, 2 target tokens)"
check "gold out of range: the other line counted" out_has ": 1 sentences"
printf 'die katze\tthe cat\n' >"$tmp/nogold.tsv"
check "no gold column: exit 2" run 2 "${A[@]}" --eval "$tmp/nogold.tsv"
check "no gold column: named" err_has "nogold.tsv:1: skipped: expected source<TAB>target<TAB>gold"
# Bad lines among the dev lines: left out of the AER counts, with a warning.
{ printf 'no tab here\n'; head -n 4 "$dev"; printf 'die \377\tthe cat\t0-0\n'; printf 'der\000 hund\tthe dog\t0-0\n'
  tail -n +5 "$dev"; printf 'die katze\tthe cat\t0-0 1-x\n'; } >"$tmp/baddev.tsv"
check "--eval with bad lines: exit 3" run 3 "${A[@]}" --eval "$tmp/baddev.tsv"
check "--eval with bad lines: four warnings naming FILE:LINE" bash -c "[ \$(grep -cE '^s2s align: $tmp/baddev.tsv:(1|6|7|12): skipped: ' '$tmp/err') -eq 4 ]"
check "--eval with bad lines: the table of the good lines" bash -c "tail -n +2 '$tmp/out' | cmp -s - <(tail -n +2 '$tmp/eval.txt')"
check "eval-align with bad lines: exit 3, warnings name eval-align" run 3 "$s2s" eval-align -m "$model" --max-len 8 "$tmp/baddev.tsv"
check "eval-align with bad lines: warning" err_has "^s2s eval-align: $tmp/baddev.tsv:6: skipped: "
check "--calibrate with bad lines: exit 3" run 3 "${A[@]}" --calibrate "$tmp/baddev.tsv" -o "$tmp/cal_bad.safetensors"
check "--calibrate with bad lines: written" test -s "$tmp/cal_bad.safetensors"
check "missing eval file: exit 2" run 2 "${A[@]}" --eval "$tmp/none.tsv"
check "missing eval file: named" err_has "none.tsv"

# ---- --calibrate stores the head; inspect and align see it ----
check "calibrate -o: exit 0" run 0 "${A[@]}" --calibrate "$dev" -o "$tmp/cal.safetensors"
best=$(grep '  best' "$tmp/out" | awk '{print $1, $2}')
check "calibrate: reports the best head" out_has "calibrated: layer ${best% *}, head ${best#* }"
check "inspect shows the stored head" run 0 "$s2s" inspect "$tmp/cal.safetensors"
check "inspect: alignment head line" out_has "alignment head: layer ${best% *}, head ${best#* }"
check "inspect: alignment share line" out_has "alignment share: "
check "--share 0: exit 2" run 2 "${A[@]}" --share 0 "die katze"
check "--share 0: named" err_has "--share needs a number in (0, 1]"
check "--share abc: exit 2" run 2 "${A[@]}" --share abc "die katze"
check "--share 0.5 --eval: the table says its share" run 0 "${A[@]}" --share 0.5 --eval "$dev"
check "--share 0.5 --eval: header" out_has "share 0.5"
check "the original model is untouched" run 0 "$s2s" inspect "$model"
check "original: no alignment head" bash -c "! grep -q 'alignment head' '$tmp/out'"
check "align defaults to the stored head" run 0 "$s2s" align -m "$tmp/cal.safetensors" --max-len 6 --format json "die katze"
check "align json: alignment_layer/head" pycheck '
import json, sys
o = json.loads(open(sys.argv[1]).readline())
want = tuple(sys.argv[2:4])  # an index, or "avg" when an average aligns best
assert (str(o["alignment_layer"]), str(o["alignment_head"])) == want, o
assert (str(o["maps"][0]["layer"]), str(o["maps"][0]["head"])) == want
' "$tmp/out" ${best% *} ${best#* }
check "eval marks the stored head" run 0 "$s2s" align -m "$tmp/cal.safetensors" --max-len 8 --eval "$dev"
check "eval: stored" out_has "stored"
cp "$model" "$tmp/inplace.safetensors"
check "calibrate in place: exit 0" run 0 "$s2s" align -m "$tmp/inplace.safetensors" --max-len 8 --calibrate "$dev"
check "calibrate in place: inspect" run 0 "$s2s" inspect "$tmp/inplace.safetensors"
check "calibrate in place: head stored" out_has "alignment head: layer"
check "calibrate: no temp file left" bash -c "! ls '$tmp' | grep -q tmp"
check "calibrate into a missing folder: exit 1" run 1 "${A[@]}" --calibrate "$dev" -o "$tmp/no/dir/x.safetensors"
check "calibrate into a missing folder: refused before the table" test ! -s "$tmp/out"
check "calibrate into a missing folder: one line naming it" err_has "no/dir/x.safetensors: cannot write"
check "-o without --calibrate: exit 2" run 2 "${A[@]}" -o "$tmp/x.safetensors" "die katze"
check "--calibrate with --eval: exit 2" run 2 "${A[@]}" --calibrate "$dev" --eval "$dev"

# ---- --html ----
check "--html: exit 0" run 0 "${A[@]}" --html "$tmp/r.html" "der hund sitzt" "die katze" "猫 <script>"
check "--html: stdout still has the alignments" lines 3
check "--html: says where it wrote (issue 32)" err_has "^s2s align: wrote $tmp/r.html$"
check "--html: a self-contained page" pycheck '
import json, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
assert html.startswith("<!DOCTYPE html>") and "http://" not in html and "https://" not in html
assert html.count("</script>") == 2
data = json.loads(re.search(r"<script type=\"application/json\" id=\"s2s-data\">(.*?)</script>", html, re.S).group(1))
S = data["sentences"]
assert len(S) == 3
assert S[2]["src"] == ["猫", "<", "script", ">", "</s>"], S[2]["src"]
for s in S:
    L, H, R, C = s["layers"], s["heads"], len(s["tgt"]), len(s["src"])
    assert len(s["cross"]) == L * H * R * C
    assert len(s["self"]) == L * H * R * R and len(s["enc"]) == s["enc_layers"] * H * C * C
' "$tmp/r.html"
check "--html: no temp file" bash -c "! ls '$tmp' | grep -q 'r.html.tmp'"
printf 'der hund\tdie katze\t0-0 1p1\n' >"$tmp/gold.tsv"
check "--html with gold: exit 0" run 0 "${A[@]}" --ref --html "$tmp/g.html" <"$tmp/gold.tsv"
check "--html with gold: the sentence carries it" grep -q '"gold":"0-0 1p1"' "$tmp/g.html"
check "--html with beam search: exit 0" run 0 "${A[@]}" --beam 3 --html "$tmp/b.html" "der hund" "die katze"
check "--html with beam search: cross maps only" bash -c "[ \$(grep -o '\"self\":null' '$tmp/b.html' | wc -l) -eq 2 ]"
check "--map self with beam search: exit 2" run 2 "${A[@]}" --beam 3 --map self "der hund"
check "--html into a missing folder: exit 1" run 1 "${A[@]}" --html "$tmp/no/dir/r.html" "die katze"
check "--html into a missing folder: named" err_has "no/dir/r.html: cannot write: No such file or directory"
check "--html into a missing folder: one line" one_line_err
check "--html into a missing folder: fails before printing anything" test ! -s "$tmp/out"
check "--html onto a folder: exit 1" run 1 "${A[@]}" --html "$tmp" "die katze"
check "--html onto a folder: nothing printed" test ! -s "$tmp/out"
check "--html onto a folder: says why" err_has "cannot write: a directory"
ln -s "$tmp/no/dir/r.html" "$tmp/dangling.html"
check "--html onto a dangling symlink: exit 1" run 1 "${A[@]}" --html "$tmp/dangling.html" "die katze"
check "--html onto a dangling symlink: nothing printed" test ! -s "$tmp/out"
check "--html onto a dangling symlink: says why" err_has "cannot write: a symlink to a missing file"
mkdir "$tmp/real" && : >"$tmp/real/r.html" && ln -s "$tmp/real/r.html" "$tmp/link.html"
check "--html through a symlink: exit 0" run 0 "${A[@]}" --html "$tmp/link.html" "die katze"
check "--html through a symlink: the page is where it points" test -s "$tmp/real/r.html"
check "--html to /dev/null (written in place): exit 0" run 0 "${A[@]}" --html /dev/null "die katze"

# ---- attention variants: each head's pattern, hidden keys apart from weight 0 ----
vmodel=$tmp/v.safetensors
check "variants: init" run 0 "$s2s" init "$here/data/ref/pre_relu_tied.yaml" -o "$vmodel" --seed 1 \
  --set model.encoder_attention.type=local --set model.encoder_attention.window=1 \
  --set 'model.encoder_attention.heads=[1, 2]' --set model.decoder_attention.type=strided \
  --set model.decoder_attention.stride=2 --set 'model.decoder_attention.layers=[1]' \
  --set model.cross_attention.type=linear --set 'model.cross_attention.heads=[3]'
V=("$s2s" align -m "$vmodel" --max-len 8)
printf 'der hund sitzt auf der matte\tthe dog sits on the mat\n' >"$tmp/vpair.tsv"
# The semantics of docs/attention.md, spelled out in Python, against the
# JSON maps: each plane names its head's pattern, and its weights are 0
# exactly where that pattern hides the key (softmax and phi = elu + 1 give
# every key they see some weight); a mean names every plane's.
vsees='
def sees(p, i, j):
    if p["causal"] and j > i: return False
    t, d = p["type"], i - j
    if t == "local": return abs(d) <= p["window"]
    if t == "block": return i // p["block"] == j // p["block"]
    if t == "strided": return abs(d) < p["stride"] or d % p["stride"] == 0
    return True
def want(kind, l, h):
    if kind == "enc" and h in (1, 2): return {"type": "local", "window": 1, "causal": False}
    if kind == "self": return {"type": "strided" if l == 1 else "full", "causal": True, **({"stride": 2} if l == 1 else {})}
    if kind == "cross" and h == 3: return {"type": "linear", "causal": False}
    return {"type": "full", "causal": False}
'
vtext() {  # every plane of map $1 in text, layer by layer, into $tmp/out
  for l in 0 1 avg; do "${V[@]}" --ref --format text --map "$1" --layer $l --head all <"$tmp/vpair.tsv" || return 1; done >"$tmp/out"
}
for map in cross self enc; do
  check "variants: json --map $map: exit 0" run 0 "${V[@]}" --ref --format json --map $map --layer all --head all <"$tmp/vpair.tsv"
  check "variants: json --map $map: patterns named, zero exactly where hidden" pycheck "$vsees"'
import json, sys
kind = sys.argv[2]
o = json.loads(open(sys.argv[1]).read())
hidden = 0
for m in o["maps"]:
    l, h = m["layer"], m["head"]
    if l != "avg" and h != "avg":
        assert m["pattern"] == want(kind, l, h), (l, h, m["pattern"])
        assert "patterns" not in m
        for i, row in enumerate(m["weights"]):
            for j, w in enumerate(row):
                assert (w > 0) == sees(m["pattern"], i, j), (kind, l, h, i, j, w)
                hidden += not sees(m["pattern"], i, j)
    else:
        ps = m["patterns"]
        assert [(p["layer"], p["head"]) for p in ps] == [(a, b) for a in range(2) for b in range(4) if l in ("avg", a) and h in ("avg", b)], ps
        for p in ps:
            q = dict(p); del q["layer"], q["head"]
            assert q == want(kind, p["layer"], p["head"]), p
assert (hidden > 0) == (kind != "cross"), hidden
' "$tmp/out" $map
  cp "$tmp/out" "$tmp/v.$map.json"
  # every plane as a heatmap of its own (--layer all --head all is the grid: checked above)
  check "variants: text --map $map: exit 0" vtext $map
  check "variants: text --map $map: titles name the patterns, · exactly on hidden keys" pycheck "$vsees"'
import json, sys
kind = sys.argv[3]
o = json.loads(open(sys.argv[2]).read())
maps = {(str(m["layer"]), str(m["head"])): m for m in o["maps"]}
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
title = {"cross": "cross-attention", "self": "decoder self-attention", "enc": "encoder self-attention"}[kind]
blocks = 0
for k, line in enumerate(lines):
    if not line.startswith(title + ", layer "): continue
    blocks += 1
    head_part = line.split(", head ")[1]
    hsel, _, names = head_part.partition(": ")
    lsel = line.split(", layer ")[1].split(",")[0]
    m = maps[(lsel, hsel)]
    ps = [m["pattern"]] if "pattern" in m else m["patterns"]
    def text(p):
        par = {"local": "window", "block": "block", "strided": "stride"}.get(p["type"])
        return p["type"] + (", %s %d" % (par, p[par]) if par else "")
    wanted = []
    for p in ps:
        if text(p).split(",")[0] not in [w.split(",")[0] for w in wanted]: wanted.append(text(p))
    assert names == " / ".join(wanted), (line, wanted)
    cols, rows = m["cols"], m["rows"]
    lw = max(1, max(min(len(r), 12) for r in rows))
    cw = [max(2, min(len(c), 12)) for c in cols]
    for i, r in enumerate(rows):
        row = lines[k + 2 + i]
        at = lw
        for j, c in enumerate(cols):
            cell = row[at + 1: at + 1 + cw[j]]; at += 1 + cw[j]
            hidden = not any(sees({kk: v for kk, v in p.items() if kk not in ("layer", "head")}, i, j) for p in ps)
            assert (cell == "\u00b7" * cw[j]) == hidden, (line, r, c, cell, hidden)
assert blocks == 15, blocks
' "$tmp/out" "$tmp/v.$map.json" $map
done
check "variants: --calibrate names the winning head's pattern" run 0 "${V[@]}" --calibrate "$dev" -o "$tmp/vcal.safetensors"
check "variants: --calibrate line" bash -c "grep -qE '^calibrated: layer (avg|[0-9]), head (avg|[0-9]): (full|linear)( / (full|linear))?, share [0-9.]+ \(AER' '$tmp/out'"
check "variants: --html: exit 0" run 0 "${V[@]}" --html "$tmp/v.html" "der hund"
check "variants: --html: each head's pattern in the page's data" \
  grep -qF '"enc":[[{"type":"full","causal":false},{"type":"local","window":1,"causal":false},{"type":"local","window":1,"causal":false},{"type":"full","causal":false}]' "$tmp/v.html"

# A model without variants prints as it did: no pattern in the titles, no
# hidden key but the decoder's causal cut, every JSON pattern full.
check "full model: text: exit 0" run 0 "${A[@]}" --ref --format text --map enc --layer all --head all <"$tmp/vpair.tsv"
check "full model: text: titles as before" bash -c "! grep -E '^encoder self-attention, layer [^,]*, head [^:]*:' '$tmp/out'"
check "full model: text: no hidden key in the encoder" bash -c "! grep -q '·' '$tmp/out'"
check "full model: cross text: no hidden key" run 0 "${A[@]}" --ref --format text --layer all --head all <"$tmp/vpair.tsv"
check "full model: cross text: none" bash -c "! grep -qE '·|attention, layer [^,]*, head [^:]*:' '$tmp/out'"
check "full model: self text: exit 0" run 0 "${A[@]}" --ref --format text --map self --layer 0 --head 0 <"$tmp/vpair.tsv"
check "full model: self text: the causal cut only" pycheck '
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
k = lines.index("decoder self-attention, layer 0, head 0")
rows = lines[k + 2: k + 9]
for i, row in enumerate(rows):
    assert row.count("\u00b7") == sum(max(2, len(t)) for t in "<s> the dog sits on the mat".split()[i + 1:]), (i, row)
' "$tmp/out"
check "full model: json: every pattern full" run 0 "${A[@]}" --ref --format json --map self --layer all --head all <"$tmp/vpair.tsv"
check "full model: json: full and causal" pycheck '
import json, sys
o = json.loads(open(sys.argv[1]).read())
for m in o["maps"]:
    for p in [m["pattern"]] if "pattern" in m else m["patterns"]:
        assert p["type"] == "full" and p["causal"] is True, p
' "$tmp/out"

finish cli_align
