#!/usr/bin/env bash
# The Python package's acceptance on a GPU machine (issue 55). From the repository root:
#   bash scripts/gpu/python.sh prepare       on the build machine (Rust, pip): the wheel into
#                                            .device/wheels/ and the CLI into .device/bin/
#                                            (keeps what ../shared/tools/device-bundle or
#                                            dropin.sh prepare put there); then carry .device
#   bash scripts/gpu/python.sh [STEP...]     on the GPU machine, with the machine's own Python
#                                            (NumPy 2.x, PyTorch, CuPy); no Rust, no network
# STEP: install  the wheel into $CACHE/pylib (pip --target: the image's venv is left as it
#                is), `import hetblas; hetblas.devices()`, `python -m hetblas doctor`
#       numpy    hetblas.matmul on N x N f64 NumPy arrays, out= reused and fresh, against the
#                CLI's `hetblas gemm --size N --dtype f64` rate (acceptance: >= 0.9 of it)
#       torch    PyTorch CUDA tensors: hetblas.matmul(a, b, out=c) against torch.matmul
#                (acceptance: within 5%), bytes via the host (0: no host copy), the result type
#       cupy     the same with CuPy arrays against cupy.matmul
#       mixed    a NumPy array times a CUDA tensor: correct, the result a CUDA tensor, no byte
#                back to the host (the device operand is not round-tripped)
#       run      `python -m hetblas run` on a script doing a @ b with pip NumPy, and the same
#                script without it (the drop-in issue's rate)
#       factor   hetblas.cholesky / lu_factor / solve on NumPy, PyTorch CUDA and CuPy arrays of
#                NF x NF f64 against the libraries' own, every result checked by its residual
#       (default: all of them, about 4-5 minutes on one H200)
# Parameters (environment): PY=python3  N=16384  NF=8192 (the factor step's n)  REPS=5  ROUNDS=2 (alternations of torch/cupy
#   against hetblas)  WHEEL=.device/wheels/hetblas-*.whl  CLI=.device/bin/hetblas
#   PROFILE= (a machine profile; default: the first that matches of a warm machine's
#   calibrations and docs/profiles/nvidia-h200-x1*.json, as dropin.sh's wheels step)
#   OUT=python-out (results: $OUT/python.txt, $OUT/python.jsonl, traces $OUT/trace-*.json)
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(install numpy torch cupy mixed run factor)

if [ "${steps[0]}" = prepare ]; then
  set -e
  mkdir -p .device/wheels .device/bin
  rm -f .device/wheels/hetblas-*.whl
  cargo build --release -q -p hetblas-cli
  cp target/release/hetblas .device/bin/
  bash python/build.sh "$root/.device/wheels"
  du -sh .device | awk '{print "bundle: .device (" $1 "; at most 64 MiB travels)"}'
  echo "carry: .device   then on the GPU machine: bash scripts/gpu/python.sh"
  exit 0
fi

OUT=${OUT:-$root/python-out}
PY=${PY:-python3}
N=${N:-16384}
NF=${NF:-8192}
REPS=${REPS:-5}
ROUNDS=${ROUNDS:-2}
CLI=$(realpath "${CLI:-.device/bin/hetblas}")
CACHE=/tmp/hetblas-gpu
LIBDIR=$CACHE/pylib
BENCH=$root/python/bench/gpu_accept.py
mkdir -p "$OUT" "$CACHE"
report=$OUT/python.txt
jl=$OUT/python.jsonl
say() { echo "$*" | tee -a "$report"; }
status=0
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH=$LIBDIR${PYTHONPATH:+:$PYTHONPATH}
# cuBLAS from the PyTorch image's wheel when the system has none (as env.sh does).
if ! ldconfig -p 2>/dev/null | grep -q "libcublas.so.1[23]"; then
  d=$("$PY" -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null)
  [ -n "$d" ] && export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
if [ -n "${PROFILE:-}" ]; then
  HETBLAS_PROFILE=$(realpath "$PROFILE")
  export HETBLAS_PROFILE
elif [ -z "${HETBLAS_PROFILE:-}" ] && [ -x "$CLI" ]; then
  for f in "$CACHE"/profile-*.json "$root"/docs/profiles/nvidia-h200-x1*.json; do
    if [ -f "$f" ] && HETBLAS_PROFILE=$f timeout 120 "$CLI" devices 2>/dev/null | grep -q "calibrated profile"; then
      export HETBLAS_PROFILE=$f; break
    fi
  done
fi
say "== hetblas Python package, $(date -u +%FT%TZ), $(hostname); $("$PY" --version 2>&1) ($PY)"
say "profile: ${HETBLAS_PROFILE:-none matches: the built-in rule}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | sed 's/^/gpu: /' | tee -a "$report"
bench() { "$PY" "$BENCH" "$@" --json "$jl" 2>>"$OUT/python.err" | tee -a "$report"; [ "${PIPESTATUS[0]}" -eq 0 ] || { say "!! $* failed (see $OUT/python.err)"; status=1; }; }
t0=$SECONDS

for step in "${steps[@]}"; do
case $step in
install)
  wheel=$(find .device/wheels -name "hetblas-*.whl" 2>/dev/null | head -1)
  wheel=${WHEEL:-$wheel}
  if [ -z "$wheel" ]; then say "no wheel in .device/wheels: run 'bash scripts/gpu/python.sh prepare' on the build machine"; exit 1; fi
  rm -rf "$LIBDIR"
  "$PY" -m pip install -q --no-deps --no-index --disable-pip-version-check --target "$LIBDIR" "$wheel" \
    2>&1 | tee -a "$report" || status=1
  say "-- installed $(basename "$wheel") into $LIBDIR ($((SECONDS - t0)) s)"
  "$PY" -c 'import hetblas; print(hetblas.devices())' 2>&1 | tee -a "$report" || status=1
  "$PY" -m hetblas doctor 2>&1 | tee -a "$report" || status=1
  ;;
numpy)
  bench numpy --size "$N" --reps "$REPS" --trace "$OUT/trace-numpy.json"
  if [ -x "$CLI" ]; then
    g=$("$CLI" gemm --size "$N" --dtype f64 --reps "$REPS" 2>&1 | grep -o '[0-9.]* GFLOP/s' | tail -1 | cut -d' ' -f1)
    say "CLI hetblas gemm --size $N --dtype f64: ${g:-?} GFLOP/s"
    [ -n "$g" ] && "$PY" - "$jl" "$g" <<'PY' | tee -a "$report"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if '"step": "numpy"' in l]
cli = float(sys.argv[2]) / 1e3
if recs:
    r = recs[-1]
    print(f"acceptance numpy: {r['tflops_out']:.2f} / {cli:.2f} TFLOP/s = "
          f"{r['tflops_out'] / cli:.3f} of the CLI's rate (>= 0.9 wanted); fresh output "
          f"{r['tflops_new'] / cli:.3f}")
PY
  else
    say "no CLI at $CLI: the numpy step has no rate to compare with"
  fi
  ;;
torch | cupy)
  bench "$step" --size "$N" --reps "$REPS" --rounds "$ROUNDS" --trace "$OUT/trace-$step.json"
  ;;
mixed)
  bench mixed --size "$N" --trace "$OUT/trace-mixed.json"
  ;;
factor)
  bench factor --size "$NF" --reps 3
  ;;
run)
  bench plain --size "$N" --reps "$REPS" --label "without the preload"
  HETBLAS_SUMMARY=1 "$PY" -m hetblas run "$BENCH" plain --size "$N" --reps "$REPS" \
    --label "python -m hetblas run" --json "$jl" 2>"$OUT/run.err" | tee -a "$report"
  grep -h "hetblas summary" "$OUT/run.err" | tail -1 | cut -c1-400 | sed 's/^/   /' | tee -a "$report"
  ;;
*) say "unknown step $step"; status=1 ;;
esac
done
say "== done in $((SECONDS - t0)) s, status $status"
exit $status
