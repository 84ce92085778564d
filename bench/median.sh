# median: the median of the numbers on stdin, separated by spaces or lines
# (nothing for none). Sourced by the bench scripts that print tables.
median() { tr ' ' '\n' | awk NF | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}'; }
