#!/usr/bin/env bash
# Regenerates the tables of docs/attention-lab.md from the commands that
# make them. The page holds marked blocks,
#
#   <!-- lab:NAME -->
#   ```
#   $ the command
#   its output
#   ```
#   <!-- /lab:NAME -->
#
# and this script runs each block's command (the table below) and writes
# its output between the two markers, leaving the prose alone; the page is
# replaced atomically (a temp file beside it, then mv). Nothing on the page
# between markers is typed by hand.
#
#   scripts/attention_lab.sh [BUILD/s2s]          # default build/s2s
#   scripts/attention_lab.sh BUILD/s2s --check    # exit 1 when the page is not what the
#                                                 # commands print now (ctest attention_lab)
#
# --check compares each line as scripts/doc_figures.py compares a figure
# (close(): the text exactly, each number within 3 units of its last digit
# or 0.2%, two numbers below 1e-5 in size the same), since another CPU's
# kernels round differently. It names each line that differs.
set -euo pipefail
s2s=${1:-build/s2s}
check=${2:-}
[ -x "$s2s" ] || { echo "attention_lab: $s2s: no s2s binary there (usage: $0 [BUILD/s2s] [--check])" >&2; exit 2; }
s2s=$(cd "$(dirname "$s2s")" && pwd)/$(basename "$s2s")
cd "$(dirname "$0")/.."
page=docs/attention-lab.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
ln -s "$s2s" "$tmp/bin/s2s"  # the commands as the page shows them: `s2s ...`
export PATH="$tmp/bin:$PATH"

# NAME<TAB>COMMAND (run with bash from the repository root; stdout goes on the page)
blocks=$(cat <<'EOF'
scale-random	s2s probe scale
scale-zh-en	head -200 data/corpus/test.zh-en.tsv | cut -f1 | s2s probe scale -m models/zh-en.safetensors
heads-zh-en	head -200 data/corpus/test.zh-en.tsv | cut -f1 | s2s probe heads -m models/zh-en.safetensors
heads-en-zh	head -200 data/corpus/test.en-zh.tsv | cut -f1 | s2s probe heads -m models/en-zh.safetensors
equivariance-zh-en	head -8 data/corpus/test.zh-en.tsv | cut -f1 | s2s probe equivariance -m models/zh-en.safetensors
equivariance-en-zh	head -8 data/corpus/test.en-zh.tsv | cut -f1 | s2s probe equivariance -m models/en-zh.safetensors
grid-zh-en	COLUMNS=80 s2s align -m models/zh-en.safetensors --format text --layer all --head all --map enc 那只猫坐在垫子上，它看起来很舒服。
grad-norms	python3 scripts/grad_norms_table.py docs/plot-logs/zh-en.fp32.train.log
EOF
)
while IFS=$'\t' read -r name cmd; do
  { printf '```\n$ %s\n' "$cmd"; bash -o pipefail -c "$cmd"; printf '```\n'; } >"$tmp/$name.block"
done <<<"$blocks"

python3 - "$page" "$tmp" "$tmp/page.md" "$check" <<'EOF'
import os, re, sys
page, blocks, out, check = sys.argv[1:]
text = open(page, encoding="utf-8").read()
seen = set()
def fill(m):
    name = m.group(1)
    path = os.path.join(blocks, name + ".block")
    if not os.path.exists(path):
        sys.exit(f"{page}: block '{name}' has no command in scripts/attention_lab.sh")
    seen.add(name)
    return f"<!-- lab:{name} -->\n" + open(path, encoding="utf-8").read() + f"<!-- /lab:{name} -->"
text = re.sub(r"<!-- lab:([\w-]+) -->\n.*?<!-- /lab:\1 -->", fill, text, flags=re.S)
missing = {f[:-6] for f in os.listdir(blocks) if f.endswith(".block")} - seen
if missing:
    sys.exit(f"{page}: no marked block for {', '.join(sorted(missing))}")
open(out, "w", encoding="utf-8").write(text)
if check != "--check":
    sys.exit(0)
sys.path.insert(0, "scripts")
from doc_figures import close  # the docs' rule for numbers
old, new = open(page, encoding="utf-8").read().splitlines(), text.splitlines()
bad = 0
if len(old) != len(new):
    print(f"{page}: {len(old)} lines, the commands give {len(new)}")
    bad = 1
for n, (a, b) in enumerate(zip(old, new), 1):
    if not close(a, b):
        print(f"{page}:{n}: {a!r}\n  the commands print now: {b!r}")
        bad = 1
if bad:
    print(f"{page}: out of date (scripts/attention_lab.sh rewrites it)")
    sys.exit(1)
print(f"{page}: up to date")
EOF
[ "$check" = --check ] && exit 0
cp "$tmp/page.md" "$page.tmp.$$"
mv "$page.tmp.$$" "$page"
echo "wrote $page"
