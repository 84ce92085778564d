#!/usr/bin/env bash
# Makes the toy corpus's train split (data/corpus/train.*.tsv, 27 MB), which
# is generated, not kept in git: scripts/gen_corpus.py is deterministic, so
# the same generator and lexicon give byte-identical files. The dev and test
# splits and vocab/ are small and kept in git; they are written again too,
# and tests/test_corpus.py checks that the kept ones equal the generator's.
# Regenerates only when the train files are missing or the generator or the
# lexicon changed since they were made (a stamp of their hashes; the
# generator is gen_corpus.py and its parts in scripts/toycorpus/).
#   scripts/corpus.sh [--force]
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=data/corpus/.train.stamp
want=$(cat scripts/gen_corpus.py scripts/toycorpus/*.py data/lexicon.tsv | sha256sum | cut -d' ' -f1)
if [ "${1:-}" != "--force" ] && [ -f data/corpus/train.zh-en.tsv ] &&
   [ -f data/corpus/train.en-zh.tsv ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
echo "corpus: generating data/corpus/ (about 30 s)"
rm -f "$stamp"
python3 scripts/gen_corpus.py >/dev/null
echo "$want" > "$stamp"
