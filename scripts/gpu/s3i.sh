#!/usr/bin/env bash
# Third session, final validation (nvidia-h200): full calibration, the validation set with
# equal repetitions per point, and the issue-3 problems whose choice depends on short columns.
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=$OUT/profile.json
H=.device/bin/hetblas; C=.device/bin/compare
{ /usr/bin/time -f "calibration wall %e s" timeout 100 $H calibrate 2>&1 | tail -2; } > $OUT/run.log 2>&1
timeout 300 .device/bin/validate --csv $OUT/validate.csv --reps 3 > $OUT/validate.txt 2>&1; tail -1 $OUT/validate.txt | cut -c1-60
{ timeout 40 $C --sizes 8192 --variants hetblas,cublasxt --reps 9 2>&1 | grep -E "^\| [0-9]|rror"
  timeout 40 $C --shapes 4096x4096x32768 --variants hetblas,cublasxt --reps 9 2>&1 | grep -E "^\| [0-9]|rror"; } >> $OUT/run.log 2>&1
cat $OUT/run.log | cut -c1-150
