#!/usr/bin/env bash
# CI for crates/mpi (outside the root workspace, so the default build needs no MPI): installs
# Open MPI, what rsmpi's build needs (libclang for bindgen, pkg-config) and ScaLAPACK (the
# reference PDGEMM and BLACS for the pdgemm_ test), then format, clippy, build and the tests,
# which run under `mpirun -np 4 --oversubscribe` with the CPU and with emulated devices.
# Called by .ci/run; runs as root there (Open MPI's run-as-root variables are set).
set -euo pipefail
cd "$(dirname "$0")"

need=()
for p in libopenmpi-dev openmpi-bin libclang-dev pkg-config libscalapack-openmpi-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${need[@]}"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Share the workspace's build directory: the hetblas crates this one depends on are built once.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/../../target}

cargo fmt -- --check
# The GPU script of this crate plans its commands (both of its modes).
bash ../../scripts/gpu/mpi.sh --dry-run --out "$(mktemp -d)" >/dev/null
bash ../../scripts/gpu/mpi.sh --one-gpu --dry-run --out "$(mktemp -d)" >/dev/null
cargo clippy --all-targets -- -D warnings
# `cargo build` links libhetblas_mpi.so, which the pdgemm_ test preloads.
cargo build
# The tests under mpirun (tests/mpirun.rs): every grid of 4 ranks checked (CPU, emulated
# devices), a ScaLAPACK program through pdgemm_, and the local-product check: 4 ranks on a 2x2
# grid with emulated devices, their time outside their products asserted from their counters
# and timelines (no registration or allocation after the first call, panels posted under
# products, in-place products where a rank owns the panel), and a lone rank that never waits.
HETBLAS_REQUIRE=openblas cargo test
