#!/usr/bin/env bash
# Builds everything and opens Tiller on a workspace:
#   launch.sh [FOLDER]   FOLDER: the workspace to open; default: a scratch folder outside this
#                        checkout, ${XDG_DATA_HOME:-~/.local/share}/tiller/scratch (the demo's
#                        edits land somewhere harmless, and VS Code finds no git repository
#                        around it).
#   - with a local VS Code (`code` on PATH): installs the VSIX there and opens the workspace
#     (PORT is not used);
#   - otherwise: code-server on http://127.0.0.1:$PORT (PORT defaults to 8080; only this
#     machine can connect, no password), with its own config file and profile under
#     vscode-extension/.e2e-cache/launch: ~/.config/code-server is never read or written
#     (code-server keeps its logs and a heartbeat file in ~/.local/share/code-server).
#     The URL to open is printed once code-server answers.
# VS Code's Workspace Trust stays on for a FOLDER you name: a cloned repository opens in
# Restricted Mode, where Tiller runs none of its hooks, MCP or language servers and takes none
# of its allow rules, until you trust it. The scratch folder is Tiller's own: code-server opens
# it with Workspace Trust off.
# Without ANTHROPIC_API_KEY the server plays its bundled offline demo; with it, the real model.
# Needs Node.js 20 (code-server 4.100 runs on it) and Python 3.11+; setup.sh installs the rest:
# the Debian packages of scripts/setup-system.sh's `server` set, and of its `code-server` set
# when code-server is needed (only those missing; apt-get upgrades an installed package only
# when a new one needs it newer, and names it first), never the tests' (tmux, Chromium).
set -euo pipefail
source "$(dirname "$0")/common.sh"
PORT="${PORT:-8080}"
case "$PORT" in
  '' | *[!0-9]*) echo "PORT must be a port number, got: $PORT" >&2; exit 64 ;;
esac
# code-server's switch for this session only; a local VS Code keeps its own trust decisions.
trust_args=()
if [ -n "${1:-}" ]; then
  WORKSPACE="$(cd "$1" && pwd)"
else
  trust_args=(--disable-workspace-trust)
  WORKSPACE="${XDG_DATA_HOME:-$HOME/.local/share}/tiller/scratch"
  mkdir -p "$WORKSPACE"
  [ -f "$WORKSPACE/README.md" ] || printf '# Tiller scratch workspace\n\nTiller opened this folder because launch.sh got no folder argument.\nAnything the agent (or its offline demo) writes lands here; delete it whenever you like.\n' >"$WORKSPACE/README.md"
fi
echo "Workspace: $WORKSPACE"

# code-server, and the Debian packages its install builds with, only without a local VS Code.
sets=(server)
command -v code >/dev/null 2>&1 || sets+=(code-server)
if [ ! -d "$EXT_DIR/node_modules" ] || [ ! -x "$REPO_DIR/.venv/bin/python" ] || { ! command -v code >/dev/null && [ ! -x "$CODE_SERVER" ]; }; then
  "$EXT_DIR/scripts/setup.sh" "${sets[@]}"
else
  build_all
fi

if [ -n "${ANTHROPIC_API_KEY:-}" ] || [ -n "${ANTHROPIC_AUTH_TOKEN:-}" ]; then
  echo "An API key is set: Tiller talks to the real model."
else
  echo "ANTHROPIC_API_KEY is not set: Tiller plays its offline demo (set the key before launch.sh, or use 'Tiller: Set API Key…')."
fi

if command -v code >/dev/null 2>&1; then
  log "installing $VSIX into VS Code"
  code --install-extension "$VSIX" --force
  echo "Opening $WORKSPACE in VS Code (no code-server: PORT is not used)."
  exec code "$WORKSPACE"
fi

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

profile="$CACHE_DIR/launch"
mkdir -p "$profile/user-data/User" "$profile/user-data/Machine" "$profile/extensions"
# Our own config file: without --config, code-server reads ~/.config/code-server/config.yaml
# and on its first run writes one there with a generated password.
config="$profile/config.yaml"
printf 'bind-addr: 127.0.0.1:%s\nauth: none\ncert: false\n' "$PORT" >"$config"
settings="$profile/user-data/User/settings.json"
if [ ! -f "$settings" ]; then
  cat >"$settings" <<JSON
{
  "workbench.startupEditor": "none",
  "telemetry.telemetryLevel": "off"
}
JSON
else
  # Earlier launch.sh runs wrote Workspace Trust off for every folder into this profile.
  sed -i '/^[[:space:]]*"security\.workspace\.trust\.enabled":[[:space:]]*false,\{0,1\}[[:space:]]*$/d' "$settings"
fi
# tiller.pythonPath is machine-scoped: code-server reads it from the Machine settings (a value
# in the User settings is dropped once any setting is changed in the UI).
cat >"$profile/user-data/Machine/settings.json" <<JSON
{
  "tiller.pythonPath": "$REPO_DIR/.venv/bin/python"
}
JSON
code_server=("$CODE_SERVER" --config "$config" --user-data-dir "$profile/user-data" --extensions-dir "$profile/extensions")
log "installing $VSIX into code-server"
"${code_server[@]}" --install-extension "$VSIX" --force

if listening "$PORT"; then
  echo "Port $PORT is already in use on 127.0.0.1: run PORT=9000 $0 (any free port) instead." >&2
  exit 1
fi
log "starting code-server on 127.0.0.1:$PORT"
# code-server also reads PORT from its environment: it gets the same value as --bind-addr.
PORT="$PORT" "${code_server[@]}" --bind-addr "127.0.0.1:$PORT" --auth none \
  --disable-telemetry --disable-update-check "${trust_args[@]}" "$WORKSPACE" &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true' INT TERM EXIT
for _ in $(seq 1 300); do # up to a minute for code-server to listen
  listening "$PORT" && break
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "code-server exited before it listened on port $PORT" >&2
    exit 1
  fi
  sleep 0.2
done
cat <<BANNER

================================================================================
  Tiller is running in code-server. Open this URL in a browser on this machine:

    http://127.0.0.1:$PORT/?folder=$WORKSPACE

  No password (auth: none); code-server listens on 127.0.0.1 only. From another
  machine, forward the port first:  ssh -L $PORT:127.0.0.1:$PORT <this-host>
  Workspace: $WORKSPACE
  Workspace Trust: $(if [ ${#trust_args[@]} -gt 0 ]; then echo "off (Tiller's scratch folder)"; else echo "on (VS Code asks whether you trust the folder; until then Restricted Mode)"; fi)
  Ctrl+C here stops code-server.
================================================================================

BANNER
wait "$server_pid"
