#!/usr/bin/env bash
# Prepares what scripts/gpu/dropin.sh needs on the GPU machine (run here, from the repository
# root): libhetblas.so and the large-index and device-pointer test programs in .device/capi/,
# and Debian bookworm's Python 3.11, NumPy, reference BLAS test programs and OpenBLAS as .deb
# files in .debs/ (git-ignored; about 20 MB). Carry .device and .debs. Run it after ../shared/tools/device-bundle,
# which empties .device/.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
cargo build --release -q -p hetblas -p hetblas-capi
mkdir -p .device/capi .device/bin .debs
cp target/release/libhetblas.so .device/capi/
cp target/release/hetblas .device/bin/
gcc -O2 -Wall -Werror -o .device/capi/bigindex crates/capi/tests/c/bigindex.c \
    -L.device/capi -lhetblas -Wl,-rpath,'$ORIGIN' -lm
gcc -O2 -Wall -Werror -o .device/capi/devptr crates/capi/tests/c/devptr.c \
    -L.device/capi -lhetblas -Wl,-rpath,'$ORIGIN' -ldl -lm
debs=(python3.11-minimal libpython3.11-minimal libpython3.11-stdlib python3-numpy
      libblas3 liblapack3 libblas-test libopenblas0-pthread libgfortran5 libquadmath0
      libffi8 libexpat1 zlib1g libbz2-1.0 liblzma5)
(cd .debs && apt-get download "${debs[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
du -ch .debs/*.deb | tail -1
echo "carry: .device .debs   then on the GPU machine: bash scripts/gpu/dropin.sh"
