#!/usr/bin/env bash
# Third session, first call (nvidia-h200): the test suite with HETBLAS_REQUIRE=cuda (confirms the
# review edits to the CUDA/HIP backends), the HIP backend's conformance through the shim, and the
# DMA diagnostic (2D copy speed by column bytes, pitch, duplex, host memory kind).
set -o pipefail
source scripts/gpu/env.sh > $OUT/env.txt 2>&1
{ lscpu | grep -E "Model name|Socket|NUMA|^CPU\(s\)"; numactl -H 2>/dev/null | head -4; } >> $OUT/env.txt
{
echo "== tests (HETBLAS_REQUIRE=cuda)"; timeout 240 bash .device/run-tests.sh 2>&1 | grep -E "^test result|FAILED|panicked|^=== " | grep -v "ok. 0 passed" | tail -40
echo "== HIP shim"; bash crates/backend-hip/shim/build.sh /tmp/hipshim 2>&1 | tail -2
for t in .device/tests/conformance__* .device/tests/no_device__* .device/tests/pinning__*; do
  echo "-- $t"; HETBLAS_HIP_LIB_DIR=/tmp/hipshim HETBLAS_REQUIRE=hip timeout 120 $t --test-threads=1 2>&1 | grep -E "test result|FAILED|panicked|found hip" ; done
} 2>&1 | tee $OUT/tests.txt | tail -5
timeout 200 python3 scripts/gpu/dma_diag.py > $OUT/dma.txt 2>&1; tail -3 $OUT/dma.txt
