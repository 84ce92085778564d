// s2s/status.h — status codes and error messages.
//
// Every library call that can fail returns an s2s_status. On failure the
// library records a one-line message (naming the file and the problem where
// there is one) that s2s_last_error() returns until the next failing call on
// the same thread. The library never prints and never exits; the CLI does.
//
//     if (s2s_model_load(&m, path) != S2S_OK)
//         fprintf(stderr, "s2s: %s\n", s2s_last_error());
#ifndef S2S_STATUS_H
#define S2S_STATUS_H

#include "s2s/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum s2s_status {
    S2S_OK = 0,
    S2S_ERR_IO,       // a file could not be opened, read or written
    S2S_ERR_FORMAT,   // a file's contents are malformed (model, vocab, data)
    S2S_ERR_CONFIG,   // a config is invalid
    S2S_ERR_INVALID,  // a bad argument or input
    S2S_ERR_NOMEM,    // out of memory
    S2S_ERR_BACKEND,  // oneDNN failed
    S2S_ERR_BUSY,     // the object is in use by another thread (a model being decoded)
    S2S_STATUS_COUNT
} s2s_status;

// A short name for a status ("ok", "i/o error", ...). Never NULL.
S2S_API const char *s2s_status_str(s2s_status st);

// The message of the last failure on this thread ("" if none).
S2S_API const char *s2s_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
