#!/usr/bin/env bash
# The factorizations on a GPU machine (issue 54): hetblas's POTRF/GETRF on host operands
# against cuSOLVER with A already on the GPU (the ceiling, through CuPy), and pip NumPy/SciPy
# with and without the drop-in. Every result is checked (hetblas --check: residuals; NumPy:
# residuals of the factors and the solve).
#
#   bash scripts/gpu/factor.sh [STEP...]      STEP: ceiling cli numpy (default: all three)
# Environment: OUT (logs; default /tmp/hetblas-factor), CLI=.device/bin/hetblas,
#   LIB=.device/capi/libhetblas.so, PY=python3, REPS=3, CASES (the cli/ceiling list,
#   "routine:dtype:n", default "potrf:f64:32768 getrf:f64:32768 potrf:c64:16384
#   getrf:f64:16384"), NP_N=16384 (NumPy's order), HETBLAS_PROFILE as usual.
#   --dry-run prints the commands.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/hetblas-factor}
CLI=${CLI:-.device/bin/hetblas}
LIB=${LIB:-.device/capi/libhetblas.so}
PY=${PY:-python3}
REPS=${REPS:-3}
read -r -a CASES <<<"${CASES:-potrf:f64:32768 getrf:f64:32768 potrf:c64:16384 getrf:f64:16384}"
NP_N=${NP_N:-16384}
dry=0
steps=()
for a in "$@"; do
  case "$a" in
    --dry-run) dry=1 ;;
    *) steps+=("$a") ;;
  esac
done
[ ${#steps[@]} -gt 0 ] || steps=(ceiling cli numpy)
mkdir -p "$OUT"
run() {
  echo "+ $*" >&2
  [ $dry = 1 ] || "$@"
}
status=0
for step in "${steps[@]}"; do
  case "$step" in
    ceiling)
      # cuSOLVER through CuPy on device-resident random data: potrf (cholesky), getrf
      # (lu_factor); CUDA events, a warm-up, the median of REPS; residuals checked.
      run "$PY" - "$REPS" "${CASES[@]}" <<'PY' 2>&1 | tee "$OUT/ceiling.txt" || status=1
import sys, cupy as cp, numpy as np
import cupyx.scipy.linalg as cl
reps = int(sys.argv[1])
for case in sys.argv[2:]:
    routine, dtype, n = case.split(":")
    n = int(n)
    dt = {"f64": cp.float64, "f32": cp.float32, "c64": cp.complex128, "c32": cp.complex64}[dtype]
    rng = cp.random.default_rng(7)
    a = rng.uniform(-1, 1, (n, n), dtype=cp.float64)
    if dt in (cp.complex128, cp.complex64):
        a = a + 1j * rng.uniform(-1, 1, (n, n), dtype=cp.float64)
    a = a.astype(dt)
    if routine == "potrf":
        a = (a + a.conj().T) / 2
        a += (n + 1) * cp.eye(n, dtype=dt)
    a = cp.asfortranarray(a)
    cp.cuda.Device().synchronize()
    times = []
    for r in range(reps + 1):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        if routine == "potrf":
            f = cp.linalg.cholesky(a)
        else:
            lu, piv = cl.lu_factor(a, overwrite_a=False, check_finite=False)
        e.record(); e.synchronize()
        if r:
            times.append(cp.cuda.get_elapsed_time(s, e) / 1e3)
    # Residuals on a few columns.
    cols = [0, n // 3, n - 1]
    if routine == "potrf":
        res = max(float(cp.abs(f @ f[j].conj() - a[:, j]).sum() / cp.abs(a[:, j]).sum()) for j in cols)
        flops = n ** 3 / 3
    else:
        l = cp.tril(lu, -1) + cp.eye(n, dtype=dt)
        u = cp.triu(lu)
        pa = a.copy()
        perm = cp.arange(n)
        p = cp.asnumpy(piv)
        pn = np.arange(n)
        for i in range(n):
            pn[i], pn[p[i]] = pn[p[i]], pn[i]
        pa = a[cp.asarray(pn)]
        res = max(float(cp.abs(l @ u[:, j] - pa[:, j]).sum() / cp.abs(a[:, j]).sum()) for j in cols)
        flops = 2 * n ** 3 / 3
    if dt in (cp.complex128, cp.complex64):
        flops *= 4
    t = sorted(times)[len(times) // 2]
    print(f"ceiling {routine} {dtype} n={n}: cuSOLVER (A on the GPU) median {t:.4f} s, "
          f"{flops / t / 1e12:.2f} TFLOP/s, residual {res:.2e}")
    del a
    cp.get_default_memory_pool().free_all_blocks()
PY
      ;;
    cli)
      for c in "${CASES[@]}"; do
        IFS=: read -r routine dtype n <<<"$c"
        run timeout 400 "$CLI" "$routine" --size "$n" --dtype "$dtype" --reps "$REPS" --check \
          --trace "$OUT/trace-$routine-$dtype-$n.json" 2>&1 | tee "$OUT/cli-$routine-$dtype-$n.txt" \
          || status=1
        run "$CLI" predict --routine "$routine" -n "$n" --dtype "$dtype" 2>&1 \
          | tee -a "$OUT/cli-$routine-$dtype-$n.txt"
      done
      # The CPU's share: the same problem with panels forced on the host and on the device.
      for p in host device; do
        run timeout 300 "$CLI" getrf --size 16384 --panels "$p" --reps "$REPS" --check 2>&1 \
          | tee "$OUT/cli-getrf-panels-$p.txt" || status=1
      done
      ;;
    numpy)
      # pip NumPy/SciPy: np.linalg.cholesky, np.linalg.solve, scipy.linalg.lu_factor at NP_N,
      # without and with the preload, each result's residual checked.
      cat >"$OUT/np_factor.py" <<'PY'
import sys, time, json, numpy as np, scipy.linalg as sl
n = int(sys.argv[1])
which = sys.argv[2].split(",") if len(sys.argv) > 2 else ["cholesky", "solve", "lu_factor"]
rng = np.random.default_rng(11)
a = rng.uniform(-1, 1, (n, n))
b = rng.uniform(-1, 1, (n, 4))
out, res = {}, {}
eps = 2.2e-16
def timed(name, f):
    t = time.perf_counter(); r = f(); out[name] = time.perf_counter() - t; return r
cols = [0, n // 2, n - 1]
if "cholesky" in which:
    spd = (a + a.T) / 2 + (n + 1) * np.eye(n)
    l = timed("cholesky", lambda: np.linalg.cholesky(spd))
    res["cholesky"] = max(np.abs(l @ l[j] - spd[:, j]).sum() / np.abs(spd[:, j]).sum() for j in cols)
    del spd, l
if "solve" in which:
    x = timed("solve", lambda: np.linalg.solve(a, b))
    res["solve"] = float(np.abs(a @ x - b).max() / (np.abs(a).sum(1).max() * np.abs(x).max() * n * eps))
if "lu_factor" in which:
    lu, piv = timed("lu_factor", lambda: sl.lu_factor(a))
    x2 = sl.lu_solve((lu, piv), b)
    res["lu_factor"] = float(np.abs(a @ x2 - b).max() / (np.abs(a).sum(1).max() * np.abs(x2).max() * n * eps))
print(json.dumps({"seconds": out, "residual": res}))
PY
      run env HETBLAS_VERBOSE=0 timeout 300 "$PY" "$OUT/np_factor.py" "$NP_N" >"$OUT/np-plain.json" 2>"$OUT/np-plain.err" || status=1
      # With the preload, each function in a process of its own (the first call in a process
      # pays the runtime's start, as a user's script does).
      for f in cholesky solve lu_factor; do
        run env HETBLAS_VERBOSE=1 LD_PRELOAD="$(realpath "$LIB")" timeout 300 "$PY" "$OUT/np_factor.py" \
          "$NP_N" "$f" >"$OUT/np-preload-$f.json" 2>"$OUT/np-preload-$f.err" || status=1
      done
      [ $dry = 1 ] || "$PY" - "$OUT/np-plain.json" "$OUT"/np-preload-*.json <<'PY' | tee "$OUT/numpy.txt" || status=1
import json, sys
p = json.load(open(sys.argv[1]))
q = {"seconds": {}, "residual": {}}
for f in sys.argv[2:]:
    r = json.load(open(f))
    q["seconds"].update(r["seconds"]); q["residual"].update(r["residual"])
bad = 0
for k in p["seconds"]:
    r = q["residual"][k]
    ok = r < (1e-10 if k == "cholesky" else 30)
    bad += not ok
    print(f"{k}: without {p['seconds'][k]:.3f} s, with the preload {q['seconds'][k]:.3f} s: "
          f"{p['seconds'][k] / q['seconds'][k]:.1f}x; residual {r:.2e} {'ok' if ok else 'FAILED'}")
sys.exit(1 if bad else 0)
PY
      grep -hE "potrf|getrf|gesv|summary" "$OUT"/np-preload-*.err | cut -c1-400
      ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
done
exit $status
