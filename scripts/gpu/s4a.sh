#!/usr/bin/env bash
# Fourth session, first call (nvidia-h200): full calibration (timed), every test binary with
# HETBLAS_REQUIRE=cuda, and the validation set with the replay model. The profile comes back
# in $OUT/profile.json for the second call.
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=$OUT/profile.json
H=.device/bin/hetblas
{
echo "== calibration"; /usr/bin/time -f "calibration wall %e s" timeout 100 $H calibrate 2>&1 | tail -3
echo "== profile loads on the next start"; $H devices 2>&1 | grep -iE "profile|estimate" | head -3
echo "== tests (HETBLAS_REQUIRE=cuda)"; /usr/bin/time -f "tests wall %e s" timeout 150 bash .device/run-tests.sh > $OUT/tests.txt 2>&1; grep -cE "^test result: ok" $OUT/tests.txt; grep -E "FAILED|panicked|failed" $OUT/tests.txt | head -5
} 2>&1 | tee $OUT/run.log
/usr/bin/time -f "validate wall %e s" timeout 320 .device/bin/validate --csv $OUT/validate.csv --reps 3 > $OUT/validate.txt 2>&1; tail -2 $OUT/validate.txt | cut -c1-200 | tee -a $OUT/run.log
