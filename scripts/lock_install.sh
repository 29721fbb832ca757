#!/usr/bin/env bash
# Installs the lock into a virtual environment: every Python package pinned as
# requirements/test.lock names it (made by scripts/lock.sh), so that an install is the same
# whatever day it runs. uv (its release pinned by the lock) does the install; the package itself
# goes in editable, built from the lock's build tools (no build isolation: nothing unpinned).
#
#   ./scripts/lock_install.sh DIR sync       every package of the lock, nothing else (tests)
#   ./scripts/lock_install.sh DIR EXTRAS     the package with EXTRAS (e.g. workshop or
#                                            workshop,gpu), held to the lock's releases
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
dir=${1:?usage: lock_install.sh DIR sync|EXTRAS}
what=${2:?usage: lock_install.sh DIR sync|EXTRAS}
lock=requirements/test.lock
[ -x "$dir/bin/python" ] || python3 -m venv "$dir"
py="$dir/bin/python"
uv_pin=$(grep -E '^uv==' "$lock" | cut -d' ' -f1)
if [ "$("$dir/bin/uv" --version 2>/dev/null | cut -d' ' -f2)" != "${uv_pin#uv==}" ]; then
  "$py" -m pip install -q "$uv_pin"
fi
uv=("$dir/bin/uv" pip)
if [ "$what" = sync ]; then
  "${uv[@]}" sync -q --python "$py" "$lock"
  "${uv[@]}" install -q --python "$py" --no-deps --no-build-isolation -e .
else
  # the build tools of the lock first, then the package and its extras within the lock
  "${uv[@]}" install -q --python "$py" -c "$lock" hatchling hatch-jupyter-builder editables jupyterlab "$uv_pin"
  "${uv[@]}" install -q --python "$py" -c "$lock" --no-build-isolation -e ".[$what]"
fi
