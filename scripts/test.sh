#!/usr/bin/env bash
# Set up everything and run every test: lint, types, Python unit + end-to-end tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-python.sh
echo "== ruff"
uv run --frozen ruff check server tests bench
uv run --frozen ruff format --check server tests bench
echo "== mypy (strict)"
uv run --frozen mypy
echo "== pytest"
uv run --frozen pytest -q -p no:cacheprovider "$@"
