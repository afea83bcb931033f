#!/usr/bin/env bash
# Set up and run the main job: the headless client on the bundled offline demo, in a
# scratch workspace. Pass a prompt and flags to run it for real, e.g.
#   scripts/run.sh --mode plan "add a --verbose flag to cli.py"
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-system.sh
scripts/setup-python.sh
if [ "$#" -eq 0 ]; then
  set -- --demo --yes "Show me what you can do"
fi
exec uv run --frozen tiller run "$@"
