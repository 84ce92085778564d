// Shared by the headless-Chromium tests (tests/*_browser_test.js,
// attention_grid_test.js, lab_page_test.js): Debian's chromium started by
// puppeteer-core with no sandbox, GPU or background traffic, so that a
// page's only requests are its own.
'use strict';

function launch(puppeteer, chromium, profile) {
  return puppeteer.launch({
    executablePath: chromium, headless: true, userDataDir: profile,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

module.exports = {launch};
