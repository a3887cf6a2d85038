#!/usr/bin/env bash
# Issue 4 on one GPU: full calibration (timed), then the validation set (model vs measured,
# measured tile sweep). Results in $OUT.
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=$OUT/profile.json
/usr/bin/time -f "calibration wall %e s" .device/bin/hetblas calibrate 2>&1 | tee $OUT/calibrate.txt | tail -4
.device/bin/hetblas devices | tail -1
.device/bin/hetblas predict -s 16384 > $OUT/predict.txt 2>&1
.device/bin/validate --csv $OUT/validate.csv > $OUT/validate.txt 2>&1
.device/bin/plot-validation $OUT/validate.csv --out-dir /tmp/plots | tail -1
