#!/usr/bin/env bash
# Runs tests/yaml_ls_test.js: checks docs/config.schema.json, the configs
# and `s2s config init` with Red Hat's yaml-language-server, which
# scripts/setup.sh installs from npm into tests/npm/ (S2S_NPM_DIR): the
# test downloads nothing. Skipped (exit 77) when node is absent or the
# server is not installed, with setup's reason when it recorded one (the
# npm registry could not be reached).
#
#     bash tests/yaml_ls_test.sh build/s2s
set -u
S2S=${1:?usage: yaml_ls_test.sh PATH/TO/s2s}
case $S2S in /*) ;; *) S2S=$PWD/$S2S ;; esac
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NPM_DIR=${S2S_NPM_DIR:-$ROOT/tests/npm}
case $NPM_DIR in /*) ;; *) NPM_DIR=$ROOT/$NPM_DIR ;; esac
SERVER=$NPM_DIR/node_modules/yaml-language-server/bin/yaml-language-server

if ! command -v node >/dev/null; then
    echo "SKIP: node is needed to run yaml-language-server (scripts/setup.sh installs Debian's npm and node)"
    exit 77
fi
if [ ! -f "$SERVER" ]; then
    if [ -s "$NPM_DIR/unavailable" ]; then
        echo "SKIP: yaml-language-server is not installed: $(head -n 1 "$NPM_DIR/unavailable")"
    else
        echo "SKIP: yaml-language-server is not installed in $NPM_DIR (scripts/setup.sh installs it)"
    fi
    exit 77
fi
node "$ROOT/tests/yaml_ls_test.js" "$SERVER" \
    "$S2S" "$ROOT"
