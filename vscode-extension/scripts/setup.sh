#!/usr/bin/env bash
# Installs what the extension's build and tests need (Debian 12, as root, non-interactive):
# Debian packages, the Python env, npm packages, code-server for the e2e tests; then builds.
set -euo pipefail
source "$(dirname "$0")/common.sh"

log "Debian packages"
packages=(chromium ripgrep bubblewrap git tmux libkrb5-dev libsecret-1-dev libx11-dev libxkbfile-dev pkg-config build-essential python3 python3-venv python3-pip)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  as_root apt-get update -qq
  as_root apt-get install -y -qq --no-install-recommends --no-upgrade "${missing[@]}" </dev/null
fi
if ! command -v node >/dev/null || [ "$(node -p 'process.versions.node.split(".")[0]')" != 20 ]; then
  echo "Node.js 20 is required (code-server $CODE_SERVER_VERSION runs on Node 20); found: $(node --version 2>/dev/null || echo none)" >&2
  exit 1
fi

log "Python environment (.venv)"
"$REPO_DIR/scripts/setup-python.sh"

install_npm_packages
install_code_server

build_all
log "setup done: $VSIX"
