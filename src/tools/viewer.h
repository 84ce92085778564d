// The attention viewer (internal): src/tools/viewer.js and viewer.css,
// embedded at build time, drawn by the static report of html.c and by the
// live page of `s2s serve` alike.
#ifndef S2S_ALIGN_VIEWER_H
#define S2S_ALIGN_VIEWER_H

extern const char s2s_viewer_css[], s2s_viewer_js[];

// The page of `s2s serve`: the viewer with a form that asks the server's
// API as the user types. Caller frees; NULL on out of memory.
char *s2s_align_live_page(void);

#endif
