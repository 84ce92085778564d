# Shared by the headless-Chromium tests (serve_browser_test.sh,
# plot_browser_test.sh): the paths, and browser_needs, which skips the test
# (exit 77) when chromium, node or puppeteer-core is missing, or fails it
# under CI=true, where scripts/setup.sh has installed them. Sets ROOT,
# CHROMIUM and NPM_DIR.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
NPM_DIR=${S2S_NPM_DIR:-$ROOT/tests/npm}
case $NPM_DIR in /*) ;; *) NPM_DIR=$ROOT/$NPM_DIR ;; esac

missing() {
  if [ "${CI:-}" = true ]; then echo "FAIL: $1 (scripts/setup.sh installs it)"; exit 1; fi
  echo "SKIP: $1 (scripts/setup.sh installs it)"
  exit 77
}

browser_needs() {
  [ -x "$CHROMIUM" ] || missing "$CHROMIUM not found"
  command -v node >/dev/null || missing "node is needed"
  if [ ! -f "$NPM_DIR/node_modules/puppeteer-core/package.json" ]; then
    if [ -s "$NPM_DIR/unavailable" ]; then  # setup could not install it, and said why
      echo "SKIP: puppeteer-core is not installed: $(head -n 1 "$NPM_DIR/unavailable")"
      exit 77
    fi
    missing "puppeteer-core is not installed in $NPM_DIR"
  fi
}
