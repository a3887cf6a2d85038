#!/usr/bin/env bash
# hetblas against cuBLASXt (and naive copy-in/gemm/copy-out, and device-resident cuBLAS, the
# "ceiling") on the same random data, every result checked: the `compare` harness, one process
# per problem (cuBLASXt has misbehaved after large runs in the same process).
#
#   bash scripts/gpu/compare.sh [options]
#     --sizes LIST       square sizes (default 8192,16384,32768, or none when --shapes is given)
#     --shapes LIST      MxNxK problems, e.g. 32768x32768x4096,4096x4096x32768
#     --dtypes LIST      any of f64, f32, c64, c32 (default f64); e.g. --dtypes c64 --sizes 16384
#                        is ZGEMM against cublasXtZgemm and device-resident cublasZgemm (ceiling)
#     --gpus N           GPUs for hetblas and for cuBLASXt (default 1)
#     --gpu-counts LIST  strong scaling: the run once per GPU count of LIST (e.g. 1,2,4,8; those
#                        beyond the machine's GPUs skipped), each in $OUT/g<N>/, the profile
#                        chosen (or calibrated) once for all, then $OUT/scaling.md: TFLOP/s per
#                        GPU count and the speedups over one GPU per library (sizes default
#                        16384,32768, dtypes f64,f32)
#     --placement P      where A, B, C live: h (host) or a GPU number each, e.g. 000, 00h, 1h0
#                        (default: all on the host)
#     --variants LIST    of hetblas, hetblas-fold, hetblas-nofold, cublasxt, naive, ceiling
#                        (default hetblas,cublasxt)
#     --reps N|auto      timed repetitions after a warm-up (auto: 9 up to 1e12 m*n*k, 5 up to
#                        1e13, else 3)
#     --xt-blocks LIST   cuBLASXt block sizes, the best is reported (default 2048,4096,8192 on
#                        one GPU, 4096,8192 on more)
#     --tile T | --blocking TMxTNxTK/gG    force hetblas's tiling
#     --routine R        gemm (default); trsm / trmm (below); or syrk, herk, syr2k, her2k, symm,
#                        hemm: hetblas against
#                        cuBLASXt's routine of the same name and the device-resident cuBLAS one
#                        (variant ceiling); a size S is n = k (rank updates) or m = n (SYMM), a
#                        shape MxNxK gives C m x n and inner k; e.g. --routine syrk --sizes 32768
#     --routine potrf|getrf   the factorizations (issue 54): per size n and dtype, cuSOLVER on
#                        A already in GPU memory (the ceiling, through CuPy:
#                        crates/bench/python/cusolver_ceiling.py) against `hetblas potrf|getrf
#                        --check --trace` on host operands and the model's alternatives
#                        (`hetblas predict`); --uplo for POTRF; --panels LIST adds runs with the
#                        panels forced (host, device). E.g. --routine potrf --sizes 32768
#     --uplo U|L --trans N|T|C --side L|R   the symmetric routine's options (default L, N, L)
#     --tiles LIST       symmetric routines: hetblas diagonal blocks to sweep next to the model's
#                        choice (rows hetblas-T<block>), e.g. --tiles 2048,4096,8192
#     --traffic          bytes each GPU fetched from the host and from peers, with and without
#                        peer forwarding
#     --timeline         also a timeline of each problem (Chrome JSON in $OUT/trace-*.json): busy
#                        shares, and the host->device rate alone, beside copies back, beside
#                        host folds and beside both (the host's memory is one budget)
#     --pin-demo N       the registration cache: two calls on fresh N^3 buffers
#     --routine trsm|trmm   side L, lower, N, non-unit, m = n = each
#                        of --sizes, host operands, against cuBLASXt's TRSM/TRMM at its best block
#                        and device-resident cuBLAS (variants default hetblas,cublasxt,ceiling);
#                        with --timeline also a traced `hetblas trsm|trmm --check` per size
#                        (Chrome JSON in $OUT/trace-*.json, busy shares and look-ahead overlap
#                        in its log)
#     --mixed            instead of the harness: one GEMM over CUDA GPU0 + HIP GPU1 (through the
#                        HIP-on-CUDA shim), with and without the CPU, against two CUDA GPUs, and
#                        HIP against CUDA on one GPU (`hetblas gemm --check`, beta 1; needs two
#                        GPUs; sizes default 16384,32768)
#     --fault DEV,OP:N,KIND   instead of the harness: a GPU made to fail mid-call (injected in the
#                        GPU layer, `hetblas gemm --fault`): a DGEMM of each size on every GPU,
#                        fault-free first, then with GPU DEV (an index or a label such as
#                        cuda:1) failing at its N-th kernel or copy (OP: kernel or copy) of the
#                        first timed repetition with KIND (error, lost, oom, panic); the
#                        recovered call is checked and timed, the next ones run on the GPUs
#                        left; then one out-of-core call on GPU 0 under 1/8 of its footprint
#                        (--ooc-size N, default 32768; 0 skips it). Sizes default 16384; the
#                        acceptance run: --fault cuda:1,kernel:12,lost
#     --concurrent       instead of the harness: concurrent calls on GPU 0 (the `concurrent`
#                        bin, every result checked): THREADS (--threads, default 4) x DGEMM of
#                        each size (default 8192) on host operands against the same calls one
#                        after another (must reach 1.3x); then the over-subscription: 6 threads x
#                        DGEMM N^3 (--oversub-size N, default 32768; 0 skips it), A and B shared,
#                        beta 0, whose footprints together exceed the GPU's memory: none may fail;
#                        each call of the best concurrent round is printed (devices, tile, host
#                        fold, start/end offsets, seconds waited for other calls)
#     --devices LIST     --concurrent: the devices the calls may use, e.g. cuda:0 (default: the
#                        library's choice among cuda:0 and cpu:0)
#     --timeline         with --concurrent: every call traced, the best concurrent round as one
#                        Chrome trace per size, a row per call ($OUT/concurrent-<N>.json), and
#                        each queue's busy share in the log
#     --simulate         instead of the harness: each problem once through `hetblas gemm --trace
#                        --simulate` on --gpus N GPUs (the plan replayed against the profile): the
#                        measured and simulated makespans, and one Chrome trace per problem with
#                        a real and a simulated row ($OUT/sim-<problem>.json); sizes default to
#                        the validation set's host-operand problems; the median |error| goes to
#                        summary.md. With --routine trsm|trmm: each size once through `hetblas
#                        trsm|trmm --check --trace --simulate` (side L, lower, N, non-unit, m = n,
#                        host operands; sizes default 16384,24576,32768), the tile DAG replayed
#                        ($OUT/sim-<routine>-<dtype>-<size>-g<N>.json)
#     --energy           instead of the harness: joules per call (NVML) of DGEMM of each size
#                        (default 16384,32768) on 1 to --gpus N GPUs, then each --objective-shapes
#                        problem with --objective time and energy on every GPU, the devices each
#                        chose, their joules and the saving; needs device powers in the profile
#                        (`--profile full` calibrates them)
#     --objective-shapes LIST   MxNxK problems for --energy's objective runs (default
#                        4096x4096x32768,8192x8192x8192,32768x32768x2048,2048x2048x32768)
#     --links            instead of the harness: host<->device copy rates of each GPU alone and of
#                        every GPU at once, each direction and both (torch, pinned 1 GiB f64
#                        buffers of random data, median of 5); the bound a multi-GPU call on host
#                        operands works under
#     --hostmem          instead of the harness: what host folds cost the host->device link
#                        (crates/bench/cuda/hostmem.cu, built with nvcc): tiles folded
#                        whole after their copy, in chunks as they land, in chunks
#                        through a small staging ring, and copied back unfolded; each alone
#                        and beside a host->device batch (contiguous, then 2D tile copies)
#     --memprobe         instead of the harness: the host fold rate (C += P, 12 threads, torch) on
#                        fresh host buffer pairs, round after round over them, pageable and
#                        pinned (crates/bench/python/memprobe.py): a pair slow in every round is
#                        its memory, a round slow for every pair the machine at that moment
#     --linkprobe        instead of the harness: 2D host<->device copies of tiles of a large
#                        host matrix, each copy a new tile, per column length and host pitch,
#                        alone, both directions at once and under DGEMM (and both under DGEMM
#                        beside host folds, issue 57), against the same
#                        tile copied again and again (crates/bench/cuda/linkprobe.cu)
#     --linkprobe-folds  the same probe's fold table: copies beside host folds by the folds'
#                        working set, from in-cache to 512 MiB (issue 57)
#     --copystart        instead of the harness: 2D host->device copies by where the tile's
#                        columns start within 2 MiB, alone and beside DGEMM (issue 57;
#                        crates/bench/cuda/copystart.cu and copystart_sweep.cu)
#     --copyout          instead of the harness: the staged write-backs of a fresh output (issue
#                        53), per way of running the copy-out threads and state of the output
#                        (crates/bench/cuda/copyout.cu; C of 4096^2 and 8192^2 f64)
#     --sweep            instead of the harness: each problem (default 8192^3) under every
#                        combination of --blockings and --env settings, hetblas only, one process
#                        each, the whole set repeated --rounds times in turn (machine drift
#                        touches every configuration alike); the median TFLOP/s per
#                        configuration, fastest first, goes to $OUT/sweep-<dtype>-<shape>.md and
#                        summary.md, every process to sweep.tsv
#     --callcost         instead of the harness: the spread between processes. Each --shapes
#                        problem, written MxNxK:dtype[:b0] (e.g. 5213x4209x3077:f64), through
#                        `callcost` (--calls N timed calls, default 30: untraced percentiles,
#                        then each kind of task's busy time and rate in traced calls), one
#                        process per --env combination, --rounds times in turn
#     --host-load N      --callcost: beside each process, N host threads that stream memory
#                        (torch, `a += b` over 1 GiB f32 tensors; started, and streaming, before
#                        the process) as another program would: what the calls do when the
#                        host's memory is taken
#     --blockings LIST   --sweep: "model" (the autotuner's choice) and forced tilings
#                        TMxTNxTK/gG or T (default model)
#     --env VAR=V1,V2    --sweep and --callcost: an environment variable and its values ("-": unset);
#                        repeatable, every combination runs, e.g.
#                        --env HETBLAS_CUDA_DEVICES=0,1 (the settings: README.md, Environment)
#     --rounds R         --sweep and --callcost: repetitions of the whole set (default 3)
#     plus env.sh's options (--profile, --hugepages, --out, --timeout, --dry-run)
# Each problem's full output is in $OUT/<dtype>-<shape>-g<N>.log and .csv; the table rows are
# gathered in $OUT/summary.md.

# shellcheck source=scripts/gpu/env.sh
source "$(dirname "$0")/env.sh"
ARGS=("$@") COUNTS=""
SIZES="" SHAPES="" DTYPES=f64 GPUS=1 PLACEMENT="" VARIANTS=hetblas,cublasxt REPS=auto XT=""
FORCE=() TRAFFIC=0 TIMELINE=0 PIN_DEMO="" MIXED=0 FAULT="" OOC=32768 ROUTINE=gemm TVARIANTS="" SYM=()
CONCURRENT=0 THREADS=4 OVERSUB=32768 SIMULATE=0 ENERGY=0 CDEVICES="" PANELS=""
SWEEP=0 BLOCKINGS=model SWEEP_ENVS=() ROUNDS=3 LINKS=0 HOSTMEM=0 MEMPROBE=0 LINKPROBE=0 LINKPROBE_MODE="" COPYSTART=0 COPYOUT=0 CALLCOST=0 CALLS=30 HOST_LOAD=0
OBJ_SHAPES=4096x4096x32768,8192x8192x8192,32768x32768x2048,2048x2048x32768
while (($#)); do
    case $1 in
        --sizes) SIZES=$2; shift 2 ;;
        --shapes) SHAPES=$2; shift 2 ;;
        --dtypes | --dtype) DTYPES=$2; shift 2 ;;
        --gpus) GPUS=$2; shift 2 ;;
        --gpu-counts) COUNTS=$2; shift 2 ;;
        --placement) PLACEMENT=$2; shift 2 ;;
        --variants) VARIANTS=$2 TVARIANTS=$2; shift 2 ;;
        --routine) ROUTINE=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        --xt-blocks) XT=$2; shift 2 ;;
        --tile | --blocking) FORCE=("$1" "$2"); shift 2 ;;
        --traffic) TRAFFIC=1; shift ;;
        --timeline) TIMELINE=1; shift ;;
        --pin-demo) PIN_DEMO=$2; shift 2 ;;
        --mixed) MIXED=1; shift ;;
        --fault) FAULT=$2; shift 2 ;;
        --ooc-size) OOC=$2; shift 2 ;;
        --concurrent) CONCURRENT=1; shift ;;
        --threads) THREADS=$2; shift 2 ;;
        --devices) CDEVICES=$2; shift 2 ;;
        --oversub-size) OVERSUB=$2; shift 2 ;;
        --simulate) SIMULATE=1; shift ;;
        --energy) ENERGY=1; shift ;;
        --sweep) SWEEP=1; shift ;;
        --callcost) CALLCOST=1; shift ;;
        --calls) CALLS=$2; shift 2 ;;
        --host-load) HOST_LOAD=$2; shift 2 ;;
        --links) LINKS=1; shift ;;
        --hostmem) HOSTMEM=1; shift ;;
        --memprobe) MEMPROBE=1; shift ;;
        --linkprobe) LINKPROBE=1; shift ;;
        --linkprobe-folds) LINKPROBE=1; LINKPROBE_MODE=folds; shift ;;
        --copystart) COPYSTART=1; shift ;;
        --copyout) COPYOUT=1; shift ;;
        --blockings) BLOCKINGS=$2; shift 2 ;;
        --env) SWEEP_ENVS+=("$2"); shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --objective-shapes) OBJ_SHAPES=$2; shift 2 ;;
        --panels) PANELS=$2; shift 2 ;;
        --uplo | --trans | --side | --tiles) SYM+=("$1" "$2"); shift 2 ;;
        -h | --help) usage 0 ;;
        *) common_option "$@" || usage; shift "$SHIFT" ;;
    esac
done
# Strong scaling: this script once per GPU count, then one table from their CSVs.
if [[ -n $COUNTS ]]; then
    fwd=()
    for ((i = 0; i < ${#ARGS[@]}; i++)); do
        case ${ARGS[i]} in
            --gpu-counts | --gpus | --out | --profile | --timeout) ((i++)) ;;
            *) fwd+=("${ARGS[i]}") ;;
        esac
    done
    [[ -n $SIZES || -n $SHAPES ]] || fwd+=(--sizes "16384,32768")
    [[ " ${ARGS[*]} " == *" --dtype"* ]] || fwd+=(--dtypes "f64,f32")
    start scaling
    use_profile cuda
    for g in ${COUNTS//,/ }; do
        if ((g > NGPU)); then
            echo "== $g GPUs: not on this machine ($NGPU)"
            continue
        fi
        echo "== $g GPU(s)"
        bash "$0" "${fwd[@]}" --gpus "$g" --profile none --out "$OUT/g$g" --timeout "$TIMEOUT" ||
            FAILED=$((FAILED + 1))
    done
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
fi
if [[ -z $SIZES && -z $SHAPES ]]; then
    if ((MIXED || ENERGY)); then
        SIZES=16384,32768
    elif ((SIMULATE)) && [[ $ROUTINE == trsm || $ROUTINE == trmm ]]; then
        SIZES=16384,24576,32768
    elif ((SIMULATE)); then
        SIZES=4096,8192,12288,16384,24576,32768
        SHAPES=32768x32768x2048,32768x32768x4096,16384x16384x2048,4096x4096x32768,2048x2048x32768,8192x8192x32768,32768x4096x4096
    elif [[ -n $FAULT ]]; then
        SIZES=16384
    elif ((CONCURRENT || SWEEP)); then
        SIZES=8192
    else
        SIZES=8192,16384,32768
    fi
fi
if [[ -n $PLACEMENT && $DTYPES != f64 ]]; then
    echo "note: the harness places operands in f64 only; --dtypes f64"
    DTYPES=f64
fi
[[ -n $XT ]] || { ((GPUS > 1)) && XT=4096,8192 || XT=2048,4096,8192; }
C=$BIN/compare

# reps_for M N K: the repetitions of one problem.
reps_for() {
    [[ $REPS != auto ]] && { echo "$REPS"; return; }
    local mnk=$(($1 * $2 * $3))
    if ((mnk <= 1000000000000)); then echo 9; elif ((mnk <= 10000000000000)); then echo 5; else echo 3; fi
}

# problems: one MxNxK per line.
problems() {
    local s
    for s in ${SIZES//,/ }; do echo "${s}x${s}x${s}"; done
    for s in ${SHAPES//,/ }; do echo "$s"; done
}

# One GEMM per device set through the CLI, parsed to TFLOP/s.
cli_tflops() { grep -oE "[0-9.]+ GFLOP/s" "$1" | tail -1 | awk '{ printf "%.2f", $1 / 1000 }'; }
mixed() {
    ((DRY_RUN || NGPU >= 2)) || { echo "--mixed needs two GPUs ($NGPU here)"; FAILED=$((FAILED + 1)); return; }
    build_hip_shim || return
    local n dev mixed_p cuda_p a b c
    echo "== profiles"
    mixed_p=$(HETBLAS_CUDA_DEVICES=0 HETBLAS_HIP_DEVICES=1 pick_profile mixed)
    cuda_p=$(HETBLAS_CUDA_DEVICES=0,1 HETBLAS_BACKENDS=cuda,cpu pick_profile cuda)
    echo "== HIP against CUDA on one GPU, 16384^3, tile 4096"
    for dev in hip cuda; do
        run --log "$OUT/one-gpu-$dev.log" env HETBLAS_BACKENDS="$dev,cpu" \
            "$H" gemm -s 16384 --beta 1 --tile 4096 --devices "$dev:0" --reps 3 --check
    done
    ((DRY_RUN)) || echo "  HIP / CUDA: $(awk -v a="$(cli_tflops "$OUT/one-gpu-hip.log")" -v b="$(cli_tflops "$OUT/one-gpu-cuda.log")" 'BEGIN { if (b > 0) printf "%.3f", a / b }')"
    for n in ${SIZES//,/ }; do
        echo "== n = $n: CUDA GPU0 + HIP GPU1 (+ CPU) against two CUDA GPUs"
        run --log "$OUT/mixed-cpu-$n.log" env HETBLAS_CUDA_DEVICES=0 HETBLAS_HIP_DEVICES=1 HETBLAS_PROFILE="$mixed_p" \
            "$H" gemm -s "$n" --beta 1 --devices cuda:0,hip:0,cpu:0 --reps 3 --check
        run --log "$OUT/mixed-$n.log" env HETBLAS_CUDA_DEVICES=0 HETBLAS_HIP_DEVICES=1 HETBLAS_PROFILE="$mixed_p" \
            "$H" gemm -s "$n" --beta 1 --devices cuda:0,hip:0 --reps 3 --check
        run --log "$OUT/cuda2-$n.log" env HETBLAS_CUDA_DEVICES=0,1 HETBLAS_BACKENDS=cuda,cpu HETBLAS_PROFILE="$cuda_p" \
            "$H" gemm -s "$n" --beta 1 --devices cuda:0,cuda:1 --reps 3 --check
        ((DRY_RUN)) && continue
        a=$(cli_tflops "$OUT/mixed-cpu-$n.log") b=$(cli_tflops "$OUT/mixed-$n.log") c=$(cli_tflops "$OUT/cuda2-$n.log")
        echo "| $n | cuda:0+hip:0+cpu:0 $a | cuda:0+hip:0 $b | cuda:0+cuda:1 $c | mixed / 2 CUDA: $(awk -v a="$a" -v b="$b" -v c="$c" 'BEGIN { if (c > 0) printf "%.3f (with CPU) %.3f (GPUs only)", a / c, b / c }') |" |
            tee -a "$OUT/summary.md"
    done
}

# A GPU lost mid-call, then out-of-core (see --fault).
faults() {
    local dev at kind n
    IFS=, read -r dev at kind <<<"$FAULT"
    use_profile cuda
    run "$H" devices
    for n in ${SIZES//,/ }; do
        echo "== ${n}^3 fault-free"
        run "$H" gemm --size "$n" --reps 3 --check
        echo "== ${n}^3, $dev fails at $at ($kind) in the first timed repetition"
        run "$H" gemm --size "$n" --reps 3 --check --fault "dev=$dev,at=$at,kind=$kind"
    done
    if ((OOC > 0)); then
        echo "== out-of-core: ${OOC}^3 on GPU 0 under 1/8 of its footprint"
        run "$H" gemm --size "$OOC" --reps 1 --check --devices cuda:0 \
            --memory-limit $((3 * OOC * OOC * 8 / 8))
    fi
}

# Concurrent calls, then GPU over-subscription (see --concurrent).
concurrent() {
    local n extra label
    use_profile cuda
    for n in ${SIZES//,/ }; do
        extra=() label=concurrent-$n${CDEVICES:+-${CDEVICES//[:,]/_}}
        [[ -n $CDEVICES ]] && extra+=(--devices "$CDEVICES")
        ((TIMELINE)) && extra+=(--trace "$OUT/$label.json")
        echo "== $THREADS threads x dgemm ${n}^3 against one after another${CDEVICES:+ on $CDEVICES}"
        run --log "$OUT/$label.log" --grep "^[0-9]+ x|^profile|^calls|^round|^best|^trace|^  [a-z]" \
            env HETBLAS_CUDA_DEVICES=0 "$BIN/concurrent" --size "$n" --threads "$THREADS" --min-ratio 1.3 "${extra[@]}"
    done
    if ((OVERSUB > 0)); then
        echo "== over-subscription: 6 threads x dgemm ${OVERSUB}^3, footprints together beyond the GPU"
        run --log "$OUT/oversubscribed-$OVERSUB.log" --grep "^[0-9]+ x|^profile|^warm|^round|^best" \
            env HETBLAS_CUDA_DEVICES=0 "$BIN/concurrent" --size "$OVERSUB" --threads 6 --beta 0 \
            --shared-ab --concurrent-only --rounds 1
    fi
}

# --routine trsm|trmm: the triangular harness per dtype and size, then (--timeline) a traced
# CLI call.
# The factorizations: the cuSOLVER ceiling (A on the GPU) in one process for every problem,
# then hetblas on host operands, checked and traced, and the model's alternatives.
factorizations() {
    local dt n p cases=() uplo=()
    [[ ${SYM[0]:-} == --uplo ]] && uplo=(--uplo "${SYM[1]}")
    for dt in ${DTYPES//,/ }; do
        for n in ${SIZES//,/ }; do cases+=("$ROUTINE:$dt:$n"); done
    done
    run --log "$OUT/ceiling.log" --grep "^ceiling" python3 "$ROOT/crates/bench/python/cusolver_ceiling.py" \
        "$( [[ $REPS == auto ]] && echo 3 || echo "$REPS")" "${cases[@]}"
    for dt in ${DTYPES//,/ }; do
        for n in ${SIZES//,/ }; do
            local label=$ROUTINE-$dt-$n
            run --log "$OUT/$label.log" --grep "median|check|busy|tasks" "$H" "$ROUTINE" --size "$n" \
                --dtype "$dt" "${uplo[@]}" --reps "$(reps_for "$n" "$n" "$n")" --check --trace "$OUT/trace-$label.json"
            run --log "$OUT/predict-$label.log" --grep "chosen" "$H" predict --routine "$ROUTINE" -n "$n" \
                --dtype "$dt" "${uplo[@]}"
            for p in ${PANELS//,/ }; do
                run --log "$OUT/$label-panels-$p.log" --grep "median|check" "$H" "$ROUTINE" --size "$n" \
                    --dtype "$dt" "${uplo[@]}" --panels "$p" --reps "$(reps_for "$n" "$n" "$n")" --check
            done
        done
    done
}

triangular() {
    local dt n label devs
    devs=$(seq -s, 0 $((GPUS - 1)) | sed -E 's/[0-9]+/cuda:&/g')
    for dt in ${DTYPES//,/ }; do
        for n in ${SIZES//,/ }; do
            label=$ROUTINE-$dt-$n-g$GPUS
            run --log "$OUT/$label.log" --grep "^\| (trsm|trmm) " "$C" --routine "$ROUTINE" \
                --gpus "$GPUS" --dtype "$dt" --variants "${TVARIANTS:-hetblas,cublasxt,ceiling}" \
                --reps "$(reps_for "$n" "$n" "$n")" --xt-blocks "$XT" --sizes "$n" \
                --csv "$OUT/$label.csv" "${FORCE[@]}"
            ((DRY_RUN)) || grep -hE "^\| (trsm|trmm) " "$OUT/$label.log" >>"$OUT/summary.md"
            if ((TIMELINE)); then
                run --log "$OUT/trace-$label.log" --grep "GFLOP|busy|overlapping|check" "$H" \
                    "$ROUTINE" -s "$n" --dtype "$dt" --devices "$devs" --reps 1 --check \
                    --trace "$OUT/trace-$label.json"
            fi
        done
    done
}

# The devices flag of the first N GPUs: cuda:0,...,cuda:N-1.
gpu_list() { local i l=""; for ((i = 0; i < $1; i++)); do l+="${l:+,}cuda:$i"; done; echo "$l"; }

# Measured against simulated makespans (see --simulate).
simulate() {
    use_profile cuda
    local dt shape m n k label
    for dt in ${DTYPES//,/ }; do
        if [[ $ROUTINE == trsm || $ROUTINE == trmm ]]; then
            for n in ${SIZES//,/ }; do
                label=sim-$ROUTINE-$dt-$n-g$GPUS
                run --log "$OUT/$label.log" --grep "GFLOP/s|^simulated|^check" "$H" "$ROUTINE" --dtype "$dt" \
                    -s "$n" --devices "$(gpu_list "$GPUS")" --reps 3 --check --trace "$OUT/$label.json" --simulate
                ((DRY_RUN)) && continue
                grep -oE "^simulated: .*" "$OUT/$label.log" | sed "s/^/| $ROUTINE $dt $n | /; s/$/ |/" >>"$OUT/summary.md"
            done
            continue
        fi
        for shape in $(problems); do
            IFS=x read -r m n k <<<"$shape"
            label=sim-$dt-$shape-g$GPUS
            run --log "$OUT/$label.log" --grep "GFLOP/s|^simulated" "$H" gemm --dtype "$dt" -m "$m" -n "$n" \
                -k "$k" --beta 1 --devices "$(gpu_list "$GPUS")" --reps 3 --trace "$OUT/$label.json" --simulate
            ((DRY_RUN)) && continue
            grep -oE "^simulated: .*" "$OUT/$label.log" | sed "s/^/| $dt $shape | /; s/$/ |/" >>"$OUT/summary.md"
        done
    done
    ((DRY_RUN)) && return
    grep -oE "\([+-][0-9.]+%\)" "$OUT/summary.md" | tr -d '()%+-' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR) printf "median |simulated / measured - 1| over %d problems: %.1f%%\n", NR, v[int((NR + 1) / 2)] }' |
        tee -a "$OUT/summary.md"
}

# Joules per call, and the energy objective against the time objective (see --energy).
energy() {
    use_profile cuda
    local n g shape m k obj
    for n in ${SIZES//,/ }; do
        for ((g = 1; g <= GPUS; g++)); do
            run --log "$OUT/energy-$n-g$g.log" --grep "GFLOP/s|^energy" "$H" gemm -s "$n" --beta 1 \
                --devices "$(gpu_list "$g")" --reps 3
        done
    done
    for shape in ${OBJ_SHAPES//,/ }; do
        IFS=x read -r m n k <<<"$shape"
        for obj in time energy; do
            run --log "$OUT/objective-$shape-$obj.log" --grep "GFLOP/s|^energy" "$H" gemm -m "$m" -n "$n" -k "$k" \
                --beta 1 --objective "$obj" --reps 3
        done
        ((DRY_RUN)) && continue
        awk -v s="$shape" '
            /GFLOP\/s/ { match($0, /on \[[^]]*\]/); dev[FILENAME] = substr($0, RSTART + 3, RLENGTH - 3) }
            /^energy per call/ { j[FILENAME] = $4 }
            END { for (f in j) if (f ~ /-time\.log$/) t = f; else e = f
                  if (t != "" && e != "" && j[t] > 0)
                      printf "| %s | time: %s %.1f J | energy: %s %.1f J | saving %.1f%% |\n", s, dev[t], j[t], dev[e], j[e], 100 * (1 - j[e] / j[t]) }' \
            "$OUT/objective-$shape-time.log" "$OUT/objective-$shape-energy.log" | tee -a "$OUT/summary.md"
    done
}

# Host link rates, alone and together (see --links).
links() {
    echo "+ python3 (torch): host<->device copies"
    ((DRY_RUN)) && return
    python3 - <<'PY' | tee -a "$OUT/summary.md"
import statistics, time, torch
n = 1 << 27  # f64 elements: 1 GiB
g = torch.cuda.device_count()
host = [torch.rand(n, dtype=torch.float64).pin_memory() for _ in range(g)]
dev = [torch.empty(n, dtype=torch.float64, device=f"cuda:{i}") for i in range(g)]
back = [torch.empty(n, dtype=torch.float64).pin_memory() for _ in range(g)]
def run(gpus, h2d, d2h, reps=5):
    ts = []
    for _ in range(reps + 1):
        for i in gpus:
            torch.cuda.synchronize(i)
        t = time.perf_counter()
        for i in gpus:
            with torch.cuda.device(i):
                if h2d:
                    dev[i].copy_(host[i], non_blocking=True)
                if d2h:
                    with torch.cuda.stream(torch.cuda.Stream(i)):
                        back[i].copy_(dev[i], non_blocking=True)
        for i in gpus:
            torch.cuda.synchronize(i)
        ts.append(time.perf_counter() - t)
    t = statistics.median(ts[1:])
    b = 8 * n * len(gpus) * (int(h2d) + int(d2h))
    print(f"| {','.join(map(str, gpus))} | {'h2d ' if h2d else ''}{'d2h' if d2h else ''} | {t * 1e3:.1f} ms | {b / t / 1e9:.1f} GB/s |")
print("| GPUs | direction | 1 GiB each | total rate |\n| --- | --- | --- | --- |")
for gpus in [[i] for i in range(g)] + ([list(range(g))] if g > 1 else []):
    for h2d, d2h in ((True, False), (False, True), (True, True)):
        run(gpus, h2d, d2h)
PY
}

# Host folds against the host->device link (see --hostmem): tiles 4096x1024 f64; chunks of 32,
# 64, 128 and 256 columns; 12 and 8 fold threads; then the batch as 2D tile copies (8 KiB
# columns 64 KiB apart, 16 KiB 128 KiB apart, 32 KiB 64 KiB apart: DGEMM 8192^3's A and B
# tiles at 1024, 2048 and 4096 rows).
hostmem() {
    local exe=$OUT/hostmem cfg
    run nvcc -O2 -std=c++17 -Xcompiler -fopenmp -o "$exe" "$ROOT/crates/bench/cuda/hostmem.cu" || return
    for cfg in "4096 1024 128 4 12 4" "4096 1024 64 8 12 4" "4096 1024 256 2 12 4" \
        "4096 1024 128 4 8 4" "4096 1024 32 16 12 4" "4096 1024 128 4 12 4 8192 65536" \
        "4096 1024 128 4 12 4 16384 131072" "4096 1024 128 4 12 4 32768 65536"; do
        # shellcheck disable=SC2086 # the configuration is words
        run --log "$OUT/hostmem-${cfg// /-}.log" "$exe" $cfg
        ((DRY_RUN)) || grep -h "^C \\|^H2D\\|^  columns\\|^|" "$OUT/hostmem-${cfg// /-}.log" >>"$OUT/summary.md"
    done
}

# The host fold rate per fresh buffer pair and round (see --memprobe).
memprobe() {
    run --log "$OUT/memprobe.log" python3 "$ROOT/crates/bench/python/memprobe.py"
    ((DRY_RUN)) || grep -h "medians" "$OUT/memprobe.log" >>"$OUT/summary.md"
}

# 2D copies of walking tiles against the calibration's repeated tile (see --linkprobe).
linkprobe() {
    local exe=$OUT/linkprobe
    run nvcc -O2 -std=c++17 -o "$exe" "$ROOT/crates/bench/cuda/linkprobe.cu" -lcublas -lpthread || return
    run --log "$OUT/linkprobe.log" "$exe" 2 ${LINKPROBE_MODE:+"$LINKPROBE_MODE"}
    ((DRY_RUN)) || grep -h "^host\\|^folds\\|^|" "$OUT/linkprobe.log" >>"$OUT/summary.md"
}

# 2D copies by where their columns start (see --copystart).
copystart() {
    local exe
    for exe in copystart copystart_sweep; do
        run nvcc -O2 -o "$OUT/$exe" "$ROOT/crates/bench/cuda/$exe.cu" -lcublas -lcuda || return
        run --log "$OUT/$exe.log" "$OUT/$exe"
        ((DRY_RUN)) || cat "$OUT/$exe.log" >>"$OUT/summary.md"
    done
}

# The copy-outs of a fresh output's staged write-backs (see --copyout).
copyout() {
    local exe=$OUT/copyout
    run nvcc -O2 -std=c++17 -o "$exe" "$ROOT/crates/bench/cuda/copyout.cu" -lpthread || return
    run --log "$OUT/copyout.log" "$exe" 4096 8192
    ((DRY_RUN)) || grep -h "^copy\\|^|" "$OUT/copyout.log" >>"$OUT/summary.md"
}

# Configurations side by side (see --sweep).
# env_combos: every combination of the --env settings, one line each ("" without any).
env_combos() {
    local combos=("") spec c v values next
    for spec in "${SWEEP_ENVS[@]}"; do
        next=()
        IFS=, read -ra values <<<"${spec#*=}"
        for c in "${combos[@]}"; do
            for v in "${values[@]}"; do next+=("${c:+$c }${spec%%=*}=$v"); done
        done
        combos=("${next[@]}")
    done
    printf '%s\n' "${combos[@]}"
}

# env_args COMBO: the `env` arguments of one combination ("-" unsets the variable): every
# `-u VAR` first, since env takes no option after an assignment.
env_args() {
    local v
    for v in $1; do
        [[ ${v#*=} == - ]] && printf '%s\n' -u "${v%%=*}"
    done
    for v in $1; do
        [[ ${v#*=} == - ]] || printf '%s\n' "$v"
    done
}

sweep() {
    use_profile cuda
    local combos c b r i dt shape m n k label log row tf detail force envs
    mapfile -t combos < <(env_combos)
    ((DRY_RUN)) || printf "problem\tround\tblocking\tenv\ttflops\tdetail\n" >"$OUT/sweep.tsv"
    for dt in ${DTYPES//,/ }; do
        for shape in $(problems); do
            IFS=x read -r m n k <<<"$shape"
            label=$dt-$shape
            for ((r = 0; r < ROUNDS; r++)); do
                i=0
                for b in ${BLOCKINGS//,/ }; do
                    force=()
                    [[ $b == model ]] || { [[ $b == *x* ]] && force=(--blocking "$b") || force=(--tile "$b"); }
                    for c in "${combos[@]}"; do
                        mapfile -t envs < <(env_args "$c")
                        i=$((i + 1)) log=$OUT/sweep-$label-r$r-$i.log
                        run --log "$log" --grep "^\| [0-9]" env "${envs[@]}" "$C" --gpus "$GPUS" \
                            --dtype "$dt" --variants hetblas --reps "$(reps_for "$m" "$n" "$k")" --shapes "$shape" "${force[@]}"
                        ((DRY_RUN)) && continue
                        row=$(grep -E "^\| [0-9].*\| hetblas " "$log" | tail -1)
                        tf=$(awk -F'|' '{ gsub(/ /, "", $6); print $6 }' <<<"$row")
                        detail=$(awk -F'|' '{ sub(/^ /, "", $9); sub(/ $/, "", $9); print $9 }' <<<"$row")
                        printf "%s\t%d\t%s\t%s\t%s\t%s\n" "$label" "$r" "$b" "${c:--}" "${tf:-failed}" "$detail" >>"$OUT/sweep.tsv"
                    done
                done
            done
            ((DRY_RUN)) && continue
            python3 - "$OUT/sweep.tsv" "$label" "$GPUS" <<'PY' | tee "$OUT/sweep-$label.md" >>"$OUT/summary.md"
import csv, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t") if r["problem"] == sys.argv[2]]
by = {}
for r in rows:
    by.setdefault((r["blocking"], r["env"]), []).append(r)
out = []
for (b, e), rs in by.items():
    tf = [float(r["tflops"]) for r in rs if r["tflops"] != "failed"]
    out.append((statistics.median(tf) if tf else 0.0, b, e, tf, len(rs) - len(tf), rs[-1]["detail"]))
out.sort(reverse=True)
print(f"# sweep: {sys.argv[2]} on {sys.argv[3]} GPU(s), median of rounds\n")
print("| blocking | env | median TFLOP/s | min | max | failed | detail (last round) |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for med, b, e, tf, bad, d in out:
    lo, hi = (f"{min(tf):.2f}", f"{max(tf):.2f}") if tf else ("-", "-")
    print(f"| {b} | {e} | {med:.2f} | {lo} | {hi} | {bad} | {d} |")
PY
            cat "$OUT/sweep-$label.md"
        done
    done
}

# callcost_spread: the spread between processes. Every --shapes problem (MxNxK:dtype[:b0])
# through `callcost` (untraced percentiles, then each kind of task's busy time and rate in
# traced calls) in its own process, --rounds times per --env combination, in turn.
callcost_spread() {
    use_profile cuda
    local combos c r i envs load=""
    mapfile -t combos < <(env_combos)
    for ((r = 0; r < ROUNDS; r++)); do
        i=0
        for c in "${combos[@]}"; do
            mapfile -t envs < <(env_args "$c")
            i=$((i + 1))
            echo "== round $r env ${c:--}$( ((HOST_LOAD)) && echo ", host load $HOST_LOAD threads")"
            ((HOST_LOAD > 0 && DRY_RUN)) && echo "+ host_load $HOST_LOAD (torch a += b, in the background)"
            if ((HOST_LOAD > 0 && !DRY_RUN)); then
                # Its own log: a load that held the pipe of this script's output would keep a
                # reader of it waiting after the script ends.
                host_load "$HOST_LOAD" >"$OUT/host-load-r$r-$i.log" 2>&1 &
                load=$!
                # Never left streaming after the script: it would slow whatever runs next.
                trap 'kill "$load" 2>/dev/null' EXIT
                # Until its first rate: its buffers are allocated and it streams.
                for _ in $(seq 60); do
                    grep -q "GB/s" "$OUT/host-load-r$r-$i.log" && break
                    kill -0 "$load" 2>/dev/null || break
                    sleep 0.5
                done
                grep -q "GB/s" "$OUT/host-load-r$r-$i.log" || {
                    echo "!! the host load did not start (torch?):"
                    tail -3 "$OUT/host-load-r$r-$i.log"
                    FAILED=$((FAILED + 1))
                }
            fi
            run --log "$OUT/callcost-r$r-$i.log" --grep "untraced|traced medians|priced" env "${envs[@]}" \
                "$BIN/callcost" --shapes "$SHAPES" --calls "$CALLS"
            if [[ -n $load ]]; then
                kill "$load" 2>/dev/null
                wait "$load" 2>/dev/null
                tail -1 "$OUT/host-load-r$r-$i.log"
                load=""
                trap - EXIT
            fi
        done
    done
}

# host_load N: N threads streaming host memory until killed (prints GB/s every few seconds). The
# subshell becomes python (exec), so that killing the job's pid stops the load.
host_load() {
    exec python3 - "$1" <<'PY'
import sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
a, b = torch.rand(1 << 28), torch.rand(1 << 28)
t, n = time.time(), 0
while True:
    a.add_(b)
    n += 1
    if time.time() - t > 1:
        print(f"host load: {n * 3 * 4 * (1 << 28) / (time.time() - t) / 1e9:.0f} GB/s", flush=True)
        t, n = time.time(), 0
PY
}

start compare
if ((CALLCOST)); then
    callcost_spread
    finish
fi
if ((SWEEP)); then
    sweep
    finish
fi
if ((LINKS)); then
    links
    finish
fi
if ((HOSTMEM)); then
    hostmem
    finish
fi
if ((MEMPROBE)); then
    memprobe
    finish
fi
if ((LINKPROBE)); then
    linkprobe
    finish
fi
if ((COPYSTART)); then
    copystart
    finish
fi
if ((COPYOUT)); then
    copyout
    finish
fi
if ((CONCURRENT)); then
    concurrent
    finish
fi
if ((SIMULATE)); then
    simulate
    finish
fi
if ((ENERGY)); then
    energy
    finish
fi
if ((MIXED)); then
    mixed
    finish
fi
if [[ -n $FAULT ]]; then
    faults
    finish
fi
use_profile cuda
case $ROUTINE in
    gemm) ;;
    trsm | trmm)
        triangular
        finish
        ;;
    potrf | getrf)
        [[ -n $SIZES ]] || SIZES=16384,32768
        factorizations
        finish
        ;;
    syrk | herk | syr2k | her2k | symm | hemm) ;;
    *) echo "--routine $ROUTINE: gemm, trsm, trmm, syrk, herk, syr2k, her2k, symm, hemm, potrf or getrf"; usage ;;
esac
for dt in ${DTYPES//,/ }; do
    for shape in $(problems); do
        IFS=x read -r m n k <<<"$shape"
        label=$dt-$shape-g$GPUS${PLACEMENT:+-$PLACEMENT}
        [[ $ROUTINE == gemm ]] || label=$ROUTINE-$label
        args=(--gpus "$GPUS" --dtype "$dt" --variants "$VARIANTS" --reps "$(reps_for "$m" "$n" "$k")"
            --xt-blocks "$XT" --shapes "$shape" --csv "$OUT/$label.csv" "${FORCE[@]}"
            --routine "$ROUTINE" "${SYM[@]}")
        [[ -n $PLACEMENT ]] && args+=(--placement "$PLACEMENT")
        ((TRAFFIC)) && args+=(--traffic)
        run --log "$OUT/$label.log" --grep "^\| [0-9]|^  traffic" "$C" "${args[@]}"
        ((DRY_RUN)) || grep -hE "^\| [0-9]" "$OUT/$label.log" >>"$OUT/summary.md"
        if ((TIMELINE)); then
            run --log "$OUT/trace-$label.log" --grep "^== timeline|busy|overlapped|h2d alone" "$C" --gpus "$GPUS" \
                --dtype "$dt" --sizes 256 --variants hetblas --reps 1 --trace-shape "$shape" \
                --trace-out "$OUT/trace-$label.json" "${FORCE[@]}"
        fi
    done
done
if [[ -n $PIN_DEMO ]]; then
    run --log "$OUT/pin-demo.log" --grep "^== registration|call [12]:" "$C" --gpus "$GPUS" \
        --sizes 256 --variants hetblas --reps 1 --pin-demo "$PIN_DEMO"
fi
finish
