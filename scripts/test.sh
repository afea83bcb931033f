#!/usr/bin/env bash
# Set up everything and run every test: lint, types, Python unit + end-to-end tests.
# Each phase prints its duration, and a summary of them all comes last.
set -euo pipefail
cd "$(dirname "$0")/.."

TIMES=()
phase() {  # phase NAME COMMAND...: run it, print and remember how long it took
  local name=$1 started=$SECONDS
  shift
  echo "== $name"
  "$@"
  local took=$((SECONDS - started))
  echo "== $name: ${took} s"
  TIMES+=("$(printf '%-44s %5d s' "$name" "$took")")
}
summary() {
  echo "== phase times (total ${SECONDS} s)"
  printf '  %s\n' "${TIMES[@]}"
}
trap summary EXIT

lint() {
  uv run --frozen ruff check
  uv run --frozen ruff format --check
}
types() {
  uv run --frozen mypy
  uv run --frozen python -m tiller.protocol_ts --check vscode-extension/src/protocol.ts  # generated from protocol.py: no drift
}

phase "setup: system packages" scripts/setup-system.sh
phase "setup: python" scripts/setup-python.sh
phase "setup: node test tools" scripts/setup-node-tests.sh
phase "setup: MCP servers from PyPI" scripts/setup-mcp-py.sh
phase "ruff" lint
phase "mypy (strict) + protocol.ts" types
phase "pytest" uv run --frozen pytest -q -p no:cacheprovider -n 2 --durations=10 "$@"  # the 10 slowest tests last
phase "VS Code extension: unit + end-to-end in code-server" vscode-extension/scripts/test.sh
