#!/usr/bin/env bash
# Fifth session, last call (nvidia-h200, profile S4-1), final code: the registration test with
# its output, the product-shape study of s5c.sh again (the harness now releases its buffers'
# registrations), two more SGEMM 16384^3 comparisons (cuBLASXt's spread), and the validation
# set (issue 4's measures with the deep blockings).
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=docs/profiles/nvidia-h200-x1.json HETBLAS_REQUIRE=cuda
C=.device/bin/compare
{
echo "== registration test"
.device/tests/registration__* --nocapture --test-threads=1 2>&1 | grep -E "after freeing|test |result"
echo "== product shapes, device-resident"
bash scripts/gpu/s5c.sh 2>&1 | grep -v "^$"
echo "== SGEMM 16384 again"
for r in 1 2; do timeout 110 $C --sizes 16384 --dtype f32 --reps 9 --variants hetblas,cublasxt 2>&1 | grep -E "^\| [0-9]|rror|panic"; done
} 2>&1 | tee $OUT/run.log | cut -c1-200
/usr/bin/time -f "validate wall %e s" timeout 300 .device/bin/validate --csv $OUT/validate.csv --reps 3 > $OUT/validate.txt 2>&1; tail -2 $OUT/validate.txt | cut -c1-160
