#!/usr/bin/env bash
# Third session, last call (nvidia-h200): the issue-3 problems at the edge of their targets,
# with more repetitions (medians of 15 after a warm-up), on the profile of run S3-8.
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=docs/profiles/nvidia-h200-x1.json
C=.device/bin/compare
{
timeout 100 $C --shapes 4096x4096x32768 --variants hetblas,cublasxt --reps 15 2>&1 | grep -E "^\| [0-9]|rror"
timeout 100 $C --sizes 16384 --dtype f32 --variants hetblas,cublasxt --reps 15 2>&1 | grep -E "^\| [0-9]|rror"
timeout 100 $C --sizes 8192 --variants hetblas,cublasxt --reps 15 2>&1 | grep -E "^\| [0-9]|rror"
} 2>&1 | tee $OUT/run.log | cut -c1-160
