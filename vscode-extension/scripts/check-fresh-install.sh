#!/usr/bin/env bash
# Proves that code-server's install works on a fresh account, which the per-user store
# (common.sh) otherwise hides from every run after the first: its native modules
# (CODE_SERVER_NATIVE_MODULES) are built from an empty npm cache, in a fresh HOME (no ~/.npmrc,
# no ~/.cache, no npm_config_* or XDG_* variables from this environment), by npm in the
# environment the install itself runs in (code_server_npm): only the package registries are
# needed, no nodejs.org for Node's headers, no GitHub for prebuilt binaries. Then the list is
# held to the store's install, when there is one: a code-server that builds other modules
# fails here until the list follows. A phase of scripts/test.sh; Debian's `code-server` set
# (scripts/setup-system.sh) must be installed.
set -euo pipefail
source "$(dirname "$0")/common.sh"

home="$(mktemp -d "${TMPDIR:-/tmp}/tiller-fresh-home.XXXXXX")"
trap 'rm -rf "$home"' EXIT
mkdir "$home/build"
echo '{"name": "fresh-install-check", "private": true}' >"$home/build/package.json"
echo "code-server $CODE_SERVER_VERSION's native modules, built in a fresh HOME ($home):"
echo "  $CODE_SERVER_NATIVE_MODULES"
(
  for name in $(compgen -e); do
    case "$name" in npm_config_* | NPM_CONFIG_* | XDG_*) unset "$name" ;; esac
  done
  export HOME="$home"
  # shellcheck disable=SC2086  # the list is words
  code_server_npm "$home/build" install --no-audit --no-fund --no-update-notifier --loglevel=error \
    $CODE_SERVER_NATIVE_MODULES
)
[ ! -e "$home/.cache/node-gyp/$(node -p process.versions.node)" ] || {
  echo "node-gyp downloaded Node's headers instead of using the installed ones" >&2
  exit 1
}
built="$(built_native_modules "$home/build/node_modules")"
if [ "$built" != "$(listed_native_modules)" ]; then
  echo "built: ${built//$'\n'/ }; listed: $CODE_SERVER_NATIVE_MODULES" >&2
  exit 1
fi
echo "all built: $(find "$home/build/node_modules" -path '*/build/Release/*.node' \
  -not -path '*/obj.target/*' -o -path '*/lib/binding/*.node' | wc -l) .node files"
if [ "$(code_server_version "$CODE_SERVER_STORE")" = "$CODE_SERVER_VERSION" ]; then
  installed="$(built_native_modules "$CODE_SERVER_STORE/node_modules")"
  if [ "$installed" != "$built" ]; then
    echo "code-server $CODE_SERVER_VERSION in $CODE_SERVER_STORE built: ${installed//$'\n'/ }" >&2
    echo "CODE_SERVER_NATIVE_MODULES (vscode-extension/scripts/common.sh) lists:" \
      "$CODE_SERVER_NATIVE_MODULES" >&2
    exit 1
  fi
  echo "the same modules as the install in $CODE_SERVER_STORE"
else
  echo "(no code-server $CODE_SERVER_VERSION in $CODE_SERVER_STORE yet to hold the list to)"
fi
