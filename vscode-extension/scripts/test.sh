#!/usr/bin/env bash
# Unit tests (pure modules) and end-to-end tests (code-server + Chromium + the real server
# against the fake Messages API). Screenshots land in .e2e-artifacts/. Exits non-zero on failure.
# Run setup.sh once first (it installs code-server and builds); this rebuilds before testing.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$EXT_DIR"

[ -x "$CODE_SERVER" ] && [ -d node_modules ] || "$EXT_DIR/scripts/setup.sh"
build_all
rm -rf out .e2e-artifacts
node esbuild.mjs --tests

log "unit + end-to-end tests (code-server $CODE_SERVER_VERSION, $(/usr/bin/chromium --version 2>/dev/null | head -n1))"
# One run, files one after another (the e2e file drives one code-server): one summary.
status=0
node --test --test-concurrency=1 --test-reporter=spec out/unit/ out/e2e/ || status=$?
echo "screenshots: $EXT_DIR/.e2e-artifacts/"
exit "$status"
