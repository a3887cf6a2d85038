#!/usr/bin/env bash
# Second nvidia-h200-x2 pass (after fixes): quick calibration, the test suite (2-GPU
# conformance), placements (one process per shape), hybrid decisions, and the mixed-vendor call
# (CUDA GPU0 + HIP GPU1 via the shim + CPU) with and without host folds. Results in $OUT.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
H=.device/bin/hetblas; C=.device/bin/compare
export HETBLAS_PROFILE=$OUT/profile-x2.json
{
echo "== calibration"; timeout 120 $H calibrate --quick --no-cross-links 2>&1 | tail -12
echo "== tests"; timeout 200 bash .device/run-tests.sh 2>&1 | grep -E "test result: F|FAILED|panicked|device tests"
echo "== placements"
for p in 00h 1h0; do for s in 8192 16384; do
  timeout 60 $C --gpus 2 --shapes ${s}x${s}x${s} --placement $p --reps 3 --xt-blocks 2048,4096,8192 2>&1 | grep -E "^\| [0-9]|FAILED|compare:"; done; done
echo "== hybrid (GPU0 + CPU)"; HETBLAS_CUDA_DEVICES=0 timeout 150 .device/bin/hybrid --sizes 512,1024,2048,4096,8192,16384 --reps 10 --big-reps 10 --skip-over 5 2>&1
echo "== CUDA GPU0 + HIP GPU1 + CPU"
bash crates/backend-hip/shim/build.sh /tmp/hipshim 2>&1 | tail -1
export HETBLAS_HIP_LIB_DIR=/tmp/hipshim
HETBLAS_CUDA_DEVICES=0 HETBLAS_HIP_DEVICES=1 HETBLAS_PROFILE=$OUT/profile-mixed.json timeout 90 $H calibrate --quick --no-cross-links 2>&1 | tail -3
for n in 16384 32768; do
  for fold in "" 1; do
    echo "-- n=$n HETBLAS_HOST_FOLD=$fold"
    HETBLAS_HOST_FOLD=$fold HETBLAS_CUDA_DEVICES=0 HETBLAS_HIP_DEVICES=1 HETBLAS_PROFILE=$OUT/profile-mixed.json timeout 120 $H gemm -s $n --beta 1 --devices cuda:0,hip:0,cpu:0 --reps 3 --check 2>&1
    HETBLAS_HOST_FOLD=$fold HETBLAS_CUDA_DEVICES=0 HETBLAS_HIP_DEVICES=1 HETBLAS_PROFILE=$OUT/profile-mixed.json timeout 120 $H gemm -s $n --beta 1 --devices cuda:0,hip:0 --reps 3 2>&1 | head -1
    HETBLAS_HOST_FOLD=$fold HETBLAS_CUDA_DEVICES=0,1 HETBLAS_BACKENDS=cuda,cpu timeout 120 $H gemm -s $n --beta 1 --devices cuda:0,cuda:1 --reps 3 2>&1 | head -1
  done
done
} 2>&1 | tee $OUT/x2b.log
