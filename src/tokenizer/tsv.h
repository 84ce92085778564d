// Splitting the lines of a source<TAB>target[<TAB>...] file (internal:
// training data, and the command's TSV inputs).
#ifndef S2S_TOKENIZER_TSV_H
#define S2S_TOKENIZER_TSV_H

#include <stddef.h>

#include "s2s/status.h"

// Splits one line of a source<TAB>target[<TAB>third] file in place: strips
// the line end (len bytes, as getline read them, NULs included), and points
// *target at the target and *third at what follows the second tab (NULL
// when there is none; further tabs stay in it). A NUL byte or a missing tab
// is S2S_ERR_FORMAT, with the message "name:lineno: problem" (the problem
// alone when name is NULL).
s2s_status s2s_tsv_split(char *line, size_t len, const char *name, int lineno, char **target,
                         char **third);
// Ends the column col at its first tab and returns what follows it (the next
// column, further tabs still in it), or NULL when col is NULL or has no tab.
// Reads a fourth column after s2s_tsv_split: fourth = s2s_tsv_next(third).
char *s2s_tsv_next(char *col);

#endif
