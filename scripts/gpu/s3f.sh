#!/usr/bin/env bash
# Third session, final call (nvidia-h200): full calibration, tests, the validation set with the
# final model, and the issue-3 comparison (one process per problem: cuBLASXt has misbehaved
# after large runs in the same process).
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=$OUT/profile.json
H=.device/bin/hetblas; C=.device/bin/compare
{
echo "== calibration"; /usr/bin/time -f "calibration wall %e s" timeout 100 $H calibrate 2>&1 | tail -4
echo "== tests (HETBLAS_REQUIRE=cuda)"; timeout 120 bash .device/run-tests.sh > $OUT/tests.txt 2>&1; grep -cE "^test result: ok" $OUT/tests.txt; grep -E "FAILED|panicked" $OUT/tests.txt | head -5
} 2>&1 | tee $OUT/run.log
timeout 260 .device/bin/validate --csv $OUT/validate.csv > $OUT/validate.txt 2>&1; tail -1 $OUT/validate.txt | cut -c1-80
{
echo "== compare f64"
for s in 8192 16384 32768; do timeout 60 $C --sizes $s --variants hetblas,cublasxt --reps 3 2>&1 | grep -E "^\| [0-9]|rror"; done
for s in 32768x32768x4096 4096x4096x32768; do timeout 60 $C --shapes $s --variants hetblas,cublasxt --reps 5 2>&1 | grep -E "^\| [0-9]|rror"; done
echo "== compare f32"
for s in 8192 16384; do timeout 60 $C --sizes $s --dtype f32 --variants hetblas,cublasxt --reps 3 2>&1 | grep -E "^\| [0-9]|rror"; done
} >> $OUT/run.log 2>&1
tail -14 $OUT/run.log | cut -c1-150
