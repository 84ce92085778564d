// The attention viewer shared by `s2s align --html` (a static report: the
// sentences are inline JSON in #s2s-data) and the page of `s2s serve` (live:
// the page asks /v1/translate and /v1/align as the user types). Embedded in
// the library at build time (cmake/embed.cmake); no network, no library.
'use strict';
window.onerror=function(msg,src,line){var e=document.getElementById('errors');
e.setAttribute('class','s2s-js-error');e.textContent='error: '+msg+' (line '+line+')';};
(function(){
function $(id){return document.getElementById(id);}
function opt(sel,value,text){var o=document.createElement('option');o.value=value;
o.textContent=text;sel.appendChild(o);}
function el(tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;
if(text!==undefined)e.textContent=text;return e;}
var TYPES=[['cross','cross-attention'],['self','decoder self-attention'],
['enc','encoder self-attention']];
var S=[];  // the sentences: {layers,heads,enc_layers,src,tgt,dec_in,alignment,gold,cross,self,enc,coref,patterns}
var EOS='</s>',LIVE=false;
// Each mode's way to show the view the selectors hold (a thumb of the grid sets them).
var REDRAW=function(){};

// ---- planes ----

// The geometry of one map type of sentence s; pats[l][h] is the pattern
// head h of layer l runs (as in the JSON maps: {type, window|block|stride,
// causal}), null when unknown (drawn as full).
function geom(s,type){
 var pats=s.patterns&&s.patterns[type]||null;
 if(type==='cross')return {maps:s.cross,L:s.layers,rl:s.tgt,cl:s.src,special:s.src.length-1,pats:pats};
 if(type==='self')return {maps:s.self,L:s.layers,rl:s.dec_in,cl:s.dec_in,special:0,pats:pats};
 return {maps:s.enc,L:s.enc_layers,rl:s.src,cl:s.src,special:s.src.length-1,pats:pats};
}

// ---- each head's pattern ----

function pat(g,l,h){return g.pats&&g.pats[l]&&g.pats[l][h]||null;}
var PARAM={local:'window',block:'block',strided:'stride'};
// Whether query row i of a head running p sees key j (rows and columns are
// positions): layers/mask.c's s2s_attn_mask_sees, which the JSON's
// patterns come from; tests/html_render_test.sh checks that the two agree.
function sees(p,i,j){
 if(!p)return true;if(p.causal&&j>i)return false;
 var k=PARAM[p.type],n=k?p[k]:0,d=i-j;if(k&&!(n>=1))return true;
 if(p.type==='local')return d<=n&&-d<=n;
 if(p.type==='block')return Math.floor(i/n)===Math.floor(j/n);
 if(p.type==='strided')return (d<n&&-d<n)||d%n===0;
 return true;  // full, linear
}
function patText(p){if(!p)return 'full';var k=PARAM[p.type];return k?p.type+', '+k+' '+p[k]:p.type;}
// Whether some head of the map is not full (the causal cut aside).
function varies(g){return !!g.pats&&g.pats.some(function(hs){return hs.some(function(p){
 return p&&p.type!=='full';});});}
// The patterns of plane (l, h), -1 a mean: each once, as text.
function patNames(g,l,h,H){var out=[];
 for(var a=0;a<g.L;a++)for(var b=0;b<H;b++)if((l<0||a===l)&&(h<0||b===h)){
  var t=patText(pat(g,a,b));if(out.indexOf(t)<0)out.push(t);}
 return out.join(' / ');}
// The (rows, cols) plane of layer l and head h (-1: the mean); with noeos
// the special column is left out and rows renormalised. keep maps the
// plane's columns back to the sentence's.
function plane(s,g,l,h,noeos){
 var R=g.rl.length,C=g.cl.length,H=s.heads,w=new Float64Array(R*C),seen=new Uint8Array(R*C),n=0;
 for(var a=0;a<g.L;a++){if(l>=0&&a!==l)continue;
  for(var b=0;b<H;b++){if(h>=0&&b!==h)continue;n++;var o=(a*H+b)*R*C,p=pat(g,a,b);
   for(var e=0;e<R*C;e++){w[e]+=g.maps[o+e];if(!seen[e]&&sees(p,Math.floor(e/C),e%C))seen[e]=1;}}}
 for(var e2=0;e2<R*C;e2++)w[e2]/=n;
 var keep=[];for(var c=0;c<C;c++)if(!(noeos&&c===g.special))keep.push(c);
 var out=[],vis=[];
 for(var r=0;r<R;r++){var row=[],sum=0,k;
  for(k=0;k<keep.length;k++)sum+=w[r*C+keep[k]];
  for(k=0;k<keep.length;k++){var x=w[r*C+keep[k]];row.push(noeos?(sum>0?x/sum:0):x);}
  out.push(row);vis.push(keep.map(function(c){return !!seen[r*C+c];}));}
 return {w:out,seen:vis,rl:g.rl,cl:keep.map(function(c){return g.cl[c];}),keep:keep};
}
function name(x){return x<0?'avg':String(x);}

// ---- alignments ----

// Target tokens without the final </s>.
function nTgt(s){return s.tgt.length&&s.tgt[s.tgt.length-1]===EOS?s.tgt.length-1:s.tgt.length;}
// Hard links of a cross plane, as s2s_hard_align: each target token to the
// source token it attends to most; none when that is the source </s>.
function argmaxLinks(s,p){
 var links={},nsrc=s.src.length-1;
 for(var r=0;r<nTgt(s);r++){var best=-1;
  p.w[r].forEach(function(x,c){if(best<0||x>p.w[r][best])best=c;});
  var sc=p.keep[best];if(best>=0&&sc<nsrc)links[sc+'-'+r]=true;}
 return links;
}
// Pharaoh text -> {"i-j": 'sure'|'possible'}.
function parseLinks(text){
 var out={};(text||'').trim().split(/\s+/).forEach(function(t){
  var m=/^(\d+)([-p?])(\d+)(p?)$/.exec(t);if(!m)return;
  out[m[1]+'-'+m[3]]=(m[2]==='-'&&!m[4])?'sure':'possible';});
 return out;
}
function linkText(links){return Object.keys(links).sort(function(a,b){
 var x=a.split('-').map(Number),y=b.split('-').map(Number);return x[0]-y[0]||x[1]-y[1];}).join(' ');}
// The mark of cell (source i, target j): predicted links against gold.
function mark(pred,gold,key){
 if(!gold)return pred[key]?'link':'';
 if(pred[key])return gold[key]==='sure'?'sure':gold[key]==='possible'?'possible':'wrong';
 return gold[key]==='sure'?'missed':'';
}

// ---- drawing ----

function shade(x){return 'hsl(212,80%,'+(97-72*x).toFixed(1)+'%)';}
// One orientation per axis: the column labels stand upright when every one
// fits its column, else all are turned (reading upwards) and the header row
// is as tall as the longest, so that no label covers a cell or a
// neighbour's column. Measured once the table is laid out.
function fitLabels(t){
 var ths=[].slice.call(t.rows[0].cells,1);if(!ths.length)return;
 t.classList.add('turned');  // labels out of the flow: the columns as wide as their cells
 var pitch=Infinity,long=0;
 ths.forEach(function(th){pitch=Math.min(pitch,th.getBoundingClientRect().width);
  long=Math.max(long,th.firstChild.offsetWidth);});
 if(long<=pitch-2){t.classList.remove('turned');t.rows[0].cells[0].style.height='';return;}
 t.rows[0].cells[0].style.height=(long+8)+'px';
}
function fitAll(){[].forEach.call(document.querySelectorAll('#maps table.hm'),fitLabels);}

// o: links (the cross plane's, marked against gold), arg (mark each row's
// maximum), coref ([[pronoun,antecedent],...] on the encoder map: the
// pronouns' rows and their antecedents' cells marked).
function table(p,caption,small,o){
 var links=o.links,gold=o.gold;
 var fig=el('figure'),t=el('table',small?'hm small':'hm');fig.appendChild(el('figcaption','',caption));
 var tr=el('tr');tr.appendChild(el('th'));
 // upright or turned, all alike: fitLabels, once the table is in the page
 p.cl.forEach(function(c){var th=el('th','col');th.appendChild(el('span','',c));tr.appendChild(th);});
 t.appendChild(tr);
 p.w.forEach(function(row,r){
  var tr=el('tr'),th=el('th','row',p.rl[r]),ante=-1;tr.appendChild(th);var best=-1;
  (o.coref||[]).forEach(function(x){if(x[0]===r){ante=x[1];th.className='row pron';}});
  row.forEach(function(x,c){if(best<0||x>row[best])best=c;});
  row.forEach(function(x,c){var td=el('td'),hid=!p.seen[r][c];
   // a key the head's pattern hides: hatched (viewer.css), apart from weight 0
   if(!hid)td.style.background=shade(x);
   var tip=p.rl[r]+' \u2192 '+p.cl[c]+': '+(hid?'hidden by the pattern':x.toFixed(4));td.title=tip;
   td.setAttribute('data-w',x.toFixed(6));
   td.onmouseover=function(){$('info').textContent=caption+'  |  '+tip;};
   var cls=links?mark(links,gold,p.keep[c]+'-'+r):'';
   if(o.arg&&c===best)cls+=' arg';if(p.keep[c]===ante)cls+=' ante';if(hid)cls+=' unseen';
   td.className=cls.trim();tr.appendChild(td);});
  t.appendChild(tr);});
 fig.appendChild(t);return fig;
}
// bertviz-style: the columns' tokens left, the rows' right, joined by
// lines as strong as the weight.
function lineView(p,box){
 var holder=el('div');holder.innerHTML='<svg></svg>';  // the SVG namespace, without a URL in the page
 var NS=holder.firstChild.namespaceURI,rowH=22,W=360,n=Math.max(p.rl.length,p.cl.length);
 var svg=document.createElementNS(NS,'svg');svg.setAttribute('width',W);
 svg.setAttribute('height',n*rowH+10);svg.setAttribute('class','lines');
 function text(x,y,t,anchor,side,i){var e=document.createElementNS(NS,'text');
  e.setAttribute('x',x);e.setAttribute('y',y);e.setAttribute('text-anchor',anchor);
  e.setAttribute('data-side',side);e.setAttribute('data-i',i);e.textContent=t;svg.appendChild(e);}
 var lines=[];
 p.w.forEach(function(row,r){row.forEach(function(x,c){if(x<0.02)return;
  var l=document.createElementNS(NS,'line');l.setAttribute('x1',120);l.setAttribute('y1',c*rowH+16);
  l.setAttribute('x2',W-120);l.setAttribute('y2',r*rowH+16);l.setAttribute('stroke','hsl(212,80%,35%)');
  l.setAttribute('stroke-width',(1+3*x).toFixed(2));l.setAttribute('stroke-opacity',x.toFixed(3));
  l.setAttribute('data-r',r);l.setAttribute('data-c',c);svg.appendChild(l);lines.push(l);});});
 p.cl.forEach(function(t,c){text(112,c*rowH+20,t,'end','c',c);});
 p.rl.forEach(function(t,r){text(W-112,r*rowH+20,t,'start','r',r);});
 // Hovering a token shows only its lines.
 svg.onmouseover=function(ev){var side=ev.target.getAttribute&&ev.target.getAttribute('data-side');
  lines.forEach(function(l){l.style.display=!side||l.getAttribute('data-'+side)===ev.target.getAttribute('data-i')?'':'none';});};
 svg.onmouseout=function(){lines.forEach(function(l){l.style.display='';});};
 box.appendChild(svg);
}
// ---- every head at once (bertviz's model view) ----

// Plane (l, h) of map type `type` as a small map without labels (cells of
// px pixels; hidden keys hatched as in the large map); a click opens it.
function thumb(s,g,type,l,h,noeos,px){
 var p=plane(s,g,l,h,noeos),d=el('div','head-thumb'),t=el('table','hm thumb');
 d.setAttribute('data-map',type);d.setAttribute('data-layer',String(l));d.setAttribute('data-head',String(h));
 d.title='layer '+l+' \u00b7 head '+h+(varies(g)?': '+patText(pat(g,l,h)):'')+' (click to open)';
 t.style.setProperty('--px',px+'px');
 p.w.forEach(function(row,r){var tr=el('tr');row.forEach(function(x,c){var td=el('td');
   if(p.seen[r][c])td.style.background=shade(x);else td.className='unseen';tr.appendChild(td);});
  t.appendChild(tr);});
 d.appendChild(t);d.onclick=function(){openPlane(s,type,l,h);};return d;
}
// Every map type of s: a grid of layers (rows) by heads (columns).
function gridOf(s,noeos){
 var box=el('div');
 TYPES.forEach(function(t){var g=geom(s,t[0]);if(!g.maps)return;
  var R=g.rl.length,C=g.cl.length-(noeos?1:0),px=Math.max(2,Math.min(6,Math.floor(96/Math.max(R,C,1))));
  var sec=el('section','kind'),gd=el('div','heads');sec.appendChild(el('h3','',t[1]));
  gd.style.gridTemplateColumns='auto repeat('+s.heads+',auto)';gd.appendChild(el('span'));
  for(var h=0;h<s.heads;h++)gd.appendChild(el('span','hh','head '+h));
  for(var l=0;l<g.L;l++){gd.appendChild(el('span','lh','layer '+l));
   for(var h2=0;h2<s.heads;h2++)gd.appendChild(thumb(s,g,t[0],l,h2,noeos,px));}
  sec.appendChild(gd);box.appendChild(sec);});
 return box;
}
// The grid of s below the view (built once per sentence and </s> setting),
// the thumb of the plane shown outlined.
function grid(s,noeos){
 var box=$('grid'),k=noeos?1:0;s.grids=s.grids||[];
 if(!s.grids[k])s.grids[k]=gridOf(s,noeos);
 if(box.lastChild!==s.grids[k]){box.innerHTML='';
  box.appendChild(el('h2','','every layer and head \u00b7 click one to open it'));box.appendChild(s.grids[k]);}
 var m=$('map').value,l=$('layer').value,h=$('head').value;
 [].forEach.call(box.querySelectorAll('.head-thumb'),function(d){d.classList.toggle('on',
  d.getAttribute('data-map')===m&&d.getAttribute('data-layer')===l&&d.getAttribute('data-head')===h);});
}
// A thumb clicked: its plane, large, in the view.
function openPlane(s,type,l,h){
 setSel($('map'),type);fillLayerHead(s);setSel($('layer'),String(l));setSel($('head'),String(h));
 REDRAW();var f=$('maps').firstChild;if(f&&f.scrollIntoView)f.scrollIntoView({block:'nearest'});
}

function fillLayerHead(s){
 var g=geom(s,$('map').value),ls=$('layer'),hs=$('head'),v=varies(g);
 var lv=ls.value,hv=hs.value;ls.innerHTML='';hs.innerHTML='';
 opt(ls,'-1','avg');opt(ls,'all','all');for(var l=0;l<g.L;l++)opt(ls,String(l),String(l));
 // a head that runs the same pattern in every layer is named in its option
 opt(hs,'-1','avg');opt(hs,'all','all');for(var h=0;h<s.heads;h++){var t=patNames(g,-1,h,s.heads);
  opt(hs,String(h),v&&t.indexOf(' / ')<0?h+': '+t:String(h));}
 if(lv&&[].some.call(ls.options,function(o){return o.value===lv;}))ls.value=lv;
 if(hv&&[].some.call(hs.options,function(o){return o.value===hv;}))hs.value=hv;
}
function fillMaps(s){
 var ms=$('map'),v=ms.value;ms.innerHTML='';
 TYPES.forEach(function(t){if(s[t[0]])opt(ms,t[0],t[1]);});
 if(v&&s[v])ms.value=v;
}
function setSel(sel,v){if([].some.call(sel.options,function(o){return o.value===v;}))sel.value=v;}
// v: {def:[layer,head], enc:[layer,head] or null}, the view the page opens
// on and the encoder map's own (a coreference head): on the encoder map the
// selectors go to v.enc, on the others back to v.def.
function mapView(v){if(!v.enc)return;var x=$('map').value==='enc'?v.enc:v.def;
 setSel($('layer'),String(x[0]));setSel($('head'),String(x[1]));}
// Which pattern each head of the layers shown runs (every layer for the
// mean), when the map has heads that are not full, and the key to the
// hatched cells when some are drawn.
function heads(s,g,ls,vary,hidden){
 var box=$('heads');box.innerHTML='';
 if(vary){var show=ls.filter(function(l){return l>=0;});if(!show.length)for(var l=0;l<g.L;l++)show.push(l);
  show.forEach(function(l){var d=el('div','',g.L>1?'layer '+l+': ':'');
   for(var h=0;h<s.heads;h++)d.appendChild(el('span','pat '+(pat(g,l,h)||{type:'full'}).type,
    (h?' \u00b7 ':'')+'head '+h+': '+patText(pat(g,l,h))));
   box.appendChild(d);});}
 if(hidden)box.appendChild(el('div','key','hatched: a key the head\u2019s pattern hides'+
  ' (no weight by construction); white: a key it sees and weighs (near) 0'));
}
// Draws sentence s in the selected view: its heatmaps, the alignment of
// the selected cross plane (and gold against it), the line view.
function draw(s){
 var type=$('map').value,g=geom(s,type),noeos=$('noeos').checked;
 $('pair').textContent=s.src.slice(0,-1).join(' ')+'  \u2192  '+s.tgt.slice(0,nTgt(s)).join(' ');
 var lv=$('layer').value,hv=$('head').value;
 var ls=lv==='all'?[]:[+lv],hs=hv==='all'?[]:[+hv];
 if(lv==='all'){for(var l=0;l<g.L;l++)ls.push(l);ls.push(-1);}
 if(hv==='all'){for(var h=0;h<s.heads;h++)hs.push(h);hs.push(-1);}
 var gold=s.gold?parseLinks(s.gold):null,box=$('maps');box.innerHTML='';
 var small=ls.length*hs.length>1,count=0,first=null,firstLinks=null,vary=varies(g),hidden=0;
 ls.forEach(function(l){hs.forEach(function(h){
  var p=plane(s,g,l,h,noeos),links=type==='cross'?argmaxLinks(s,p):null;
  if(!first){first=p;firstLinks=links;}
  p.seen.forEach(function(r){r.forEach(function(x){if(!x)hidden++;});});
  var cap='layer '+name(l)+' \u00b7 head '+name(h)+(vary?': '+patNames(g,l,h,s.heads):'');
  box.appendChild(table(p,cap,small,
   {links:links,gold:gold,arg:type!=='self',coref:type==='enc'?s.coref:null}));count++;});});
 // The live page shows the self-attention maps of the same plane beside.
 if(LIVE&&type==='cross'&&ls.length===1&&hs.length===1)[['self','decoder'],['enc','encoder']].forEach(function(t){
  var g2=geom(s,t[0]);if(!g2.maps||ls[0]>=g2.L)return;
  box.appendChild(table(plane(s,g2,ls[0],hs[0],noeos),t[1]+' self-attention \u00b7 layer '+name(ls[0])+
   ' \u00b7 head '+name(hs[0]),true,{arg:t[0]==='enc'}));});
 document.body.setAttribute('data-s2s-maps',String(count));
 heads(s,g,ls,vary,hidden);
 var lb=$('links');lb.innerHTML='';
 if(firstLinks){
  lb.appendChild(el('span','','alignment (layer '+name(ls[0])+', head '+name(hs[0])+'): '));
  lb.appendChild(el('code','',linkText(firstLinks)||'(none)'));
  if(gold){var n={sure:0,possible:0,wrong:0,missed:0};
   Object.keys(firstLinks).forEach(function(k){n[mark(firstLinks,gold,k)]++;});
   Object.keys(gold).forEach(function(k){if(mark(firstLinks,gold,k)==='missed')n.missed++;});
   ['sure','possible','wrong','missed'].forEach(function(k){
    lb.appendChild(el('span','key '+k,' '+k+' '+n[k]));});}
 }
 var lv2=$('lines');lv2.innerHTML='';if(first)lineView(first,lv2);
 fitAll();grid(s,noeos);
}

// ---- the static report (s2s align --html) ----

function staticReport(){
 var D=JSON.parse($('s2s-data').textContent);S=D.sentences;
 S.forEach(function(s){if(!s.patterns)s.patterns=D.patterns||null;});
 var V={def:[D.default_layer,D.default_head],enc:D.enc||null};
 function cur(){return S[+$('sent').value];}
 S.forEach(function(s,i){opt($('sent'),String(i),(i+1)+': '+s.src.slice(0,-1).join(' '));});
 $('sent').onchange=function(){fillMaps(cur());fillLayerHead(cur());draw(cur());};
 $('map').onchange=function(){fillLayerHead(cur());mapView(V);draw(cur());};
 $('layer').onchange=$('head').onchange=$('noeos').onchange=function(){draw(cur());};
 $('noeos').checked=!!D.drop_specials;
 REDRAW=function(){draw(cur());};
 if(S.length){fillMaps(cur());fillLayerHead(cur());
  setSel($('layer'),String(D.default_layer));setSel($('head'),String(D.default_head));
  // D.enc[2]: open on the encoder map at its head.
  if(D.enc&&D.enc[2]&&cur().enc){$('map').value='enc';fillLayerHead(cur());mapView(V);}
  // A link to a view: #sent=1&map=enc&layer=0&head=2 (each optional).
  var q=new URLSearchParams(location.hash.slice(1));
  if(q.get('sent')!==null){setSel($('sent'),q.get('sent'));fillMaps(cur());fillLayerHead(cur());}
  if(q.get('map')!==null){setSel($('map'),q.get('map'));fillLayerHead(cur());mapView(V);}
  if(q.get('layer')!==null)setSel($('layer'),q.get('layer'));
  if(q.get('head')!==null)setSel($('head'),q.get('head'));
  if(q.get('noeos')!==null)$('noeos').checked=q.get('noeos')==='1';
  draw(cur());}
 else $('maps').textContent='(no sentences)';
 // #selftest (tests/html_render_test.sh): draw every sentence, map type,
 // layer, head and </s> setting once, and count them.
 if(location.hash==='#selftest'){var n=0,each=function(sel,f){[].slice.call(sel.options)
  .forEach(function(o){sel.value=o.value;f();});};
  for(var i=0;i<S.length;i++){$('sent').value=String(i);fillMaps(cur());
   each($('map'),function(){fillLayerHead(cur());each($('layer'),function(){each($('head'),
   function(){[false,true].forEach(function(ne){$('noeos').checked=ne;draw(cur());n++;});});});});}
  document.body.setAttribute('data-s2s-selftest',String(n));}
}

// ---- the live page (s2s serve) ----

// The reply of /v1/align (maps in the JSON of `s2s align --format json`)
// as a sentence of the report's form.
function fromApi(a){
 var s={layers:0,heads:0,enc_layers:0,alignment:a.alignment||null,gold:a.gold||null,
  src:null,tgt:null,dec_in:null,cross:null,self:null,enc:null};
 a.maps.forEach(function(m){s.heads=Math.max(s.heads,m.head+1);
  if(m.type==='enc')s.enc_layers=Math.max(s.enc_layers,m.layer+1);
  else s.layers=Math.max(s.layers,m.layer+1);
  if(m.type==='cross'){s.src=m.cols;s.tgt=m.rows;}
  if(m.type==='self')s.dec_in=m.rows;});
 s.patterns={};  // each head's pattern, from the maps that carry one
 a.maps.forEach(function(m){if(!m.pattern||typeof m.layer!=='number'||typeof m.head!=='number')return;
  var t=s.patterns[m.type]=s.patterns[m.type]||[];t[m.layer]=t[m.layer]||[];t[m.layer][m.head]=m.pattern;});
 a.maps.forEach(function(m){var L=m.type==='enc'?s.enc_layers:s.layers,R=m.rows.length,C=m.cols.length;
  if(!s[m.type])s[m.type]=new Float64Array(L*s.heads*R*C);
  var o=(m.layer*s.heads+m.head)*R*C;
  m.weights.forEach(function(row,r){row.forEach(function(x,c){s[m.type][o+r*C+c]=x;});});});
 if(!s.dec_in)s.dec_in=['<s>'].concat(s.tgt.slice(0,-1));
 return s;
}
function post(path,body){
 return fetch(path,{method:'POST',headers:{'Content-Type':'application/json'},
  body:JSON.stringify(body)}).then(function(r){return r.json().then(function(j){
  if(!r.ok)throw new Error(j.message||('HTTP '+r.status));return j;});});
}
// The page's text is a line of one or more sentences: /v1/translate splits
// it as `s2s translate` does and gives the joined translation (shown large)
// and the line's n-best list; each sentence's maps come from a forced
// decode of the sentence and its own translation (/v1/align), chosen with
// the sentence selector. Gold links (the reference field) are the shown
// sentence's.
function livePage(){
 var q=new URLSearchParams(location.search),models={},seq=0,timer=null,cur=null,viewSet=false;
 var want={layer:q.get('layer'),head:q.get('head'),map:q.get('map'),sent:q.get('sent')};
 var line=null;  // {s: the sentences in the report's form, a: their /v1/align replies}
 function status(t,bad){var e=$('status');e.textContent=t;e.className=bad?'bad':'';}
 // Text in the model's other language: the library's warning, once, above the translation.
 function warn(t){var e=$('langwarn');e.textContent=t||'';e.hidden=!t;}
 function share(){var u=new URLSearchParams();u.set('model',$('model').value);
  if($('text').value)u.set('text',$('text').value);
  if(line&&line.s.length>1)u.set('sent',$('sent').value);
  if(cur){u.set('map',$('map').value);u.set('layer',$('layer').value);u.set('head',$('head').value);}
  if($('ref').value)u.set('ref',$('ref').value);
  history.replaceState(null,'','?'+u.toString());}
 function redraw(){if(cur){draw(cur);share();}}
 REDRAW=redraw;
 // The model's calibrated heads (/v1/models) as mapView's views.
 function views(){var m=models[$('model').value]||{};
  function sel(c){return c?[c.layer==='avg'?-1:c.layer,c.head==='avg'?-1:c.head]:null;}
  return {def:sel(m.alignment_head)||[-1,-1],enc:sel(m.coreference_head)};}
 // Before the first map (and on an emptied text) the page shows what to do,
 // not the map's controls: body.nomap (viewer.css).
 function show(s){
  document.body.classList.remove('nomap');
  var first=!viewSet;viewSet=true;cur=s;S=[s];fillMaps(s);
  if(first&&want.map)setSel($('map'),want.map);
  fillLayerHead(s);
  if(first){var v=views(),x=$('map').value==='enc'&&v.enc?v.enc:v.def;
   setSel($('layer'),want.layer!==null?want.layer:String(x[0]));
   setSel($('head'),want.head!==null?want.head:String(x[1]));}
  redraw();
 }
 // The sentence selected: its maps, and the AER of its gold links.
 function pick(){var i=+$('sent').value||0,a=line.a[i];
  $('aer').textContent=a.aer!==undefined?'AER '+a.aer.toFixed(3)+' (precision '+a.precision.toFixed(3)+
   ', recall '+a.recall.toFixed(3)+') at layer '+a.alignment_layer+', head '+a.alignment_head:'';
  show(line.s[i]);}
 function clear(){document.body.classList.add('nomap');$('maps').innerHTML='';$('grid').innerHTML='';
  $('lines').innerHTML='';$('links').innerHTML='';
  $('pair').textContent='';$('aer').textContent='';$('sent').innerHTML='';$('sentbox').hidden=true;
  cur=null;line=null;}
 function run(){
  var text=$('text').value,model=$('model').value,ref=$('ref').value.trim(),my=++seq;
  if(!text.trim()){$('translation').textContent='';$('nbest').innerHTML='';warn(null);clear();share();return;}
  status('translating\u2026');
  post('/v1/translate',{model:model,text:text,n_best:4}).then(function(t){
   if(my!==seq)return null;var r=t.results[0];
   warn(r.language_warning);
   $('translation').textContent=r.translation;
   var nb=$('nbest');nb.innerHTML='';r.hypotheses.forEach(function(h){
    var li=el('li');li.appendChild(el('span','',h.translation));
    li.appendChild(el('span','score',' '+h.score.toFixed(3)));nb.appendChild(li);});
   var ss=r.sentences.filter(function(s){return s.target_tokens.length;});
   if(!ss.length){clear();status('');return null;}
   // the sentence shown: the deep link's, else the one selected, kept while it exists
   var i=want.sent!==null?+want.sent:+$('sent').value||0;
   i=Math.max(0,Math.min(ss.length-1,i||0));
   return Promise.all(ss.map(function(s,k){return post('/v1/align',{model:model,source:s.source,
    target:s.translation,gold:k===i&&ref?ref:null,attention:true});}))
    .then(function(as){return {ss:ss,as:as,i:i};});
  }).then(function(x){if(!x||my!==seq)return;
   var sel=$('sent');sel.innerHTML='';
   x.ss.forEach(function(s,k){opt(sel,String(k),(k+1)+': '+s.source);});
   sel.value=String(x.i);$('sentbox').hidden=x.ss.length<2;want.sent=null;
   line={s:x.as.map(fromApi),a:x.as};pick();
   status('');document.body.setAttribute('data-s2s-ready',String(my));
  }).catch(function(e){if(my===seq)status(e.message,true);});
 }
 function later(){clearTimeout(timer);timer=setTimeout(run,250);}
 $('text').oninput=later;$('ref').oninput=later;$('model').onchange=function(){viewSet=false;want={layer:null,head:null,map:null,sent:null};run();};
 // Gold links go with the sentence shown: another sentence asks again.
 $('sent').onchange=function(){if(!line)return;if($('ref').value.trim())run();else pick();};
 $('map').onchange=function(){if(cur){fillLayerHead(cur);mapView(views());redraw();}};
 $('layer').onchange=$('head').onchange=$('noeos').onchange=redraw;
 fetch('/v1/models').then(function(r){return r.json();}).then(function(j){
  j.models.forEach(function(m){models[m.name]=m;opt($('model'),m.name,m.name+' ('+m.source_language+
   ' \u2192 '+m.target_language+')');});
  if(q.get('model'))setSel($('model'),q.get('model'));
  if(q.get('text'))$('text').value=q.get('text');
  if(q.get('ref'))$('ref').value=q.get('ref');
  document.body.setAttribute('data-s2s-status','ok');
  run();
 }).catch(function(e){status(e.message,true);});
}

if($('s2s-data')){staticReport();document.body.setAttribute('data-s2s-status','ok');}
else{LIVE=true;livePage();}
// Labels measured with a fallback font are measured again with the page's.
if(document.fonts&&document.fonts.ready)document.fonts.ready.then(fitAll);
})();
