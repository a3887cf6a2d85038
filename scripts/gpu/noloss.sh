#!/usr/bin/env bash
# No performance lost (issue 52): the `compare` harness of an older build and of this bundle on the
# same problems, alternating old and new in every round (one process per problem and build), on
# one profile; then each problem's median TFLOP/s per build and new / old.
#
#   bash scripts/gpu/noloss.sh --old DIR [options]
#     --old DIR          the older build's programs (its `compare`, and `hetblas` to show that it
#                        takes the profile), e.g. release builds of an earlier commit
#     --problems LIST    ROUTINE:SIZE of gemm, syrk (L N) and trsm (L L N N), e.g. gemm:8192;
#                        a GEMM may add :BLOCKING to force both builds onto one plan (what
#                        each build runs then, not what its model chooses), e.g.
#                        gemm:8192:4096x1024x4096/g4
#                        (default gemm:8192,gemm:16384,gemm:32768,syrk:32768,trsm:32768)
#     --rounds N         rounds (default 3); gemm:8192 runs twice as many (it varies most)
#     --reps N           timed repetitions of each process after its warm-up (default 3)
# Every result is checked by the harness. The profile (--profile, default auto) is chosen once,
# for both builds.

# shellcheck source=scripts/gpu/env.sh
source "$(dirname "$0")/env.sh"

OLD="" ROUNDS=3 REPS=3
PROBLEMS=gemm:8192,gemm:16384,gemm:32768,syrk:32768,trsm:32768
while (($#)); do
    case $1 in
        --old) OLD=$2; shift 2 ;;
        --problems) PROBLEMS=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        -h | --help) usage 0 ;;
        *) common_option "$@" || usage; shift "$SHIFT" ;;
    esac
done
[[ -n $OLD ]] || { echo "--old DIR is needed" >&2; usage; }
((DRY_RUN)) || [[ -x $OLD/compare ]] || { echo "no $OLD/compare" >&2; exit 2; }

start noloss
PROFILE=$(pick_profile noloss)
export HETBLAS_PROFILE=$PROFILE
echo "profile: $PROFILE"
# Both builds must take it (an older build may fall back to a built-in rule on a profile it cannot
# read): each says which model it uses.
for h in "$OLD/hetblas" "$H"; do
    [[ -x $h ]] && run --limit 120 --grep "profile|model" "$h" devices
done

# The harness prints one "hetblas  X TFLOP/s (S s) detail" line per problem.
results=$OUT/noloss.tsv
: >"$results"
IFS=, read -ra problems <<<"$PROBLEMS"
for ((round = 1; round <= 2 * ROUNDS; round++)); do
    for p in "${problems[@]}"; do
        IFS=: read -r routine size blocking <<<"$p"
        forced=()
        [[ -n $blocking ]] && forced=(--blocking "$blocking")
        # DGEMM 8192 every round, the others in the first ROUNDS only.
        ((round > ROUNDS)) && [[ $routine:$size != gemm:8192 ]] && continue
        for build in old new; do
            bin=$BIN/compare
            [[ $build == old ]] && bin=$OLD/compare
            log=$OUT/$routine-$size${blocking:+-${blocking//\//-}}-$build-$round.log
            run --limit 300 --log "$log" --grep "hetblas +[0-9]" \
                env HETBLAS_CUDA_DEVICES=0 "$bin" --gpus 1 --dtype f64 --variants hetblas \
                --reps "$REPS" --sizes "$size" --routine "$routine" "${forced[@]}"
            ((DRY_RUN)) && continue
            tf=$(grep -E "hetblas +[0-9]" "$log" | head -1 | awk '{print $2}')
            detail=$(grep -E "hetblas +[0-9]" "$log" | head -1 | cut -d')' -f2- | xargs)
            printf '%s\t%s\t%s\t%s\t%s\n' "$p" "$build" "$round" "${tf:-none}" "$detail" >>"$results"
        done
    done
done
((DRY_RUN)) && exit 0

echo "== medians (TFLOP/s; every round's figures after the colon)"
python3 - "$results" <<'PY' | tee "$OUT/noloss.md"
import collections, statistics, sys
runs = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    p, build, _, tf, _ = line.rstrip("\n").split("\t")
    if p not in order:
        order.append(p)
    if tf != "none":
        runs[p, build].append(float(tf))
print("| problem | old | new | new / old |")
print("| --- | --- | --- | --- |")
for p in order:
    old, new = runs[p, "old"], runs[p, "new"]
    if not old or not new:
        print(f"| {p} | {old} | {new} | missing |")
        continue
    mo, mn = statistics.median(old), statistics.median(new)
    figs = lambda v: ", ".join(f"{x:.2f}" for x in v)
    print(f"| {p} | {mo:.2f}: {figs(old)} | {mn:.2f}: {figs(new)} | {mn / mo:.3f} |")
PY
exit $((FAILED > 0))
