#!/usr/bin/env bash
# The model against measurements: the validation set (`validate`: for each problem the time the
# model predicts, the time measured with its choice, and a measured sweep of tile sizes), its
# plots, the model's view of one problem (`hetblas predict`), and optionally the hybrid and
# offload decisions of one GPU + the CPU (`hybrid`).
#
#   bash scripts/gpu/validate.sh [options]
#     --reps N           timed calls per point at least (default 3; short problems get more)
#     --limit N          only the first N problems of the set
#     --predict SHAPE    the problem `hetblas predict` explains (default 16384^3: -s 16384)
#     --hybrid           also the hybrid decisions, GPU0 + the CPU
#     --hybrid-sizes L   their sizes (default 512,1024,2048,4096,8192,16384)
#     --no-validate      skip the validation set (e.g. only --hybrid)
#     --seed S           the seeded random set instead of the fixed grid (one seed tunes the
#                        model, another reports on it), each problem in its own process
#     --count N          problems in the seeded set (default 40)
#     --case-limit S     time limit per problem of the seeded set (default 60 s)
#     plus env.sh's options (--profile, --hugepages, --out, --timeout, --dry-run)
# Results: $OUT/validate.csv and .txt, $OUT/plots/*.svg, $OUT/predict.txt, $OUT/hybrid.log.

# shellcheck source=scripts/gpu/env.sh
source "$(dirname "$0")/env.sh"
REPS=3 LIMIT=() PREDICT=(-s 16384) HYBRID=0 HYBRID_SIZES=512,1024,2048,4096,8192,16384 VALIDATE=1
SEED="" COUNT=40 CASE_LIMIT=60
while (($#)); do
    case $1 in
        --reps) REPS=$2; shift 2 ;;
        --limit) LIMIT=(--limit "$2"); shift 2 ;;
        --predict) IFS=x read -r m n k <<<"$2"; PREDICT=(-m "$m" -n "$n" -k "$k"); shift 2 ;;
        --hybrid) HYBRID=1; shift ;;
        --hybrid-sizes) HYBRID_SIZES=$2; shift 2 ;;
        --no-validate) VALIDATE=0; shift ;;
        --seed) SEED=$2; shift 2 ;;
        --count) COUNT=$2; shift 2 ;;
        --case-limit) CASE_LIMIT=$2; shift 2 ;;
        -h | --help) usage 0 ;;
        *) common_option "$@" || usage; shift "$SHIFT" ;;
    esac
done
start validate
use_profile cuda
if ((VALIDATE)) && [[ -n $SEED ]]; then
    ((DRY_RUN)) || rm -f "$OUT/validate.csv"
    for ((i = 0; i < COUNT; i++)); do
        run --limit "$CASE_LIMIT" --grep "^\[" "$BIN/validate" --csv "$OUT/validate.csv" --append \
            --seed "$SEED" --count "$COUNT" --case "$i" --reps "$REPS"
    done
elif ((VALIDATE)); then
    run --limit "$((TIMEOUT > 540 ? TIMEOUT : 540))" --log "$OUT/validate.txt" \
        --grep "profile|tile rule" "$BIN/validate" --csv "$OUT/validate.csv" --reps "$REPS" "${LIMIT[@]}"
fi
if ((VALIDATE)); then
    run --grep "problems:|plots written" "$BIN/plot-validation" "$OUT/validate.csv" --out-dir "$OUT/plots"
fi
run --log "$OUT/predict.txt" --grep "^choice|-bound|folded|sent to the device" "$H" predict "${PREDICT[@]}"
if ((HYBRID)); then
    run --limit "$((TIMEOUT > 400 ? TIMEOUT : 400))" --log "$OUT/hybrid.log" --grep "^\| [0-9]" \
        env HETBLAS_CUDA_DEVICES=0 "$BIN/hybrid" --sizes "$HYBRID_SIZES" --reps 10 --big-reps 10 --skip-over 5
fi
finish
