#!/usr/bin/env bash
# Issue 7, second call on nvidia-h200-x4: full calibration (timed; the profile committed), host
# operands DGEMM 32768^3 on 1 and 4 GPUs with it, and all operands on GPU0 (placement 000)
# on 1, 2 and 4 GPUs, hetblas against cuBLASXt given the same device pointers. One process per
# problem.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
H=.device/bin/hetblas; C=.device/bin/compare
export HETBLAS_PROFILE=$OUT/profile-x4-full.json
{
echo "== full calibration"; /usr/bin/time -f "calibration wall %e s" timeout 200 $H calibrate --no-cross-links 2>&1 | tail -16
[ -s $HETBLAS_PROFILE ] || { echo "no full profile; the quick one"; cp docs/profiles/nvidia-h200-x4.json $HETBLAS_PROFILE; }
for g in 1 4; do
  echo "== host operands, $g GPU(s), f64, full profile"
  timeout 120 $C --gpus $g --sizes 32768 --reps 3 --xt-blocks 4096,8192 --variants hetblas,cublasxt 2>&1 | grep -E "^\| [0-9]|FAILED|rror|panic"
done
for g in 1 2 4; do
  for n in 32768 16384; do
    echo "== placement 000, $g GPU(s), $n"
    timeout 120 $C --gpus $g --shapes ${n}x${n}x${n} --placement 000 --reps 3 --xt-blocks 4096,8192 --variants hetblas,cublasxt 2>&1 | grep -E "hetblas |cublasxt |FAILED|rror|panic"
  done
done
} 2>&1 | tee $OUT/x4b.log | cut -c1-220
