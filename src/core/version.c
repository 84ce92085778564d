// s2s_version (s2s/s2s.h).
#include "s2s/s2s.h"

const char *s2s_version(void) { return S2S_VERSION; }
