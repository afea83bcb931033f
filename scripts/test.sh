#!/usr/bin/env bash
# Set up everything and run every test: lint, types, Python unit + end-to-end tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-system.sh
scripts/setup-python.sh
scripts/setup-node-tests.sh
scripts/setup-mcp-py.sh
echo "== ruff"
uv run --frozen ruff check
uv run --frozen ruff format --check
echo "== mypy (strict)"
uv run --frozen mypy
uv run --frozen python -m tiller.protocol_ts --check vscode-extension/src/protocol.ts  # generated from protocol.py: no drift
echo "== pytest"
uv run --frozen pytest -q -p no:cacheprovider -n 2 --durations=10 "$@"  # the 10 slowest tests last
echo "== VS Code extension: unit + end-to-end in code-server"
vscode-extension/scripts/test.sh
