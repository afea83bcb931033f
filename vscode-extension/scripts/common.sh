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

# Builds the server wheel (bundled in the VSIX), the bundles and the VSIX.
build_all() {
  log "server wheel"
  rm -rf "$EXT_DIR/server-wheel"
  (cd "$REPO_DIR" && uv build --wheel --quiet --out-dir "$EXT_DIR/server-wheel")
  log "typecheck, bundle, package"
  (cd "$EXT_DIR" && npx --no-install tsc --noEmit -p . && npm run --silent package)
}
