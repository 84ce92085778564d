// The training data reader (src/train/data.c) on arbitrary bytes: the line
// splitter on the whole input as one line, then the input as a TSV file
// tokenized with the shipped vocabularies, alignments read, and batched.
#include <stdlib.h>

#include "fuzz.h"
#include "s2s/tokenizer.h"
#include "train/data.h"
#include "tokenizer/tsv.h"

static s2s_vocab *zh, *en;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    s2s_fuzz_shipped_vocabs(&zh, &en);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *line = s2s_fuzz_string(data, size), *tgt, *third;
    s2s_tsv_split(line, size, "fuzz.tsv", 1, &tgt, &third);
    free(line);

    s2s_dataset *d;
    if (s2s_dataset_load(&d, s2s_fuzz_file(data, size), zh, en, 16,
                         S2S_DATA_REFS | S2S_DATA_ALIGN | S2S_DATA_COREF) != S2S_OK)
        return 0;
    s2s_batch_plan plan = {0};
    if (s2s_batch_plan_make(&plan, d, 64, /*shuffle=*/true, 1, 0) == S2S_OK) {
        s2s_batch_buf buf = {0};
        for (int b = 0; b < plan.n_batches; b++)
            if (s2s_batch_fill(&buf, d, plan.order + plan.start[b], plan.start[b + 1] - plan.start[b]) !=
                S2S_OK)
                break;
        s2s_batch_buf_free(&buf);
        s2s_batch_plan_free(&plan);
    }
    s2s_dataset_free(d);
    return 0;
}
