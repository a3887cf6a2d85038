#!/usr/bin/env bash
# First look on a GPU machine: tests with HETBLAS_REQUIRE=cuda, a checked GEMM, a short comparison.
set -o pipefail
source scripts/gpu/env.sh 2>&1 | tee $OUT/env.txt
.device/bin/hetblas devices 2>&1 | tee $OUT/devices.txt
bash .device/run-tests.sh 2>&1 | tail -45
.device/bin/hetblas gemm -s 8192 --beta 1 --check --reps 3 2>&1 | tee -a $OUT/gemm.txt
.device/bin/hetblas gemm -s 8192 --beta 1 --check --reps 3 --dtype f32 2>&1 | tee -a $OUT/gemm.txt
.device/bin/compare --sizes 8192,16384 --reps 2 --pin-demo 8192 --trace-n 16384 --trace-out $OUT/trace16k.json --csv $OUT/first.csv 2>&1 | tee $OUT/compare1.txt
