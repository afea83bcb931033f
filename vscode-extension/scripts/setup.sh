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

log "npm packages"
(cd "$EXT_DIR" && npm ci --no-audit --no-fund --loglevel=error)

log "code-server $CODE_SERVER_VERSION (for the e2e tests)"
if [ "$("$CODE_SERVER" --version 2>/dev/null | head -n1 | cut -d' ' -f1)" != "$CODE_SERVER_VERSION" ]; then
  # @vscode/ripgrep downloads rg from GitHub in its postinstall; feed its cache from Debian's rg.
  rg_cache="$(node -p 'require("os").tmpdir()')/vscode-ripgrep-cache-1.15.11"
  mkdir -p "$rg_cache"
  staging="$(mktemp -d)"
  cp /usr/bin/rg "$staging/rg"
  tar -czf "$rg_cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$staging" rg
  rm -rf "$staging" "$CODE_SERVER_PREFIX"
  mkdir -p "$CODE_SERVER_PREFIX"
  # code-server builds native modules in nested npm installs: they need their install scripts.
  (cd "$CACHE_DIR" && npm_config_unsafe_perm=true npm_config_yes=true npm_config_dangerously_allow_all_scripts=true \
    npm install --prefix "$CODE_SERVER_PREFIX" --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION" </dev/null)
  "$CODE_SERVER" --version | head -n1
fi

build_all
log "setup done: $VSIX"
