# Shared by setup.sh, test.sh and launch.sh (sourced, not run).
EXT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO_DIR="$(cd "$EXT_DIR/.." && pwd)"
CACHE_DIR="$EXT_DIR/.e2e-cache"
CODE_SERVER_VERSION="4.100.3"
CODE_SERVER_PREFIX="$CACHE_DIR/code-server"
CODE_SERVER="$CODE_SERVER_PREFIX/node_modules/.bin/code-server"
VSIX="$EXT_DIR/dist/tiller.vsix"
export CI="${CI:-}" DEBIAN_FRONTEND=noninteractive
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi
}

log() { printf '\n== %s\n' "$*"; }

# npm packages: made once per user and lock in the store and linked here (scripts/lib/store.sh).
source "$REPO_DIR/scripts/lib/store.sh"
install_npm_packages() {
  (cd "$EXT_DIR" && store_link node_modules npm-vscode-extension node_modules package.json package-lock.json -- \
    npm ci --no-audit --no-fund --loglevel=error)
}

# code-server for the e2e tests. Its install builds native modules (minutes of CPU), and depends
# on nothing in this checkout but the pinned version: it is installed once per user and version
# in CODE_SERVER_STORE, and each checkout's .e2e-cache/code-server links to it (a folder there is
# used as it is: the engineers' worktrees link their own).
CODE_SERVER_STORE="${XDG_CACHE_HOME:-$HOME/.cache}/tiller/code-server-$CODE_SERVER_VERSION"
code_server_version() { "$1/node_modules/.bin/code-server" --version 2>/dev/null | head -n1 | cut -d' ' -f1; }
install_code_server() {
  [ "$(code_server_version "$CODE_SERVER_PREFIX")" = "$CODE_SERVER_VERSION" ] && return 0
  if [ "$(code_server_version "$CODE_SERVER_STORE")" != "$CODE_SERVER_VERSION" ]; then
    log "code-server $CODE_SERVER_VERSION (for the e2e tests), into $CODE_SERVER_STORE"
    # @vscode/ripgrep downloads rg from GitHub in its postinstall; feed its cache from Debian's rg.
    local rg_cache staging
    rg_cache="$(node -p 'require("os").tmpdir()')/vscode-ripgrep-cache-1.15.11"
    mkdir -p "$rg_cache"
    staging="$(mktemp -d)"
    cp /usr/bin/rg "$staging/rg"
    tar -czf "$rg_cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$staging" rg
    rm -rf "$staging"
    # Installed beside the store and renamed into it: two checkouts installing at once never
    # see half an install.
    mkdir -p "$(dirname "$CODE_SERVER_STORE")"
    rm -rf "$CODE_SERVER_STORE"  # another version's, or a broken one
    staging="$(mktemp -d "$CODE_SERVER_STORE.XXXXXX")"
    # code-server builds native modules in nested npm installs: they need their install scripts.
    # node-gyp would fetch Node's headers from nodejs.org (not a package registry: unreachable
    # here); the Node package installs them under /usr/include/node, so it is told to use those.
    local nodedir=""
    [ -f /usr/include/node/node.h ] && nodedir=/usr
    (cd "$staging" && npm_config_nodedir="${npm_config_nodedir:-$nodedir}" npm_config_unsafe_perm=true npm_config_yes=true npm_config_dangerously_allow_all_scripts=true \
      npm install --prefix "$staging" --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION" </dev/null)
    "$staging/node_modules/.bin/code-server" --version | head -n1
    if ! mv -T "$staging" "$CODE_SERVER_STORE" 2>/dev/null; then
      rm -rf "$staging"  # another checkout finished first
    fi
  fi
  mkdir -p "$CACHE_DIR"
  rm -rf "$CODE_SERVER_PREFIX"
  ln -s "$CODE_SERVER_STORE" "$CODE_SERVER_PREFIX"
}

# Builds the server wheel (bundled in the VSIX), the bundles and the VSIX.
build_all() {
  log "server wheel"
  rm -rf "$EXT_DIR/server-wheel"
  (cd "$REPO_DIR" && uv build --wheel --quiet --out-dir "$EXT_DIR/server-wheel")
  log "typecheck, bundle, package"
  (cd "$EXT_DIR" && npx --no-install tsc --noEmit -p . && npm run --silent package)
}
