#!/usr/bin/env bash
# Refreshes requirements/test.lock, the one lock every install of this project is made from:
# every Python package the package, its tests, the workshop and its build use, pinned for every
# Python from 3.11 on (uv's universal resolution: where a release differs by Python, the lock
# says which). Releases already locked stay unless asked: a new release is taken on only after
# ./scripts/test_newest.sh ran with it.
#
#   ./scripts/lock.sh                        after a change of pyproject.toml's requirements
#   ./scripts/lock.sh --upgrade              every package to its newest release
#   ./scripts/lock.sh --upgrade-package ipython
set -euo pipefail
cd "$(dirname "$0")/.."
uv=.venv/bin/uv
if [ ! -x "$uv" ]; then  # before the first test run: a uv of the lock's release, apart
  [ -x .venv-tools/bin/uv ] || {
    python3 -m venv .venv-tools
    .venv-tools/bin/python -m pip install -q "$(grep -E '^uv==' requirements/test.lock | cut -d' ' -f1)"
  }
  uv=.venv-tools/bin/uv
fi
"$uv" pip compile -q pyproject.toml --universal --python-version 3.11 --extra test \
  --extra gateway --output-file requirements/test.lock "$@"
echo "requirements/test.lock: $(grep -c '==' requirements/test.lock) pins"
