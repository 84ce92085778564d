# Shared by the tests that drive a page in headless Chromium through
# puppeteer-core (serve_browser_test.sh, attention_grid_test.sh,
# plot_browser_test.sh, lab_page_test.sh). Source it
# with the test's arguments (PATH/TO/s2s first) after `set -u`. It sets S2S
# (absolute), ROOT, CHROMIUM, NPM_DIR and PUPPETEER, and TMP (removed on
# exit, with a server that serve_start started). puppeteer-core is installed
# by scripts/setup.sh from npm into tests/npm/ (S2S_NPM_DIR), so nothing is
# downloaded (its own browser download is never used). Skipped (exit 77)
# when setup recorded that the npm registry could not be reached, with that
# reason; without chromium, node, a CJK font or puppeteer-core it is skipped
# too, except under CI (CI=true), where scripts/setup.sh has installed them
# and their absence is a failure. `need_npm PACKAGE` applies the same rules
# to another package of tests/npm/ (lab_page_test.sh's marked).
S2S=${1:?usage: $(basename "$0") PATH/TO/s2s}
case $S2S in /*) ;; *) S2S=$PWD/$S2S ;; esac
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
NPM_DIR=${S2S_NPM_DIR:-$ROOT/tests/npm}
case $NPM_DIR in /*) ;; *) NPM_DIR=$ROOT/$NPM_DIR ;; esac
PUPPETEER=$NPM_DIR/node_modules/puppeteer-core

missing() {
  if [ "${CI:-}" = true ]; then echo "FAIL: $1 (scripts/setup.sh installs it)"; exit 1; fi
  echo "SKIP: $1 (scripts/setup.sh installs it)"
  exit 77
}
[ -x "$CHROMIUM" ] || missing "$CHROMIUM not found"
command -v node >/dev/null || missing "node is needed"
fc-list :lang=zh | grep -q . || missing "no CJK font: Chinese would show as empty boxes"
need_npm() {  # need_npm PACKAGE: skipped, or failed under CI, without tests/npm's PACKAGE
  [ -f "$NPM_DIR/node_modules/$1/package.json" ] && return
  if [ -s "$NPM_DIR/unavailable" ]; then  # setup could not install it, and said why
    echo "SKIP: $1 is not installed: $(head -n 1 "$NPM_DIR/unavailable")"
    exit 77
  fi
  missing "$1 is not installed in $NPM_DIR"
}
need_npm puppeteer-core

TMP=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

serve_start() {  # serve_start SERVE_ARGS...: s2s serve on a free port; sets url
  "$S2S" serve "$@" --port 0 >"$TMP/serve.out" 2>"$TMP/serve.err" &
  server=$!
  for _ in $(seq 100); do grep -q '^listening on' "$TMP/serve.out" && break; sleep 0.1; done
  url=$(sed -n 's/^listening on //p' "$TMP/serve.out")
  [ -n "$url" ] || { echo "FAIL: the server did not start"; cat "$TMP/serve.err"; exit 1; }
}
