#!/usr/bin/env bash
# Strong scaling: compare.sh on 1, 2, 4 and 8 GPUs (those this machine has), hetblas and
# cuBLASXt on the same GPUs, one process per problem, then one table of TFLOP/s and speedups
# over one GPU per library.
#
#   bash scripts/gpu/scaling.sh [options] [compare.sh options]
#     --gpu-counts LIST  (default 1,2,4,8, capped at the GPUs present)
#     compare.sh's problem options pass through (--sizes, --shapes, --dtypes, --placement,
#     --variants, --reps, --xt-blocks, --traffic, ...); default --sizes 16384,32768
#     --dtypes f64,f32
#     plus env.sh's options (--profile, --hugepages, --out, --timeout, --dry-run); the profile
#     is chosen (or calibrated) once, for all GPU counts
# Results: $OUT/g<N>/ (compare.sh's output per GPU count) and $OUT/scaling.md.

# shellcheck source=scripts/gpu/env.sh
source "$(dirname "$0")/env.sh"
COUNTS=1,2,4,8 FWD=()
while (($#)); do
    case $1 in
        --gpu-counts) COUNTS=$2; shift 2 ;;
        -h | --help) usage 0 ;;
        --traffic | --timeline | --mixed) FWD+=("$1"); shift ;;
        --sizes | --shapes | --dtypes | --dtype | --placement | --variants | --reps | --xt-blocks | --tile | --blocking | --pin-demo)
            FWD+=("$1" "$2"); shift 2 ;;
        *) common_option "$@" || usage; shift "$SHIFT" ;;
    esac
done
[[ " ${FWD[*]} " == *" --sizes "* || " ${FWD[*]} " == *" --shapes "* ]] || FWD+=(--sizes "16384,32768")
[[ " ${FWD[*]} " == *" --dtype"* ]] || FWD+=(--dtypes "f64,f32")
((DRY_RUN)) && FWD+=(--dry-run)
start scaling
use_profile cuda
for g in ${COUNTS//,/ }; do
    if ((g > NGPU)); then
        echo "== $g GPUs: not on this machine ($NGPU)"
        continue
    fi
    echo "== $g GPU(s)"
    bash "$ROOT/scripts/gpu/compare.sh" --gpus "$g" --profile none --out "$OUT/g$g" --timeout "$TIMEOUT" \
        "${FWD[@]}" || FAILED=$((FAILED + 1))
done

# The table: per problem, dtype, placement and library, TFLOP/s per GPU count and the speedup
# over the same library on one GPU (from compare's CSVs).
((DRY_RUN)) && finish
{
    echo "| problem | dtype | placement | library | $(for g in ${COUNTS//,/ }; do printf '%s GPU | ' "$g"; done)speedups |"
    echo "| --- | --- | --- | --- | $(for _ in ${COUNTS//,/ }; do printf -- '--- | '; done)--- |"
    for f in "$OUT"/g*/*.csv; do
        pl=$(basename "$f" .csv | awk -F- '{ print (NF > 3 ? $4 : "host") }')
        tail -n +2 "$f" | awk -F, -v pl="$pl" '{ print $1 "x" $2 "x" $3, $4, pl, $6, $5, $7 }'
    done | sort -k1,1 -k2,2 -k3,3 -k4,4 -k5,5n | awk -v counts="$COUNTS" '
        { key = $1 " | " $2 " | " $3 " | " $4; if (!(key in seen)) { seen[key] = 1; order[++n] = key }
          t[key, $5] = $6 }
        END {
            nc = split(counts, c, ",")
            for (i = 1; i <= n; i++) {
                k = order[i]; line = "| " k " | "; sp = ""
                for (j = 1; j <= nc; j++) {
                    v = t[k, c[j]]; line = line (v == "" ? "-" : sprintf("%.2f", v)) " | "
                    if (j > 1 && v != "" && t[k, c[1]] > 0) sp = sp sprintf("%s%.2fx", sp == "" ? "" : " / ", v / t[k, c[1]])
                }
                print line (sp == "" ? "-" : sp) " |"
            }
        }'
} | tee "$OUT/scaling.md"
finish
