#!/usr/bin/env bash
# For the next session's first GPU call (not yet run: no device time was left on 2026-11-22):
# issue 3 items 5 and 6 on the final code with the profile of S3-11: the registration cache on a
# repeated call, and a timeline of 16384^3.
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=docs/profiles/nvidia-h200-x1.json
C=.device/bin/compare
{ timeout 60 $C --sizes 256 --variants hetblas --reps 1 --pin-demo 8192 --trace-n 16384 2>&1 | grep -A 12 -E "== registration|== timeline"; } | tee $OUT/run.log | cut -c1-180
