#!/usr/bin/env bash
# Third session, second call (nvidia-h200): full calibration (narrow-pitch table), the test suite
# with HETBLAS_REQUIRE=cuda (new conformance case: non-square blockings), issue-3 non-square
# shapes (streaming blockings chosen by the model) in f64 and f32, the validation set (issue 4),
# and timelines of a fat-by-thin problem at tiles 4096 and 8192 and of the thin-by-fat one.
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=$OUT/profile.json
H=.device/bin/hetblas; C=.device/bin/compare
V=hetblas,hetblas-fold,hetblas-nofold,cublasxt,ceiling
{
echo "== calibration"; /usr/bin/time -f "calibration wall %e s" timeout 100 $H calibrate 2>&1 | tail -4
echo "== tests (HETBLAS_REQUIRE=cuda)"; timeout 120 bash .device/run-tests.sh 2>&1 | grep -E "^test result|FAILED|panicked" | grep -v "ok. 0 passed" | sort | uniq -c
$H predict -m 4096 -n 4096 -k 32768 2>&1 | tail -8
echo "== non-square f64"; timeout 100 $C --shapes 32768x32768x4096,4096x4096x32768 --variants $V --reps 5 2>&1 | grep -E "^\| [0-9]|rror"
echo "== non-square f32"; timeout 60 $C --shapes 32768x32768x4096,4096x4096x32768 --dtype f32 --variants hetblas,cublasxt,ceiling --reps 5 2>&1 | grep -E "^\| [0-9]|rror"
echo "== forced streaming blockings, f64 4096x4096x32768"
for b in 4096x512x4096/g1 4096x1024x8192/g1 4096x512x8192/g1; do
  timeout 30 $C --shapes 4096x4096x32768 --variants hetblas --blocking $b --reps 5 2>&1 | grep -E "^\| [0-9]|rror"; done
} 2>&1 | tee $OUT/run.log
timeout 240 .device/bin/validate --csv $OUT/validate.csv > $OUT/validate.txt 2>&1; tail -1 $OUT/validate.txt
{
timeout 30 $C --sizes 1024 --variants hetblas --reps 1 --trace-shape 4096x4096x32768 2>&1 | grep -A 12 "== timeline"
for t in 4096 8192; do timeout 40 $C --sizes 1024 --variants hetblas --reps 1 --tile $t --trace-shape 32768x32768x4096 2>&1 | grep -A 12 "== timeline"; done
} > $OUT/traces.txt 2>&1
tail -3 $OUT/run.log
