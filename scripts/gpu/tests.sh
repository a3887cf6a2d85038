#!/usr/bin/env bash
# Every bundled test binary with HETBLAS_REQUIRE=cuda (a missing GPU fails instead of skipping),
# then the HIP backend's tests through the HIP-on-CUDA shim with HETBLAS_REQUIRE=hip. The
# ignored tests run too: they are the timing claims (`timing_*`: wall time against the model,
# the simulator or calibrated rates, on emulated devices) that CI, on a shared 2-core machine,
# does not check; this machine is idle.
#
#   bash scripts/gpu/tests.sh [options] [-- test-filter...]
#     --no-hip           skip the HIP part
#     --hip-only         only the HIP part
#     --hip-tests LIST   test targets run through the shim (default
#                        conformance,no_device,pinning,thread_device; "all" runs every binary)
#     --require B        backend the first part requires (default cuda)
#     --no-timing        leave the ignored timing tests out
#     plus env.sh's options (--out, --timeout, --dry-run)
# Per-binary logs in $OUT/tests/; a summary of passed and failed tests at the end. With two or
# more GPUs the HIP suite sees two HIP GPUs and runs its multi-GPU cases too.

# shellcheck source=scripts/gpu/env.sh
source "$(dirname "$0")/env.sh"
CUDA_PART=1 HIP_PART=1 HIP_TESTS=conformance,no_device,pinning,thread_device REQUIRE=cuda FILTER=()
TIMING=(--include-ignored)
while (($#)); do
    case $1 in
        --no-hip) HIP_PART=0; shift ;;
        --hip-only) CUDA_PART=0; shift ;;
        --hip-tests) HIP_TESTS=$2; shift 2 ;;
        --require) REQUIRE=$2; shift 2 ;;
        --no-timing) TIMING=(); shift ;;
        --) shift; FILTER=("$@"); break ;;
        -h | --help) usage 0 ;;
        *) common_option "$@" || usage; shift "$SHIFT" ;;
    esac
done
start tests
mkdir -p "$OUT/tests"
PASSED=0 FAILED_TESTS=0

# run_tests LABEL BINARY...: each binary one test at a time; counts tests passed and failed.
# The conformance binaries run a second time with the default test threads: their tests, each
# with its own runtime, then call the GPU at once (concurrent callers; two runtimes' page-locked
# buffers sharing pages).
run_tests() {
    local label=$1 t name p f mode log threads
    shift
    for t in "$@"; do
        name=$(basename "$t")
        for mode in one concurrent; do
            log="$OUT/tests/$label-$name.log" threads=(--test-threads=1)
            if [[ $mode == concurrent ]]; then
                [[ $name == conformance__* ]] || continue
                log="$OUT/tests/$label-$name-concurrent.log" threads=()
            fi
            run --log "$log" --grep "^test result|found hip|device tests" \
                "$t" "${threads[@]}" "${TIMING[@]}" "${FILTER[@]}"
            ((DRY_RUN)) && continue
            p=$(grep -oE "[0-9]+ passed" "$log" | awk '{ s += $1 } END { print s + 0 }')
            f=$(grep -oE "[0-9]+ failed" "$log" | awk '{ s += $1 } END { print s + 0 }')
            PASSED=$((PASSED + p)) FAILED_TESTS=$((FAILED_TESTS + f))
        done
    done
}

shopt -s nullglob
if ((CUDA_PART)); then
    bins=("$TESTS"/*)
    ((${#bins[@]})) || { echo "no test binaries in $TESTS"; FAILED=$((FAILED + 1)); }
    echo "== ${#bins[@]} test binaries, HETBLAS_REQUIRE=$REQUIRE"
    HETBLAS_REQUIRE=$REQUIRE run_tests "$REQUIRE" "${bins[@]}"
fi
if ((HIP_PART)); then
    echo "== HIP backend through the HIP-on-CUDA shim, HETBLAS_REQUIRE=hip"
    if build_hip_shim; then
        bins=()
        if [[ $HIP_TESTS == all ]]; then
            bins=("$TESTS"/*)
        else
            for target in ${HIP_TESTS//,/ }; do bins+=("$TESTS/${target}__"*); done
        fi
        HETBLAS_REQUIRE=hip run_tests hip "${bins[@]}"
    fi
fi
echo "== tests: $PASSED passed, $FAILED_TESTS failed"
finish
