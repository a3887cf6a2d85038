#!/usr/bin/env bash
# Issue 4 on one GPU: full calibration (timed), predictions, the validation set (model vs
# measured, tile sweep), then issue 3's comparison again with the model-chosen tiles.
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=$OUT/profile.json
/usr/bin/time -f "calibration wall %e s" .device/bin/hetblas calibrate 2>&1 | tee $OUT/calibrate.txt
.device/bin/hetblas devices | tail -1
.device/bin/hetblas predict -s 16384 2>&1 | tee $OUT/predict.txt
.device/bin/hetblas predict -m 4096 -n 4096 -k 32768 2>&1 | tee -a $OUT/predict.txt
.device/bin/validate --csv $OUT/validate.csv 2>&1 | tee $OUT/validate.txt
C=.device/bin/compare
$C --sizes 8192,16384,32768 --reps 3 --pin-demo 8192 --trace-n 16384 --trace-out $OUT/trace16k.json --csv $OUT/dgemm.csv 2>&1 | tee $OUT/dgemm.txt | grep -E "hetblas|cublasxt|FAILED|call|busy|==" 
$C --sizes 8192,16384,32768 --dtype f32 --reps 3 --csv $OUT/sgemm.csv 2>&1 | tee $OUT/sgemm.txt | grep -E "hetblas |cublasxt |FAILED"
$C --shapes 32768x32768x4096,4096x4096x32768 --reps 3 --csv $OUT/nonsquare.csv 2>&1 | tee $OUT/nonsquare.txt | grep -E "hetblas |cublasxt |FAILED"
