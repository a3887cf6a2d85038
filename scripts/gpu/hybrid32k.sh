#!/usr/bin/env bash
# The n = 32768 rows of the hybrid decisions table (one GPU + the CPU), with a quick profile.
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=$OUT/profile.json
timeout 60 .device/bin/hetblas calibrate --quick 2>&1 | tail -3
timeout 300 .device/bin/hybrid --sizes 32768 --reps 10 --big-reps 10 --skip-over 5 2>&1 | tee $OUT/hybrid32k.txt
