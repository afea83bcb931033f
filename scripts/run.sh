#!/usr/bin/env bash
# Set up and run the main job: the headless client, in the directory you run this from.
# Without arguments it plays the bundled offline demo in a scratch workspace. Pass a prompt
# and flags to work for real in the current directory, e.g.
#   scripts/run.sh --mode plan "add a --verbose flag to cli.py"
set -euo pipefail
here="$PWD"
root="$(cd "$(dirname "$0")/.." && pwd)"
(cd "$root" && scripts/setup-system.sh server && scripts/setup-python.sh)
if [ "$#" -eq 0 ]; then
  set -- --demo --yes "Show me what you can do"
fi
cd "$here"  # the workspace is where the user is, never this checkout
exec uv run --frozen --project "$root" tiller run "$@"
