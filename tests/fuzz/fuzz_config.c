// The YAML config loader on arbitrary text: load over the defaults, and when
// it loads, validate it and check that its YAML form loads back to the same
// YAML (a round trip through s2s_config_to_yaml).
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "s2s/config.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) { return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = s2s_fuzz_string(data, size);
    s2s_config cfg;
    s2s_config_default(&cfg);
    if (s2s_config_load_string(&cfg, text, "fuzz.yaml", NULL) == S2S_OK) {
        s2s_config_validate(&cfg, "fuzz.yaml");
        char *yaml = s2s_config_to_yaml(&cfg);
        if (!yaml) abort();
        s2s_config again;
        s2s_config_default(&again);
        if (s2s_config_load_string(&again, yaml, "round-trip.yaml", NULL) != S2S_OK) abort();
        char *yaml2 = s2s_config_to_yaml(&again);
        if (!yaml2 || strcmp(yaml, yaml2) != 0) abort();
        free(yaml2);
        free(yaml);
    }
    free(text);
    return 0;
}
