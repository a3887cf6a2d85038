#!/usr/bin/env bash
# Issue 4 validation on one GPU with the committed H200 profile, then issue 3's comparison with
# model-chosen tiles, and an 8192^3 timeline.
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=$PWD/docs/profiles/nvidia-h200-x1.json
.device/bin/hetblas devices | tail -1
.device/bin/validate --csv $OUT/validate.csv 2>&1 | tee $OUT/validate.txt | tail -35
C=.device/bin/compare
$C --sizes 8192 --variants hetblas --reps 3 --trace-n 8192 --trace-out $OUT/trace8k.json 2>&1 | grep -E "busy|hetblas "
( $C --sizes 8192,16384,32768 --reps 3 --csv $OUT/dgemm.csv
  $C --sizes 8192,16384,32768 --dtype f32 --reps 3
  $C --shapes 32768x32768x4096,4096x4096x32768 --reps 3 ) 2>&1 | tee $OUT/compare.txt | grep -E "^\| [0-9]"
