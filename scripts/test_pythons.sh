#!/usr/bin/env bash
# The package on the other Pythons it supports, beside the one scripts/test.sh ran everything on.
# For each VERSION, the wheel built from this checkout goes into a fresh virtual environment,
# with everything else at the lock's releases (requirements/test.lock), and there run: the
# probes of every private call (python -m gpudask_jupyter.compat), a newcomer's first session
# in a kernel (tests/cpu/test_first_session.py) and the five workshop notebooks end to end
# (tests/cpu/test_notebooks.py); VERSION:cpu runs the whole CPU tier (tests/cpu) instead.
#
# The interpreter is pythonVERSION where one runs (PATH, pyenv's versions); otherwise Debian's,
# in a Debian root made once under .pythons/ with debootstrap from Debian's own registry
# (unstable carries the newest CPython; as root, as CI runs): the checks then run inside it,
# with that Debian's OpenSSL (3.6), which the 3.12 and 3.13 of pyenv do not have. The CPU tier
# runs on 3.13 rather than there: a TLS scheduler the tests start with distributed's own command
# line (as an administrator would) loses connections on OpenSSL 3.5 and newer, which the
# clusters this package starts do not (cluster/tls_contexts.py says why).
#
#   ./scripts/test_pythons.sh [VERSION[:cpu] ...]        default: 3.12 3.13:cpu 3.14
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
[ $# -gt 0 ] || set -- 3.12 3.13:cpu 3.14
[ -x .venv/bin/uv ] || ./scripts/lock_install.sh .venv sync
mkdir -p .pythons
rm -rf .pythons/dist
.venv/bin/uv build -q --wheel --no-build-isolation --out-dir .pythons/dist .
wheel=$(ls .pythons/dist/*.whl)

native() {  # a python VERSION that runs here, or nothing
  local v=$1 found
  for found in "python$v" "$HOME"/.pyenv/versions/"$v".*/bin/"python$v"; do
    if command -v "$found" >/dev/null 2>&1 && "$found" -c 'import venv, ensurepip' 2>/dev/null; then
      command -v "$found"
      return
    fi
  done
}

debian_root() {  # a Debian root with Debian's pythonVERSION, made once: its path
  local v=$1 root=".pythons/debian-$1"
  if [ ! -x "$root/usr/bin/python$v" ]; then
    command -v debootstrap >/dev/null || {
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
    }
    rm -rf "$root"
    debootstrap --variant=minbase --include="python$v,python$v-venv,ca-certificates,passwd" \
      sid "$root" http://deb.debian.org/debian >"$root.log" 2>&1 || {
      tail -20 "$root.log"
      return 1
    }
  fi
  # what the host trusts (a proxy's own authority included), the root trusts
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  echo "$root"
}

in_root() {  # run scripts/python_check.sh ARGS inside the Debian root ROOT, this checkout at /src
  local root=$1
  shift
  mkdir -p "$root/src" "$root/proc" "$root/dev" "$root/tmp"
  mount --bind "$PWD" "$root/src"
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --make-rslave "$root/dev"
  mount -t tmpfs tmpfs "$root/tmp"
  local rc=0
  chroot "$root" /usr/bin/env -C /src HOME=/root PATH=/usr/local/bin:/usr/bin:/bin \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt ./scripts/python_check.sh "$@" || rc=$?
  umount "$root/tmp"
  umount -R "$root/dev" || umount -l "$root/dev"
  umount "$root/proc"
  umount "$root/src"
  return $rc
}

failed=()
for spec in "$@"; do
  v=${spec%%:*} mode=notebooks
  [ "$spec" = "$v" ] || mode=${spec#*:}
  start=$SECONDS
  echo "== Python $v ($mode)"
  if py=$(native "$v") && [ -n "$py" ]; then
    ./scripts/python_check.sh "$py" ".pythons/venv-$v" "$mode" "$wheel" || failed+=("$spec")
  elif [ "$(id -u)" = 0 ] && root=$(debian_root "$v"); then
    in_root "$root" "/usr/bin/python$v" "/opt/venv-$v" "$mode" "/src/$wheel" || failed+=("$spec")
  else
    echo "no Python $v here, and no Debian root can be made (that needs root)"
    failed+=("$spec")
  fi
  echo "== Python $v ($mode): $((SECONDS - start)) s"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "failed on: ${failed[*]}"
  exit 1
fi
