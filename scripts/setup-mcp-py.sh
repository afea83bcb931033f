#!/usr/bin/env bash
# Installs the PyPI MCP servers the tests run Tiller against (mcp-server-git, mcp-server-time)
# into their own environment, tests/e2e/mcp-py/.venv, pinned with hashes by
# tests/e2e/mcp-py/requirements.txt, so their dependencies never meet Tiller's. Nothing is
# downloaded at test time. Regenerate the pins with the command at the top of requirements.txt.
set -euo pipefail
cd "$(dirname "$0")/../tests/e2e/mcp-py"
# Only when the pins changed since the last install.
if ! cmp -s requirements.txt .venv/.installed-requirements.txt 2>/dev/null; then
  uv venv --quiet --allow-existing --python 3.11 .venv
  # --compile-bytecode: the machines set PYTHONDONTWRITEBYTECODE, so every start would
  # compile the servers' imports again (seconds).
  uv pip install --quiet --python .venv --require-hashes --compile-bytecode -r requirements.txt
  cp requirements.txt .venv/.installed-requirements.txt
fi
