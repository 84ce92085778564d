// Drives the page of `s2s serve` in headless Chromium (tests/serve_browser_test.sh):
//   node serve_browser_test.js PUPPETEER_CORE CHROMIUM URL PROFILE_DIR [SCREENSHOT]
'use strict';
const [pptrPath, chromium, url, profile, screenshot] = process.argv.slice(2);
const puppeteer = require(pptrPath);
const {check, runChecks} = require('./browser_lib.js');
const TEXT = '我爱吃苹果', WANT = 'I love to eat apples.';

// The drawn heatmaps: caption, column labels, and per row its label and weights.
function tables(page) {
  return page.evaluate(() => [...document.querySelectorAll('#maps figure')].map(f => {
    const t = f.querySelector('table');
    return {
      caption: f.querySelector('figcaption').textContent,
      cols: [...t.rows[0].cells].slice(1).map(c => c.textContent),
      rows: [...t.rows].slice(1).map(r => ({label: r.cells[0].textContent,
        w: [...r.cells].slice(1).map(c => +c.dataset.w), cls: [...r.cells].slice(1).map(c => c.className)})),
    };
  }));
}
function argmaxCol(table, label) {
  const row = table.rows.find(r => r.label === label);
  if (!row) return null;
  return table.cols[row.w.indexOf(Math.max(...row.w))];
}
const ready = (page, n) => page.waitForFunction(k => +(document.body.getAttribute('data-s2s-ready') || 0) >= k &&
  !document.getElementById('status').textContent, {timeout: 60000}, n);

const errors = [];
const watch = page => {
  page.on('console', m => { if (m.type() === 'error' || m.type() === 'warn') errors.push(m.text()); });
  page.on('pageerror', e => errors.push(e.message));
  page.on('requestfailed', r => errors.push('request failed: ' + r.url()));
  page.on('request', r => { if (!r.url().startsWith(url)) errors.push('network outside the server: ' + r.url()); });
};
runChecks('serve_browser', puppeteer, chromium, profile, async browser => {
  const page = await browser.newPage();
  watch(page);
  await page.setViewport({width: 1100, height: 760});
  await page.goto(url + '/', {waitUntil: 'networkidle0'});
  await page.waitForFunction(() => document.body.getAttribute('data-s2s-status') === 'ok');
  const models = await page.$$eval('#model option', os => os.map(o => o.value));
  check('both directions offered', models.join() === 'zh-en,en-zh', models);

  await page.type('#text', TEXT, {delay: 40});
  await page.waitForFunction(w => document.getElementById('translation').textContent === w,
                             {timeout: 60000}, WANT);
  check('translation as typed', true);
  await ready(page, 1);
  let t = await tables(page);
  check('opens on the calibrated head (layer 1, head 0)', t[0].caption === 'layer 1 · head 0', t[0].caption);
  check('(eat, 吃) is the largest cell of its row', argmaxCol(t[0], 'eat') === '吃', t[0].rows);
  check('self-attention maps beside', t.some(x => x.caption.startsWith('decoder self')) &&
        t.some(x => x.caption.startsWith('encoder self')), t.map(x => x.caption));
  const nbest = await page.$$eval('#nbest li', ls => ls.map(l => l.textContent));
  check('n-best list', nbest.length >= 2 && nbest[0].startsWith(WANT), nbest);
  const lines = await page.$$eval('#lines svg line', ls => ls.length);
  check('line view drawn', lines >= 5, lines);
  const links = await page.$eval('#links code', e => e.textContent);
  check('alignment of the view', links === '0-0 1-1 2-3 3-4', links);

  // Another layer and head: the heatmap and its links follow the view.
  await page.select('#layer', '0');
  await page.select('#head', '2');
  t = await tables(page);
  check('switched to layer 0, head 2', t[0].caption === 'layer 0 · head 2', t[0].caption);
  const links2 = await page.$eval('#links span', e => e.textContent);
  check('links follow the view', links2.includes('layer 0, head 2'), links2);
  const marked = t[0].rows.filter(r => r.cls.some(c => c.split(' ').includes('link'))).length;
  const expect = t[0].rows.slice(0, -1).filter(r => { const i = r.w.indexOf(Math.max(...r.w)); return i < t[0].cols.length - 1; }).length;
  check('links drawn at each row maximum of the view', marked === expect, {marked, expect});
  check('the URL holds the view', (await page.url()).includes('layer=0') && (await page.url()).includes('head=2'));
  await page.select('#map', 'enc');
  t = await tables(page);
  check('encoder map', t[0].rows.map(r => r.label).join(' ') === '我 爱 吃 苹果 </s>', t[0].rows.map(r => r.label));
  check('encoder map of a model without a coreference head: the view kept', t[0].caption === 'layer 0 · head 2', t[0].caption);
  await page.select('#map', 'cross');

  // A reference alignment: links marked sure, possible, missed, wrong.
  await page.select('#layer', '1');
  await page.select('#head', '0');
  const before = +(await page.evaluate(() => document.body.getAttribute('data-s2s-ready')));
  await page.type('#ref', '0-0 1-1 2-2 3p4');
  await page.waitForFunction(() => document.getElementById('aer').textContent !== '', {timeout: 60000});
  await ready(page, before + 1);
  t = await tables(page);
  const cls = t[0].rows.flatMap(r => r.cls.flatMap(c => c.split(' ')));
  check('gold: sure, possible, missed, wrong', ['sure', 'possible', 'missed', 'wrong'].every(k => cls.includes(k)), cls);
  const aer = await page.$eval('#aer', e => e.textContent);
  check('gold: AER shown', aer.startsWith('AER 0.'), aer);
  if (screenshot) {
    await page.select('#head', '0');
    await page.screenshot({path: screenshot, type: 'png'});
  }

  // Two sentences in one text (issue 32): the joined translation as
  // `s2s translate` gives it, the line's n-best, each sentence's maps.
  const TWO = '我爱吃苹果。他明天看书吗？', WANT2 = 'I love to eat apples. Will he read books tomorrow?';
  const p3 = await browser.newPage();
  watch(p3);
  await p3.setViewport({width: 1100, height: 760});
  await p3.goto(url + '/?model=zh-en&text=' + encodeURIComponent(TWO), {waitUntil: 'networkidle0'});
  await ready(p3, 1);
  check('two sentences: the joined translation', (await p3.$eval('#translation', e => e.textContent)) === WANT2,
        await p3.$eval('#translation', e => e.textContent));
  const nb2 = await p3.$$eval('#nbest li', ls => ls.map(l => l.textContent));
  check('two sentences: the n-best list is of the whole text', nb2.length >= 2 && nb2[0].startsWith(WANT2), nb2);
  const sents = await p3.$$eval('#sent option', os => os.map(o => o.textContent));
  check('two sentences: a sentence selector', sents.length === 2 &&
        !(await p3.$eval('#sentbox', e => e.hidden)), sents);
  t = await tables(p3);
  check('two sentences: the first sentence\'s maps', t[0].cols.join(' ') === '我 爱 吃 苹果 。 </s>' &&
        t[0].rows[0].label === 'i', t[0].cols);
  await p3.select('#sent', '1');
  t = await tables(p3);
  check('two sentences: the second sentence\'s maps', t[0].cols.join(' ') === '他 明天 看 书 吗 ？ </s>' &&
        t[0].rows[0].label === 'will', [t[0].cols, t[0].rows.map(r => r.label)]);
  check('two sentences: the view keeps its layer and head', t[0].caption === 'layer 1 · head 0', t[0].caption);
  check('two sentences: the URL holds the sentence', (await p3.url()).includes('sent=1'), await p3.url());
  const p4 = await browser.newPage();
  watch(p4);
  await p4.goto(await p3.url(), {waitUntil: 'networkidle0'});
  await ready(p4, 1);
  t = await tables(p4);
  check('two sentences: a deep link opens on its sentence', t[0].cols.join(' ') === '他 明天 看 书 吗 ？ </s>', t[0].cols);
  const one = await browser.newPage();
  watch(one);
  await one.goto(url + '/?model=zh-en&text=' + encodeURIComponent(TEXT), {waitUntil: 'networkidle0'});
  await ready(one, 1);
  check('one sentence: no sentence selector', await one.$eval('#sentbox', e => e.hidden));
  check('Chinese to zh-en: no language warning', await one.$eval('#langwarn', e => e.hidden));

  // English typed into zh-en (issue 32 item 2): the page says so once, above the translation.
  const other = await browser.newPage();
  watch(other);
  await other.goto(url + '/?model=zh-en&text=' + encodeURIComponent('I love to eat apples.'),
                   {waitUntil: 'networkidle0'});
  await ready(other, 1);
  const warn = await other.$eval('#langwarn', e => [e.hidden, e.textContent]);
  check('English to zh-en: the language warning shown', !warn[0] &&
        warn[1] === 'this looks like English; the model translates Chinese \u2192 English', warn);
  await other.$eval('#text', e => { e.value = ''; e.dispatchEvent(new Event('input')); });
  await other.waitForFunction(() => document.getElementById('langwarn').hidden, {timeout: 10000});
  check('an emptied text: the warning gone', true);

  // A deep link reproduces a view.
  const p2 = await browser.newPage();
  watch(p2);
  await p2.goto(url + '/?model=en-zh&text=' + encodeURIComponent('i love apples .') + '&layer=0&head=3&map=cross',
                {waitUntil: 'networkidle0'});
  await ready(p2, 1);
  t = await tables(p2);
  check('deep link: model, layer and head', (await p2.$eval('#model', e => e.value)) === 'en-zh' &&
        t[0].caption === 'layer 0 · head 3', t[0] && t[0].caption);
  check('deep link: translated', (await p2.$eval('#translation', e => e.textContent)).length > 0);
  // en-zh has a coreference head: the encoder map turns to it, cross-attention back to the alignment head.
  await p2.select('#map', 'enc');
  t = await tables(p2);
  check('encoder map at the coreference head', t[0].caption === process.env.COREF_CAPTION,
        [t[0].caption, process.env.COREF_CAPTION]);
  check('its row maxima outlined', t[0].rows.every(r => r.cls.filter(c => c.split(' ').includes('arg')).length === 1),
        t[0].rows.map(r => r.cls));
  await p2.select('#map', 'cross');
  t = await tables(p2);
  check('cross-attention back at the alignment head', t[0].caption === 'layer 1 · head 0', t[0].caption);
}, () => check('no console errors', errors.length === 0, errors));
