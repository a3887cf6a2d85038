#!/usr/bin/env bash
# Third session (nvidia-h200): full calibration (2D copies while the device computes), the
# validation set, the issue-3 comparison (squares and non-square shapes, f64) and the tests.
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=$OUT/profile.json
H=.device/bin/hetblas; C=.device/bin/compare
{
echo "== calibration"; /usr/bin/time -f "calibration wall %e s" timeout 100 $H calibrate 2>&1 | tail -4
echo "== tests (HETBLAS_REQUIRE=cuda)"; timeout 120 bash .device/run-tests.sh 2>&1 | grep -E "^test result|FAILED|panicked" | grep -v "ok. 0 passed" | sort | uniq -c | sort -rn | head -4
echo "== non-square f64"; timeout 100 $C --shapes 32768x32768x4096,4096x4096x32768 --variants hetblas,hetblas-fold,hetblas-nofold,cublasxt --reps 5 2>&1 | grep -E "^\| [0-9]|rror"
} 2>&1 | tee $OUT/run.log
timeout 260 .device/bin/validate --csv $OUT/validate.csv > $OUT/validate.txt 2>&1; tail -1 $OUT/validate.txt
echo "== squares f64" >> $OUT/run.log
timeout 150 $C --sizes 8192,16384,32768 --variants hetblas,cublasxt --reps 3 2>&1 | grep -E "^\| [0-9]|rror" >> $OUT/run.log
tail -4 $OUT/run.log
