#!/usr/bin/env bash
# Fifth session, acceptance call for issue 3 on the final code (nvidia-h200, profile S4-1):
# every test binary with HETBLAS_REQUIRE=cuda, the registration cache on a repeated call, a
# 16384^3 timeline, and hetblas against cuBLASXt with one process per problem (SGEMM with the
# device-resident ceiling as well).
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=docs/profiles/nvidia-h200-x1.json
C=.device/bin/compare
cmp() { echo "-- $*"; timeout 110 $C "$@" 2>&1 | grep -E "^\| [0-9]|rror|panic|FAIL"; }
{
echo "== tests (HETBLAS_REQUIRE=cuda)"; /usr/bin/time -f "tests wall %e s" timeout 200 bash .device/run-tests.sh > $OUT/tests.txt 2>&1; grep -cE "^test result: ok" $OUT/tests.txt; grep -E "device tests|FAILED|panicked|failed" $OUT/tests.txt | head -5
grep -h "after freeing registered buffers" $OUT/tests.log | cut -c1-300
timeout 60 $C --sizes 256 --variants hetblas --reps 1 --pin-demo 8192 --trace-n 16384 --trace-out $OUT/trace-16384.json 2>&1 | grep -A 12 -E "== registration|== timeline"
echo "== compare f64"
cmp --sizes 8192 --reps 9 --variants hetblas,cublasxt
cmp --sizes 16384 --reps 5 --variants hetblas,cublasxt
cmp --sizes 32768 --reps 3 --variants hetblas,cublasxt
cmp --shapes 32768x32768x4096 --reps 5 --variants hetblas,cublasxt
cmp --shapes 4096x4096x32768 --reps 9 --variants hetblas,cublasxt
echo "== compare f32"
cmp --sizes 8192 --dtype f32 --reps 9 --variants hetblas,cublasxt
cmp --sizes 16384 --dtype f32 --reps 9 --variants hetblas,cublasxt,naive,ceiling
cmp --sizes 32768 --dtype f32 --reps 3 --variants hetblas,cublasxt,naive,ceiling
} 2>&1 | tee $OUT/run.log | cut -c1-200
