#!/usr/bin/env bash
# Fifth session, second call (nvidia-h200), profile S4-1, with the deep blockings
# (`autotune::deep_candidates`) among the model's candidates: timelines of DGEMM 8192^3 and
# SGEMM 16384^3, forced SGEMM 16384^3 blockings, DGEMM 8192^3 against cuBLASXt, and the
# validation set (the new choices measured against the square sweep).
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=docs/profiles/nvidia-h200-x1.json
C=.device/bin/compare
cmp() { echo "-- $*"; timeout 100 $C "$@" 2>&1 | grep -E "^\| [0-9]|rror|panic|FAIL"; }
tl() { echo "-- trace $*"; timeout 60 $C --sizes 256 --variants hetblas --reps 1 "$@" 2>&1 | grep -A 9 -E "== timeline"; }
{
tl --trace-n 8192 --trace-out $OUT/trace-d8192-deep.json
tl --trace-n 16384 --dtype f32 --trace-out $OUT/trace-s16384-model.json
tl --trace-n 16384 --dtype f32 --tile 4096 --trace-out $OUT/trace-s16384-4096.json
tl --trace-n 16384 --dtype f32 --blocking 8192x1024x8192/g4 --trace-out $OUT/trace-s16384-8192x1024.json
echo "== SGEMM 16384 forced blockings"
for bl in 4096 6144 8192 8192x2048x8192/g4 8192x1024x8192/g4 8192x512x8192/g4; do
  cmp --sizes 16384 --dtype f32 --reps 5 --variants hetblas-fold,hetblas-nofold --blocking $bl
done
echo "== DGEMM 8192 with the model's choice"
cmp --sizes 8192 --reps 9 --variants hetblas,cublasxt
cmp --sizes 8192 --reps 9 --variants hetblas,cublasxt
} 2>&1 | tee $OUT/run.log | cut -c1-200
/usr/bin/time -f "validate wall %e s" timeout 240 .device/bin/validate --csv $OUT/validate.csv --reps 3 > $OUT/validate.txt 2>&1; tail -4 $OUT/validate.txt | cut -c1-160
