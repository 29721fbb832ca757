#!/usr/bin/env bash
# Tries the newest release of every Python package the project uses, apart from the lock that
# the README's test command and CI install (requirements/test.lock): a fresh environment
# (.venv-newest) with the package and its test tools at the newest releases, then
#   - each package whose newest release differs from the lock's,
#   - what any library lacks of the private calls this package makes (python -m
#     gpudask_jupyter.compat: a lack is said with its fallback),
#   - the tests (pytest arguments as given; by default the CPU tier).
# What it finds is a finding, not a red CI: a new release is taken on by
# ./scripts/lock.sh --upgrade-package NAME (or --upgrade) once this passed with it, in the
# commit that mends whatever it found.
#
#   ./scripts/test_newest.sh [pytest arguments]
set -uo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
dir=.venv-newest
rm -rf "$dir"
python3 -m venv "$dir"
"$dir/bin/python" -m pip install -q --upgrade uv || exit 2
# newest everything, the front end as built (npm builds it where it is missing)
"$dir/bin/uv" pip install -q --python "$dir/bin/python" --upgrade -e ".[test,gateway]" || exit 2
export PATH="$PWD/$dir/bin:$PATH"
echo "== newer than the lock (package: locked -> newest)"
"$dir/bin/python" - <<'PY'
import importlib.metadata as md
import re

from packaging.markers import Marker
from packaging.utils import canonicalize_name

locked = {}
for line in open("requirements/test.lock"):
    match = re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)(?:\s*;\s*(.+))?$", line.strip())
    if match and (match.group(3) is None or Marker(match.group(3)).evaluate()):
        locked[canonicalize_name(match.group(1))] = match.group(2)
newer = 0
for dist in sorted(md.distributions(), key=lambda d: canonicalize_name(d.metadata["Name"])):
    name = canonicalize_name(dist.metadata["Name"])
    if name in locked and locked[name] != dist.version:
        newer += 1
        print(f"  {name}: {locked[name]} -> {dist.version}")
    elif name not in locked and name not in ("gpudask-jupyter", "pip", "setuptools"):
        print(f"  {name}: (not in the lock) -> {dist.version}")
print(f"  {newer} of {len(locked)} locked packages have a newer release")
PY
echo "== what the newest releases lack of this package's private calls"
"$dir/bin/python" -m gpudask_jupyter.compat
compat=$?
echo "== tests on the newest releases"
[ $# -gt 0 ] || set -- tests/cpu
"$dir/bin/python" -m pytest -q -ra -p no:cacheprovider "$@"
tests=$?
echo "== findings: compat exit $compat, tests exit $tests (0 and 0: the lock can take them on)"
[ "$compat" = 0 ] && [ "$tests" = 0 ]
