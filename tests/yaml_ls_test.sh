#!/usr/bin/env bash
# Runs tests/yaml_ls_test.js: installs Red Hat's yaml-language-server from
# npm into a temporary folder and checks docs/config.schema.json, the
# configs and `s2s config init` with it. Skipped (exit 77) when node or npm
# is absent, or the npm registry can't be reached; scripts/setup.sh installs
# Debian's npm.
#
#     bash tests/yaml_ls_test.sh build/s2s
set -u
S2S=${1:?usage: yaml_ls_test.sh PATH/TO/s2s}
case $S2S in /*) ;; *) S2S=$PWD/$S2S ;; esac
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The version is pinned: 2.x needs node 22, Debian 12 has node 18.
SERVER=yaml-language-server@1.25.0

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "SKIP: node and npm are needed to install $SERVER (scripts/setup.sh installs Debian's npm)"
    exit 77
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if ! (cd "$TMP" && npm install --prefix "$TMP" --no-save --no-audit --no-fund --ignore-scripts \
        --loglevel=error "$SERVER" >"$TMP/npm.log" 2>&1); then
    # No way to the registry (no network, or a TLS-intercepting proxy whose
    # CA the system does not trust) is not a failure of s2s: say so, skip.
    if grep -qE 'SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER|CERT_|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH' "$TMP/npm.log"; then
        echo "SKIP: the npm registry is unreachable from here, so $SERVER can't be installed:"
        grep -m 3 'npm ERR!' "$TMP/npm.log"
        exit 77
    fi
    echo "FAIL: npm install $SERVER"
    tail -20 "$TMP/npm.log"
    exit 1
fi
node "$ROOT/tests/yaml_ls_test.js" "$TMP/node_modules/yaml-language-server/bin/yaml-language-server" \
    "$S2S" "$ROOT"
