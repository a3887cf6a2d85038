#!/usr/bin/env bash
# The model against measurements: the validation set (`validate`: for each problem the time the
# model predicts, the time measured with its choice, and a measured sweep of tile sizes), its
# plots, the model's view of one problem (`hetblas predict`), and optionally the hybrid and
# offload decisions of one GPU + the CPU (`hybrid`).
#
#   bash scripts/gpu/validate.sh [options]
#     --calibrate MODE   only a timed calibration of this machine (MODE full or quick: fewer,
#                        smaller points) into $OUT/profile-{cuda,mixed}.json, and a check that
#                        the next process loads it; kept while the machine stays warm (later
#                        calls with `--profile auto` find it). With it:
#       --fresh          always calibrate in full: no reuse of a previous profile of the same
#                        hardware (by default one from the cache or docs/profiles is
#                        re-checked in seconds and reused when it holds, or rescaled when
#                        its points moved by no more than 50%)
#       --cross-links    also the slowdown of each host link under every other one (measured
#                        anyway with one GPU; off by default with more)
#       --mixed          the mixed-vendor device set: CUDA GPU0 + HIP GPU1 through the
#                        HIP-on-CUDA shim (needs two GPUs)
#     --reps N           timed calls per point at least (default 3; short problems get more)
#     --limit N          only the first N problems of the set
#     --predict SHAPE    the problem `hetblas predict` explains (default 16384^3: -s 16384)
#     --hybrid           also the hybrid decisions, GPU0 + the CPU
#     --hybrid-sizes L   their sizes (default 512,1024,2048,4096,8192,16384)
#     --no-validate      skip the validation set (e.g. only --hybrid)
#     --seed S           the seeded random set instead of the fixed grid (one seed tunes the
#                        model, another reports on it), each problem in its own process;
#                        `now`: a seed drawn from the clock (UTC yyyymmddHHMMSS), printed and
#                        kept in $OUT/seed.txt and the CSV: a set nobody tuned on
#     --count N          problems in the seeded set (default 40)
#     --window LO,HI     the seeded set's problems take LO..HI seconds on a nominal H200
#                        (e.g. 0.002,1); default: the original set's sizes
#     --case-limit S     time limit per problem of the seeded set (default 60 s)
#     --summary          $OUT/summary.md: the errors with their signs and the choices
#                        (`validate --summary`; seeds in docs/data/tuned-seeds.txt are
#                        reported as tuned-on), and the set rescored with the stock profile
#                        ($OUT/rescore-stock.txt) beside the profile in use
#                        ($OUT/rescore-used.txt)
#     --shapes LIST      problems run by `hetblas gemm`, each in its own process, three ways:
#                        `first` (one warm-up call, then 3 timed ones, C written again on the
#                        host before each: a user's first calls, as issue 57 measured),
#                        `steady` (the same after 0.3 s of such calls) and `back-to-back`
#                        (0.3 s of calls, then 3 timed ones with nothing between them: the
#                        validation's steady state); the last call traced (--trace --simulate:
#                        $OUT/trace-*.json, real and simulated) with the model's prediction and
#                        the per-term table (queue and task kind, real against simulated);
#                        LIST: MxNxK:DTYPE:BETA,... (e.g. 769x10609x1321:f64:1). The GPU's
#                        clocks, power and PCIe link are sampled meanwhile ($OUT/gpu-state.csv)
#     --acceptance       issue 57's run: --profile full with FRESH=1 (a timed calibration
#                        from no profile), --seed now --window 0.002,1 --count 40
#                        --case-limit 30 --summary, and the issue's four problems as --shapes.
#                        Where each point shows: 1. "calibrated ... in S s" and "phases:"
#                        (the calibration's own time; the wall after it adds the process);
#                        3. the "shape ..." lines ("within 8%" on `first`); 2. summary.md's
#                        "Acceptance (steady state)" line, with its seed, both signs and the
#                        choices. Options after it override its parts (e.g. --profile PATH
#                        to judge an existing profile, --no-validate for 1 and 3 alone).
#                        About 5-8 min on one H200 (the set's problems take 2-70 ms nominally:
#                        a 4 GiB cap on the operands keeps them well under 1 s)
#     plus env.sh's options (--profile, --hugepages, --out, --timeout, --dry-run)
# Results: $OUT/validate.csv and .txt, $OUT/plots/*.svg, $OUT/predict.txt, $OUT/hybrid.log,
# with --summary $OUT/summary.md, with --shapes $OUT/shapes.csv and $OUT/shape-*.log.

# shellcheck source=scripts/gpu/env.sh
source "$(dirname "$0")/env.sh"
REPS=3 LIMIT=() PREDICT=(-s 16384) HYBRID=0 HYBRID_SIZES=512,1024,2048,4096,8192,16384 VALIDATE=1
SEED="" COUNT=40 CASE_LIMIT=60 WINDOW=() SUMMARY=0 SHAPES="" CALIBRATE="" TAG=cuda
# Issue 57's four problems: the fresh set's worst, all optimistic on a fresh profile.
ISSUE_SHAPES=769x10609x1321:f64:1,7592x7550x1982:f64:1,17301x3969x3370:f64:0,14916x2716x10070:f64:1
while (($#)); do
    case $1 in
        --window) WINDOW=(--window "$2"); shift 2 ;;
        --summary) SUMMARY=1; shift ;;
        --calibrate) CALIBRATE=$2; shift 2 ;;
        --fresh) export FRESH=1; shift ;;
        --cross-links) export CROSS_LINKS=1; shift ;;
        --mixed) TAG=mixed; shift ;;
        --shapes) SHAPES=$2; shift 2 ;;
        --acceptance)
            export FRESH=1; PROFILE_SPEC=full; SEED=now; WINDOW=(--window "0.002,1"); COUNT=40
            CASE_LIMIT=30; SUMMARY=1; SHAPES=$ISSUE_SHAPES; shift ;;
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
# shape_row LOG PREFIX: the CSV row of one `hetblas gemm --simulate` log (see --shapes).
shape_row() {
    awk -v p="$2" '
        /^model:/ { tile = $2; for (i = 1; i <= NF; i++) { if ($i == "predicted" && pred == "") pred = $(i + 1);
                    if ($i == "median") meas = $(i + 1); if ($i == "error") err = $(i + 1) } }
        /^simulated:/ { sim = $2; traced = $5; serr = $8 }
        END { gsub(/[()%,]/, "", serr); gsub(/[%,]/, "", err);
              print p "," tile "," pred "," meas "," err "," sim "," traced "," serr }' "$1"
}

start validate
if [[ -n $CALIBRATE ]]; then
    [[ $CALIBRATE == full || $CALIBRATE == quick ]] || usage
    if [[ $TAG == mixed ]]; then
        build_hip_shim || finish
        export HETBLAS_CUDA_DEVICES=0 HETBLAS_HIP_DEVICES=1
    fi
    PROFILE=$OUT/profile-$TAG.json
    echo "== $CALIBRATE calibration"
    calibrate_into "$PROFILE" "$CALIBRATE"
    echo "== the next process"
    HETBLAS_PROFILE=$PROFILE run "$H" devices
    finish
fi
use_profile cuda
if [[ $SEED == now ]]; then
    SEED=$(date -u +%Y%m%d%H%M%S)
    echo "seed drawn from the clock: $SEED"
    echo "$SEED" >"$OUT/seed.txt"
fi
# The GPU's clocks, power and PCIe link while the problems run (the state a call finds after
# the host computed between calls): $OUT/gpu-state.csv, sampled every 50 ms.
SAMPLER=""
if ((!DRY_RUN)) && command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=timestamp,index,pstate,clocks.sm,clocks.mem,power.draw,pcie.link.gen.current,pcie.link.width.current,utilization.gpu \
        --format=csv,nounits -lms 50 >"$OUT/gpu-state.csv" 2>/dev/null &
    SAMPLER=$!
fi
# The traced problems first: they decide where a bias comes from, the set then judges.
if [[ -n $SHAPES ]]; then
    ((DRY_RUN)) || echo "shape,dtype,beta,calls,tile,predicted_s,measured_s,error,simulated_s,traced_s,sim_error" >"$OUT/shapes.csv"
    IFS=, read -r -a list <<<"$SHAPES"
    for spec in "${list[@]}"; do
        IFS=: read -r shape dtype beta <<<"$spec"
        IFS=x read -r m n k <<<"$shape"
        for mode in first steady back-to-back; do
            warm=()
            [[ $mode == steady ]] && warm=(--warm-seconds 0.3)
            [[ $mode == back-to-back ]] && warm=(--warm-seconds 0.3 --back-to-back)
            tag=$shape-$dtype-b$beta-$mode
            run --log "$OUT/shape-$tag.log" --grep "^[sd]gemm|^model:|^simulated:|^timed calls|^  " \
                "$H" gemm -m "$m" -n "$n" -k "$k" --dtype "$dtype" --beta "$beta" --reps 3 "${warm[@]}" \
                --trace "$OUT/trace-$tag.json" --simulate
            ((DRY_RUN)) || shape_row "$OUT/shape-$tag.log" "$shape,$dtype,$beta,$mode" >>"$OUT/shapes.csv"
        done
    done
    # Issue 57, point 3: each problem within 8%, as the issue measured it (`first`: a process
    # that calls `hetblas gemm --reps 3`); the other two ways show what the first calls add.
    ((DRY_RUN)) || awk -F, 'NR > 1 {
            e = $8 + 0; v = ($8 == "") ? "no prediction" : (e <= 8 && e >= -8) ? "within 8%" : "MISSED 8%";
            printf "shape %-20s %s beta %s %-13s predicted %s s, measured %s s: error %s%% %s\n", $1, $2, $3, $4, $6, $7, $8, v }' \
        "$OUT/shapes.csv"
fi
if ((VALIDATE)) && [[ -n $SEED ]]; then
    ((DRY_RUN)) || rm -f "$OUT/validate.csv"
    for ((i = 0; i < COUNT; i++)); do
        run --limit "$CASE_LIMIT" --grep "^\[" "$BIN/validate" --csv "$OUT/validate.csv" --append \
            --seed "$SEED" --count "$COUNT" --case "$i" --reps "$REPS" "${WINDOW[@]}"
    done
elif ((VALIDATE)); then
    run --limit "$((TIMEOUT > 540 ? TIMEOUT : 540))" --log "$OUT/validate.txt" \
        --grep "profile|tile rule" "$BIN/validate" --csv "$OUT/validate.csv" --reps "$REPS" "${LIMIT[@]}"
fi
if ((VALIDATE)); then
    run --grep "problems:|plots written" "$BIN/plot-validation" "$OUT/validate.csv" --out-dir "$OUT/plots"
fi
if ((VALIDATE && SUMMARY)); then
    run --log "$OUT/summary.md" --grep "^## |^Judged|^TUNED|^No seed|abs |signs|^Choice|^Acceptance" \
        "$BIN/validate" --summary --csv "$OUT/validate.csv" --tuned "$ROOT/docs/data/tuned-seeds.txt"
    # The same measured calls predicted with the stock profile and with the profile in use:
    # where only the profile differs, a bias that one has and the other not is calibration's.
    run --log "$OUT/rescore-stock.txt" --grep "^(at the model|as the chosen|against the first|over all)" \
        "$BIN/validate" --csv "$OUT/validate.csv" --rescore "$ROOT/docs/profiles/nvidia-h200-x1.json"
    [[ -n ${HETBLAS_PROFILE:-} ]] && run --log "$OUT/rescore-used.txt" --grep "^(at the model|as the chosen|against the first|over all)" \
        "$BIN/validate" --csv "$OUT/validate.csv" --rescore "$HETBLAS_PROFILE"
fi
[[ -n $SAMPLER ]] && kill "$SAMPLER" 2>/dev/null
run --log "$OUT/predict.txt" --grep "^choice|-bound|folded|sent to the device" "$H" predict "${PREDICT[@]}"
if ((HYBRID)); then
    run --limit "$((TIMEOUT > 400 ? TIMEOUT : 400))" --log "$OUT/hybrid.log" --grep "^\| [0-9]" \
        env HETBLAS_CUDA_DEVICES=0 "$BIN/hybrid" --sizes "$HYBRID_SIZES" --reps 10 --big-reps 10 --skip-over 5
fi
finish
