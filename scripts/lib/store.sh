# Installs that depend on nothing in a checkout but a lock file (the npm packages of the tests
# and of the extension, the PyPI MCP servers' venv) are made once per user and lock, in a store
# under the user's cache, and linked into each checkout: a fresh clone links them in a fraction
# of a second instead of extracting them again (seconds of CPU each). Sourced, not run.
#
#   store_link LINK NAME INSTALLED KEY... -- COMMAND...
#
# LINK (a path in the checkout, e.g. tests/e2e/acpx/node_modules) becomes a symlink to
# STORE/NAME-HASH/INSTALLED, HASH naming the KEY files' contents (lock files) and the tool
# versions below. When that entry is missing, COMMAND runs in STORE/NAME-HASH (which holds a copy
# of each KEY file) to make INSTALLED there, in place (a venv cannot move). One lock per entry:
# two checkouts installing at once wait for each other, and an entry is used only once its
# install finished (a `.complete` stamp); a broken one is made again.
STORE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/tiller/store"

store_link() {
  local link=$1 name=$2 installed=$3 keys=() hash entry
  shift 3
  while [ "$1" != "--" ]; do keys+=("$1"); shift; done
  shift
  hash=$( { cat "${keys[@]}"; node --version 2>/dev/null || true; uv --version 2>/dev/null || true; } | sha256sum | cut -c1-16)
  entry="$STORE_ROOT/$name-$hash"
  mkdir -p "$STORE_ROOT"
  (
    flock 9
    if [ ! -e "$entry/.complete" ]; then
      rm -rf "$entry"
      mkdir -p "$entry"
      cp "${keys[@]}" "$entry/"
      (cd "$entry" && "$@")
      touch "$entry/.complete"
    fi
  ) 9>"$entry.lock"
  if [ "$(readlink "$link" 2>/dev/null)" != "$entry/$installed" ]; then
    rm -rf "$link"  # an install of its own from before, or a link to an older entry
    ln -s "$entry/$installed" "$link"
  fi
}
