// One self-contained HTML page with the attention maps of several
// sentences: the data as inline JSON, drawn by the viewer (viewer.js and
// viewer.css, inline; no network), which also draws the page of `s2s serve`.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "core/error.h"
#include "core/safe_write.h"
#include "tools/map_json.h"
#include "tools/viewer.h"
#include "tools/html.h"
#include "align/align.h"
#include "config/command.h"

struct s2s_align_html {
    char *title;
    s2s_buf sentences;  // JSON objects joined by ",\n"
    int n;
    int layer, head;  // the view the page opens on
    bool drop_specials;
    bool enc_set, enc_open;    // the encoder map's own plane (a coreference head)
    int enc_layer, enc_head;
    char *patterns;  // JSON: {"cross": [[pattern of each head] of each layer], "self": ..., "enc": ...}
};

s2s_status s2s_align_html_new(s2s_align_html **out, const char *title) {
    *out = NULL;
    s2s_align_html *d = calloc(1, sizeof *d);
    if (!d || !(d->title = strdup(title ? title : "s2s attention"))) {
        free(d);
        return s2s_fail(S2S_ERR_NOMEM, "out of memory for the HTML report");
    }
    d->layer = d->head = S2S_ALIGN_AVG;
    *out = d;
    return S2S_OK;
}

void s2s_align_html_set_view(s2s_align_html *d, int layer, int head, bool drop_specials) {
    d->layer = layer < 0 ? S2S_ALIGN_AVG : layer;
    d->head = head < 0 ? S2S_ALIGN_AVG : head;
    d->drop_specials = drop_specials;
}

void s2s_align_html_set_enc_view(s2s_align_html *d, int layer, int head, bool open) {
    d->enc_set = true;
    d->enc_layer = layer < 0 ? S2S_ALIGN_AVG : layer;
    d->enc_head = head < 0 ? S2S_ALIGN_AVG : head;
    d->enc_open = open;
}

void s2s_align_html_free(s2s_align_html *d) {
    if (!d) return;
    free(d->title);
    free(d->patterns);
    free(d->sentences.s);
    free(d);
}

// ---- JSON and HTML text ----

// A JSON string that is also safe inside <script> and HTML text: '<', '>'
// and '&' are escaped, so a token "</script>" cannot end the data block.
static void put_json_string(s2s_buf *b, const char *s) {
    s2s_buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            s2s_buf_putc(b, '\\');
            s2s_buf_putc(b, (char)c);
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7F) {
            s2s_buf_printf(b, "\\u%04x", c);
        } else if (c == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) {
            s2s_buf_printf(b, "\\u%04x", p[2] == 0xA8 ? 0x2028 : 0x2029);  // JS line separators
            p += 2;
        } else {
            s2s_buf_putc(b, (char)c);
        }
    }
    s2s_buf_putc(b, '"');
}

static void put_html_text(s2s_buf *b, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '<': s2s_buf_puts(b, "&lt;"); break;
        case '>': s2s_buf_puts(b, "&gt;"); break;
        case '&': s2s_buf_puts(b, "&amp;"); break;
        case '"': s2s_buf_puts(b, "&quot;"); break;
        default: s2s_buf_putc(b, *s);
        }
    }
}

static void put_string_array(s2s_buf *b, const char *const *s, int n, const char *last) {
    s2s_buf_putc(b, '[');
    for (int i = 0; i < n; i++) {
        if (i) s2s_buf_putc(b, ',');
        put_json_string(b, s[i] ? s[i] : "");
    }
    if (last) {
        if (n) s2s_buf_putc(b, ',');
        put_json_string(b, last);
    }
    s2s_buf_putc(b, ']');
}

// Weights with 4 decimals and no trailing zeros: enough to hover, and
// keeps a page of many sentences small.
static void put_weights(s2s_buf *b, const float *w, size_t n) {
    s2s_buf_putc(b, '[');
    for (size_t i = 0; i < n; i++) {
        if (i) s2s_buf_putc(b, ',');
        float x = w[i] == w[i] ? w[i] : 0.0f;
        int q = (int)(x * 10000.0f + 0.5f);
        if (q <= 0)
            s2s_buf_putc(b, '0');
        else if (q >= 10000)
            s2s_buf_putc(b, '1');
        else {
            char d[8];
            snprintf(d, sizeof d, "%04d", q);
            int len = 4;
            while (len > 1 && d[len - 1] == '0') len--;
            s2s_buf_puts(b, "0.");  // JSON needs the leading zero
            s2s_buf_append(b, d, (size_t)len);
        }
    }
    s2s_buf_putc(b, ']');
}

s2s_status s2s_align_html_add(s2s_align_html *d, const char *const *src_tokens, int n_src,
                              const char *const *tgt_tokens, int n_tgt,
                              const s2s_hypothesis *h, const char *alignment) {
    if (!h->cross_attn) return s2s_fail(S2S_ERR_INVALID, "HTML report: a sentence without cross-attention");
    if (n_src + 1 != h->n_src || n_tgt != h->n)
        return s2s_fail(S2S_ERR_INVALID,
                        "HTML report: %d source and %d target tokens for maps of %d x %d",
                        n_src, n_tgt, h->n_out, h->n_src);
    s2s_buf *b = &d->sentences;
    bool eos = h->n_out > h->n;
    if (d->n) s2s_buf_puts(b, ",\n");
    s2s_buf_printf(b, "{\"layers\":%d,\"heads\":%d,\"enc_layers\":%d,\"src\":", h->layers, h->heads,
                  h->enc_layers);
    put_string_array(b, src_tokens, n_src, s2s_special_token(S2S_EOS));
    s2s_buf_puts(b, ",\"tgt\":");
    put_string_array(b, tgt_tokens, n_tgt, eos ? s2s_special_token(S2S_EOS) : NULL);
    // Decoder inputs: <s> then the outputs shifted right by one.
    s2s_buf_puts(b, ",\"dec_in\":[\"\\u003cs\\u003e\"");
    for (int i = 0; i + 1 < h->n_out; i++) {
        s2s_buf_putc(b, ',');
        put_json_string(b, tgt_tokens[i] ? tgt_tokens[i] : "");
    }
    s2s_buf_puts(b, "],\"alignment\":");
    if (alignment)
        put_json_string(b, alignment);
    else
        s2s_buf_puts(b, "null");
    size_t plane = (size_t)h->n_out * h->n_src;
    s2s_buf_puts(b, ",\"cross\":");
    put_weights(b, h->cross_attn, (size_t)h->layers * h->heads * plane);
    s2s_buf_puts(b, ",\"self\":");
    if (h->self_attn)
        put_weights(b, h->self_attn, (size_t)h->layers * h->heads * h->n_out * h->n_out);
    else
        s2s_buf_puts(b, "null");
    s2s_buf_puts(b, ",\"enc\":");
    if (h->enc_attn)
        put_weights(b, h->enc_attn, (size_t)h->enc_layers * h->heads * h->n_src * h->n_src);
    else
        s2s_buf_puts(b, "null");
    s2s_buf_putc(b, '}');
    if (b->oom) return s2s_fail(S2S_ERR_NOMEM, "out of memory for the HTML report");
    d->n++;
    return S2S_OK;
}

// Reopens the object of the sentence added last, to append a field to it;
// S2S_ERR_INVALID (naming `what`) before any sentence.
static s2s_status reopen_last(s2s_align_html *d, const char *what) {
    s2s_buf *b = &d->sentences;
    if (!d->n || !b->len || b->s[b->len - 1] != '}')
        return s2s_fail(S2S_ERR_INVALID, "HTML report: %s before any sentence", what);
    b->len--;
    return S2S_OK;
}

static s2s_status close_last(s2s_align_html *d) {
    s2s_buf_putc(&d->sentences, '}');
    return d->sentences.oom ? s2s_fail(S2S_ERR_NOMEM, "out of memory for the HTML report") : S2S_OK;
}

s2s_status s2s_align_html_add_coref(s2s_align_html *d, const s2s_alignment *links) {
    s2s_status st = reopen_last(d, "coreference links");
    if (st != S2S_OK) return st;
    s2s_buf *b = &d->sentences;
    s2s_buf_puts(b, ",\"coref\":[");
    for (int i = 0; i < links->n; i++)
        s2s_buf_printf(b, "%s[%d,%d]", i ? "," : "", links->links[i].src, links->links[i].tgt);
    s2s_buf_putc(b, ']');
    return close_last(d);
}

s2s_status s2s_align_html_set_gold(s2s_align_html *d, const s2s_alignment *gold) {
    char *text = s2s_alignment_format(gold);
    if (!text) return s2s_fail(S2S_ERR_NOMEM, "out of memory for the HTML report");
    s2s_status st = reopen_last(d, "gold links");
    if (st != S2S_OK) {
        free(text);
        return st;
    }
    s2s_buf_puts(&d->sentences, ",\"gold\":");
    put_json_string(&d->sentences, text);
    free(text);
    return close_last(d);
}

// Each head's pattern as the JSON maps of `s2s align --format json` give
// it (s2s_pattern_json).
static void put_pattern(s2s_buf *b, const s2s_head_pattern *p) {
    json_t *o = s2s_pattern_json(p);
    char *t = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!t) b->oom = true;  // s2s_buf_take then fails
    else s2s_buf_puts(b, t);
    free(t);
}

s2s_status s2s_align_html_set_patterns(s2s_align_html *d, const s2s_model *m) {
    static const char *const NAMES[S2S_ATTN_MAP_COUNT] = {"cross", "self", "enc"};
    const s2s_model_config *mc = &s2s_model_get_config(m)->model;
    s2s_buf b = {0};
    s2s_buf_putc(&b, '{');
    for (int t = 0; t < S2S_ATTN_MAP_COUNT; t++) {
        int layers = t == S2S_ATTN_MAP_ENC ? mc->encoder_layers : mc->decoder_layers;
        s2s_buf_printf(&b, "%s\"%s\":[", t ? "," : "", NAMES[t]);
        for (int l = 0; l < layers; l++) {
            s2s_buf_puts(&b, l ? ",[" : "[");
            for (int h = 0; h < mc->heads; h++) {
                if (h) s2s_buf_putc(&b, ',');
                s2s_head_pattern p = s2s_model_head_pattern(m, (s2s_attn_map)t, l, h);
                put_pattern(&b, &p);
            }
            s2s_buf_putc(&b, ']');
        }
        s2s_buf_putc(&b, ']');
    }
    s2s_buf_putc(&b, '}');
    char *text = s2s_buf_take(&b);
    if (!text) return s2s_fail(S2S_ERR_NOMEM, "out of memory for the HTML report");
    free(d->patterns);
    d->patterns = text;
    return S2S_OK;
}

// ---- the page ----

// The page up to its closing script: head, style, controls and the view's
// boxes; live adds the input form of `s2s serve`.
static void put_page(s2s_buf *b, const char *title, bool live) {
    s2s_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                    "<meta name=\"viewport\" content=\"width=device-width\">\n"
                    "<link rel=\"icon\" href=\"data:,\">\n<title>");
    put_html_text(b, title);
    s2s_buf_puts(b, "</title>\n<style>\n");
    s2s_buf_puts(b, s2s_viewer_css);
    // The live page opens with no map: a prompt, its controls hidden (viewer.css).
    s2s_buf_puts(b, "</style>\n</head>\n");
    s2s_buf_puts(b, live ? "<body class=\"nomap\">\n<h1>" : "<body>\n<h1>");
    put_html_text(b, title);
    s2s_buf_puts(b, "</h1>\n");
    if (live)
        s2s_buf_puts(b,
                    "<div id=\"live\">\n<div><label>direction <select id=\"model\"></select></label><br>\n"
                    "<textarea id=\"text\" placeholder=\"type a sentence\" autofocus></textarea><br>\n"
                    "<label>reference alignment <input id=\"ref\" placeholder=\"gold links: 0-0 1-2 2p3\">"
                    "</label> <span id=\"aer\"></span></div>\n"
                    "<div><div id=\"langwarn\" hidden></div>"
                    "<div id=\"translation\"></div><ol id=\"nbest\"></ol>"
                    "<div id=\"status\"></div></div>\n</div>\n"
                    "<p id=\"prompt\">Type a sentence in the box above: its translation shows "
                    "beside it, and below, how it attended to the source, as heatmaps of every "
                    "layer and head.</p>\n");
    s2s_buf_puts(b, "<div id=\"controls\">\n");
    // The live page's sentences are those of the text typed: the selector
    // shows once it holds two or more.
    s2s_buf_puts(b, live ? "<label id=\"sentbox\" hidden>sentence <select id=\"sent\"></select></label>\n"
                         : "<label>sentence <select id=\"sent\"></select></label>\n");
    s2s_buf_puts(b,
                "<label>map <select id=\"map\"></select></label>\n"
                "<label>layer <select id=\"layer\"></select></label>\n"
                "<label>head <select id=\"head\"></select></label>\n"
                "<label><input type=\"checkbox\" id=\"noeos\"> leave out &lt;/s&gt; / &lt;s&gt; "
                "and renormalise</label>\n"
                "<span>0 <span class=\"legend\"></span> 1</span>\n</div>\n"
                "<div id=\"pair\"></div>\n<div id=\"heads\"></div>\n<div id=\"links\"></div>\n"
                "<div id=\"info\">hover over a cell to see its weight</div>\n"
                "<div id=\"errors\"></div>\n<div id=\"views\"><div id=\"maps\"></div>"
                "<div id=\"lines\"></div></div>\n<div id=\"grid\"></div>\n");
}

char *s2s_align_live_page(void) {
    s2s_buf b = {0};
    put_page(&b, "s2s translate", /*live=*/true);
    s2s_buf_puts(&b, "<script>\n");
    s2s_buf_puts(&b, s2s_viewer_js);
    s2s_buf_puts(&b, "</script>\n</body>\n</html>\n");
    return s2s_buf_take(&b);
}

s2s_status s2s_align_html_write(const s2s_align_html *d, const char *path) {
    s2s_buf b = {0};
    put_page(&b, d->title, /*live=*/false);
    s2s_buf_puts(&b, "<script type=\"application/json\" id=\"s2s-data\">\n");
    s2s_buf_printf(&b, "{\"default_layer\":%d,\"default_head\":%d,\"drop_specials\":%s,",
                  d->layer, d->head, d->drop_specials ? "true" : "false");
    if (d->enc_set)  // [layer, head, open on it]
        s2s_buf_printf(&b, "\"enc\":[%d,%d,%s],", d->enc_layer, d->enc_head,
                      d->enc_open ? "true" : "false");
    if (d->patterns) s2s_buf_printf(&b, "\"patterns\":%s,", d->patterns);
    s2s_buf_puts(&b, "\"sentences\":[\n");
    if (d->sentences.s) s2s_buf_append(&b, d->sentences.s, d->sentences.len);
    s2s_buf_puts(&b, "\n]}\n</script>\n<script>\n");
    s2s_buf_puts(&b, s2s_viewer_js);
    s2s_buf_puts(&b, "</script>\n</body>\n</html>\n");
    if (b.oom) {
        free(b.s);
        return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    }
    s2s_status st = s2s_safe_write_file(path, b.s, b.len);
    free(b.s);
    return st;
}
