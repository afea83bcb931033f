#!/usr/bin/env bash
# Builds everything and opens Tiller on a workspace (default: the repository).
#   - with a local VS Code (`code` on PATH): installs the VSIX there and opens the workspace;
#   - otherwise: code-server on http://127.0.0.1:8080 (PORT to change it), no password.
# Without ANTHROPIC_API_KEY the server plays its bundled offline demo; with it, the real model.
set -euo pipefail
source "$(dirname "$0")/common.sh"
WORKSPACE="$(cd "${1:-$REPO_DIR}" && pwd)"
PORT="${PORT:-8080}"

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
mkdir -p "$profile/user-data/User" "$profile/extensions"
settings="$profile/user-data/User/settings.json"
if [ ! -f "$settings" ]; then
  cat >"$settings" <<JSON
{
  "security.workspace.trust.enabled": false,
  "workbench.startupEditor": "none",
  "telemetry.telemetryLevel": "off",
  "tiller.pythonPath": "$REPO_DIR/.venv/bin/python"
}
JSON
fi
log "installing $VSIX into code-server"
"$CODE_SERVER" --user-data-dir "$profile/user-data" --extensions-dir "$profile/extensions" --install-extension "$VSIX" --force
log "Tiller in code-server: http://127.0.0.1:$PORT/?folder=$WORKSPACE  (Ctrl+C to stop)"
exec "$CODE_SERVER" --auth none --bind-addr "127.0.0.1:$PORT" --disable-telemetry --disable-update-check \
  --disable-workspace-trust --user-data-dir "$profile/user-data" --extensions-dir "$profile/extensions" "$WORKSPACE"
