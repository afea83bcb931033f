#!/usr/bin/env bash
# Installs the npm packages the Python tests use, each pinned by its package-lock.json:
# - tests/e2e/acp-ts: the TypeScript ACP SDK that tests/e2e/acp_ts_client.mjs (a second,
#   independent ACP client) runs on;
# - tests/e2e/acpx: acpx, a third-party headless ACP client that tests/e2e/test_acpx.py drives
#   against `tiller acp` (it declares node >=22.13 but runs on Node 20: npm only warns);
# - tests/e2e/mcp-npm: @modelcontextprotocol/server-everything and server-filesystem, real MCP
#   servers that tests/e2e/test_mcp_servers.py runs Tiller's MCP client against;
# - tests/e2e/lsp-npm: pyright, a real language server that
#   tests/e2e/test_language_server_diagnostics.py checks Tiller's edits with.
# Needs Node.js and npm (the extension's tests need them too). Nothing is downloaded at test time.
set -euo pipefail
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is required for the ACP client, MCP server and language server tests (tests/e2e/acp-ts, acpx, mcp-npm, lsp-npm); install Node.js 20" >&2
  exit 1
fi
# Each is installed once per user and lock, in a store under ~/.cache, and linked here
# (scripts/lib/store.sh). The four installs run at once (each waits on the registry and the disk
# as much as it computes; npm's cache is safe to share); a failing one fails the script, with
# its output.
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/lib/store.sh"
install() {  # install DIR
  cd "$ROOT/tests/e2e/$1"
  store_link node_modules "npm-tests-$1" node_modules package.json package-lock.json -- \
    npm ci --no-audit --no-fund --loglevel=error
}
pids=()
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
for dir in acp-ts acpx mcp-npm lsp-npm; do
  install "$dir" >"$logs/$dir" 2>&1 &
  pids+=("$!")
done
status=0
for i in "${!pids[@]}"; do
  dir=$(echo acp-ts acpx mcp-npm lsp-npm | cut -d' ' -f$((i + 1)))
  if ! wait "${pids[$i]}"; then
    echo "npm ci failed in tests/e2e/$dir:" >&2
    status=1
  fi
  cat "$logs/$dir"
done
exit "$status"
