// One self-contained HTML page with the attention maps of several
// sentences: the data as inline JSON, drawn by inline JS (no network).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "core/error.h"
#include "core/safe_write.h"
#include "s2s/align.h"

struct s2s_align_html {
    char *title;
    s2s_buf sentences;  // JSON objects joined by ",\n"
    int n;
    int layer, head;  // the view the page opens on
    bool drop_specials;
    bool enc_set, enc_open;    // the encoder map's own plane (a coreference head)
    int enc_layer, enc_head;
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

s2s_status s2s_align_html_add_coref(s2s_align_html *d, const s2s_alignment *links) {
    s2s_buf *b = &d->sentences;
    if (!d->n || !b->len || b->s[b->len - 1] != '}')
        return s2s_fail(S2S_ERR_INVALID, "HTML report: coreference links before any sentence");
    b->len--;  // reopen the last sentence's object
    s2s_buf_puts(b, ",\"coref\":[");
    for (int i = 0; i < links->n; i++)
        s2s_buf_printf(b, "%s[%d,%d]", i ? "," : "", links->links[i].src, links->links[i].tgt);
    s2s_buf_puts(b, "]}");
    return b->oom ? s2s_fail(S2S_ERR_NOMEM, "out of memory for the HTML report") : S2S_OK;
}

// ---- the page ----

static const char CSS[] =
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI','Noto Sans','Noto Sans CJK SC',"
    "sans-serif;margin:16px;color:#222;background:#fff}\n"
    "h1{font-size:18px;margin:0 0 8px}\n"
    "#controls{display:flex;flex-wrap:wrap;gap:12px;align-items:center;margin-bottom:8px}\n"
    "#controls select{font:inherit}\n"
    "#pair{margin:6px 0;color:#444}\n"
    "#info{min-height:1.4em;margin:4px 0 10px;font-family:monospace;color:#333}\n"
    "#maps{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}\n"
    "figure{margin:0}\n"
    "figcaption{font-weight:600;margin-bottom:4px}\n"
    "table.hm{border-collapse:collapse}\n"
    "table.hm td{width:28px;height:28px;padding:0;border:1px solid #fff}\n"
    "table.hm.small td{width:12px;height:12px}\n"
    "table.hm td.arg{outline:2px solid #e8590c;outline-offset:-2px}\n"
    "table.hm td.ante{box-shadow:inset 0 0 0 3px #2b8a3e}\n"
    "table.hm th.pron{font-weight:700;color:#2b8a3e}\n"
    "table.hm th{font-weight:normal;padding:0 4px;white-space:nowrap}\n"
    "table.hm th.row{text-align:right}\n"
    "table.hm th.col{vertical-align:bottom;padding:4px 0}\n"
    "table.hm th.col span{writing-mode:vertical-rl;display:inline-block}\n"
    "table.hm.small th{font-size:10px}\n"
    ".legend{display:inline-block;width:120px;height:10px;vertical-align:middle;"
    "background:linear-gradient(to right,hsl(212,80%,97%),hsl(212,80%,25%))}\n"
    "#errors{color:#c00}\n";

static const char JS[] =
    "'use strict';\n"
    "window.onerror=function(msg,src,line){var e=document.getElementById('errors');"
    "e.setAttribute('class','s2s-js-error');e.textContent='error: '+msg+' (line '+line+')';};\n"
    "(function(){\n"
    "var D=JSON.parse(document.getElementById('s2s-data').textContent);\n"
    "var S=D.sentences;\n"
    "function $(id){return document.getElementById(id);}\n"
    "function opt(sel,value,text){var o=document.createElement('option');o.value=value;"
    "o.textContent=text;sel.appendChild(o);}\n"
    "var TYPES=[['cross','cross-attention'],['self','decoder self-attention'],"
    "['enc','encoder self-attention']];\n"
    // The geometry of one map type of sentence s.
    "function geom(s,type){\n"
    " if(type==='cross')return {maps:s.cross,L:s.layers,rl:s.tgt,cl:s.src,special:s.src.length-1};\n"
    " if(type==='self')return {maps:s.self,L:s.layers,rl:s.dec_in,cl:s.dec_in,special:0};\n"
    " return {maps:s.enc,L:s.enc_layers,rl:s.src,cl:s.src,special:s.src.length-1};\n"
    "}\n"
    // The (rows, cols) plane of layer l and head h (-1: the mean).
    "function plane(s,g,l,h,noeos){\n"
    " var R=g.rl.length,C=g.cl.length,H=s.heads,w=new Float64Array(R*C),n=0;\n"
    " for(var a=0;a<g.L;a++){if(l>=0&&a!==l)continue;\n"
    "  for(var b=0;b<H;b++){if(h>=0&&b!==h)continue;n++;var o=(a*H+b)*R*C;\n"
    "   for(var e=0;e<R*C;e++)w[e]+=g.maps[o+e];}}\n"
    " for(var e2=0;e2<R*C;e2++)w[e2]/=n;\n"
    " var keep=[];for(var c=0;c<C;c++)if(!(noeos&&c===g.special))keep.push(c);\n"
    " var out=[];\n"
    " for(var r=0;r<R;r++){var row=[],sum=0,k;\n"
    "  for(k=0;k<keep.length;k++)sum+=w[r*C+keep[k]];\n"
    "  for(k=0;k<keep.length;k++){var x=w[r*C+keep[k]];row.push(noeos?(sum>0?x/sum:0):x);}\n"
    "  out.push(row);}\n"
    " return {w:out,rl:g.rl,cl:keep.map(function(c){return g.cl[c];})};\n"
    "}\n"
    "function name(x){return x<0?'avg':String(x);}\n"
    "function table(p,caption,small,mark,coref){\n"
    " var fig=document.createElement('figure'),cap=document.createElement('figcaption');\n"
    " cap.textContent=caption;fig.appendChild(cap);\n"
    " var t=document.createElement('table');t.className=small?'hm small':'hm';\n"
    " var tr=document.createElement('tr');tr.appendChild(document.createElement('th'));\n"
    " p.cl.forEach(function(c){var th=document.createElement('th');th.className='col';"
    "var sp=document.createElement('span');sp.textContent=c;th.appendChild(sp);tr.appendChild(th);});\n"
    " t.appendChild(tr);\n"
    " p.w.forEach(function(row,r){\n"
    "  var tr=document.createElement('tr'),th=document.createElement('th');th.className='row';\n"
    // coref: the pronoun rows' antecedent columns (encoder map).
    "  var ante=-1;(coref||[]).forEach(function(x){if(x[0]===r){ante=x[1];th.className='row pron';}});\n"
    "  th.textContent=p.rl[r];tr.appendChild(th);var best=-1;\n"
    "  row.forEach(function(x,c){if(best<0||x>row[best])best=c;});\n"
    "  row.forEach(function(x,c){var td=document.createElement('td');\n"
    "   td.style.background='hsl(212,80%,'+(97-72*x).toFixed(1)+'%)';\n"
    "   var tip=p.rl[r]+' \\u2192 '+p.cl[c]+': '+x.toFixed(4);td.title=tip;\n"
    "   td.onmouseover=function(){$('info').textContent=caption+'  |  '+tip;};\n"
    "   if(mark&&c===best)td.className='arg';if(c===ante)td.className+=' ante';tr.appendChild(td);});\n"
    "  t.appendChild(tr);});\n"
    " fig.appendChild(t);return fig;\n"
    "}\n"
    "function fillLayerHead(){\n"
    " var s=S[+$('sent').value],g=geom(s,$('map').value),ls=$('layer'),hs=$('head');\n"
    " var lv=ls.value,hv=hs.value;ls.innerHTML='';hs.innerHTML='';\n"
    " opt(ls,'-1','avg');opt(ls,'all','all');for(var l=0;l<g.L;l++)opt(ls,String(l),String(l));\n"
    " opt(hs,'-1','avg');opt(hs,'all','all');for(var h=0;h<s.heads;h++)opt(hs,String(h),String(h));\n"
    " if(lv&&[].some.call(ls.options,function(o){return o.value===lv;}))ls.value=lv;\n"
    " if(hv&&[].some.call(hs.options,function(o){return o.value===hv;}))hs.value=hv;\n"
    "}\n"
    "function fillMaps(){\n"
    " var s=S[+$('sent').value],ms=$('map'),v=ms.value;ms.innerHTML='';\n"
    " TYPES.forEach(function(t){if(s[t[0]])opt(ms,t[0],t[1]);});\n"
    " if(v&&s[v])ms.value=v;\n"
    "}\n"
    "function draw(){\n"
    " var s=S[+$('sent').value],type=$('map').value,g=geom(s,type),noeos=$('noeos').checked;\n"
    " $('pair').textContent=s.src.slice(0,-1).join(' ')+'  \\u2192  '+s.tgt.join(' ')+"
    "(s.alignment!==null?'   [alignment: '+s.alignment+']':'');\n"
    " var lv=$('layer').value,hv=$('head').value;\n"
    " var ls=lv==='all'?[]:[+lv],hs=hv==='all'?[]:[+hv];\n"
    " if(lv==='all'){for(var l=0;l<g.L;l++)ls.push(l);ls.push(-1);}\n"
    " if(hv==='all'){for(var h=0;h<s.heads;h++)hs.push(h);hs.push(-1);}\n"
    " var box=$('maps');box.innerHTML='';var small=ls.length*hs.length>1,count=0;\n"
    " ls.forEach(function(l){hs.forEach(function(h){\n"
    "  box.appendChild(table(plane(s,g,l,h,noeos),'layer '+name(l)+' \\u00b7 head '+name(h),"
    "small,type!=='self',type==='enc'?s.coref:null));count++;});});\n"
    " document.body.setAttribute('data-s2s-maps',String(count));\n"
    "}\n"
    "S.forEach(function(s,i){opt($('sent'),String(i),(i+1)+': '+s.src.slice(0,-1).join(' '));});\n"
    "$('sent').onchange=function(){fillMaps();fillLayerHead();draw();};\n"
    "function encView(){if(!D.enc)return;var e=$('map').value==='enc';"
    "$('layer').value=String(e?D.enc[0]:D.default_layer);$('head').value=String(e?D.enc[1]:D.default_head);}\n"
    "$('map').onchange=function(){fillLayerHead();encView();draw();};\n"
    "$('layer').onchange=draw;$('head').onchange=draw;$('noeos').onchange=draw;\n"
    "$('noeos').checked=!!D.drop_specials;\n"
    "if(S.length){var dl=D.default_layer,dh=D.default_head;fillMaps();fillLayerHead();\n"
    " $('layer').value=String(dl);$('head').value=String(dh);\n"
    " if(D.enc&&D.enc[2]&&S[0].enc){$('map').value='enc';fillLayerHead();encView();}draw();}\n"
    "else $('maps').textContent='(no sentences)';\n"
    // #selftest (used by tests/html_render_test.sh): draw every sentence,
    // map type, layer, head and </s> setting once, and count them.
    "if(location.hash==='#selftest'){var n=0,each=function(sel,f){[].slice.call(sel.options)"
    ".forEach(function(o){sel.value=o.value;f();});};\n"
    " for(var i=0;i<S.length;i++){$('sent').value=String(i);fillMaps();\n"
    "  each($('map'),function(){fillLayerHead();each($('layer'),function(){each($('head'),"
    "function(){[false,true].forEach(function(ne){$('noeos').checked=ne;draw();n++;});});});});}\n"
    " document.body.setAttribute('data-s2s-selftest',String(n));}\n"
    "document.body.setAttribute('data-s2s-status','ok');\n"
    "})();\n";

s2s_status s2s_align_html_write(const s2s_align_html *d, const char *path) {
    s2s_buf b = {0};
    s2s_buf_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
    put_html_text(&b, d->title);
    s2s_buf_puts(&b, "</title>\n<style>\n");
    s2s_buf_puts(&b, CSS);
    s2s_buf_puts(&b, "</style>\n</head>\n<body>\n<h1>");
    put_html_text(&b, d->title);
    s2s_buf_puts(&b,
                "</h1>\n<div id=\"controls\">\n"
                "<label>sentence <select id=\"sent\"></select></label>\n"
                "<label>map <select id=\"map\"></select></label>\n"
                "<label>layer <select id=\"layer\"></select></label>\n"
                "<label>head <select id=\"head\"></select></label>\n"
                "<label><input type=\"checkbox\" id=\"noeos\"> leave out &lt;/s&gt; / &lt;s&gt; "
                "and renormalise</label>\n"
                "<span>0 <span class=\"legend\"></span> 1</span>\n</div>\n"
                "<div id=\"pair\"></div>\n<div id=\"info\">hover over a cell to see its weight</div>\n"
                "<div id=\"errors\"></div>\n<div id=\"maps\"></div>\n"
                "<script type=\"application/json\" id=\"s2s-data\">\n");
    s2s_buf_printf(&b, "{\"default_layer\":%d,\"default_head\":%d,\"drop_specials\":%s,",
                  d->layer, d->head, d->drop_specials ? "true" : "false");
    if (d->enc_set)  // [layer, head, open on it]
        s2s_buf_printf(&b, "\"enc\":[%d,%d,%s],", d->enc_layer, d->enc_head,
                      d->enc_open ? "true" : "false");
    s2s_buf_puts(&b, "\"sentences\":[\n");
    if (d->sentences.s) s2s_buf_append(&b, d->sentences.s, d->sentences.len);
    s2s_buf_puts(&b, "\n]}\n</script>\n<script>\n");
    s2s_buf_puts(&b, JS);
    s2s_buf_puts(&b, "</script>\n</body>\n</html>\n");
    if (b.oom) {
        free(b.s);
        return s2s_fail(S2S_ERR_NOMEM, "%s: out of memory", path);
    }
    s2s_status st = s2s_safe_write_file(path, b.s, b.len);
    free(b.s);
    return st;
}
