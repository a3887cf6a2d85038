#!/usr/bin/env bash
# Fifth session, third call (nvidia-h200): cuBLAS on device-resident data (random, uploaded by
# the naive variant first) by product shape, f32 and f64: does some tile shape run faster than
# the square tiles the profile knows (SGEMM 16384^3 device-resident ran at 53.9 TFLOP/s in S2-3,
# its 4096/8192 tiles at 51)?
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
C=.device/bin/compare
{
timeout 200 $C --dtype f32 --reps 7 --variants naive,ceiling --shapes 16384x16384x16384,16384x2048x16384,8192x2048x16384,8192x1024x16384,16384x16384x8192,16384x16384x4096,16384x8192x16384,8192x16384x16384,16384x4096x16384,4096x16384x16384,8192x8192x16384,16384x8192x8192,8192x16384x8192,12288x12288x12288,8192x8192x8192,8192x4096x8192,8192x2048x8192,16384x2048x16384,16384x1024x16384,4096x4096x4096 2>&1 | grep -E "ceiling|rror|panic"
timeout 200 $C --dtype f64 --reps 7 --variants naive,ceiling --shapes 16384x16384x16384,16384x16384x4096,8192x8192x8192,6144x6144x6144,4096x4096x4096,4096x1024x4096,4096x2048x4096,8192x8192x4096,4096x4096x8192 2>&1 | grep -E "ceiling|rror|panic"
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv
} 2>&1 | tee $OUT/shapes.log
