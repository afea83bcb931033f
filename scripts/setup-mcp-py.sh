#!/usr/bin/env bash
# Installs the PyPI MCP servers the tests run Tiller against (mcp-server-git, mcp-server-time)
# into their own environment, tests/e2e/mcp-py/.venv, pinned with hashes by
# tests/e2e/mcp-py/requirements.txt, so their dependencies never meet Tiller's. Nothing is
# downloaded at test time. Regenerate the pins with the command at the top of requirements.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/store.sh
source scripts/lib/python.sh
python=$(system_python)
cd tests/e2e/mcp-py
# Made once per user, pin set and interpreter in the store (scripts/lib/store.sh) and linked
# here: with Debian's own Python when it is new enough (scripts/lib/python.sh), as .venv.
# --compile-bytecode: the machines set PYTHONDONTWRITEBYTECODE, so every start would compile the
# servers' imports again (seconds).
store_link .venv "mcp-py${python:+-system}" .venv requirements.txt -- bash -c 'set -e
  uv venv --quiet --python "$1" .venv
  uv pip install --quiet --python .venv --require-hashes --compile-bytecode -r requirements.txt' \
  _ "${python:-3.11}"
