// s2s_version (s2s/version.h).
#include "s2s/version.h"

const char *s2s_version(void) { return S2S_VERSION; }
