// s2s quantize MODEL -o OUT --type int8|bf16: the model with the matrices
// decoding multiplies stored as I8 (with per-row scales) or BF16
// (docs/model-format.md). Decoding still takes any decode.compute_type.
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

static const s2s_opt quantize_opts[] = {
    {.name = "--output", .alias = "-o", .value = "OUT", .help = "the model file to write (required)"},
    {.name = "--type", .value = "int8|bf16", .help = "the stored type (required)"},
    {0},
};

static const s2s_cmd_spec quantize_spec = {
    "quantize", "s2s quantize MODEL -o OUT --type int8|bf16",
    "Writes MODEL with the self-attention, feed-forward and (untied) generator\n"
    "matrices stored as I8 with one scale per row, or as BF16; the other tensors\n"
    "stay F32. Loading it gives those matrices dequantised.",
    quantize_opts, /*decode=*/false};

static long long file_size(const char *path) {
    struct stat s;
    return stat(path, &s) == 0 ? (long long)s.st_size : -1;
}

int s2s_cmd_quantize(int argc, char **argv) {
    s2s_args a;
    int rc = s2s_args_parse(&quantize_spec, argc, argv, &a);
    const char *in = a.n_pos == 1 ? a.pos[0] : NULL, *out = NULL, *type = NULL;
    for (int k = 0; k < a.n_opts; k++) {
        if (s2s_arg_is(&a.opts[k], "--output")) out = a.opts[k].value;
        if (s2s_arg_is(&a.opts[k], "--type")) type = a.opts[k].value;
    }
    s2s_compute_type t = S2S_COMPUTE_COUNT;
    if (type && !strcmp(type, "int8")) t = S2S_COMPUTE_INT8;
    if (type && !strcmp(type, "bf16")) t = S2S_COMPUTE_BF16;
    if (rc == S2S_EXIT_OK && !a.help && (!in || !out || !type))
        rc = s2s_cli_usage_error("quantize", "usage: %s", quantize_spec.usage);
    else if (rc == S2S_EXIT_OK && !a.help && t == S2S_COMPUTE_COUNT)
        rc = s2s_cli_usage_error("quantize", "--type %s: int8 or bf16", type);
    bool help = a.help;
    s2s_args_free(&a);
    if (rc != S2S_EXIT_OK || help) return rc;
    rc = s2s_cli_check_output(out);
    if (rc != S2S_EXIT_OK) return rc;
    s2s_model *m;
    s2s_status st = s2s_model_load(&m, in);
    if (st != S2S_OK) return s2s_cli_fail(st);
    st = s2s_model_save_quantized(m, out, t);
    s2s_model_free(m);
    if (st != S2S_OK) return s2s_cli_fail(st);
    fprintf(stderr, "%s: %s, %lld bytes (%s: %lld)\n", out, type, file_size(out), in,
            file_size(in));
    return S2S_EXIT_OK;
}
