#!/usr/bin/env bash
# Runs every test of the project on a fresh Debian machine with Python 3.11+ and Node 20.19+:
# installs what it needs (a virtual environment in .venv with the package and its test tools,
# the npm packages, Debian's chromium for the browser tests), then linters, type checks, the
# TypeScript tests and every Python test, browser tests included. GPU tests are skipped, with
# the reason, where no GPU is usable.
#
#   ./scripts/test.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1

if [ ! -x /usr/bin/chromium ]; then
  echo "== installing Debian's chromium for the browser tests"
  sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq chromium >/dev/null
fi
export GPUDASK_REQUIRE_BROWSER=1  # a missing browser fails the browser tests instead of skipping

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# kernels start "python" from PATH: it must be this environment's
export PATH="$PWD/.venv/bin:$PATH"
py=.venv/bin/python
$py -m pip install -q --upgrade pip
# builds the front end with npm on the first install (labextension/ -> gpudask_jupyter/)
$py -m pip install -q -e ".[test]"

echo "== ruff"
$py -m ruff check .
$py -m ruff format --check .
echo "== mypy"
$py -m mypy

echo "== TypeScript: eslint, prettier, type check, vitest"
(
  cd labextension
  [ -d node_modules ] || npm ci --no-audit --no-fund
  npm run lint
  npm test
)

echo "== the workshop's environment, as scripts/lab.sh makes it (the notebooks run there)"
./scripts/lab_env.sh .venv-lab
export GPUDASK_NOTEBOOK_PYTHON="$PWD/.venv-lab/bin/python" GPUDASK_REQUIRE_LAB_ENV=1

echo "== pytest (CPU, kernels, server, browser; GPU tests skip without a GPU)"
$py -m pytest -ra "$@"
