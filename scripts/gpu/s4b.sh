#!/usr/bin/env bash
# Fourth session, second call (nvidia-h200), with the profile of the first (S4-1):
# issue 3 on the final code -- the registration cache on a repeated call, a 16384^3 timeline,
# and hetblas against cuBLASXt (one process per problem) -- then the validation set again.
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=docs/profiles/nvidia-h200-x1.json
C=.device/bin/compare
cmp() { echo "-- $*"; timeout 70 $C --variants hetblas,cublasxt "$@" 2>&1 | grep -E "^\| [0-9]|rror|panic"; }
{
timeout 60 $C --sizes 256 --variants hetblas --reps 1 --pin-demo 8192 --trace-n 16384 --trace-out $OUT/trace-16384.json 2>&1 | grep -A 12 -E "== registration|== timeline"
echo "== compare f64"
cmp --sizes 8192 --reps 9
cmp --sizes 16384 --reps 5
cmp --sizes 32768 --reps 3
cmp --shapes 32768x32768x4096 --reps 5
cmp --shapes 4096x4096x32768 --reps 9
echo "== compare f32"
cmp --sizes 8192 --dtype f32 --reps 9
cmp --sizes 16384 --dtype f32 --reps 9
cmp --sizes 32768 --dtype f32 --reps 3
} 2>&1 | tee $OUT/run.log | cut -c1-180
/usr/bin/time -f "validate wall %e s" timeout 200 .device/bin/validate --csv $OUT/validate.csv --reps 3 > $OUT/validate.txt 2>&1; tail -2 $OUT/validate.txt | cut -c1-120
