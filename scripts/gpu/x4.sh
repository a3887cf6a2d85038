#!/usr/bin/env bash
# Issue 7 on nvidia-h200-x4 (fifth session, first lent): quick calibration of the four GPUs (all
# host links and GPU pairs), then strong scaling with host operands, 1, 2 and 4 GPUs, hetblas
# against cuBLASXt on the same GPUs in the same process (one process per GPU count and dtype).
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
nvidia-smi topo -m >> $OUT/env.txt 2>&1
H=.device/bin/hetblas; C=.device/bin/compare
export HETBLAS_PROFILE=$OUT/profile-x4.json
{
echo "== calibration"; /usr/bin/time -f "calibration wall %e s" timeout 200 $H calibrate --quick --no-cross-links 2>&1 | tail -14
$H devices 2>&1 | tail -6
for g in 1 2 4; do
  for dt in f64 f32; do
    echo "== host operands, $g GPU(s), $dt"
    timeout 150 $C --gpus $g --dtype $dt --sizes 32768,16384 --reps 3 --xt-blocks 4096,8192 --variants hetblas,cublasxt 2>&1 | grep -E "^\| [0-9]|FAILED|rror|panic"
  done
  echo "== host operands, $g GPU(s), non-square f64"
  timeout 120 $C --gpus $g --shapes 32768x32768x4096,4096x4096x32768 --reps 3 --xt-blocks 4096,8192 --variants hetblas,cublasxt 2>&1 | grep -E "^\| [0-9]|FAILED|rror|panic"
done
} 2>&1 | tee $OUT/x4.log | cut -c1-220
