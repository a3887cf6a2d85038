#!/usr/bin/env bash
# CI for the Python package (issue 55), called by .ci/run after the workspace's release build
# of crates/capi: format and clippy of the native module, the wheel (python/build.sh, in the
# shared target directory), pip-installed into a virtual environment, and the pytest suite on
# the CPU and two emulated devices (python/tests; it imports the installed package, not the
# sources).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=${VENV:-$root/target/python-venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade \
  'maturin>=1.9,<2' numpy pytest
export CARGO_TARGET_DIR=$root/target PYO3_PYTHON=$venv/bin/python
(cd python && cargo fmt -- --check)
# clippy's build script run needs the drop-in library in place (or would build it itself).
cargo build --release -q -p hetblas-capi
cp target/release/libhetblas.so python/hetblas/libhetblas.so
cargo clippy -q --manifest-path python/Cargo.toml --all-targets -- -D warnings
t=$SECONDS
rm -f "$root"/target/wheels/hetblas-*.whl
PYTHON=$venv/bin/python bash python/build.sh "$root/target/wheels"
echo "wheel built in $((SECONDS - t)) s"
wheel=$(find "$root/target/wheels" -name 'hetblas-*.whl' | head -1)
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"
"$venv/bin/python" -c 'import hetblas; print(hetblas.devices())'
cd python/tests
"$venv/bin/python" -m pytest -q -p no:cacheprovider .
