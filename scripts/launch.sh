#!/usr/bin/env bash
# Set up and run the main job: build the server and the VS Code extension and open Tiller in
# VS Code (the local `code`, else code-server at the URL it prints). The same as
# vscode-extension/scripts/launch.sh, which says what it installs, where and which PORT it uses.
#   scripts/launch.sh [FOLDER]
set -euo pipefail
exec "$(dirname "$0")/../vscode-extension/scripts/launch.sh" "$@"
