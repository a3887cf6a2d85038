#!/usr/bin/env bash
# Third session, validation with equal repetitions (nvidia-h200): full calibration, then the
# validation set where the chosen tile and every sweep point are medians of the same number of
# timed calls (3 to 9, about 0.25 s of calls per point).
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=$OUT/profile.json
H=.device/bin/hetblas
{ /usr/bin/time -f "calibration wall %e s" timeout 100 $H calibrate 2>&1 | tail -2; } > $OUT/run.log 2>&1
timeout 420 .device/bin/validate --csv $OUT/validate.csv --reps 3 > $OUT/validate.txt 2>&1; tail -1 $OUT/validate.txt | cut -c1-60
cat $OUT/run.log
