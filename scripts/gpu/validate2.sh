#!/usr/bin/env bash
# Second call (machine still warm, profile from single.sh in $OUT... or a fresh calibration):
# the validation set and the plots. Results in $OUT.
set -o pipefail
source scripts/gpu/env.sh > /dev/null 2>&1
export HETBLAS_PROFILE=/tmp/hetblas-profile.json
[ -f "$HETBLAS_PROFILE" ] || /usr/bin/time -f "calibration wall %e s" .device/bin/hetblas calibrate 2>&1 | tail -3
.device/bin/compare --sizes 16384 --variants hetblas --reps 1 --trace-n 16384 --trace-out $OUT/trace16k.json 2>&1 | tail -15 > $OUT/trace.txt
.device/bin/hetblas predict -s 16384 > $OUT/predict.txt 2>&1
timeout 500 .device/bin/validate --csv $OUT/validate.csv > $OUT/validate.txt 2>&1
tail -3 $OUT/validate.txt
