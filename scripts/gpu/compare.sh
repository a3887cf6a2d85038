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
#     --placement P      where A, B, C live: h (host) or a GPU number each, e.g. 000, 00h, 1h0
#                        (default: all on the host)
#     --variants LIST    of hetblas, hetblas-fold, hetblas-nofold, cublasxt, naive, ceiling
#                        (default hetblas,cublasxt)
#     --reps N|auto      timed repetitions after a warm-up (auto: 9 up to 1e12 m*n*k, 5 up to
#                        1e13, else 3)
#     --xt-blocks LIST   cuBLASXt block sizes, the best is reported (default 2048,4096,8192 on
#                        one GPU, 4096,8192 on more)
#     --tile T | --blocking TMxTNxTK/gG    force hetblas's tiling
#     --routine R        gemm (default), or syrk, herk, syr2k, her2k, symm, hemm: hetblas against
#                        cuBLASXt's routine of the same name and the device-resident cuBLAS one
#                        (variant ceiling); a size S is n = k (rank updates) or m = n (SYMM), a
#                        shape MxNxK gives C m x n and inner k; e.g. --routine syrk --sizes 32768
#     --uplo U|L --trans N|T|C --side L|R   the symmetric routine's options (default L, N, L)
#     --tiles LIST       symmetric routines: hetblas diagonal blocks to sweep next to the model's
#                        choice (rows hetblas-T<block>), e.g. --tiles 2048,4096,8192
#     --traffic          bytes each GPU fetched from the host and from peers, with and without
#                        peer forwarding
#     --timeline         also a timeline of each problem (Chrome JSON in $OUT/trace-*.json)
#     --pin-demo N       the registration cache: two calls on fresh N^3 buffers
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
#     plus env.sh's options (--profile, --hugepages, --out, --timeout, --dry-run)
# Each problem's full output is in $OUT/<dtype>-<shape>-g<N>.log and .csv; the table rows are
# gathered in $OUT/summary.md.

# shellcheck source=scripts/gpu/env.sh
source "$(dirname "$0")/env.sh"
SIZES="" SHAPES="" DTYPES=f64 GPUS=1 PLACEMENT="" VARIANTS=hetblas,cublasxt REPS=auto XT=""
FORCE=() TRAFFIC=0 TIMELINE=0 PIN_DEMO="" MIXED=0 FAULT="" OOC=32768 ROUTINE=gemm SYM=()
while (($#)); do
    case $1 in
        --sizes) SIZES=$2; shift 2 ;;
        --shapes) SHAPES=$2; shift 2 ;;
        --dtypes | --dtype) DTYPES=$2; shift 2 ;;
        --gpus) GPUS=$2; shift 2 ;;
        --placement) PLACEMENT=$2; shift 2 ;;
        --variants) VARIANTS=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        --xt-blocks) XT=$2; shift 2 ;;
        --tile | --blocking) FORCE=("$1" "$2"); shift 2 ;;
        --traffic) TRAFFIC=1; shift ;;
        --timeline) TIMELINE=1; shift ;;
        --pin-demo) PIN_DEMO=$2; shift 2 ;;
        --mixed) MIXED=1; shift ;;
        --fault) FAULT=$2; shift 2 ;;
        --ooc-size) OOC=$2; shift 2 ;;
        --routine) ROUTINE=$2; shift 2 ;;
        --uplo | --trans | --side | --tiles) SYM+=("$1" "$2"); shift 2 ;;
        -h | --help) usage 0 ;;
        *) common_option "$@" || usage; shift "$SHIFT" ;;
    esac
done
if [[ -z $SIZES && -z $SHAPES ]]; then
    if ((MIXED)); then SIZES=16384,32768; elif [[ -n $FAULT ]]; then SIZES=16384; else SIZES=8192,16384,32768; fi
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

start compare
if ((MIXED)); then
    mixed
    finish
fi
if [[ -n $FAULT ]]; then
    faults
    finish
fi
use_profile cuda
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
            run --log "$OUT/trace-$label.log" --grep "^== timeline|busy|overlapped" "$C" --gpus "$GPUS" \
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
