#!/usr/bin/env bash
# Third session, diagnostic call (nvidia-h200): timelines (Chrome JSON, tarred into $OUT) of
# the problems the model misjudges, on the profile of run S3-3 (docs/profiles).
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
export HETBLAS_PROFILE=docs/profiles/nvidia-h200-x1.json
C=.device/bin/compare; T=/tmp/traces; mkdir -p $T
tr() { # name, extra args...
  local name=$1; shift
  timeout 60 $C --sizes 256 --variants hetblas --reps 1 --trace-out $T/$name.json "$@" 2>&1 | grep -A 12 "== timeline" | sed "s/^/[$name] /"
}
{
tr sq8192-t1024 --trace-shape 8192x8192x8192 --tile 1024
tr sq8192-t2048 --trace-shape 8192x8192x8192 --tile 2048
tr sq8192-t4096 --trace-shape 8192x8192x8192 --tile 4096
HETBLAS_HOST_FOLD=0 tr sq8192-t1024-nofold --trace-shape 8192x8192x8192 --tile 1024
tr fat-t4096 --trace-shape 32768x32768x4096 --tile 4096
tr fat-t8192 --trace-shape 32768x32768x4096 --tile 8192
tr sq16k-t2048 --trace-shape 16384x16384x16384 --tile 2048
tr sq16k-t4096 --trace-shape 16384x16384x16384 --tile 4096
tr thin-stream --trace-shape 4096x4096x32768
HETBLAS_HOST_FOLD=1 tr thin-stream-fold --trace-shape 4096x4096x32768
tr tall-t1024 --trace-shape 32768x4096x4096 --tile 1024
tr tall-t2048 --trace-shape 32768x4096x4096 --tile 2048
} > $OUT/traces.txt 2>&1
tar czf $OUT/traces.tgz -C $T .
grep -c timeline $OUT/traces.txt
