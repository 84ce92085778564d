// Shared by the headless-Chromium tests (tests/*_browser_test.js,
// attention_grid_test.js, lab_page_test.js): Debian's chromium started by
// puppeteer-core with no sandbox, GPU or background traffic, so that a
// page's only requests are its own; the checks' tally; and the run of a
// test's body in that browser.
'use strict';

function launch(puppeteer, chromium, profile) {
  return puppeteer.launch({
    executablePath: chromium, headless: true, userDataDir: profile,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

// One check: counted, and printed when it fails (detail as JSON, cut to
// 600 characters).
let passed = 0, failed = 0;
function check(name, ok, detail) {
  if (ok) passed++;
  else {
    failed++;
    console.log('FAIL: ' + name + (detail !== undefined ? ' ' + JSON.stringify(detail).slice(0, 600) : ''));
  }
}

// Runs body(browser) in a fresh browser (an exception is a failed check),
// closes it, runs after() when given (checks made once the browser is
// closed), prints "NAME: P passed, F failed" and exits 1 if any failed.
async function runChecks(name, puppeteer, chromium, profile, body, after) {
  const browser = await launch(puppeteer, chromium, profile);
  try {
    await body(browser);
  } catch (e) {
    check('no exception: ' + (e && e.stack || e), false);
  } finally {
    await browser.close();
  }
  if (after) after();
  console.log(`${name}: ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

module.exports = {check, runChecks};
