#!/usr/bin/env bash
# Unit tests (pure modules) and end-to-end tests (code-server + Chromium + the real server
# against the fake Messages API). Screenshots land in .e2e-artifacts/. Exits non-zero on failure.
# Installs what is missing (npm packages, code-server: see common.sh), builds, then tests; the
# Debian packages and .venv are setup.sh's (or the repository's scripts/test.sh's).
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$EXT_DIR"

install_npm_packages
install_code_server
build_all
rm -rf out .e2e-artifacts
node esbuild.mjs --tests

# The servers' warm template and code-server's sockets live in a runtime folder of this run's
# own (test/e2e/harness.ts), removed with the template at the end, whatever the tests did.
TILLER_E2E_RUNTIME=$(mktemp -d "${TMPDIR:-/tmp}/tiller-e2e.XXXXXX")
export TILLER_E2E_RUNTIME
remove_runtime() {
  pkill -f "tiller.warm.template $TILLER_E2E_RUNTIME/" 2>/dev/null || true
  rm -rf "$TILLER_E2E_RUNTIME"
}
trap remove_runtime EXIT

log "unit + end-to-end tests (code-server $CODE_SERVER_VERSION, $(/usr/bin/chromium --version 2>/dev/null | head -n1))"
# One run, files one after another (the e2e file drives one code-server): one summary.
status=0
node --test --test-concurrency=1 --test-reporter=spec out/unit/ out/e2e/ || status=$?
echo "screenshots: $EXT_DIR/.e2e-artifacts/"
exit "$status"
