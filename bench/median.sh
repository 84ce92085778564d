# Sourced by the bench scripts that run `s2s train` and print tables.

# median: the median of the numbers on stdin, separated by spaces or lines
# (nothing for none).
median() { tr ' ' '\n' | awk NF | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}'; }

# run_tok_s FILE: the tokens/s of a finished `s2s train` run, from the last
# "(N tok/s)" of its stderr in FILE.
run_tok_s() { sed -n 's/.*(\([0-9]*\) tok\/s).*/\1/p' "$1" | tail -1; }
