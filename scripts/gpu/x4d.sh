#!/usr/bin/env bash
# Fifth session, nvidia-h200-x4: full calibration with the GPUs' GEMM tables measured at once
# (timed; the sequential one of x4b.sh had not exited at 200 s), the profile's GEMM rates
# against those of x4b.sh, every test binary, and DGEMM 32768^3 on 4 GPUs with the new profile.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
H=.device/bin/hetblas; C=.device/bin/compare
export HETBLAS_PROFILE=$OUT/profile-x4-concurrent.json
{
echo "== full calibration"; /usr/bin/time -f "calibration wall %e s" timeout 240 $H calibrate --no-cross-links 2>&1 | grep -E "calibrated|gemm|fold|wall"
echo "== tests (HETBLAS_REQUIRE=cuda)"; timeout 200 bash .device/run-tests.sh > $OUT/tests.txt 2>&1; grep -cE "^test result: ok" $OUT/tests.txt; grep -E "device tests|FAILED|panicked" $OUT/tests.txt | head -5
echo "== 4 GPUs, host operands, 32768 f64, new profile"
timeout 120 $C --gpus 4 --sizes 32768 --reps 3 --xt-blocks 8192 --variants hetblas,cublasxt 2>&1 | grep -E "^\| [0-9]|FAILED|rror|panic"
} 2>&1 | tee $OUT/x4d.log | cut -c1-220
