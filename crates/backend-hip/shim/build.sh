#!/usr/bin/env bash
# Builds the HIP-on-CUDA test shim (a test harness, not a product path: see README.md):
#   OUT/libamdhip64.so.6 (+ libamdhip64.so)  the HIP runtime functions hetblas loads, on cudart
#   OUT/libhipblas.so.2  (+ libhipblas.so)   the hipBLAS functions hetblas loads, on cuBLAS
#   OUT/librocsolver.so.0 (+ librocsolver.so, and librocblas.so.4 / librocblas.so naming the
#                                            same file) the rocSOLVER functions hetblas loads
#                                            and the rocBLAS handle functions they take, on
#                                            cuSOLVER (skipped, with a message, without it)
#
# Usage:
#   bash build.sh [OUT]      build (default OUT: /tmp/hipshim); needs a C compiler and the CUDA
#                            runtime + cuBLAS headers and libraries (toolkit or pip wheels)
#   bash build.sh --check    syntax-check hip_shim.c without any CUDA (local declarations)
# Then: HETBLAS_HIP_LIB_DIR=OUT HETBLAS_REQUIRE=hip cargo test -p hetblas-hip (or the test
# binaries built elsewhere).
#
# Where CUDA is looked for, in order: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda, /usr/local/cuda-*,
# /opt/cuda, /usr, and the nvidia pip wheels of Python environments (site-packages/nvidia/
# {cu13,cu12,cuda_runtime,cublas,cusolver,cusparse,nvjitlink}/{include,lib}) under
# /opt/*/.venv, /usr/lib/python3*, and /usr/local/lib/python3*. CC picks the compiler (default
# gcc, else cc).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC="$HERE/hip_shim.c"
CC=${CC:-$(command -v gcc || command -v cc || true)}
[ -n "$CC" ] || { echo "build.sh: no C compiler (set CC)" >&2; exit 1; }
CFLAGS=(-std=c11 -O2 -fPIC -Wall -Wextra -fvisibility=hidden)

if [ "${1:-}" = "--check" ]; then
    for part in RUNTIME BLAS SOLVER; do
        "$CC" "${CFLAGS[@]}" -Werror -fsyntax-only -DHIPSHIM_SYNTAX_ONLY -DHIPSHIM_$part "$SRC"
        echo "hip_shim.c ($part part): syntax OK (local declarations)"
    done
    exit 0
fi

OUT=${1:-/tmp/hipshim}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# Candidate roots, each possibly holding include/ and lib*/ (toolkits and pip wheels alike).
roots=()
for v in "${CUDA_HOME:-}" "${CUDA_PATH:-}"; do [ -n "$v" ] && roots+=("$v"); done
roots+=(/usr/local/cuda /usr/local/cuda-* /opt/cuda)
roots+=(/usr/local/cuda/targets/x86_64-linux /usr/local/cuda/targets/sbsa-linux)
for sp in /opt/*/.venv/lib/python3*/site-packages /opt/*/lib/python3*/site-packages \
          /usr/lib/python3*/dist-packages /usr/local/lib/python3*/dist-packages \
          /usr/local/lib/python3*/site-packages; do
    for w in cu13 cu12 cuda_runtime cublas cusolver cusparse nvjitlink; do
        [ -d "$sp/nvidia/$w" ] && roots+=("$sp/nvidia/$w")
    done
done
roots+=(/usr)

# find_file NAME... : the first existing ROOT/{include,lib64,lib,lib/x86_64-linux-gnu}/NAME
find_file() {
    local r d n
    for n in "$@"; do
        for r in "${roots[@]}"; do
            [ -d "$r" ] || continue
            for d in include lib64 lib lib/x86_64-linux-gnu lib/aarch64-linux-gnu; do
                if [ -e "$r/$d/$n" ]; then echo "$r/$d/$n"; return 0; fi
            done
        done
    done
    return 1
}

need() { # need WHAT NAME...
    local what=$1; shift
    local f
    if ! f=$(find_file "$@"); then
        echo "build.sh: $what not found (looked for $* under: ${roots[*]})" >&2
        echo "build.sh: set CUDA_HOME to a CUDA toolkit, or install the nvidia pip wheels" >&2
        exit 1
    fi
    echo "$f"
}

CUDART=$(need "CUDA runtime library" libcudart.so libcudart.so.13 libcudart.so.12)
CUBLAS=$(need "cuBLAS library" libcublas.so libcublas.so.13 libcublas.so.12)
CUBLASLT=$(find_file libcublasLt.so libcublasLt.so.13 libcublasLt.so.12 || true)
CUDART_DIR=$(dirname "$CUDART")
CUBLAS_DIR=$(dirname "$CUBLAS")
# cuSOLVER 12 (CUDA 13) or 11 (CUDA 12); optional: without it the solver part is not built.
CUSOLVER=$(find_file libcusolver.so libcusolver.so.12 libcusolver.so.11 || true)

# Headers: the toolkit's (or the wheels'). cuda_runtime_api.h needs crt/host_defines.h, which
# the runtime wheel alone lacks. Without a complete set, the shim's own ABI-checked
# declarations are used instead (-DHIPSHIM_LOCAL_DECLS).
RT_H=$(find_file cuda_runtime_api.h || true)
CRT_H=$(find_file crt/host_defines.h || true)
BLAS_H=$(find_file cublas_v2.h || true)
INCS=()
if [ -n "$RT_H" ] && [ -n "$CRT_H" ] && [ -n "$BLAS_H" ]; then
    INCS=(-I"$(dirname "$RT_H")" -I"$(dirname "$(dirname "$CRT_H")")" -I"$(dirname "$BLAS_H")")
    HEADERS="cuda_runtime_api.h $RT_H, crt/host_defines.h $CRT_H, cublas_v2.h $BLAS_H"
else
    INCS=(-DHIPSHIM_LOCAL_DECLS)
    HEADERS="the shim's local declarations (found: cuda_runtime_api.h ${RT_H:-no}, crt/host_defines.h ${CRT_H:-no}, cublas_v2.h ${BLAS_H:-no})"
fi

echo "build.sh: compiler   $CC ($("$CC" --version | head -n1))"
echo "build.sh: headers    $HEADERS"
echo "build.sh: cudart     $CUDART"
echo "build.sh: cublas     $CUBLAS"
if [ -n "$CUBLASLT" ]; then
    echo "build.sh: cublasLt   $CUBLASLT"
else
    echo "build.sh: cublasLt   not found (libcublas resolves it through its own search path)"
fi
echo "build.sh: cusolver   ${CUSOLVER:-not found (no librocsolver shim)}"

# Libraries are linked by full path (no -dev symlinks needed); --no-as-needed keeps cublasLt,
# so libcublas finds it already loaded; DT_RPATH (not RUNPATH) lets the CUDA libraries' own
# dependencies be found in the same directories.
LINK=(-shared -Wl,--no-as-needed -Wl,--disable-new-dtags
      -Wl,-rpath,"$CUDART_DIR" -Wl,-rpath,"$CUBLAS_DIR")

"$CC" "${CFLAGS[@]}" -DHIPSHIM_RUNTIME "${INCS[@]}" "$SRC" -o "$OUT/libamdhip64.so.6" \
    "${LINK[@]}" -Wl,-soname,libamdhip64.so.6 "$CUDART"
ln -sf libamdhip64.so.6 "$OUT/libamdhip64.so"

"$CC" "${CFLAGS[@]}" -DHIPSHIM_BLAS "${INCS[@]}" "$SRC" -o "$OUT/libhipblas.so.2" \
    "${LINK[@]}" -Wl,-soname,libhipblas.so.2 ${CUBLASLT:+"$CUBLASLT"} "$CUBLAS" "$CUDART"
ln -sf libhipblas.so.2 "$OUT/libhipblas.so"

BUILT="$OUT/libamdhip64.so.6 and $OUT/libhipblas.so.2"
if [ -n "$CUSOLVER" ]; then
    # The real headers need cusolverDn.h beside the others; else the local declarations.
    SOLVER_H=$(find_file cusolverDn.h || true)
    SOLVER_INCS=("${INCS[@]}")
    if [ "${INCS[0]}" != -DHIPSHIM_LOCAL_DECLS ] && [ -z "$SOLVER_H" ]; then
        SOLVER_INCS=(-DHIPSHIM_LOCAL_DECLS)
    elif [ -n "$SOLVER_H" ] && [ "${INCS[0]}" != -DHIPSHIM_LOCAL_DECLS ]; then
        SOLVER_INCS+=(-I"$(dirname "$SOLVER_H")")
    fi
    CUSOLVER_DIR=$(dirname "$CUSOLVER")
    # libcusolver needs cuSPARSE and nvJitLink, which its wheel's neighbours hold.
    EXTRA_RPATH=()
    for dep in libcusparse.so.12 libcusparse.so.11 libnvJitLink.so.13 libnvJitLink.so.12; do
        f=$(find_file "$dep" || true)
        [ -n "$f" ] && EXTRA_RPATH+=(-Wl,-rpath,"$(dirname "$f")")
    done
    "$CC" "${CFLAGS[@]}" -DHIPSHIM_SOLVER "${SOLVER_INCS[@]}" "$SRC" -o "$OUT/librocsolver.so.0" \
        "${LINK[@]}" -Wl,-rpath,"$CUSOLVER_DIR" "${EXTRA_RPATH[@]}" \
        -Wl,-soname,librocsolver.so.0 "$CUSOLVER" "$CUDART"
    ln -sf librocsolver.so.0 "$OUT/librocsolver.so"
    # One file serves both names: the rocBLAS handle functions live beside rocSOLVER's.
    ln -sf librocsolver.so.0 "$OUT/librocblas.so.4"
    ln -sf librocsolver.so.0 "$OUT/librocblas.so"
    BUILT="$BUILT, $OUT/librocsolver.so.0 (+ librocblas.so.4)"
else
    rm -f "$OUT/librocsolver.so.0" "$OUT/librocsolver.so" "$OUT/librocblas.so.4" "$OUT/librocblas.so"
fi
echo "build.sh: built $BUILT"
echo "build.sh: use   HETBLAS_HIP_LIB_DIR=$OUT"
