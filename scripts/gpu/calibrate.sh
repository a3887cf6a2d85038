#!/usr/bin/env bash
# A timed calibration of this machine (`hetblas calibrate`), and a check that the next process
# loads the profile.
#
#   bash scripts/gpu/calibrate.sh [options]
#     --quick            the few-second calibration (fewer, smaller points)
#     --fresh            always calibrate in full: no reuse of a previous profile of the same
#                        hardware (by default one from the cache or docs/profiles is
#                        re-checked in seconds and reused when it holds, or rescaled when
#                        its points moved by no more than 50%)
#     --cross-links      also the slowdown of each host link under every other one (measured
#                        anyway with one GPU; off by default with more)
#     --mixed            the mixed-vendor device set: CUDA GPU0 + HIP GPU1 through the
#                        HIP-on-CUDA shim (needs two GPUs)
#     plus env.sh's options (--out, --timeout, --dry-run)
# The profile goes to $OUT/profile-{cuda,mixed}.json, and is kept on the machine while it stays
# warm: later calls with `--profile auto` find it.

# shellcheck source=scripts/gpu/env.sh
source "$(dirname "$0")/env.sh"
MODE=full TAG=cuda
while (($#)); do
    case $1 in
        --quick) MODE=quick; shift ;;
        --fresh) export FRESH=1; shift ;;
        --cross-links) export CROSS_LINKS=1; shift ;;
        --mixed) TAG=mixed; shift ;;
        -h | --help) usage 0 ;;
        *) common_option "$@" || usage; shift "$SHIFT" ;;
    esac
done
start calibrate
if [[ $TAG == mixed ]]; then
    build_hip_shim || finish
    export HETBLAS_CUDA_DEVICES=0 HETBLAS_HIP_DEVICES=1
fi
PROFILE=$OUT/profile-$TAG.json
echo "== $MODE calibration"
calibrate_into "$PROFILE" "$MODE"
echo "== the next process"
HETBLAS_PROFILE=$PROFILE run "$H" devices
finish
