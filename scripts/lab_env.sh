#!/usr/bin/env bash
# Makes the environment the workshop runs in: a virtual environment in DIR (default .venv) with
# the package, JupyterLab, Notebook 7, Voila and everything the notebooks import (the
# `workshop` extra), plus GPUDASK_EXTRAS (e.g. gpu) when set, at the releases of the lock
# (requirements/test.lock). scripts/lab.sh starts JupyterLab
# from it; scripts/test.sh makes one of its own and runs the notebooks there. When nothing it is
# made from changed since its install, it is kept as it is, at once.
#
#   ./scripts/lab_env.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
dir=${1:-.venv}
if [ ! -x "$dir/bin/python" ]; then
  python3 -m venv "$dir"
fi
# What the install depends on: when none of it changed since the last install, the environment
# is kept as it is (an instructor restarting JupyterLab mid-workshop waited 25 s for pip). The
# package is installed editable, so its Python needs no install; its front end is built then.
wanted() {
  {
    echo "extras=${GPUDASK_EXTRAS:-}"
    "$dir/bin/python" --version
    sha256sum pyproject.toml requirements/test.lock labextension/package.json \
      labextension/package-lock.json
    find labextension/src -type f -print0 | sort -z | xargs -0 sha256sum
  } | sha256sum | cut -d' ' -f1
}
stamp="$dir/.gpudask-installed"
want=$(wanted)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
  && "$dir/bin/python" -c "import gpudask_jupyter" 2>/dev/null; then
  echo "$dir: up to date (nothing it is made from changed since its install)"
  exit 0
fi
# at the releases the lock pins (the tests ran with them); a GPU extra's libraries that the
# lock does not name are resolved afresh
./scripts/lock_install.sh "$dir" "workshop${GPUDASK_EXTRAS:+,$GPUDASK_EXTRAS}"
echo "$want" > "$stamp"
