// s2s/version.h — the version of the headers and of the library linked in.
//
//     if (strcmp(s2s_version(), S2S_VERSION) != 0) ... built against other headers
#ifndef S2S_VERSION_H
#define S2S_VERSION_H

#include "s2s/api.h"

#ifdef __cplusplus
extern "C" {
#endif

// The version of these headers. CMakeLists.txt reads its project version
// from these three lines, so they are the only place it is written.
#define S2S_VERSION_MAJOR 0
#define S2S_VERSION_MINOR 1
#define S2S_VERSION_PATCH 0

#define S2S_STRINGIFY_(x) #x
#define S2S_STRINGIFY(x) S2S_STRINGIFY_(x)
// "MAJOR.MINOR.PATCH"
#define S2S_VERSION                                                          \
    S2S_STRINGIFY(S2S_VERSION_MAJOR) "." S2S_STRINGIFY(S2S_VERSION_MINOR) "." \
    S2S_STRINGIFY(S2S_VERSION_PATCH)

// The version of the library linked in, "MAJOR.MINOR.PATCH": S2S_VERSION as
// the library was built. Compare it with S2S_VERSION to detect a program
// built against other headers. Never NULL.
S2S_API const char *s2s_version(void);

#ifdef __cplusplus
}
#endif
#endif
