// The grid of every layer and head (issue 31 item 3), the column labels'
// layout (issue 32 item 4) and the empty serve page (item 5), in headless
// Chromium (tests/attention_grid_test.sh makes the pages and starts the server):
//   node attention_grid_test.js PUPPETEER_CORE CHROMIUM PROFILE_DIR CASES.json SERVER_URL [SHOT_DIR]
// CASES.json: [{"page": report.html, "model": model.safetensors, "hatched": [map, layer, head, window]?,
//   "shots": [[file, width, height, fragment, element?], ...]?}]: pictures into SHOT_DIR
'use strict';
const fs = require('fs');
const [pptrPath, chromium, profile, casesPath, url, shotDir] = process.argv.slice(2);
const puppeteer = require(pptrPath);
const {check, runChecks} = require('./browser_lib.js');

// The layers and heads of a model, read from its file (the safetensors
// header: the config s2s stores, and the tensor names), not from a page.
function modelShape(path) {
  const fd = fs.openSync(path, 'r'), len = Buffer.alloc(8);
  fs.readSync(fd, len, 0, 8, 0);
  const n = Number(len.readBigUInt64LE()), hb = Buffer.alloc(n);
  fs.readSync(fd, hb, 0, n, 8);
  fs.closeSync(fd);
  const header = JSON.parse(hb.toString('utf8')), cfg = header.__metadata__['s2s.config'];
  const key = k => +new RegExp('^  ' + k + ': (\\d+)', 'm').exec(cfg)[1];
  const layersOf = side => new Set(Object.keys(header).map(k => new RegExp('^' + side + '\\.layers\\.(\\d+)\\.').exec(k))
    .filter(m => m).map(m => m[1])).size;
  const s = {heads: key('heads'), enc: key('encoder_layers'), dec: key('decoder_layers')};
  if (s.enc !== layersOf('encoder') || s.dec !== layersOf('decoder')) throw new Error(path + ': config and tensors disagree');
  return s;
}
const expected = s => ({cross: s.dec * s.heads, self: s.dec * s.heads, enc: s.enc * s.heads});

// In the page: every heatmap's column labels against its cells. A label's
// text may not reach into the cells (below the header row) nor past its
// column's edges, all labels of a table stand one way (one transform and
// writing mode), and row labels stay left of the cells.
function labelProblems() {
  const out = [];
  document.querySelectorAll('#maps table.hm').forEach((t, ti) => {
    const cap = t.parentNode.querySelector('figcaption').textContent, rows = [...t.rows];
    if (rows.length < 2) return;
    const tds = [...t.querySelectorAll('td')].map(td => td.getBoundingClientRect());
    const top = Math.min(...tds.map(r => r.top)), left = Math.min(...tds.map(r => r.left));
    const ways = new Set();
    [...rows[0].cells].slice(1).forEach((th, c) => {
      // the text's own box (a range's), not the span's: text that overflows its box counts
      const span = th.firstChild, range = document.createRange();
      range.selectNodeContents(span);
      const s = range.getBoundingClientRect(), cell = rows[1].cells[c + 1].getBoundingClientRect();
      const what = cap + ' #' + ti + ' column ' + c + ' "' + span.textContent + '"';
      // an empty box: the text is painted outside it, where geometry cannot follow
      // (Chromium's vertical text in a table cell drew 看起来 over the first row so)
      if (span.textContent && (s.width < 1 || s.height < 1)) out.push(what + ' has an empty box: ' + [s.width, s.height]);
      if (s.bottom > top + 0.5) out.push(what + ' reaches into the cells: ' + s.bottom + ' > ' + top);
      if (s.left < cell.left - 0.5 || s.right > cell.right + 0.5)
        out.push(what + ' spills out of its column: ' + [s.left, s.right] + ' vs ' + [cell.left, cell.right]);
      tds.forEach(r => {
        if (s.left < r.right - 0.5 && s.right > r.left + 0.5 && s.top < r.bottom - 0.5 && s.bottom > r.top + 0.5)
          out.push(what + ' covers a cell');
      });
      const st = getComputedStyle(span);
      ways.add(st.transform + ' ' + st.writingMode);
    });
    if (ways.size > 1) out.push(cap + ' #' + ti + ': upright and turned labels mixed');
    rows.slice(1).forEach(tr => {
      const r = tr.cells[0].getBoundingClientRect();
      if (r.right > left + 0.5) out.push(cap + ' #' + ti + ' row "' + tr.cells[0].textContent + '" over the cells');
    });
  });
  return out;
}

// Every sentence, map type and view (one plane large; every plane small).
async function labelsEverywhere(page, what) {
  const problems = [];
  const sents = await page.$$eval('#sent option', os => os.map(o => o.value));
  for (const s of sents.length ? sents : [null]) {
    if (s !== null) await page.select('#sent', s);
    for (const m of await page.$$eval('#map option', os => os.map(o => o.value))) {
      await page.select('#map', m);
      for (const [l, h] of [['1', '0'], ['all', 'all']]) {
        await page.select('#layer', l);
        await page.select('#head', h);
        problems.push(...(await page.evaluate(labelProblems)).map(p => `sentence ${s} ${m} ${l}/${h}: ${p}`));
      }
    }
  }
  check(what + ': no column label covers a cell or a neighbour\'s column; one orientation a table', !problems.length, problems);
}

const thumbs = page => page.$$eval('.head-thumb', ds => ds.map(d => ({
  map: d.dataset.map, layer: d.dataset.layer, head: d.dataset.head, on: d.classList.contains('on'),
  cells: [...d.querySelectorAll('td')].map(td => td.classList.contains('unseen') ? 'unseen' : td.style.background)})));

// The grid: layers x heads thumbs of each map type, as the model has them,
// each plane once; a click opens the thumb's plane large.
async function checkGrid(page, shape, what) {
  const want = expected(shape), ts = await thumbs(page);
  for (const k of ['cross', 'self', 'enc']) {
    const got = ts.filter(t => t.map === k);
    check(`${what}: ${want[k]} ${k} thumbs (layers x heads)`, got.length === want[k], got.length);
    const planes = new Set(got.map(t => t.layer + '/' + t.head));
    const L = k === 'enc' ? shape.enc : shape.dec;
    const all = [];
    for (let l = 0; l < L; l++) for (let h = 0; h < shape.heads; h++) all.push(l + '/' + h);
    check(`${what}: ${k} thumbs are each plane once`, planes.size === got.length && all.every(p => planes.has(p)), [...planes]);
  }
  const view = await page.evaluate(() => ['map', 'layer', 'head'].map(id => document.getElementById(id).value));
  const single = /^\d+$/.test(view[1]) && /^\d+$/.test(view[2]);  // not a mean, not all
  check(`${what}: the shown plane's thumb outlined (${view})`, ts.filter(t => t.on).length === (single ? 1 : 0) &&
        (!single || ts.find(t => t.on).map === view[0]), ts.filter(t => t.on));
  for (const k of ['enc', 'self', 'cross']) {  // the last plane of each type, then the first
    for (const [l, h] of [[(k === 'enc' ? shape.enc : shape.dec) - 1, shape.heads - 1], [0, 0]]) {
      await page.click(`.head-thumb[data-map="${k}"][data-layer="${l}"][data-head="${h}"]`);
      const v = await page.evaluate(() => ({
        map: document.getElementById('map').value, layer: document.getElementById('layer').value,
        head: document.getElementById('head').value,
        caption: document.querySelector('#maps figcaption').textContent,
        cells: [...document.querySelector('#maps table').querySelectorAll('td')].map(td =>
          td.classList.contains('unseen') ? 'unseen' : td.style.background)}));
      const t = (await thumbs(page)).find(x => x.map === k && x.layer === String(l) && x.head === String(h));
      check(`${what}: a click on ${k} ${l}/${h} opens it`, v.map === k && v.layer === String(l) && v.head === String(h) &&
            v.caption.startsWith(`layer ${l} · head ${h}`), v);
      check(`${what}: the ${k} ${l}/${h} thumb is the plane opened, cell by cell`,
            t && t.cells.length === v.cells.length && t.cells.every((c, i) => c === v.cells[i]),
            [t && t.cells.length, v.cells.length]);
      check(`${what}: the ${k} ${l}/${h} thumb outlined`, t && t.on);
    }
  }
}

function watch(page, errors) {
  page.on('console', m => { if (m.type() === 'error' || m.type() === 'warn') errors.push(m.text()); });
  page.on('pageerror', e => errors.push(e.message));
  page.on('requestfailed', r => errors.push('request failed: ' + r.url()));
}
const visible = (page, sel) => page.$eval(sel, e => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length));

async function reports(browser, cases) {
  for (const c of cases) {
    const errors = [], page = await browser.newPage(), what = c.page.replace(/.*\//, '');
    watch(page, errors);
    await page.setViewport({width: 1000, height: 760});
    await page.goto('file://' + c.page, {waitUntil: 'load'});
    await page.waitForFunction(() => document.body.getAttribute('data-s2s-status') === 'ok');
    await checkGrid(page, modelShape(c.model), what);
    if (c.hatched) {  // [map, layer, head, window]: a local head's hidden keys hatched in its thumb too
      const [m, l, h, w] = c.hatched, ts = await thumbs(page);
      const n = Math.round(Math.sqrt(ts.find(t => t.map === m).cells.length));
      const hid = (ll, hh) => ts.find(t => t.map === m && t.layer === String(ll) && t.head === String(hh))
        .cells.filter(x => x === 'unseen').length;
      let want = 0;
      for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) if (Math.abs(i - j) > w) want++;
      check(`${what}: ${m} ${l}/${h} (local, window ${w}): ${want} keys hatched in the thumb`, hid(l, h) === want, hid(l, h));
      check(`${what}: ${m} ${l}/0 (full): none hatched`, hid(l, 0) === 0, hid(l, 0));
    }
    await labelsEverywhere(page, what);
    // the docs' pictures: [file, width, height, fragment, element or none]
    for (const [file, w, h, hash, sel] of shotDir ? c.shots || [] : []) {
      await page.goto('about:blank');
      await page.setViewport({width: w, height: h});
      await page.goto('file://' + c.page + hash, {waitUntil: 'load'});
      await page.waitForFunction(() => document.body.getAttribute('data-s2s-status') === 'ok');
      await page.evaluate(() => document.fonts.ready);
      const b = sel && await (await page.$(sel)).boundingBox();  // an element, with a margin
      await page.screenshot({path: shotDir + '/' + file, clip: b ? {x: Math.max(0, b.x - 12), y: Math.max(0, b.y - 8),
        width: b.width + 24, height: b.height + 16} : undefined});
    }
    check(`${what}: no console errors`, !errors.length, errors);
    await page.close();
  }
}

async function serve(browser, shape) {
  const errors = [], page = await browser.newPage();
  watch(page, errors);
  await page.setViewport({width: 1100, height: 760});
  await page.goto(url + '/', {waitUntil: 'networkidle0'});
  await page.waitForFunction(() => document.body.getAttribute('data-s2s-status') === 'ok');
  // Nothing translated: what to do, and no map controls.
  check('empty page: a prompt', await visible(page, '#prompt') &&
        /type a sentence/i.test(await page.$eval('#prompt', e => e.textContent)));
  for (const sel of ['#controls', '#map', '#layer', '#head', '.legend', '#info', '#grid'])
    check(`empty page: ${sel} hidden`, !(await visible(page, sel)));
  check('empty page: no thumbs', (await page.$$('.head-thumb')).length === 0);
  await page.type('#text', '那只猫坐在垫子上，它看起来很舒服。');
  await page.waitForFunction(() => +(document.body.getAttribute('data-s2s-ready') || 0) >= 1 &&
    !document.getElementById('status').textContent, {timeout: 60000});
  check('a translation: the prompt gone', !(await visible(page, '#prompt')));
  check('a translation: the map controls shown', await visible(page, '#controls') && await visible(page, '.legend'));
  await checkGrid(page, shape, 'serve page');
  await labelsEverywhere(page, 'serve page');
  await page.$eval('#text', e => { e.value = ''; e.dispatchEvent(new Event('input')); });
  await page.waitForFunction(() => document.body.classList.contains('nomap'), {timeout: 10000});
  check('an emptied text: the prompt back, the controls hidden', await visible(page, '#prompt') &&
        !(await visible(page, '#controls')) && (await page.$$('.head-thumb')).length === 0);
  check('serve page: no console errors', !errors.length, errors);
}

runChecks('attention_grid', puppeteer, chromium, profile, async browser => {
  const cases = JSON.parse(fs.readFileSync(casesPath, 'utf8'));
  await reports(browser, cases);
  await serve(browser, modelShape(cases[0].model));
});
