#!/usr/bin/env bash
# Installs what the extension's build needs, and what the named sets need (Debian 12, as root,
# non-interactive), then builds:
#   setup.sh [SET...]   the Debian packages of those sets (scripts/setup-system.sh: server,
#                       code-server, tests; default all three), the Python env, the npm
#                       packages, code-server when the sets name it; then the VSIX.
# launch.sh runs `setup.sh server code-server`, or `setup.sh server` with a local VS Code.
set -euo pipefail
source "$(dirname "$0")/common.sh"
[ "$#" -gt 0 ] || set -- server code-server tests

log "Debian packages ($*)"
"$REPO_DIR/scripts/setup-system.sh" "$@"
if ! command -v node >/dev/null || [ "$(node -p 'process.versions.node.split(".")[0]')" != 20 ]; then
  echo "Node.js 20 is required (code-server $CODE_SERVER_VERSION runs on Node 20); found: $(node --version 2>/dev/null || echo none)" >&2
  exit 1
fi

log "Python environment (.venv)"
"$REPO_DIR/scripts/setup-python.sh"

install_npm_packages
if [[ " $* " == *" code-server "* ]]; then
  install_code_server
fi

build_all
log "setup done: $VSIX"
