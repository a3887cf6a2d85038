#!/usr/bin/env bash
# One GPU (nvidia-h200), first call of a session: calibration, the test suite with
# HETBLAS_REQUIRE=cuda, the HIP backend's conformance through the HIP-on-CUDA shim, then the
# issue-3 comparison (hetblas with and without host fold, cuBLASXt, naive, ceiling), the
# registration-cache demo and a timeline. Results in $OUT.
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
# The profile outlives this call on the (warm) machine for validate2.sh.
export HETBLAS_PROFILE=/tmp/hetblas-profile.json
H=.device/bin/hetblas; C=.device/bin/compare
{
echo "== calibration"; /usr/bin/time -f "calibration wall %e s" timeout 100 $H calibrate 2>&1 | tail -8
$H devices | tail -2
echo "== tests (HETBLAS_REQUIRE=cuda)"; timeout 240 bash .device/run-tests.sh 2>&1 | grep -E "^test result|FAILED|panicked|^=== " | grep -v "ok. 0 passed" | tail -40
echo "== HIP shim"; bash crates/backend-hip/shim/build.sh /tmp/hipshim 2>&1 | tail -2
for t in .device/tests/conformance__* .device/tests/no_device__* .device/tests/pinning__*; do
  echo "-- $t"; HETBLAS_HIP_LIB_DIR=/tmp/hipshim HETBLAS_REQUIRE=hip timeout 120 $t --test-threads=1 2>&1 | grep -E "test result|FAILED|panicked|found hip" ; done
} 2>&1 | tee $OUT/tests.txt
V=hetblas,hetblas-fold,hetblas-nofold,cublasxt,naive,ceiling
timeout 200 $C --sizes 8192,16384,32768 --variants $V --reps 3 --pin-demo 8192 2>&1 | tail -40 > $OUT/dgemm.txt
timeout 120 $C --sizes 8192,16384,32768 --dtype f32 --variants $V --reps 3 2>&1 | tail -24 > $OUT/sgemm.txt
timeout 90 $C --shapes 32768x32768x4096,4096x4096x32768 --variants $V --reps 3 2>&1 | tail -18 > $OUT/nonsquare.txt
cp $HETBLAS_PROFILE $OUT/profile.json
tail -3 $OUT/dgemm.txt
