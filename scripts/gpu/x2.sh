#!/usr/bin/env bash
# Issues 5 and 6 on nvidia-h200-x2 (two H200 with NVLink). One pass, results in $OUT:
# quick calibration (2 GPUs + CPU), the test suite, 2-GPU comparison with cuBLASXt and peer
# traffic, placements, hybrid CPU+GPU decisions, then the HIP backend through the HIP-on-CUDA
# shim: conformance, HIP vs CUDA on one GPU, and one GEMM over CUDA GPU0 + HIP GPU1 + CPU.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
nvidia-smi topo -m >> $OUT/env.txt 2>&1
H=.device/bin/hetblas; C=.device/bin/compare
export HETBLAS_PROFILE=$OUT/profile-x2.json
L=$OUT/x2.log
{
echo "== calibration"; timeout 120 $H calibrate --quick --no-cross-links 2>&1 | tail -12
echo "== tests"; timeout 200 bash .device/run-tests.sh 2>&1 | grep -E "test result: F|FAILED|panicked|device tests"
echo "== 2 GPUs"; timeout 170 $C --gpus 2 --sizes 32768,16384 --reps 3 --xt-blocks 4096,8192 --variants hetblas,cublasxt --traffic 2>&1 | grep -E "hetblas |cublasxt |traffic|FAILED|^\| [0-9]"
echo "== placements"; for p in 00h 1h0; do timeout 90 $C --gpus 2 --shapes 8192x8192x8192,16384x16384x16384 --placement $p --reps 3 --xt-blocks 2048,4096,8192 2>&1 | grep -E "hetblas |cublasxt |FAILED|compare:"; done
echo "== hybrid (GPU0 + CPU)"; HETBLAS_CUDA_DEVICES=0 timeout 150 .device/bin/hybrid --sizes 512,1024,2048,4096,8192,16384 --reps 10 --big-reps 10 --skip-over 5 2>&1
echo "== HIP shim"; bash crates/backend-hip/shim/build.sh /tmp/hipshim 2>&1 | tail -3
export HETBLAS_HIP_LIB_DIR=/tmp/hipshim
for t in .device/tests/conformance__* .device/tests/no_device__* .device/tests/pinning__*; do
  echo "-- $t"; HETBLAS_REQUIRE=hip timeout 120 $t --test-threads=1 2>&1 | grep -E "test result|FAILED|panicked|found hip" ; done
echo "== HIP vs CUDA, one GPU"
HETBLAS_BACKENDS=hip,cpu timeout 60 $H gemm -s 16384 --beta 1 --tile 4096 --devices hip:0 --reps 3 --check 2>&1
HETBLAS_BACKENDS=cuda,cpu timeout 60 $H gemm -s 16384 --beta 1 --tile 4096 --devices cuda:0 --reps 3 --check 2>&1
echo "== CUDA GPU0 + HIP GPU1 + CPU"
export HETBLAS_CUDA_DEVICES=0 HETBLAS_HIP_DEVICES=1
HETBLAS_PROFILE=$OUT/profile-mixed.json timeout 90 $H calibrate --quick --no-cross-links 2>&1 | tail -9
for n in 16384 32768; do
  HETBLAS_PROFILE=$OUT/profile-mixed.json timeout 90 $H devices | tail -5
  HETBLAS_PROFILE=$OUT/profile-mixed.json timeout 120 $H gemm -s $n --beta 1 --devices cuda:0,hip:0,cpu:0 --reps 3 --check 2>&1
  HETBLAS_PROFILE=$OUT/profile-mixed.json timeout 120 $H gemm -s $n --beta 1 --devices cuda:0,hip:0 --reps 3 2>&1 | head -1
  HETBLAS_CUDA_DEVICES=0,1 HETBLAS_BACKENDS=cuda,cpu timeout 120 $H gemm -s $n --beta 1 --devices cuda:0,cuda:1 --reps 3 2>&1
done
} 2>&1 | tee $L
