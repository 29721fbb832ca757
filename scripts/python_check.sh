#!/usr/bin/env bash
# One Python's checks for scripts/test_pythons.sh (which says what they are), run where that
# Python is: the wheel WHEEL into a fresh virtual environment VENV by pip, at the lock's releases,
# then the probes, a first session and the notebooks (MODE notebooks) or the CPU tier (MODE cpu).
#
#   ./scripts/python_check.sh PYTHON VENV notebooks|cpu WHEEL
set -euo pipefail
cd "$(dirname "$0")/.."
py=$1 venv=$2 mode=$3 wheel=$4
# the notebooks run in this Python's environment, not in the workshop environment that
# scripts/test.sh made for the machine's own Python
unset GPUDASK_NOTEBOOK_PYTHON GPUDASK_REQUIRE_LAB_ENV
lock=requirements/test.lock
rm -rf "$venv"
"$py" -m venv "$venv"
# as a newcomer installs it: pip, into a fresh environment (the lock's releases as constraints)
"$venv/bin/python" -m pip install -q -c "$lock" "$wheel[test]"
# kernels start "python" from PATH: it must be this environment's
PATH="$(cd "$venv" && pwd)/bin:$PATH"
export PATH
echo "$("$venv/bin/python" --version), the wheel $(basename "$wheel")"
"$venv/bin/python" -m gpudask_jupyter.compat
# -P: the package comes from the environment (the wheel), not from this checkout
tests=(tests/cpu/test_compat_probes.py tests/cpu/test_first_session.py tests/cpu/test_notebooks.py)
[ "$mode" != cpu ] || tests=(tests/cpu)
"$venv/bin/python" -P -m pytest -q -p no:cacheprovider -ra "${tests[@]}"
