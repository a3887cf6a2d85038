# shellcheck shell=bash disable=SC2034 # its variables are read by the scripts that source it
# Shared helpers of the GPU scripts (sourced by tests.sh, compare.sh, validate.sh and mpi.sh;
# not run by itself).
#
# Binaries: the GPU machine needs no Rust. Build the bundle on a machine with Rust (the project's
# device-bundle tool: test binaries into .device/tests, programs into .device/bin) and send the
# repository with .device/ along. HETBLAS_BIN_DIR and HETBLAS_TESTS_DIR point elsewhere (e.g.
# target/release on a GPU machine that has Rust).
#
# Options every script takes (after its own):
#   --out DIR         where logs, CSVs, traces and profiles go (default: $OUT, else
#                     /tmp/hetblas-gpu/<UTC time>)
#   --profile SPEC    the machine profile the models use:
#                       auto   (default) the first that matches this machine's devices of
#                              $HETBLAS_PROFILE, a profile calibrated by an earlier call on this
#                              (warm) machine, docs/profiles/*.json; else a full calibration
#                       full | quick   calibrate now (timed), into DIR/profile[-TAG].json;
#                              full first re-checks a previous profile of the same hardware
#                              (cache, docs/profiles) and reuses it when it holds (FRESH=1:
#                              always measure everything)
#                       none   leave HETBLAS_PROFILE as it is
#                       PATH   this file (a warning if it does not match the devices)
#   --hugepages       back the harness's host operands with transparent huge pages
#                     (HETBLAS_BENCH_HUGEPAGES=1)
#   --timeout S       time limit of each command (default 300 s)
#   --dry-run         print the commands, run nothing
# Environment variables (HETBLAS_CUDA_DEVICES, HETBLAS_BACKENDS, ...) pass through as usual.

set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
BIN=${HETBLAS_BIN_DIR:-$ROOT/.device/bin}
TESTS=${HETBLAS_TESTS_DIR:-$ROOT/.device/tests}
H=$BIN/hetblas
# Kept between calls while the machine stays warm (calibrated profiles, the HIP shim).
CACHE=/tmp/hetblas-gpu
SHIM_DIR=$CACHE/hipshim
PROFILE_SPEC=auto
TIMEOUT=300
DRY_RUN=0
FAILED=0
# Leave NVLink multicast off on the multi-GPU machines.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export RUST_BACKTRACE=1

# common_option ARGS...: takes one of the options above from the front of ARGS; sets SHIFT to the
# number of words used. Returns 1 for an option it does not know.
common_option() {
    case $1 in
        --hugepages) export HETBLAS_BENCH_HUGEPAGES=1; SHIFT=1; return ;;
        --dry-run) DRY_RUN=1; SHIFT=1; return ;;
        --out | --profile | --timeout) ;;
        *) echo "unknown option: $1" >&2; return 1 ;;
    esac
    (($# >= 2)) || { echo "$1 needs a value" >&2; exit 2; }
    case $1 in
        --out) OUT=$2 ;;
        --profile) PROFILE_SPEC=$2 ;;
        --timeout) TIMEOUT=$2 ;;
    esac
    SHIFT=2
}

# usage [STATUS]: prints the calling script's help (its header comment) and exits.
usage() {
    sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
    exit "${1:-2}"
}

# start NAME: the output directory, a log of everything printed ($OUT/NAME.log), the machine.
start() {
    OUT=${OUT:-$CACHE/$(date -u +%Y%m%dT%H%M%SZ)}
    mkdir -p "$OUT" "$CACHE" || exit 1
    OUT=$(cd "$OUT" && pwd)
    exec > >(tee -a "$OUT/$1.log") 2>&1
    echo "== $1 $(date -u +%FT%TZ), results in $OUT"
    if ((!DRY_RUN)) && [[ ! -x $H ]]; then
        echo "no $H: build the bundle (device-bundle) and send .device/ along, or set HETBLAS_BIN_DIR"
        exit 1
    fi
    record_machine
}

# The machine: GPUs, links, CPU, memory, huge pages, libraries ($OUT/machine.txt; a summary here).
# Sets NGPU. Makes cuBLAS loadable for the baselines when only a pip wheel has it.
record_machine() {
    NGPU=0
    if command -v nvidia-smi >/dev/null; then
        NGPU=$(nvidia-smi -L | grep -c '^GPU')
    elif ((DRY_RUN)); then
        NGPU=8
    fi
    {
        nvidia-smi --query-gpu=index,name,memory.total,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
        ((NGPU > 1)) && nvidia-smi topo -m
        uname -r
        lscpu | grep -E "Model name|Socket|NUMA|^CPU\(s\)|Thread\(s\) per core|Core\(s\) per socket"
        free -g | head -2
        echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
        ldconfig -p | grep -E "libcublas.so|libcuda.so" | head -4
    } >"$OUT/machine.txt" 2>&1
    if ! ldconfig -p 2>/dev/null | grep -q "libcublas.so.1[23]"; then
        local d
        d=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null)
        if [[ -n $d ]]; then
            export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
            echo "cuBLAS from the Python wheel: $d" | tee -a "$OUT/machine.txt"
        fi
    fi
    echo "machine: $NGPU GPU(s), $(nproc) cores; $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | xargs)"
}

# run [--limit S] [--log FILE] [--grep RE] CMD...: prints the command, runs it under a time limit
# and prints its wall time; with --log the whole output goes to FILE and only the lines matching
# RE (and any error) are shown. A failure is counted and reported, and the script goes on.
run() {
    local limit=$TIMEOUT log="" re="" rc=0 t0 tmp
    while (($#)); do
        case $1 in
            --limit) limit=$2; shift 2 ;;
            --log) log=$2; shift 2 ;;
            --grep) re=$2; shift 2 ;;
            *) break ;;
        esac
    done
    echo "+ $*"
    ((DRY_RUN)) && return 0
    tmp=${log:-$(mktemp)}
    t0=$(date +%s.%N)
    timeout "$limit" "$@" >"$tmp" 2>&1 || rc=$?
    if [[ -n $re ]]; then
        grep -E "$re|rror|panic|FAIL" "$tmp"
    else
        cat "$tmp"
    fi
    echo "  (wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s${log:+, log $log})"
    [[ -z $log ]] && rm -f "$tmp"
    if ((rc)); then
        FAILED=$((FAILED + 1))
        echo "!! exit $rc$( ((rc == 124)) && echo " (time limit ${limit} s)"): $*"
        [[ -n $re ]] && tail -5 "$tmp" 2>/dev/null
    fi
    return "$rc"
}

# profile_accepted FILE: whether the runtime takes FILE for the devices it sees now.
profile_accepted() {
    [[ -f $1 ]] && HETBLAS_PROFILE=$1 timeout 120 "$H" devices 2>/dev/null | grep -q "calibrated profile"
}

# calibrate_into FILE [quick]: a timed calibration of the devices seen now (or the re-check of a
# previous profile of the same hardware, see below). With more than one
# GPU the host links' slowdowns under each other are not measured (as for every multi-GPU
# profile so far; CROSS_LINKS=1 measures them).
calibrate_into() {
    local args=(calibrate --out "$1") f
    [[ ${2:-} == quick ]] && args+=(--quick)
    # A previous profile of the same hardware is re-checked and reused when it holds
    # (FRESH=1: always calibrate in full).
    if [[ ${FRESH:-0} == 1 ]]; then
        args+=(--fresh)
    else
        for f in "$CACHE"/profile-*.json "$ROOT"/docs/profiles/*.json; do
            [[ -f $f ]] && args+=(--reuse "$f")
        done
    fi
    ((NGPU > 1)) && [[ ${CROSS_LINKS:-0} != 1 ]] && args+=(--no-cross-links)
    run --limit "${CALIBRATE_LIMIT:-300}" --log "${1%.json}.calibrate.log" \
        --grep "calibrat|gemm|GB/s|fold|wrote|profile|phases" "$H" "${args[@]}"
    ((DRY_RUN)) || [[ ! -f $1 ]] || cp "$1" "$CACHE/$(basename "$1")"
}

# pick_profile TAG: prints the path of the profile to use for the devices seen now (see
# --profile); calibrates into $OUT/profile-TAG.json when it has to. Progress goes to stderr.
pick_profile() {
    local tag=$1 f file=$OUT/profile-$1.json
    case $PROFILE_SPEC in
        none) echo "${HETBLAS_PROFILE:-}"; return ;;
        full | quick) calibrate_into "$file" "$PROFILE_SPEC" >&2; echo "$file"; return ;;
        auto)
            ((DRY_RUN)) && { echo "$file"; return; }
            for f in ${HETBLAS_PROFILE:-} "$CACHE"/profile-*.json "$ROOT"/docs/profiles/*.json; do
                if profile_accepted "$f"; then
                    echo "profile ($tag): $f" >&2
                    echo "$f"
                    return
                fi
            done
            echo "profile ($tag): none matches these devices; full calibration" >&2
            calibrate_into "$file" >&2
            echo "$file" ;;
        *)
            if ((!DRY_RUN)) && ! profile_accepted "$PROFILE_SPEC"; then
                echo "warning: $PROFILE_SPEC does not match these devices: built-in tile rule" >&2
            fi
            echo "$PROFILE_SPEC" ;;
    esac
}

# use_profile [TAG]: picks the profile for the devices seen now and exports it.
use_profile() {
    local p
    p=$(pick_profile "${1:-cuda}")
    [[ -n $p ]] && export HETBLAS_PROFILE=$p
    ((DRY_RUN)) && return
    if [[ -n $p && ! -f $p ]]; then
        echo "!! no profile at $p"
        FAILED=$((FAILED + 1))
    fi
    "$H" devices 2>&1 | grep -E "^model" | sed 's/^/  /'
}

# build_hip_shim: the HIP-on-CUDA test shim (HIP runtime on cudart, hipBLAS on cuBLAS, rocSOLVER
# on cuSOLVER), built with the C compiler and the CUDA libraries of the GPU machine (again when
# its sources are newer than the build kept on a warm machine); exports HETBLAS_HIP_LIB_DIR.
build_hip_shim() {
    local build built=$SHIM_DIR/libhipblas.so.2
    build=$(find "$ROOT/crates" -path "*/shim/build.sh" | head -1)
    [[ -n $build ]] || { echo "no crates/*/shim/build.sh"; FAILED=$((FAILED + 1)); return 1; }
    if [[ ! -f $built || $build -nt $built || ${build%build.sh}hip_shim.c -nt $built ]]; then
        run --limit 180 --grep "built|use" bash "$build" "$SHIM_DIR" || return 1
    fi
    export HETBLAS_HIP_LIB_DIR=$SHIM_DIR
}

# finish: the number of failed commands; exits non-zero when any failed.
finish() {
    if ((FAILED)); then
        echo "== $FAILED command(s) FAILED (see above); results in $OUT"
    else
        echo "== all commands succeeded; results in $OUT"
    fi
    exit $((FAILED > 0))
}
