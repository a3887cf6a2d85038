#!/usr/bin/env bash
# Issue 4 on one GPU: full calibration (timed; strided tiles and sustained GEMM rates),
# predictions, the validation set (model vs measured, tile sweep), then issue 3's comparison
# with the model-chosen tiles.
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=$OUT/profile.json
/usr/bin/time -f "calibration wall %e s" .device/bin/hetblas calibrate 2>&1 | tee $OUT/calibrate.txt
.device/bin/hetblas devices | tail -1
.device/bin/hetblas predict -s 8192 2>&1 > $OUT/predict.txt
.device/bin/validate --csv $OUT/validate.csv 2>&1 > $OUT/validate.txt
.device/bin/plot-validation $OUT/validate.csv --out-dir /tmp/plots | tail -1
C=.device/bin/compare
( $C --sizes 8192,16384,32768 --reps 3 --csv $OUT/dgemm.csv
  $C --sizes 8192,16384,32768 --dtype f32 --reps 3
  $C --shapes 32768x32768x4096,4096x4096x32768 --reps 3 ) 2>&1 | tee $OUT/compare.txt | grep -E "^\| [0-9].*(hetblas|cublasxt)"
