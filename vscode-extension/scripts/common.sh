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

# code-server, for the e2e tests and for launch.sh without a local VS Code. Its install builds
# native modules (minutes of CPU), and depends on nothing in this checkout but the pinned
# version: it is installed once per user and version in CODE_SERVER_STORE, and each checkout's
# .e2e-cache/code-server links to it (a folder there is used as it is: the engineers' worktrees
# link their own).
CODE_SERVER_STORE="${XDG_CACHE_HOME:-$HOME/.cache}/tiller/code-server-$CODE_SERVER_VERSION"
# The packages code-server's install compiles (node-gyp), name@version: argon2 in its own
# install, the others in the nested install of VS Code's modules its postinstall runs. The
# fresh-install check (check-fresh-install.sh, a phase of scripts/test.sh) builds these, and
# holds the list to what the store's install built.
CODE_SERVER_NATIVE_MODULES="argon2@0.31.2 kerberos@2.1.1 @vscode/spdlog@0.15.1 \
node-pty@1.1.0-beta33 native-watchdog@1.4.2 @vscode/windows-process-tree@0.6.0 \
@vscode/windows-registry@1.1.0 @vscode/deviceid@0.1.1"

# Every code-server run here names its config file: without --config, code-server reads
# ~/.config/code-server/config.yaml and, when it is missing, writes one there with a generated
# password, whatever the command (even --version). /dev/null is a config of nothing.
code_server_version() {  # code_server_version PREFIX: the version installed there, or nothing
  "$1/node_modules/.bin/code-server" --config /dev/null --version 2>/dev/null | head -n1 | cut -d' ' -f1
}

# npm in the environment code-server's install needs, set here only: install_code_server runs
# the install in it, and the fresh-install check builds the native modules in it.
# - node-gyp compiles against the headers of the Node that runs it, from its own prefix (Debian's
#   and NodeSource's nodejs: /usr/include/node; nvm's: beside its bin/), instead of fetching
#   them from nodejs.org, which is no package registry (unreachable on a machine that reaches
#   only the registries);
# - argon2 (node-pre-gyp, from npm_config_build_from_source) and kerberos (prebuild-install,
#   from a .prebuild-installrc in DIR, which it looks for in the folders above a package) are built
#   from source without first asking GitHub for a prebuilt binary: where GitHub is unreachable
#   the answer is useless, and a host that drops the connection would hold the install for
#   minutes (neither sets a timeout). Not npm_config_build_from_source=true: @parcel/watcher
#   would build from source too (a minute of CPU) instead of taking its prebuilt package;
# - install scripts run, also as root (code-server's postinstall runs nested npm installs).
code_server_npm() {  # code_server_npm DIR NPM-ARGUMENT...: npm in DIR, in that environment
  local dir=$1 prefix nodedir=""
  shift
  prefix="$(node -p 'require("path").resolve(process.execPath, "../..")')"
  [ -f "$prefix/include/node/node.h" ] && nodedir=$prefix
  printf 'buildFromSource=true\n' >"$dir/.prebuild-installrc"
  (cd "$dir" && npm_config_nodedir="${npm_config_nodedir:-$nodedir}" \
    npm_config_build_from_source=argon2 npm_config_unsafe_perm=true npm_config_yes=true \
    npm_config_dangerously_allow_all_scripts=true npm "$@" </dev/null)
}

# name@version of each package under DIR that built a native module (node-gyp's build/Release,
# node-pre-gyp's lib/binding), one a line, sorted.
built_native_modules() {  # built_native_modules DIR
  find "$1" \( -path '*/build/Release/*.node' -o -path '*/lib/binding/*.node' \) -print0 |
    xargs -0 -r node -e '
      const path = require("path");
      const seen = new Set();
      for (const file of process.argv.slice(1)) {
        const root = file.split(/\/(build\/Release|lib\/binding)\//)[0];
        const p = require(path.resolve(root, "package.json"));
        seen.add(`${p.name}@${p.version}`);
      }
      console.log([...seen].sort().join("\n"));'
}

listed_native_modules() { tr ' ' '\n' <<<"$CODE_SERVER_NATIVE_MODULES" | LC_ALL=C sort; }

install_code_server() {
  [ "$(code_server_version "$CODE_SERVER_PREFIX")" = "$CODE_SERVER_VERSION" ] && return 0
  if [ "$(code_server_version "$CODE_SERVER_STORE")" != "$CODE_SERVER_VERSION" ]; then
    log "code-server $CODE_SERVER_VERSION, into $CODE_SERVER_STORE"
    # @vscode/ripgrep downloads rg from GitHub in its postinstall; feed its cache from Debian's rg.
    local rg_cache staging built
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
    code_server_npm "$staging" install --prefix "$staging" --no-audit --no-fund --loglevel=error \
      "code-server@$CODE_SERVER_VERSION"
    "$staging/node_modules/.bin/code-server" --config /dev/null --version | head -n1
    built="$(built_native_modules "$staging/node_modules")"
    if [ "$built" != "$(listed_native_modules)" ]; then
      echo "note: code-server $CODE_SERVER_VERSION built other native modules than" \
        "CODE_SERVER_NATIVE_MODULES (common.sh), which the fresh-install check builds," \
        "lists: ${built//$'\n'/ }" >&2
    fi
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
