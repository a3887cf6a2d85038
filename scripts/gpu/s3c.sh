#!/usr/bin/env bash
# Third session, third call (nvidia-h200): full calibration (CPU GEMM grid capped at 4096), a
# second validation of the same model (nothing changed in it since s3b.sh), issue-3 shapes again.
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=$OUT/profile.json
H=.device/bin/hetblas; C=.device/bin/compare
{
echo "== calibration"; /usr/bin/time -f "calibration wall %e s" timeout 100 $H calibrate 2>&1 | tail -4
echo "== non-square f64"; timeout 100 $C --shapes 32768x32768x4096,4096x4096x32768 --variants hetblas,hetblas-fold,cublasxt --reps 5 2>&1 | grep -E "^\| [0-9]|rror"
} 2>&1 | tee $OUT/run.log
timeout 260 .device/bin/validate --csv $OUT/validate.csv > $OUT/validate.txt 2>&1; tail -1 $OUT/validate.txt
