#!/usr/bin/env bash
# Runs the reference BLAS and CBLAS test programs (Debian's libblas-test: xblat1-3 and
# x?cblat1-3, every precision, error exits included) against libhetblas.so with LD_PRELOAD,
# and fails if any reports a failure.
#
# usage: blas-suite.sh [LIBHETBLAS] [MODE...]
#   LIBHETBLAS  the library (default: target/release/libhetblas.so)
#   MODE        host      the host BLAS takes the calls (the default search)
#               rust      HETBLAS_CBLAS=rust: hetblas-refblas answers every call
#               emulated  two emulated devices (and nothing else) take every real GEMM
#                         (HETBLAS_EMULATED=2 HETBLAS_BACKENDS=emulated HETBLAS_OFFLOAD_FLOPS=0)
#               gpu       the machine's GPUs (and nothing else) take every real GEMM
#                         (HETBLAS_BACKENDS=cuda,hip HETBLAS_OFFLOAD_FLOPS=0); the test
#                         programs' matrices are small, so the built-in rule would keep
#                         them all on the host
#               (default: host rust emulated)
# Environment:
#   BLAS_TEST_DIR  where the test programs and their inputs are
#                  (default: /usr/lib/<multiarch>/blas, as Debian installs them)
#   BLAS_LIB_PATH  prepended to LD_LIBRARY_PATH (a prefix where the .debs were unpacked)
#   KEEP           a directory to keep the outputs in (default: a temporary one)
set -euo pipefail

lib=$(realpath "${1:-target/release/libhetblas.so}")
shift || true
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(host rust emulated)
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
dir=${BLAS_TEST_DIR:-/usr/lib/$multiarch/blas}
[ -x "$dir/xblat1d" ] || { echo "no BLAS test programs in $dir (install libblas-test)" >&2; exit 2; }
[ -f "$lib" ] || { echo "no library at $lib" >&2; exit 2; }
if [ -n "${BLAS_LIB_PATH:-}" ]; then
  export LD_LIBRARY_PATH="$BLAS_LIB_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"

failed=0
# run NAME INPUT OUTPUT: runs one program in $work, checks its output for failures.
run() {
  local name=$1 input=$2 out=$3 log="$work/$mode.$1.log"
  local start=$SECONDS
  if [ -n "$input" ]; then
    (cd "$work" && timeout 900 env LD_PRELOAD="$lib" "$dir/$name" < "$input") >"$log" 2>&1 || {
      echo "FAIL $mode $name: exit status $? (see $log)"; failed=1; return; }
  else
    (cd "$work" && timeout 900 env LD_PRELOAD="$lib" "$dir/$name") >"$log" 2>&1 || {
      echo "FAIL $mode $name: exit status $? (see $log)"; failed=1; return; }
  fi
  [ -z "$out" ] || cat "$work/$out" >> "$log"
  # The Fortran testers print "FAIL" / "SUSPECT" lines, the CBLAS ones "FAIL" / "****".
  if grep -E -q 'FAIL|SUSPECT|\*\*\*\*\*|panicked|internal error' "$log"; then
    echo "FAIL $mode $name ($log):"
    grep -E 'FAIL|SUSPECT|\*\*\*\*\*|panicked|internal error' "$log" | head -5
    failed=1
  elif ! grep -E -q 'PASS|END OF TESTS' "$log"; then
    echo "FAIL $mode $name: no PASS line ($log)"; failed=1
  else
    echo "ok   $mode $name ($((SECONDS - start)) s)"
  fi
}

for mode in "${modes[@]}"; do
  case $mode in
    host) unset HETBLAS_EMULATED HETBLAS_BACKENDS HETBLAS_OFFLOAD_FLOPS ;;
    rust) export HETBLAS_CBLAS=rust; unset HETBLAS_EMULATED HETBLAS_BACKENDS HETBLAS_OFFLOAD_FLOPS ;;
    emulated) unset HETBLAS_CBLAS
      export HETBLAS_EMULATED=2 HETBLAS_BACKENDS=emulated HETBLAS_OFFLOAD_FLOPS=0 ;;
    gpu) unset HETBLAS_CBLAS HETBLAS_EMULATED
      export HETBLAS_BACKENDS=${BACKENDS:-cuda,hip} HETBLAS_OFFLOAD_FLOPS=0 ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
  for p in s d c z; do
    run "xblat1$p" "" ""
    run "xblat2$p" "$dir/${p}blat2.in" "${p}blat2.out"
    run "xblat3$p" "$dir/${p}blat3.in" "${p}blat3.out"
    run "x${p}cblat1" "" ""
    run "x${p}cblat2" "$dir/${p}in2" ""
    run "x${p}cblat3" "$dir/${p}in3" ""
  done
done
[ -n "${KEEP:-}" ] || [ $failed -ne 0 ] || rm -rf "$work"
if [ $failed -ne 0 ]; then echo "BLAS test suite: FAILED"; exit 1; fi
echo "BLAS test suite: all passed (${modes[*]})"
