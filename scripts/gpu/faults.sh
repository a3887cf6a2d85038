#!/usr/bin/env bash
# A GPU made to fail mid-call (injected in the GPU layer, `hetblas gemm --fault`): a DGEMM of
# SIZE^3 on every GPU, fault-free first, then with GPU DEV failing in the first timed
# repetition; the recovered call is checked and timed against the fault-free ones, and the next
# repetitions run on the GPUs left. Then one out-of-core call on GPU 0 with a memory limit of
# 1/8 of the problem's footprint.
#
#   bash scripts/gpu/faults.sh [options]
#     --size N           the GEMM (default 16384)
#     --device D         the GPU that fails, a `hetblas devices` index or label (default cuda:1)
#     --at OP:N          its N-th kernel or copy, counted from the first timed repetition
#                        (default kernel:12: about a third of its share at tile 4096)
#     --kind K           error | lost | oom | panic (default lost)
#     --ooc-size N       the out-of-core GEMM (default 32768; 0 skips it)
#     plus env.sh's options (--out, --profile, --timeout, --dry-run)

# shellcheck source=scripts/gpu/env.sh
source "$(dirname "$0")/env.sh"
SIZE=16384 DEV=cuda:1 AT=kernel:12 KIND=lost OOC=32768
while (($#)); do
    case $1 in
        --size) SIZE=$2; shift 2 ;;
        --device) DEV=$2; shift 2 ;;
        --at) AT=$2; shift 2 ;;
        --kind) KIND=$2; shift 2 ;;
        --ooc-size) OOC=$2; shift 2 ;;
        -h | --help) usage 0 ;;
        *) common_option "$@" || usage; shift "$SHIFT" ;;
    esac
done
start faults
use_profile cuda
run "$H" devices
echo "== fault-free"
run "$H" gemm --size "$SIZE" --reps 3 --check
echo "== $DEV fails at $AT ($KIND) in the first timed repetition"
run "$H" gemm --size "$SIZE" --reps 3 --check --fault "dev=$DEV,at=$AT,kind=$KIND"
if ((OOC > 0)); then
    echo "== out-of-core: ${OOC}^3 on GPU 0 under 1/8 of its footprint"
    run "$H" gemm --size "$OOC" --reps 1 --check --devices cuda:0 \
        --memory-limit $((3 * OOC * OOC * 8 / 8))
fi
finish
