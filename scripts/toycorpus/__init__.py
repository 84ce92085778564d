"""The toy corpus generator's parts (scripts/gen_corpus.py builds its Gen
from them): lexicon.py (the lexicon, constants, helpers), structures.py
(sentence structures built explicitly), zh.py and en.py (rendering each
language), sample_np.py and sample_clause.py (the random choices)."""
