#!/usr/bin/env bash
# One GEMM problem under many configurations, measured side by side: every combination of
# hetblas blockings and environment settings, one process each (the `compare` harness, hetblas
# variant only, every result checked), the whole set repeated --rounds times in turn so that
# drift of the machine touches every configuration alike; the median TFLOP/s per configuration
# goes to $OUT/sweep.md, fastest first. For finding what holds a shape back, and for checking
# that the model's choice (blocking "model") is the best of what it could have chosen.
#
#   bash scripts/gpu/sweep.sh [options]
#     --shape MxNxK      the problem (default 8192x8192x8192)
#     --dtype D          f64 (default), f32, c64, c32
#     --gpus N           GPUs (default 1)
#     --blockings LIST   "model" (the autotuner's choice) and/or forced tilings TMxTNxTK/gG or T,
#                        comma-separated (default model)
#     --env VAR=V1,V2    an environment variable and its values; repeatable, the combinations
#                        of all are run ("-" as a value: unset), e.g. --env HETBLAS_FOLD_TAIL=-,0,4
#     --reps N           timed repetitions per process after a warm-up (default 5)
#     --rounds R         repetitions of the whole set (default 3)
#     plus env.sh's options (--profile, --hugepages, --out, --timeout, --dry-run)
# Results: $OUT/sweep.md (median, min, max and the harness's detail per configuration) and
# $OUT/sweep.tsv (every process).

# shellcheck source=scripts/gpu/env.sh
source "$(dirname "$0")/env.sh"
SHAPE=8192x8192x8192 DTYPE=f64 GPUS=1 BLOCKINGS=model REPS=5 ROUNDS=3 ENVS=()
while (($#)); do
    case $1 in
        --shape) SHAPE=$2; shift 2 ;;
        --dtype) DTYPE=$2; shift 2 ;;
        --gpus) GPUS=$2; shift 2 ;;
        --blockings) BLOCKINGS=$2; shift 2 ;;
        --env) ENVS+=("$2"); shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        -h | --help) usage 0 ;;
        *) common_option "$@" || usage; shift "$SHIFT" ;;
    esac
done
start sweep
use_profile cuda

# Every combination of the --env settings, as lines of space-separated VAR=VALUE ("-": unset).
combos=("")
for spec in "${ENVS[@]}"; do
    var=${spec%%=*}
    next=()
    for c in "${combos[@]}"; do
        IFS=, read -ra values <<<"${spec#*=}"
        for v in "${values[@]}"; do
            next+=("${c:+$c }$var=$v")
        done
    done
    combos=("${next[@]}")
done

TSV=$OUT/sweep.tsv
((DRY_RUN)) || printf "round\tblocking\tenv\ttflops\tdetail\n" >"$TSV"
for ((r = 0; r < ROUNDS; r++)); do
    for b in ${BLOCKINGS//,/ }; do
        force=()
        if [[ $b != model ]]; then
            if [[ $b == *x* ]]; then force=(--blocking "$b"); else force=(--tile "$b"); fi
        fi
        for c in "${combos[@]}"; do
            envs=() unset_vars=()
            for kv in $c; do
                if [[ ${kv#*=} == - ]]; then unset_vars+=(-u "${kv%%=*}"); else envs+=("$kv"); fi
            done
            log=$OUT/sweep-r$r.log
            run --log "$log" --grep "^\| [0-9]" env "${unset_vars[@]}" "${envs[@]}" "$BIN/compare" \
                --gpus "$GPUS" --dtype "$DTYPE" --variants hetblas --reps "$REPS" --shapes "$SHAPE" \
                "${force[@]}"
            ((DRY_RUN)) && continue
            row=$(grep -E "^\| [0-9]" "$log" | grep "hetblas" | tail -1)
            tf=$(awk -F'|' '{gsub(/ /, "", $6); print $6}' <<<"$row")
            detail=$(awk -F'|' '{sub(/^ /, "", $9); sub(/ $/, "", $9); print $9}' <<<"$row")
            printf "%d\t%s\t%s\t%s\t%s\n" "$r" "$b" "${c:--}" "${tf:-failed}" "$detail" >>"$TSV"
        done
    done
done
if ((!DRY_RUN)); then
    python3 - "$TSV" "$SHAPE" "$DTYPE" "$GPUS" >"$OUT/sweep.md" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = {}
for r in rows:
    by.setdefault((r["blocking"], r["env"]), []).append(r)
out = []
for (b, e), rs in by.items():
    tf = [float(r["tflops"]) for r in rs if r["tflops"] != "failed"]
    med = statistics.median(tf) if tf else 0.0
    out.append((med, b, e, tf, len(rs) - len(tf), rs[-1]["detail"]))
out.sort(reverse=True)
print(f"# sweep: {sys.argv[2]} {sys.argv[3]} on {sys.argv[4]} GPU(s), median of rounds\n")
print("| blocking | env | median TFLOP/s | min | max | failed | detail (last round) |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for med, b, e, tf, bad, d in out:
    lo = f"{min(tf):.2f}" if tf else "-"
    hi = f"{max(tf):.2f}" if tf else "-"
    print(f"| {b} | {e} | {med:.2f} | {lo} | {hi} | {bad} | {d} |")
EOF
    cat "$OUT/sweep.md"
fi
finish
