// s2s inspect MODEL: the config the model file stores (model: and decode:),
// vocab sizes, every tensor, parameter count, the decoding state per sentence.
#include "cli/cli.h"
#include "model/model_internal.h"

#include <stdlib.h>

static const s2s_opt inspect_opts[] = {{0}};

static const s2s_cmd_spec inspect_spec = {
    "inspect", "s2s inspect MODEL",
    "Prints the config a model file stores (model: and decode:), its vocab sizes,\n"
    "alignment head, parameter count, the decoding state a sentence takes for\n"
    "16 and 1,024 target tokens, and every tensor's shape.",
    inspect_opts, /*decode=*/false};

// The decoding state inspect reports: a source of 16 tokens, targets of 16
// and 1,024.
enum { STATE_SRC = 16 };
static const int STATE_TGT[] = {16, 1024};

// A stored plane; -1 is the average, as `s2s align` says.
static void print_head(const char *what, int layer, int head) {
    char lb[16] = "avg", hb[16] = "avg";
    if (layer >= 0) snprintf(lb, sizeof lb, "%d", layer);
    if (head >= 0) snprintf(hb, sizeof hb, "%d", head);
    printf("%s: layer %s, head %s\n", what, lb, hb);
}

int s2s_cmd_inspect(int argc, char **argv) {
    s2s_args a;
    int rc = s2s_args_parse(&inspect_spec, argc, argv, &a);
    const char *path = a.n_pos == 1 ? a.pos[0] : NULL;
    if (rc == S2S_EXIT_OK && !a.help && !path)
        rc = s2s_cli_usage_error("inspect", "usage: %s", inspect_spec.usage);
    bool help = a.help;
    s2s_args_free(&a);
    if (rc != S2S_EXIT_OK || help) return rc;
    s2s_model *m;
    s2s_status st = s2s_model_load(&m, path);
    if (st != S2S_OK) return s2s_cli_fail(st);
    char *yaml = s2s_config_model_to_yaml(s2s_model_get_config(m));
    printf("model: %s\n", path);
    printf("source vocab: %d tokens\ntarget vocab: %d tokens\n",
           s2s_vocab_size(s2s_model_src_vocab(m)), s2s_vocab_size(s2s_model_tgt_vocab(m)));
    int l, h;
    if (s2s_model_head(m, S2S_HEAD_ALIGN, &l, &h)) {
        print_head("alignment head", l, h);
        printf("alignment share: %g\n", (double)s2s_model_alignment_share(m));
    }
    if (s2s_model_head(m, S2S_HEAD_COREF, &l, &h)) print_head("coreference head (encoder)", l, h);
    printf("parameters: %zu\n", s2s_model_param_count(m));
    // What a sentence's decoding holds, against the target length: the
    // decoder's full self-attention caches grow with it, local and linear
    // layers' states do not (docs/attention.md, "Decoding state").
    int max_len = s2s_model_get_config(m)->model.max_len;
    printf("decoding state per sentence (greedy, %d source tokens, no maps):\n", STATE_SRC);
    for (size_t i = 0; i < sizeof STATE_TGT / sizeof *STATE_TGT; i++)
        printf("  %d target tokens: %zu bytes%s\n", STATE_TGT[i],
               s2s_state_bytes_per_sentence(m, STATE_SRC, STATE_TGT[i], 1),
               STATE_TGT[i] > max_len ? " (beyond the model's max_len)" : "");
    printf("\nconfig:\n%s\ntensors:\n", yaml ? yaml : "(out of memory)\n");
    free(yaml);
    for (int i = 0; i < s2s_model_tensor_count(m); i++) {
        s2s_tensor_info t = s2s_model_tensor(m, i);
        if (t.ndim == 2)
            printf("  %-45s [%lld, %lld]\n", t.name, (long long)t.shape[0], (long long)t.shape[1]);
        else
            printf("  %-45s [%lld]\n", t.name, (long long)t.shape[0]);
    }
    s2s_model_free(m);
    return S2S_EXIT_OK;
}
