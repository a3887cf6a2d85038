#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2015,SC2030,SC2031
# (SC2016: '$ORIGIN' is for the linker, not the shell; SC2015: the download's failures are
# reported by du below; SC2030/SC2031: each step's environment is local to its subshell.)
# The drop-in library's acceptance runs on a GPU machine (issues 15 and 53). From the repository root:
#   bash scripts/gpu/dropin.sh prepare        on the build machine, first
#   bash scripts/gpu/dropin.sh [STEP...]      STEP: suite bigindex devptr numpy faults wheels factor firsttouch
#                                             (default: suite bigindex devptr numpy)
#   bash scripts/gpu/dropin.sh wheels         issue 53's acceptance points 1-4 on the machine's
#                                             own pip NumPy 2.x and SciPy (about 4-6 minutes;
#                                             needs only .device/ from prepare, not .debs/)
#   bash scripts/gpu/dropin.sh factor         issue 54's NumPy/SciPy factorizations at N, without
#                                             and with the preload (.device/ only)
#   bash scripts/gpu/dropin.sh firsttouch     what first-touch faults of a fresh output cost the
#                                             host (the floor of NumPy's fresh-output calls)
# Needs what `bash scripts/gpu/dropin.sh prepare` (run on the build machine, after
# ../shared/tools/device-bundle, which empties .device/) put in .device/ and .debs/. Results: $OUT/dropin.txt
# (and the logs beside it). Parameters (environment):
#   LIB=.device/capi/libhetblas.so  BIGINDEX=.device/capi/bigindex  DEVPTR=.device/capi/devptr
#   CLI=.device/bin/hetblas
#   DEBS=.debs  N=16384 (NumPy/CLI GEMM size)  REPS=5 (their timed repetitions, median)  LOOP=100000 (small products)  RUNS=9 (processes of the loop with and without, alternating; the wheels step times 5 loops in each, all on core PIN_CPU, default the last)  SMALL=64 (their n)
#   BACKENDS=cuda,hip (the devices of the "gpu" suite run)
#   PROFILE= (a machine profile for the library and the CLI alike, as HETBLAS_PROFILE; without
#   one both use the user cache's profile, or the built-in tile rule when there is none)
#   VARIANTS="default" (the NumPy step's runs; trace: the default writing every call's Chrome
#   trace to $OUT/trace-numpy)
#   wheels step: PY=python3 (the Python whose pip NumPy and SciPy are measured)
#   SIZES=1024,2048,4096,8192,16384 (a @ b sizes; the CLI is measured at those >= 4096)
#   MIXED=200 (seeded mixed calls)  SEED=1  MIXED_MAX=16384 (their largest m, n, k)  LOOP, RUNS, REPS, N as above (N: scipy dgemm's size)
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
OUT=${OUT:-$root/dropin-out}
LIB=$(realpath "${LIB:-.device/capi/libhetblas.so}")
BIGINDEX=$(realpath "${BIGINDEX:-.device/capi/bigindex}")
DEVPTR=$(realpath "${DEVPTR:-.device/capi/devptr}")
CLI=$(realpath "${CLI:-.device/bin/hetblas}")
DEBS=$(realpath "${DEBS:-.debs}")
N=${N:-16384}
REPS=${REPS:-5}
RUNS=${RUNS:-9}
LOOP=${LOOP:-100000}
SMALL=${SMALL:-64}
SIZES=${SIZES:-1024,2048,4096,8192,16384}
if [ -n "${PROFILE:-}" ]; then
  HETBLAS_PROFILE=$(realpath "$PROFILE")
  export HETBLAS_PROFILE
fi
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(suite bigindex devptr numpy)
mkdir -p "$OUT"
report="$OUT/dropin.txt"
say() { echo "$*" | tee -a "$report"; }
status=0

# -- prepare (on the build machine): libhetblas.so and the test programs in .device/capi/,
# Debian bookworm's Python 3.11, NumPy, reference BLAS test programs and OpenBLAS as .deb files
# in .debs/ (git-ignored; about 20 MB). Then carry .device and .debs.
if [ "${steps[0]}" = prepare ]; then
  set -e
  cargo build --release -q -p hetblas-cli -p hetblas-capi
  mkdir -p .device/capi .device/bin .debs
  # .device/bin too: the bundled capi tests look for it beside the programs.
  cp target/release/libhetblas.so .device/capi/
  cp target/release/libhetblas.so .device/bin/
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
  exit 0
fi

# -- unpack the .debs into a private prefix (never /) ------------------------------------------
prefix=${PREFIX:-$(mktemp -d)/root}
mkdir -p "$prefix"
# Only the wheels step runs without them (it measures the machine's own Python).
have_debs=0; compgen -G "$DEBS/*.deb" >/dev/null && have_debs=1
extract() {  # dpkg-deb if present, else Python's ar + tar
  if command -v dpkg-deb >/dev/null; then dpkg-deb -x "$1" "$prefix"; return; fi
  python3 - "$1" "$prefix" <<'PY'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"!<arch>\n", "not a .deb"
pos = 8
while pos < len(data):
    name = data[pos:pos + 16].decode().strip().rstrip("/")
    size = int(data[pos + 48:pos + 58].decode().strip())
    body = data[pos + 60:pos + 60 + size]
    if name.startswith("data.tar"):
        if name.endswith(".zst"):
            import zstandard  # only if dpkg-deb is missing and the deb is zstd-compressed
            body = zstandard.ZstdDecompressor().decompressobj().decompress(body)
            tarfile.open(fileobj=io.BytesIO(body)).extractall(sys.argv[2])
        else:
            tarfile.open(fileobj=io.BytesIO(body)).extractall(sys.argv[2])
    pos += 60 + size + (size & 1)
PY
}
if ((have_debs)); then
  for d in "$DEBS"/*.deb; do extract "$d" || { say "cannot unpack $d"; exit 1; }; done
elif printf '%s\n' "${steps[@]}" | grep -qvxE 'wheels|factor|firsttouch'; then
  # Only the wheels, factor and firsttouch steps run without them (the machine's own Python).
  say "no .deb files in $DEBS: run 'bash scripts/gpu/dropin.sh prepare' on the build machine"; exit 1
fi
ma=x86_64-linux-gnu
usr=$prefix/usr/lib/$ma
openblas=$usr/openblas-pthread/libblas.so.3
libpath="$usr/openblas-pthread:$usr:$prefix/lib/$ma:$usr/lapack"
say "== hetblas drop-in runs, $(date -u +%FT%TZ), $(hostname)"
say "library $LIB; host BLAS for hetblas and the baseline: Debian OpenBLAS ($openblas; the wheels step: the wheels' own)"
say "machine profile: ${HETBLAS_PROFILE:-none given: the user cache profile if there is one, else the built-in rule}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | sed 's/^/gpu: /' | tee -a "$report"

for step in "${steps[@]}"; do
case $step in
suite)
  # The reference BLAS and CBLAS test programs: host forwarding, then the GPUs taking every
  # real GEMM (they are small: the built-in rule would keep them on the host).
  say "-- reference BLAS/CBLAS test programs"
  HETBLAS_CBLAS=$openblas BLAS_TEST_DIR=$usr/blas BLAS_LIB_PATH="$libpath:$usr/blas" \
    KEEP="$OUT/suite" BACKENDS="${BACKENDS:-cuda,hip}" \
    bash crates/capi/tests/blas-suite.sh "$LIB" host gpu 2>&1 | tee "$OUT/suite.txt" | tail -3 | tee -a "$report"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  ;;
bigindex)
  say "-- large indices (built-in rule: these skinny products stay on the host)"
  (export HETBLAS_CBLAS=$openblas LD_LIBRARY_PATH=$libpath; "$BIGINDEX" sgemm64 cblas64 dgemm negative) \
    2>&1 | tee -a "$report" || status=1
  say "-- large indices, every GEMM forced to the devices (HETBLAS_OFFLOAD_FLOPS=0)"
  (export HETBLAS_CBLAS=$openblas LD_LIBRARY_PATH=$libpath HETBLAS_OFFLOAD_FLOPS=0 HETBLAS_VERBOSE=1
   "$BIGINDEX" sgemm64 dgemm) 2>&1 | grep -v "below the offload" | tee -a "$report" || status=1
  ;;
faults)
  # How fast this host backs fresh memory (what a fresh output array costs): populating a new
  # N x N f64 array with MADV_POPULATE_WRITE on 1-16 threads, then filling it; filling a fresh
  # one (its first touches inside). Debian's NumPy, as the numpy step.
  py=$prefix/usr/bin/python3.11
  say "-- fresh memory: populate and first-touch rates"
  cat > "$OUT/faults.py" <<PY
import numpy as np, ctypes, time, threading, os
libc = ctypes.CDLL("libc.so.6", use_errno=True)
libc.madvise.argtypes=[ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
n = $N
print("THP:", open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip(), "cores", os.cpu_count())
def fresh(): return np.empty((n, n))
for th in [1, 4, 8, 16]:
    a = fresh(); base = a.ctypes.data; L = a.nbytes
    pg = 4096; s = (base + pg - 1)//pg*pg; e = (base+L)//pg*pg
    step = ((e-s)//th + pg - 1)//pg*pg
    t = time.perf_counter()
    ts = [threading.Thread(target=lambda i=i: libc.madvise(s+i*step, min(step, e-(s+i*step)), 23)) for i in range(th)]
    [x.start() for x in ts]; [x.join() for x in ts]
    dt = time.perf_counter()-t
    print(f"populate 2 GiB fresh on {th} threads: {dt*1e3:.1f} ms ({L/dt/1e9:.1f} GB/s)")
    t = time.perf_counter(); a.fill(1.0); dt=time.perf_counter()-t
    print(f"  then fill (1 thread, populated): {dt*1e3:.1f} ms")
    del a
a = fresh(); t = time.perf_counter(); a.fill(1.0); dt=time.perf_counter()-t
print(f"fill fresh 2 GiB on 1 thread (faults inside): {dt*1e3:.1f} ms")
PY
  env PYTHONHOME="$prefix/usr" PYTHONPATH="$prefix/usr/lib/python3/dist-packages" PYTHONNOUSERSITE=1 \
    LD_LIBRARY_PATH="$libpath" "$py" "$OUT/faults.py" 2>&1 | tee -a "$report"
  ;;
numpy)
  py=$prefix/usr/bin/python3.11
  pyenv=(env PYTHONHOME="$prefix/usr" PYTHONPATH="$prefix/usr/lib/python3/dist-packages"
         PYTHONNOUSERSITE=1 LD_LIBRARY_PATH="$libpath" HETBLAS_CBLAS="$openblas")
  "${pyenv[@]}" "$py" -c 'import numpy; numpy.show_config()' > "$OUT/numpy-config.txt" 2>&1 \
    || { say "NumPy does not start:"; tail -5 "$OUT/numpy-config.txt" | tee -a "$report"; status=1; continue; }
  say "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null) (defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null)); NumPy advises them: $("${pyenv[@]}" "$py" -c 'import numpy; print(numpy.core.multiarray._get_madvise_hugepage())' 2>&1)"
  say "-- NumPy $("${pyenv[@]}" "$py" -c 'import numpy; print(numpy.__version__)') (Debian), a @ b, n = $N, f64"
  cat > "$OUT/big.py" <<PY
import time, numpy as np
n = $N
rng = np.random.default_rng(1)
a = rng.standard_normal((n, n)); b = rng.standard_normal((n, n))
c = a @ b                      # warm-up (the runtime starts, buffers are registered)
ts = []
for _ in range($REPS):
    t = time.perf_counter(); c = a @ b; ts.append(time.perf_counter() - t)
i = rng.integers(0, n, 64); j = rng.integers(0, n, 64)
ref = np.einsum("ik,ki->i", a[i, :], b[:, j])
err = np.max(np.abs(c[i, j] - ref) / (np.abs(a[i, :]) @ np.abs(b[:, j])).diagonal())
t = sorted(ts)[len(ts) // 2]
print(f"numpy a @ b n={n}: median {t:.3f} s, {2*n**3/t/1e12:.2f} TFLOP/s, sampled max rel err {err:.1e}")
# The same product into one reused C: what a fresh output array costs each call.
ts = []
for _ in range($REPS):
    t = time.perf_counter(); np.matmul(a, b, out=c); ts.append(time.perf_counter() - t)
t = sorted(ts)[len(ts) // 2]
print(f"numpy matmul(a, b, out=c) n={n}, C reused: median {t:.3f} s, {2*n**3/t/1e12:.2f} TFLOP/s")
# Where a fresh C's time goes: the product into a new array (not yet freed), then freeing it.
ts = []; fs = []
for _ in range($REPS):
    o = np.empty((n, n))
    t = time.perf_counter(); np.matmul(a, b, out=o); ts.append(time.perf_counter() - t)
    t = time.perf_counter(); del o; fs.append(time.perf_counter() - t)
print(f"  fresh C: matmul into np.empty {sorted(ts)[len(ts) // 2]:.3f} s, freeing it {sorted(fs)[len(fs) // 2]*1e3:.1f} ms")
PY
  # NumPy allocates a fresh C for every product: the library stages a fresh output and
  # registers it when it comes back written. (The other ways once compared here, page-locking
  # every operand, staging every copy or every output, populating staged outputs in the
  # background, were environment variables and left the product; their figures are in
  # docs/data/h200-2026-11-23-dropin-numpy-variants.txt.)
  for variant in ${VARIANTS:-default}; do
    case $variant in
      default) varenv=() ;;
      trace) varenv=(HETBLAS_TRACE="$OUT/trace-numpy") ; mkdir -p "$OUT/trace-numpy" ;;
      *) say "VARIANTS: unknown $variant (default, trace)"; status=1; continue ;;
    esac
    say "numpy: $variant ${varenv[*]}"
    "${pyenv[@]}" "${varenv[@]}" LD_PRELOAD="$LIB" HETBLAS_VERBOSE=1 "$py" "$OUT/big.py" \
      2> "$OUT/big-$variant.err" | tee -a "$report"
    grep -m3 "runtime started\|devices \[\|failed" "$OUT/big-$variant.err" | tee -a "$report"
  done
  say "-- hetblas CLI, the same GEMM"
  (export LD_LIBRARY_PATH=$libpath HETBLAS_CBLAS=$openblas; "$CLI" gemm --size "$N" --dtype f64 --reps "$REPS") 2>&1 | tail -3 | tee -a "$report"
  cat > "$OUT/small.py" <<PY
import time, numpy as np
rng = np.random.default_rng(2)
sizes = [8, 16, 32, $SMALL]
mats = [(rng.standard_normal((s, s)), rng.standard_normal((s, s))) for s in sizes]
loop = $LOOP
for a, b in mats: a @ b
t = time.perf_counter()
for i in range(loop):
    a, b = mats[i % len(mats)]
    c = a @ b
print(f"{time.perf_counter() - t:.4f}")
PY
  say "-- $LOOP small products (n = 8, 16, 32, $SMALL in turn): seconds, without / with the preload ($RUNS runs each, alternating)"
  base=(); pre=()
  for _ in $(seq "$RUNS"); do
    base+=("$("${pyenv[@]}" "$py" "$OUT/small.py")")
    pre+=("$("${pyenv[@]}" LD_PRELOAD="$LIB" "$py" "$OUT/small.py")")
  done
  say "without: ${base[*]}   with: ${pre[*]}"
  python3 -c "import sys; b=min(map(float,sys.argv[1].split())); p=min(map(float,sys.argv[2].split())); print(f'best of {len(sys.argv[1].split())}: {b:.4f} s vs {p:.4f} s: the preload costs {100*(p/b-1):+.1f}%')" "${base[*]}" "${pre[*]}" | tee -a "$report"
  ;;
devptr)
  # A CUDA program's cuMemAlloc'd A, B, C handed to dgemm_: computed where they live (GPU 0).
  say "-- device pointers given to dgemm_ (HETBLAS_REQUIRE=cuda: no GPU is a failure)"
  (export HETBLAS_CBLAS=$openblas LD_LIBRARY_PATH=$libpath HETBLAS_REQUIRE=cuda HETBLAS_VERBOSE=1
   "$DEVPTR") 2>&1 | tee -a "$report"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  ;;
wheels)
  # Issue 53's acceptance points 1-4 on the machine's own pip NumPy 2.x and SciPy, no shim:
  # each measurement without, then with the preload (crates/bench/python/dropin.py), the CLI's
  # rate for the same GEMMs, and dropin.py's report. Records: $OUT/accept.jsonl; routing logs:
  # $OUT/accept-*.err (HETBLAS_VERBOSE=1, with the exit summary).
  py=${PY:-python3}
  bench=$root/crates/bench/python/dropin.py
  jl=$OUT/accept.jsonl
  rm -f "$jl"
  if ! "$py" -c 'import numpy, scipy, sys; sys.exit(int(numpy.__version__.split(".")[0]) < 2)' 2>/dev/null; then
    say "wheels: $py has no NumPy 2.x and SciPy (pip install numpy scipy)"; status=1; continue
  fi
  say "-- acceptance on $("$py" -c 'import numpy, scipy; print(f"NumPy {numpy.__version__}, SciPy {scipy.__version__}")') ($py), $(nproc) cores"
  # The model needs a calibrated profile: PROFILE when given, else the first that matches these
  # devices of a warm machine's calibrations and docs/profiles (the built-in rule without one).
  if [ -z "${HETBLAS_PROFILE:-}" ]; then
    for f in /tmp/hetblas-gpu/profile-*.json "$root"/docs/profiles/nvidia-h200-x1*.json; do
      if [ -f "$f" ] && HETBLAS_PROFILE=$f timeout 120 "$CLI" devices 2>/dev/null | grep -q "calibrated profile"; then
        export HETBLAS_PROFILE=$f; break
      fi
    done
  fi
  say "   profile: ${HETBLAS_PROFILE:-none matches: the built-in rule}"
  pre=(env LD_PRELOAD="$LIB" HETBLAS_VERBOSE=1)
  t0=$SECONDS
  # 1. a @ b, fresh output, REPS after a warm-up
  "$py" "$bench" matmul --sizes "$SIZES" --reps "$REPS" --json "$jl" >/dev/null || status=1
  "${pre[@]}" "$py" "$bench" matmul --sizes "$SIZES" --reps "$REPS" --json "$jl" \
    >/dev/null 2>"$OUT/accept-matmul.err" || status=1
  cli=()
  for n in ${SIZES//,/ }; do
    [ "$n" -ge 4096 ] || continue
    g=$("$CLI" gemm --size "$n" --dtype f64 --reps "$REPS" 2>&1 | grep -o '[0-9.]* GFLOP/s' | tail -1 | cut -d' ' -f1)
    [ -n "$g" ] && cli+=("$n=$g")
  done
  say "   CLI GFLOP/s: ${cli[*]:-none} ($((SECONDS - t0)) s so far)"
  # 2. scipy.linalg.blas.dgemm at N
  "${pre[@]}" "$py" "$bench" scipy-dgemm --size "$N" --reps 3 --json "$jl" >/dev/null 2>"$OUT/accept-scipy.err" || status=1
  # 3. LOOP small products, RUNS processes each way, alternating (each the median of 5 loops),
  # every process on the same core (PIN_CPU): on the H200 host the same C loop of small DGEMMs
  # ran 0.22 or 0.36 s by process, whatever the library (2026-11-30 15:40Z), so unpinned
  # processes measure where they land. The summary's routing line comes from one more run.
  pin=()
  command -v taskset >/dev/null && pin=(taskset -c "${PIN_CPU:-$(($(nproc) - 1))}")
  for _ in $(seq "$RUNS"); do
    "${pin[@]}" "$py" "$bench" small --loop "$LOOP" --max "$SMALL" --json "$jl" >/dev/null || status=1
    env LD_PRELOAD="$LIB" "${pin[@]}" "$py" "$bench" small --loop "$LOOP" --max "$SMALL" --json "$jl" \
      >/dev/null || status=1
  done
  env LD_PRELOAD="$LIB" HETBLAS_SUMMARY=1 "$py" "$bench" small --loop "$LOOP" --max "$SMALL" --reps 1 \
    >/dev/null 2>"$OUT/accept-small.err" || status=1
  # 4. MIXED seeded mixed calls
  "$py" "$bench" mixed --calls "${MIXED:-200}" --seed "${SEED:-1}" --max "${MIXED_MAX:-16384}" --json "$jl" >/dev/null || status=1
  "${pre[@]}" "$py" "$bench" mixed --calls "${MIXED:-200}" --seed "${SEED:-1}" --max "${MIXED_MAX:-16384}" --json "$jl" \
    >/dev/null 2>"$OUT/accept-mixed.err" || status=1
  "$py" "$bench" report "$jl" --cli "${cli[@]}" | tee -a "$report"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  for f in matmul scipy small mixed; do
    grep -h "hetblas summary" "$OUT/accept-$f.err" 2>/dev/null | tail -1 | cut -c1-400 | sed "s/^/   $f: /" | tee -a "$report"
  done
  say "   wheels step: $((SECONDS - t0)) s"
  ;;
firsttouch)
  # The floor of a call whose output is fresh: first-touch faults of new memory by thread
  # count, with and without transparent huge pages (crates/bench/host/first_touch.c).
  gcc -O2 -pthread -o "$OUT/first_touch" "$root/crates/bench/host/first_touch.c" || { status=1; continue; }
  say "-- first touch of fresh memory ($(nproc) cores; THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null))"
  "$OUT/first_touch" 128 512 2048 | tee -a "$report" || status=1
  ;;
factor)
  # Issue 54's point 2: pip NumPy/SciPy's cholesky, solve and lu_factor at N without the
  # preload, then with it, each function in a process of its own (the first call of a process
  # pays the runtime's start, as a user's script does); every residual checked.
  py=${PY:-python3}
  npf=$root/crates/bench/python/np_factor.py
  say "-- factorizations of pip NumPy/SciPy at n = $N"
  timeout 300 "$py" "$npf" "$N" >"$OUT/np-plain.json" 2>"$OUT/np-plain.err" || status=1
  for f in cholesky solve lu_factor; do
    env LD_PRELOAD="$LIB" HETBLAS_VERBOSE=1 timeout 300 "$py" "$npf" "$N" "$f" \
      >"$OUT/np-preload-$f.json" 2>"$OUT/np-preload-$f.err" || status=1
  done
  "$py" - "$OUT/np-plain.json" "$OUT"/np-preload-*.json <<'PY' | tee -a "$report"
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
    print(f"   {k}: without {p['seconds'][k]:.3f} s, with the preload {q['seconds'][k]:.3f} s: "
          f"{p['seconds'][k] / q['seconds'][k]:.1f}x; residual {r:.2e} {'ok' if ok else 'FAILED'}")
sys.exit(1 if bad else 0)
PY
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  grep -hE "potrf|getrf|gesv|summary" "$OUT"/np-preload-*.err | cut -c1-400 | sed "s/^/   /" | tee -a "$report"
  ;;
*) say "unknown step $step"; status=1 ;;
esac
done
say "== done, status $status"
exit $status
