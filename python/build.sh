#!/usr/bin/env bash
# Builds the hetblas wheel: the drop-in library (crates/capi's libhetblas.so) from the
# workspace into the package, then the native module with maturin, in the workspace's target
# directory (the hetblas crates are compiled once for both).
#
# usage: python/build.sh [OUTDIR]      the wheel goes to OUTDIR (default target/wheels)
# Needs Rust and a Python with pip (maturin is installed into it when missing). The wheel is
# abi3 (CPython >= 3.9) and needs only NumPy at run time: no GPU library to install or import.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${1:-$root/target/wheels}
py=${PYTHON:-python3}
cargo build --release -q -p hetblas-capi
cp target/release/libhetblas.so python/hetblas/libhetblas.so
"$py" -m maturin --version >/dev/null 2>&1 ||
  "$py" -m pip install -q --disable-pip-version-check 'maturin>=1.9,<2'
CARGO_TARGET_DIR=$root/target "$py" -m maturin build --release -q \
  -m python/Cargo.toml -o "$out"
ls -1 "$out"/hetblas-*.whl
