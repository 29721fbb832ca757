#!/usr/bin/env bash
# The GPU tier, for a machine with NVIDIA GPUs and `pip install -e '.[gpu,test]'` (CI has no GPU):
# the `gpu` tests once restricted to one GPU (CUDA_VISIBLE_DEVICES=0) and, where there are more,
# once with every GPU; then the benchmarks. Each step's output also goes to a log in DIR.
#
#   ./scripts/gpu_checks.sh DIR [tests|bench|all] [pytest arguments]
set -uo pipefail
out=${1:?usage: gpu_checks.sh DIR [tests|bench|all] [pytest arguments]}
what=${2:-all}
shift $(( $# >= 2 ? 2 : 1 ))
mkdir -p "$out"
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
status=0
n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU') || n=0
echo "GPUs: $n"
if [[ $what == tests || $what == all ]]; then
  CUDA_VISIBLE_DEVICES=0 $py -m pytest -p no:cacheprovider -m gpu tests/gpu -ra "$@" 2>&1 \
    | tee "$out/gpu-tests-one-gpu.log" || status=1
  if (( n > 1 )); then
    $py -m pytest -p no:cacheprovider -m gpu tests/gpu/test_cluster_gpu.py \
      tests/gpu/test_distribute_gpu.py -ra "$@" 2>&1 \
      | tee "$out/gpu-tests-all-gpus.log" || status=1
  fi
fi
if [[ $what == bench || $what == all ]]; then
  $py benchmarks/transfer.py --sweep 2>&1 | tee "$out/transfer.log" || status=1
  $py benchmarks/distribute.py 2>&1 | grep -v -E 'INFO|WARNING' | tee "$out/distribute.log" || status=1
  $py benchmarks/cluster_start.py 2>&1 | grep -v -E 'INFO|WARNING' | tee "$out/cluster_start.log" || status=1
  $py benchmarks/panel_overhead.py --repeat 9 --seconds 3 2>&1 | tee "$out/panel_overhead.log" || status=1
  $py benchmarks/notebooks.py 2>&1 | tee "$out/notebooks.log" || status=1
fi
exit $status
