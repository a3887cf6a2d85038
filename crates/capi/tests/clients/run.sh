#!/usr/bin/env bash
# libhetblas.so under the programs people run (issue 53): pip's NumPy and SciPy wheels, R and
# Octave from Debian. Each runs preloaded with two emulated devices taking every call they
# support (HETBLAS_EMULATED=2 HETBLAS_OFFLOAD_FLOPS=0), and its results are compared with the
# same run without the preload; each preloaded run must also have sent calls to the devices
# (its HETBLAS_SUMMARY line), so a preload that took nothing fails.
#
# usage: crates/capi/tests/clients/run.sh [LIBHETBLAS] [STEP...]
#   LIBHETBLAS  default target/release/libhetblas.so
#   STEP        names    every BLAS name (and routed LAPACK name) the current wheels import is
#                        exported (wheel_names.py)
#               numpy    NumPy and SciPy calls of every dtype, shape class and transpose,
#                        numpy.linalg and scipy.linalg (numpy_scipy.py), compared
#               pytest   subsets of NumPy's and SciPy's own test suites (linalg, matmul, BLAS),
#                        preloaded: no test may fail that passes without the preload
#               threads  products from 8 Python threads at once, every one on the devices
#               fork     multiprocessing (fork) and os.fork() children after the runtime
#                        started: they compute, within a time limit
#               r        R: %*%, crossprod, solve, chol compared; mclapply children (fork)
#               octave   Octave: *, \, chol compared
#               (default: all; r and octave are skipped, with a message, when Rscript or
#               octave-cli is missing, unless REQUIRE_CLIENTS=1)
# Environment: PYTHON  a Python with numpy, scipy, pytest and hypothesis (NumPy's conftest
#                      imports it) (default: a virtual environment
#                      at $VENV, default target/clients-venv, given the current wheels by pip)
#              KEEP    a directory to keep the outputs in (default: a temporary one)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
lib=$(realpath "${1:-$root/target/release/libhetblas.so}")
shift || true
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(names numpy pytest threads fork r octave)
[ -f "$lib" ] || { echo "no library at $lib" >&2; exit 2; }
work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"

if [ -z "${PYTHON:-}" ]; then
  venv=${VENV:-$root/target/clients-venv}
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade numpy scipy pytest hypothesis
  PYTHON=$venv/bin/python
fi
"$PYTHON" -c 'import numpy, scipy; print(f"NumPy {numpy.__version__}, SciPy {scipy.__version__}")'

# The preload's environment: two emulated devices (and nothing else) take every call hetblas
# has a device path for; the summary at exit says how many reached them.
preload=(env LD_PRELOAD="$lib" HETBLAS_EMULATED=2 HETBLAS_BACKENDS=emulated
         HETBLAS_OFFLOAD_FLOPS=0 HETBLAS_SUMMARY=1)
failed=0
fail() { echo "FAIL $*"; failed=1; }

# devices_took NAME MIN: the summary in $work/NAME.err counts at least MIN device calls.
devices_took() {
  local n
  n=$(grep -o '; [0-9]* on the devices' "$work/$1.err" | tail -1 | grep -o '[0-9]*' || true)
  if [ -z "$n" ] || [ "$n" -lt "$2" ]; then
    fail "$1: ${n:-no} calls reached the devices (at least $2 expected; $work/$1.err)"
    return 1
  fi
  echo "     $1: $n calls on the devices: $(grep -o 'summary.*' "$work/$1.err" | tail -1 | cut -c1-160)..."
}

# run_both NAME LIMIT CMD...: CMD without, then with the preload (its output argument is the
# word @OUT@, replaced by $work/NAME-{plain,preload}); a run over LIMIT seconds fails.
run_both() {
  local name=$1 limit=$2 mode
  shift 2
  for mode in plain preload; do
    local args=("${@//@OUT@/$work/$name-$mode}") pre=()
    [ $mode = preload ] && pre=("${preload[@]}")
    if ! timeout "$limit" "${pre[@]}" "${args[@]}" >"$work/$name-$mode.log" 2>"$work/$name-$mode.err"; then
      fail "$name ($mode): exit status $? (124: over $limit s; $work/$name-$mode.log, .err)"
      tail -5 "$work/$name-$mode.err"
      return 1
    fi
  done
  cp "$work/$name-preload.err" "$work/$name.err"
}

have() { command -v "$1" >/dev/null || { [ "${REQUIRE_CLIENTS:-0}" = 1 ] && fail "$1 is not installed"; echo "skip $2: no $1"; false; }; }

for step in "${steps[@]}"; do
  start=$SECONDS
  case $step in
    names)
      "$PYTHON" "$here/wheel_names.py" "$lib" || fail "names" ;;
    numpy)
      if run_both numpy 600 "$PYTHON" "$here/numpy_scipy.py" @OUT@.npz; then
        "$PYTHON" "$here/numpy_scipy.py" --compare "$work/numpy-plain.npz" "$work/numpy-preload.npz" || fail numpy
        devices_took numpy 40 || true
      fi ;;
    pytest)
      # Subsets of the wheels' own suites: NumPy's linalg and matmul tests, SciPy's BLAS
      # wrappers, solvers and factorizations; the slowest that exercise no routed routine
      # left out (huge vector dots, long-double least squares, stacked condition numbers and
      # decompositions). Preloaded first; the tests that fail then run again without the
      # preload (pytest's --lf), and a test that passes there fails the step.
      tests=(--pyargs numpy.linalg.tests.test_linalg numpy._core.tests.test_multiarray
             scipy.linalg.tests.test_blas scipy.linalg.tests.test_decomp_cholesky
             scipy.linalg.tests.test_decomp_lu scipy.linalg.tests.test_basic)
      select="(matmul or dot or linalg or solve or inv or cholesky or cho or lu or blas or gemm
               or syrk or symm or trsm) and not huge and not random_exact
               and not random_complex_exact and not (generalized and (cond or det or pinv or eig
               or svd))"
      opts=(-q -o "cache_dir=$work/pytest-cache" -o addopts= -k "${select//$'\n'/ }")
      timeout 900 "${preload[@]}" "$PYTHON" -m pytest "${opts[@]}" --junitxml "$work/pytest-preload.xml" \
        "${tests[@]}" >"$work/pytest-preload.log" 2>"$work/pytest.err" || true
      tail -1 "$work/pytest-preload.log"
      timeout 900 "$PYTHON" -m pytest "${opts[@]}" --lf --lfnf=none --junitxml "$work/pytest-plain.xml" \
        "${tests[@]}" >"$work/pytest-plain.log" 2>&1 || true
      "$PYTHON" - "$work/pytest-preload.xml" "$work/pytest-plain.xml" <<'PY' || fail "pytest ($work/pytest-*.log)"
import sys, xml.etree.ElementTree as ET
def results(path):
    out = {}
    try:
        cases = ET.parse(path).iter("testcase")
    except (OSError, ET.ParseError):
        return out
    for case in cases:
        name = case.get("classname", "") + "::" + case.get("name", "")
        failed = case.find("failure") is not None or case.find("error") is not None
        out[name] = "failed" if failed else "ok"
    return out
pre, plain = results(sys.argv[1]), results(sys.argv[2])
failed = sorted(n for n, r in pre.items() if r == "failed")
new = [n for n in failed if plain.get(n) != "failed"]
print(f"     {len(pre)} tests with the preload, {len(failed)} failed; "
      f"{len(failed) - len(new)} of them fail without it too")
for n in new:
    print("  fails only with the preload:", n)
sys.exit(1 if new or len(pre) < 500 else 0)
PY
      devices_took pytest 100 || true ;;
    threads)
      if timeout 300 "${preload[@]}" "$PYTHON" "$here/threads.py" 8 5 >"$work/threads.log" 2>"$work/threads.err"; then
        cat "$work/threads.log"
        # Every product went to the devices: concurrent callers share them.
        devices_took threads 40 || true
      else
        fail "threads: exit status $? ($work/threads.log, .err)"
      fi ;;
    fork)
      if timeout 180 "${preload[@]}" HETBLAS_VERBOSE=1 "$PYTHON" "$here/fork.py" >"$work/fork.log" 2>"$work/fork.err"; then
        cat "$work/fork.log"
        grep -q "a forked child" "$work/fork.err" || fail "fork: no child said it was forked ($work/fork.err)"
        devices_took fork 2 || true
      else
        fail "fork: exit status $? (124: a child hung; $work/fork.log, .err)"
      fi ;;
    r)
      if have Rscript r && run_both r 300 Rscript "$here/ops.R" @OUT@; then
        "$PYTHON" "$here/compare_raw.py" "$work/r-plain" "$work/r-preload" || fail r
        devices_took r 3 || true
      fi ;;
    octave)
      if have octave-cli octave && run_both octave 300 octave-cli --norc "$here/ops.m" @OUT@; then
        "$PYTHON" "$here/compare_raw.py" "$work/octave-plain" "$work/octave-preload" || fail octave
        devices_took octave 3 || true
      fi ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
  echo "--   $step ($((SECONDS - start)) s)"
done
[ -n "${KEEP:-}" ] || [ $failed -ne 0 ] || rm -rf "$work"
if [ $failed -ne 0 ]; then echo "clients: FAILED (outputs in $work)"; exit 1; fi
echo "clients: all passed (${steps[*]})"
