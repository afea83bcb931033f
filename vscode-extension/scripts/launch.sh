#!/usr/bin/env bash
# Builds everything and opens Tiller on a workspace:
#   launch.sh [FOLDER]   FOLDER: the workspace to open; default: a scratch folder
#                        (.e2e-cache/launch/scratch), never this checkout, so the demo's
#                        edits land somewhere harmless.
#   - with a local VS Code (`code` on PATH): installs the VSIX there and opens the workspace;
#   - otherwise: code-server on http://127.0.0.1:8080 (PORT=9000 launch.sh to change it), no password.
# Without ANTHROPIC_API_KEY the server plays its bundled offline demo; with it, the real model.
# Needs Node.js 20 (code-server 4.100 runs on it) and Python 3.11+; setup.sh installs the rest.
set -euo pipefail
source "$(dirname "$0")/common.sh"
PORT="${PORT:-8080}"
if [ -n "${1:-}" ]; then
  WORKSPACE="$(cd "$1" && pwd)"
else
  WORKSPACE="$CACHE_DIR/launch/scratch"
  mkdir -p "$WORKSPACE"
  [ -f "$WORKSPACE/README.md" ] || printf '# Tiller scratch workspace\n\nTiller opened this folder because launch.sh got no folder argument.\nAnything the agent (or its offline demo) writes lands here.\n' >"$WORKSPACE/README.md"
fi

if [ ! -d "$EXT_DIR/node_modules" ] || [ ! -x "$REPO_DIR/.venv/bin/python" ] || { ! command -v code >/dev/null && [ ! -x "$CODE_SERVER" ]; }; then
  "$EXT_DIR/scripts/setup.sh"
else
  build_all
fi

if [ -n "${ANTHROPIC_API_KEY:-}" ]; then
  echo "ANTHROPIC_API_KEY is set: Tiller talks to the real model."
else
  echo "ANTHROPIC_API_KEY is not set: Tiller runs its offline demo (set the key, or use 'Tiller: Set API Key…')."
fi

if command -v code >/dev/null 2>&1; then
  log "installing $VSIX into VS Code"
  code --install-extension "$VSIX" --force
  exec code "$WORKSPACE"
fi

profile="$CACHE_DIR/launch"
mkdir -p "$profile/user-data/User" "$profile/user-data/Machine" "$profile/extensions"
settings="$profile/user-data/User/settings.json"
if [ ! -f "$settings" ]; then
  cat >"$settings" <<JSON
{
  "security.workspace.trust.enabled": false,
  "workbench.startupEditor": "none",
  "telemetry.telemetryLevel": "off"
}
JSON
fi
# tiller.pythonPath is machine-scoped: code-server reads it from the Machine settings (a value
# in the User settings is dropped once any setting is changed in the UI).
cat >"$profile/user-data/Machine/settings.json" <<JSON
{
  "tiller.pythonPath": "$REPO_DIR/.venv/bin/python"
}
JSON
log "installing $VSIX into code-server"
"$CODE_SERVER" --user-data-dir "$profile/user-data" --extensions-dir "$profile/extensions" --install-extension "$VSIX" --force
log "Tiller in code-server: http://127.0.0.1:$PORT/?folder=$WORKSPACE  (Ctrl+C to stop)"
exec "$CODE_SERVER" --auth none --bind-addr "127.0.0.1:$PORT" --disable-telemetry --disable-update-check \
  --disable-workspace-trust --user-data-dir "$profile/user-data" --extensions-dir "$profile/extensions" "$WORKSPACE"
