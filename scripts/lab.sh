#!/usr/bin/env bash
# Starts JupyterLab with gpudask_jupyter installed and the workshop notebooks open, on a fresh
# Debian machine with Python 3.11+ and Node 20+ (Node builds the lab extension once). Works
# without a GPU: the notebooks then run on the CPU and say so. With NVIDIA GPUs, add the GPU
# libraries first:  GPUDASK_EXTRAS=gpu ./scripts/lab.sh
#
# A second start, when nothing changed, skips the install and serves within seconds.
#
#   ./scripts/lab.sh [jupyter lab arguments, e.g. --port 8899 --no-browser]
set -euo pipefail
cd "$(dirname "$0")/.."
env=${GPUDASK_LAB_ENV:-.venv}  # the environment's folder
./scripts/lab_env.sh "$env"
# kernels start "python" from PATH: it must be this environment's
export PATH="$(cd "$env" && pwd)/bin:$PATH"
mkdir -p notebooks
root=()
[ "$(id -u)" = 0 ] && root=(--allow-root)  # e.g. a container running as root
exec "$env/bin/jupyter" lab --notebook-dir=notebooks "${root[@]}" "$@"
