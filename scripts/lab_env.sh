#!/usr/bin/env bash
# Makes the environment the workshop runs in: a virtual environment in DIR (default .venv) with
# the package, JupyterLab, Notebook 7, Voila and everything the notebooks import (the
# `workshop` extra), plus GPUDASK_EXTRAS (e.g. gpu) when set. scripts/lab.sh starts JupyterLab
# from it; scripts/test.sh makes one of its own and runs the notebooks there.
#
#   ./scripts/lab_env.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
dir=${1:-.venv}
if [ ! -x "$dir/bin/python" ]; then
  python3 -m venv "$dir"
fi
"$dir/bin/python" -m pip install -q --upgrade pip
"$dir/bin/python" -m pip install -q -e ".[workshop${GPUDASK_EXTRAS:+,$GPUDASK_EXTRAS}]"
