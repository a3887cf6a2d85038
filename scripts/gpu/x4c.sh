#!/usr/bin/env bash
# Issue 7, third call on nvidia-h200-x4, full profile of x4b.sh (docs/profiles/nvidia-h200-x4.json):
# DGEMM 32768^3 host operands on 4 GPUs against cuBLASXt, two more processes; forced tiles.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
C=.device/bin/compare
export HETBLAS_PROFILE=docs/profiles/nvidia-h200-x4.json
{
for r in 1 2; do
  echo "== 4 GPUs, host operands, 32768 f64, process $r"
  timeout 120 $C --gpus 4 --sizes 32768 --reps 5 --xt-blocks 4096,8192 --variants hetblas,cublasxt --traffic 2>&1 | grep -E "^\| [0-9]|traffic|FAILED|rror|panic"
done
for t in 6144 8192; do
  echo "== 4 GPUs, tile $t"
  timeout 60 $C --gpus 4 --sizes 32768 --reps 3 --variants hetblas --tile $t 2>&1 | grep -E "^\| [0-9]|FAILED|rror|panic"
done
} 2>&1 | tee $OUT/x4c.log | cut -c1-220
