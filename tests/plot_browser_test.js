// `s2s plot`'s SVG and HTML in headless Chromium (tests/plot_browser_test.sh):
//   node plot_browser_test.js PUPPETEER_CORE CHROMIUM PROFILE_DIR SVG HTML SCREENSHOT LOG...
// Each file loads with no console error and no request outside itself, and
// draws one panel per quantity and sublayer and one series per run and
// quantity (counted here from the logs, not from the picture), every
// series with a visible extent. SCREENSHOT ("" for none): the SVG drawn.
'use strict';
const fs = require('fs');
const [pptrPath, chromium, profile, svg, html, screenshot, ...logs] = process.argv.slice(2);
const puppeteer = require(pptrPath);
const {check, runChecks} = require('./browser_lib.js');

// What the logs should give: panels (5 quantities + one per sublayer with
// grad_norms) and series (a run's quantity with a value; a run's matrix).
function expected() {
  const groups = new Set();
  let series = 0;
  for (const file of logs) {
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n').map(l => JSON.parse(l));
    const has = f => lines.some(l => Number.isFinite(f(l)));
    series += [l => l.loss, l => l.valid && l.valid.loss, l => l.valid && l.valid.bleu,
               l => l.lr, l => l.grad_norm].filter(has).length;
    const keys = new Set(lines.flatMap(l => Object.keys(l.grad_norms || {})));
    series += keys.size;
    for (const k of keys) groups.add(k.slice(0, k.lastIndexOf('.')));
  }
  return {panels: 5 + groups.size, series};
}

async function visit(browser, file, want, shot) {
  const page = await browser.newPage();
  const errors = [];
  page.on('console', m => { if (m.type() === 'error' || m.type() === 'warn') errors.push(m.text()); });
  page.on('pageerror', e => errors.push(e.message));
  page.on('requestfailed', r => errors.push('request failed: ' + r.url()));
  page.on('request', r => { if (r.url() !== 'file://' + file) errors.push('request: ' + r.url()); });
  await page.goto('file://' + file, {waitUntil: 'load'});
  const got = await page.evaluate(() => {
    const svg = document.querySelector('svg');
    const panels = [...document.querySelectorAll('g.panel')];
    const paths = [...document.querySelectorAll('path.series')];
    return {
      width: +svg.getAttribute('width'), height: +svg.getAttribute('height'),
      panels: panels.length,
      series: paths.length,
      declared: panels.reduce((n, p) => n + +p.getAttribute('data-series'), 0),
      flat: paths.filter(p => { const b = p.getBBox(); return b.width <= 0; }).length,
      runs: [...document.querySelectorAll('g.legend-run')].map(g => g.getAttribute('data-run')),
    };
  });
  const name = file.replace(/.*\//, '');
  check(name + ': panels', got.panels === want.panels, {got: got.panels, want: want.panels});
  check(name + ': series', got.series === want.series && got.declared === want.series,
        {got: got.series, declared: got.declared, want: want.series});
  check(name + ': every series drawn across steps', got.flat === 0, got.flat);
  check(name + ': a legend entry per log', got.runs.length === logs.length, got.runs);
  if (shot) {
    await page.setViewport({width: got.width, height: got.height});
    await page.screenshot({path: shot, type: 'png', fullPage: true});
  }
  check(name + ': no console errors or requests', errors.length === 0, errors);
  await page.close();
}

runChecks('plot_browser', puppeteer, chromium, profile, async browser => {
  const want = expected();
  await visit(browser, svg, want, screenshot);
  await visit(browser, html, want, '');
});
