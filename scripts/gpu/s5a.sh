#!/usr/bin/env bash
# Fifth session, first call (nvidia-h200), profile S4-1: does the page layout of the host
# operands explain the run-to-run spread of DGEMM 8192^3 (30.5-32.9 TFLOP/s)? Each problem in
# fresh processes with normal pages and with transparent huge pages (HETBLAS_BENCH_HUGEPAGES=1),
# forced blockings of 8192^3 against the model's, 8192^3 timelines, and the fold margin 0.99
# on 4096x4096x32768 and SGEMM 16384^3.
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
{ uname -r; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; grep -i huge /proc/meminfo; } >> $OUT/env.txt 2>&1
export HETBLAS_PROFILE=docs/profiles/nvidia-h200-x1.json
C=.device/bin/compare
cmp() { echo "-- hp=$HETBLAS_BENCH_HUGEPAGES $*"; timeout 100 $C "$@" 2>&1 | grep -E "^\| [0-9]|^== |rror|panic|FAIL"; }
{
cat $OUT/env.txt | tail -12
for hp in 0 1; do
  export HETBLAS_BENCH_HUGEPAGES=$hp
  echo "== 8192 f64 hetblas vs cublasxt, hp=$hp"
  cmp --sizes 8192 --reps 9 --variants hetblas,cublasxt
  cmp --sizes 8192 --reps 9 --variants hetblas,cublasxt
  echo "== 8192 f64 forced blockings, hp=$hp"
  for bl in 3072 2048 4096x1024x4096/g4 4096x2048x4096/g4 8192x512x4096/g1 8192x1024x4096/g4; do
    cmp --sizes 8192 --reps 9 --variants hetblas-fold,hetblas-nofold --blocking $bl
  done
  echo "== 8192 timeline, hp=$hp"
  timeout 60 $C --sizes 256 --variants hetblas --reps 1 --trace-n 8192 --trace-out $OUT/trace-8192-hp$hp.json 2>&1 | grep -A 8 -E "== timeline"
  echo "== 4096x4096x32768, hp=$hp"
  cmp --shapes 4096x4096x32768 --reps 9 --variants hetblas,hetblas-nofold,cublasxt
  echo "== SGEMM 16384, hp=$hp"
  cmp --sizes 16384 --dtype f32 --reps 5 --variants hetblas,hetblas-nofold,cublasxt
done
echo "== DGEMM 16384, hp=1"
HETBLAS_BENCH_HUGEPAGES=1 cmp --sizes 16384 --reps 5 --variants hetblas,cublasxt
} 2>&1 | tee $OUT/run.log | cut -c1-200
