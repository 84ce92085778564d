// docs/attention-lab.md rendered by marked and loaded in headless Chromium
// (tests/lab_page_test.sh):
//   node lab_page_test.js PUPPETEER_CORE MARKED CHROMIUM PROFILE_DIR PAGE.md OUT.html LAYERS HEADS SCREENSHOT
// What the page should hold is read from the Markdown source (its headings,
// pictures and `<!-- lab:NAME -->` blocks) and from the model (LAYERS
// encoder layers, HEADS heads, from `s2s inspect`), not from the page.
// SCREENSHOT ("" for none): section 3 of the page drawn, 1000 pixels wide.
'use strict';
const fs = require('fs'), path = require('path'), {pathToFileURL} = require('url');
const [pptrPath, markedPath, chromium, profile, mdPath, htmlPath, layers, heads, screenshot] = process.argv.slice(2);
const puppeteer = require(pptrPath);
const {check, runChecks} = require('./browser_lib.js');
const {marked} = require(markedPath);

// The Markdown's lines outside fenced code, and what they ask for.
function expected(md) {
  let fence = null;
  const lines = md.split('\n').filter(l => {
    const m = /^ {0,3}(`{3,}|~{3,})/.exec(l);
    if (m && (fence === null || m[1][0] === fence[0] && m[1].length >= fence.length)) {
      fence = fence === null ? m[1] : null;
      return false;
    }
    return fence === null;
  });
  const lab = lines.map(l => /^<!-- lab:([\w.-]+) -->$/.exec(l)).filter(m => m).map(m => m[1]);
  const images = lines.flatMap(l => [...l.matchAll(/!\[[^\]]*\]\(([^)\s]+)/g)].map(m => m[1]));
  return {h2: lines.filter(l => /^## /.test(l)).length, lab, images};
}

// In the page: each `lab:NAME` comment, with the elements up to `/lab:NAME`.
function pageFacts() {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_COMMENT);
  const lab = [];
  for (let c; (c = walker.nextNode());) {
    const m = /^ lab:([\w.-]+) $/.exec(c.data);
    if (!m) continue;
    const els = [];
    for (let n = c.nextSibling; n && !(n.nodeType === 8 && n.data === ' /lab:' + m[1] + ' '); n = n.nextSibling)
      if (n.nodeType === 1) els.push(n);
    lab.push({name: m[1], tags: els.map(e => e.tagName), text: els.map(e => e.textContent).join('\n')});
  }
  return {
    h2: [...document.querySelectorAll('h2')].map(h => h.textContent),
    images: [...document.images].map(i => ({src: i.src, ok: i.complete && i.naturalWidth > 0})),
    lab,
    height: document.documentElement.scrollHeight,
  };
}

// The grid block: one `layer L  head 0 ... head H-1` band per encoder layer.
function checkGrid(block) {
  check('a grid block (lab:grid-zh-en)', block !== undefined);
  if (!block) return;
  check('grid: of models/zh-en.safetensors, the encoder map',
        /-m models\/zh-en\.safetensors /.test(block.text) && / --map enc /.test(block.text));
  const bands = block.text.split('\n').filter(l => /^layer \d+ /.test(l));
  const want = Array.from({length: +layers}, (_, i) => i);
  check('grid: one band per encoder layer', JSON.stringify(bands.map(l => +l.split(' ')[1])) === JSON.stringify(want),
        {bands, layers: +layers});
  const hs = Array.from({length: +heads}, (_, i) => 'head ' + i).join(' ');
  check('grid: every band has a column per head',
        bands.every(l => l.slice(l.indexOf('head')).replace(/ +/g, ' ').trim() === hs), {bands, heads: +heads});
}

async function visit(browser, want) {
  const page = await browser.newPage();
  const errors = [], docs = pathToFileURL(path.dirname(path.resolve(mdPath))).href + '/';
  page.on('console', m => { if (m.type() === 'error' || m.type() === 'warn') errors.push(m.text()); });
  page.on('pageerror', e => errors.push(e.message));
  page.on('requestfailed', r => errors.push('request failed: ' + r.url()));
  const self = pathToFileURL(htmlPath).href;
  page.on('request', r => { if (r.url() !== self && !r.url().startsWith(docs)) errors.push('request outside docs/: ' + r.url()); });
  await page.setViewport({width: 1000, height: 800});
  await page.goto(self, {waitUntil: 'load'});
  const got = await page.evaluate(pageFacts);
  check('h2 sections: one per heading of the Markdown', got.h2.length === want.h2, {got: got.h2, want: want.h2});
  const experiments = got.h2.filter(t => /^\d+\. /.test(t));
  const titles = [/√d_k scale/, /each head/, /All heads side by side/, /equivariance/, /Gradient flow/];
  check('the five experiments, in order', experiments.length === titles.length &&
        titles.every((re, i) => re.test(experiments[i])), experiments);
  check('a picture per image of the Markdown', JSON.stringify(got.images.map(i => i.src)) ===
        JSON.stringify(want.images.map(s => new URL(s, docs).href)), {got: got.images, want: want.images});
  check('every picture loaded', got.images.every(i => i.ok), got.images);
  check('the lab blocks of the Markdown', JSON.stringify(got.lab.map(b => b.name)) === JSON.stringify(want.lab),
        {got: got.lab.map(b => b.name), want: want.lab});
  check('each lab block preformatted', got.lab.every(b => b.tags.length === 1 && b.tags[0] === 'PRE'),
        got.lab.map(b => [b.name, b.tags]));
  checkGrid(got.lab.find(b => b.name === 'grid-zh-en'));
  if (screenshot) {  // section 3, from its heading to the next: a lab block (the grid) and a picture
    const clip = await page.evaluate(() => {
      const h2 = [...document.querySelectorAll('h2')], at = n => h2.find(e => e.textContent.startsWith(n + '. '));
      if (!at(3) || !at(4)) return null;
      const y = e => e.getBoundingClientRect().top + window.scrollY - 8;
      return {x: 0, y: y(at(3)), width: document.documentElement.clientWidth, height: y(at(4)) - y(at(3))};
    });
    check('sections 3 and 4 for the screenshot', clip !== null);
    if (clip) await page.screenshot({path: screenshot, type: 'png', clip, captureBeyondViewport: true});
  }
  check('no console errors or failed requests', errors.length === 0, errors);
  await page.close();
}

runChecks('lab_page', puppeteer, chromium, profile, async browser => {
  const md = fs.readFileSync(mdPath, 'utf8');
  const docs = pathToFileURL(path.dirname(path.resolve(mdPath))).href + '/';
  fs.writeFileSync(htmlPath, '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n' +
    '<base href="' + docs + '"><title>' + path.basename(mdPath) + '</title>\n' +
    '<style>body{max-width:920px;margin:0 auto;padding:0 24px;font:15px/1.5 sans-serif}' +
    'pre{background:#f6f8fa;padding:8px;overflow:auto;font:12px/1.3 monospace}img{max-width:100%}' +
    'table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}</style>\n' +
    '</head><body>\n' + marked.parse(md) + '</body></html>\n');
  await visit(browser, expected(md));
});
