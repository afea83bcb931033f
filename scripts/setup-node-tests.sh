#!/usr/bin/env bash
# Installs the npm packages the Python tests use: the TypeScript ACP SDK that
# tests/e2e/acp_ts_client.mjs (a second, independent ACP client) runs on, pinned by
# tests/e2e/acp-ts/package-lock.json. Needs Node.js and npm (the extension's tests need them too).
set -euo pipefail
cd "$(dirname "$0")/../tests/e2e/acp-ts"
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is required for the TypeScript ACP client test (tests/e2e/acp-ts); install Node.js 20" >&2
  exit 1
fi
# Only when the lock changed since the last install (npm ci always starts from scratch).
if ! cmp -s package-lock.json node_modules/.installed-lock.json 2>/dev/null; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.installed-lock.json
fi
