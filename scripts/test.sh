#!/usr/bin/env bash
# Runs every test of the project on a fresh Debian machine with Python 3.11+ and Node 20.19+:
# installs what it needs (a virtual environment in .venv with the package and every Python
# package of the lock, requirements/test.lock, at the releases it pins; the npm packages of
# labextension/package-lock.json; Debian's chromium for the browser tests), then linters, type
# checks, the TypeScript tests and every Python test, browser tests included. GPU tests are
# skipped, with the reason, where no GPU is usable. Then the other Pythons
# (scripts/test_pythons.sh), unless GPUDASK_PYTHONS is set to none or to a list of its own.
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

# the lock, exactly (builds the front end with npm on the first install: labextension/ ->
# gpudask_jupyter/)
./scripts/lock_install.sh .venv sync
# kernels start "python" from PATH: it must be this environment's
export PATH="$PWD/.venv/bin:$PATH"
py=.venv/bin/python

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

echo "== pytest on $($py --version) (CPU, kernels, server, browser; GPU tests skip without a GPU)"
$py -m pytest -ra "$@"

if [ "${GPUDASK_PYTHONS:-}" != none ] && [ $# = 0 ]; then
  echo "== the other Pythons"
  ./scripts/test_pythons.sh ${GPUDASK_PYTHONS:-}
fi
