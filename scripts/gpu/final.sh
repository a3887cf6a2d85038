#!/usr/bin/env bash
# Last single-GPU pass (nvidia-h200): full calibration, the validation set (issue 4), hybrid
# decisions with one GPU + the CPU (issue 5), and the issue-3 shapes whose decisions changed.
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=$OUT/profile.json
H=.device/bin/hetblas; C=.device/bin/compare
{
/usr/bin/time -f "calibration wall %e s" timeout 100 $H calibrate 2>&1 | tail -9
timeout 200 .device/bin/validate --csv $OUT/validate.csv > $OUT/validate.txt 2>&1; tail -2 $OUT/validate.txt
$H predict -s 16384 > $OUT/predict.txt 2>&1
echo "== hybrid (GPU + CPU)"; timeout 120 .device/bin/hybrid --sizes 512,1024,2048,4096,8192,16384 --reps 10 --big-reps 10 --skip-over 5 2>&1
echo "== compare"; timeout 90 $C --sizes 8192,16384 --variants hetblas,cublasxt --reps 3 2>&1 | grep -E "^\| [0-9]"
timeout 60 $C --shapes 32768x32768x4096,4096x4096x32768 --variants hetblas,cublasxt --reps 3 2>&1 | grep -E "^\| [0-9]"
} 2>&1 | tee $OUT/final.log
