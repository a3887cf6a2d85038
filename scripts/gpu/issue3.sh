#!/usr/bin/env bash
# Issue 3 on one GPU: the conformance suite with HETBLAS_REQUIRE=cuda, then the comparison
# harness (DGEMM and SGEMM squares, non-square shapes), the registration-cache demo and a
# timeline. Results land in $OUT.
set -o pipefail
source scripts/gpu/env.sh 2>&1 | tee $OUT/env.txt
bash .device/run-tests.sh 2>&1 | grep -vE "^test result: ok. 0 passed|^=== " | tail -12
C=.device/bin/compare
$C --sizes 8192,16384,32768 --reps 3 --pin-demo 8192 --trace-n 16384 --trace-out $OUT/trace16k.json --csv $OUT/dgemm.csv 2>&1 | tee $OUT/dgemm.txt
$C --sizes 8192,16384,32768 --dtype f32 --reps 3 --csv $OUT/sgemm.csv 2>&1 | tee $OUT/sgemm.txt
$C --shapes 32768x32768x4096,4096x4096x32768 --reps 3 --csv $OUT/nonsquare.csv 2>&1 | tee $OUT/nonsquare.txt
