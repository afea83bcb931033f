#!/usr/bin/env bash
# Install uv (pinned) when missing, then the locked Python environment in .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
UV_VERSION=0.13.8
if ! command -v uv >/dev/null 2>&1 || [ "$(uv --version | cut -d' ' -f2)" != "$UV_VERSION" ]; then
  # --break-system-packages: Debian's own python3 refuses plain pip installs (PEP 668).
  python3 -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION" \
    || python3 -m pip install --quiet --user --break-system-packages "uv==$UV_VERSION"
  export PATH="$HOME/.local/bin:$PATH"
fi
# The interpreter: Debian's own Python 3 when it is new enough (scripts/lib/python.sh). An
# existing .venv made with another interpreter is made again.
source scripts/lib/python.sh
python=$(system_python)
# The machines set PYTHONDONTWRITEBYTECODE; compile once here or every start pays seconds.
uv sync --frozen --quiet --compile-bytecode ${python:+--python "$python"}
# The editable install is not covered by --compile-bytecode: compile our own sources too, and
# the tests' helpers (the fake API, the harness, the fake language server: every test process
# and many test servers import them). Not the test modules: pytest rewrites and compiles those.
uv run --frozen python -m compileall -q -j 0 -x '/(test_[^/]*|conftest)\.py$' server/tiller tests >/dev/null
