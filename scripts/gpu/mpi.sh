#!/usr/bin/env bash
# Distributed GEMM on one node: R ranks with one GPU each (hetblas-mpi, SUMMA over MPI) against
# one process with R GPUs (hetblas gemm), DGEMM with host operands; one table of the two.
# With --one-gpu: R ranks sharing GPU 0 against one process on GPU 0 (issue 56's measurement).
#
#   bash scripts/gpu/mpi.sh [options] [env.sh options]
#     --one-gpu          every rank and the one process on GPU 0 (HETBLAS_CUDA_DEVICES=0 for
#                        all), the variants and baseline below defaulting to: the model's
#                        panel and C placement with the shared window, and the earlier setup
#                        (panel 8192, C on the device) for comparison; no broadcast probe.
#                        About 4-5 minutes for 32768 (generating the matrices is a good part)
#     --ranks R          ranks = GPUs (default 2)
#     --size N           DGEMM N^3 (default 32768)
#     --grids LIST       process grids (default Rx1: C split by rows and B broadcast; 1xR is
#                        the same traffic with A broadcast)
#     --variants LIST    SUMMA variants to compare, each
#                        TRANSPORT/LOOKAHEAD/PANEL[/MCA[/DEVS[/C]]]: TRANSPORT ibcast, chain:MIB
#                        (point-to-point chunks of MIB) or shared (an MPI-3 shared-memory
#                        window: no copy between ranks), LOOKAHEAD panels in flight, PANEL the
#                        panel width or auto (the model's), MCA one of the Open MPI settings
#                        below (empty or absent: Open MPI's defaults), DEVS the devices of each
#                        rank's local products: auto (default: the GPU only), gpu, or all (the
#                        CPU may take tiles too), C where each rank keeps local C: auto (the
#                        model's), host or device
#     --baseline LIST    single-rank baselines, each DEVS[/PANEL[/C]] (default auto/8192; with
#                        --one-gpu auto/auto,auto/8192/device; none: skip): one rank, one GPU,
#                        grid 1x1, the local product of one of the R ranks (N/R x N x N, A and B
#                        read in place), so that the local product is timed without MPI
#                        partners, windows or broadcasts; its time against its products' is
#                        the time outside the products
#     --no-single        skip the one-process R-GPU reference (hetblas gemm)
#     --bind numa|none   ranks mapped and bound one per NUMA node (rank r on node r, the node
#                        of GPU r on the usual two-socket layout; see machine.txt's topology),
#                        or unbound (default none)
#     --reps R           timed repetitions after a warm-up (default 3)
#     --no-probe         skip the broadcast bandwidth probe (hetblas-mpi bcast per MCA set)
#   Every bench prints, per rank and for the first timed repetition, each local product's
#   seconds and rate, the runtime's devices, shares, tile and host fold, and the host
#   registrations it made; per rank and repetition its time outside its products by cause;
#   per rank its counters (registrations and allocations after the warm-up: 0 expected)
#   (lines "rank R ..."; the whole output is in the logs); and writes every rank's timeline
#   of the timed repetitions to $OUT/trace-NAME.json (Chrome trace: one process per rank).
#   MCA sets (the shared-memory transport vader; a container may forbid CMA's
#   process_vm_readv, and then every large message is copied twice through 32 KiB fragments):
#     cma     btl_vader_single_copy_mechanism=cma (one copy, the receiver reads the sender)
#     none    btl_vader_single_copy_mechanism=none (copy in, copy out)
#     frag    none, with 256 KiB fragments (btl_vader_max_send_size) instead of 32 KiB
#   Preparation, on the build machine (the GPU machine has no Rust and no MPI): the bundle
#     (device-bundle: .device/bin/hetblas, the one-process reference), then
#     CARGO_TARGET_DIR=target cargo build --release --manifest-path crates/mpi/Cargo.toml and
#     copy target/release/hetblas-mpi into .device/bin/ (after device-bundle, which
#     recreates .device),
#     and `bash scripts/gpu/mpi.sh --fetch-openmpi` puts Debian's Open MPI runtime .debs
#     (about 6.5 MB) into .device/openmpi/. On the GPU machine they are unpacked with dpkg -x
#     into $CACHE/openmpi and used through OPAL_PREFIX, PATH and LD_LIBRARY_PATH; an mpirun
#     already on PATH is used instead.
# Results: $OUT/mpi.log, $OUT/mpi.md, $OUT/trace-*.json.

# shellcheck source=scripts/gpu/env.sh
source "$(dirname "$0")/env.sh"
RANKS=2 SIZE=32768 GRIDS="" REPS=3 PROBE=1 SINGLE=1 BASELINE="" BIND=none ONE_GPU=0 VARIANTS=""
DEBS="openmpi-bin openmpi-common libopenmpi3 libpmix2 libhwloc15 libevent-core-2.1-7
 libevent-pthreads-2.1-7 libfabric1 libucx0 libpsm2-2 libpsm-infinipath1 libibverbs1
 ibverbs-providers librdmacm1 libnl-3-200 libnl-route-3-200 libmunge2 libnuma1 libatomic1"
while (($#)); do
    case $1 in
        --fetch-openmpi)
            mkdir -p "$ROOT/.device/openmpi" && cd "$ROOT/.device/openmpi" || exit 1
            # shellcheck disable=SC2086 # a list of package names
            apt-get download $DEBS && du -sh . && exit 0
            exit 1 ;;
        --one-gpu) ONE_GPU=1; shift ;;
        --ranks) RANKS=$2; shift 2 ;;
        --size) SIZE=$2; shift 2 ;;
        --grids) GRIDS=$2; shift 2 ;;
        --variants) VARIANTS=$2; shift 2 ;;
        --no-probe) PROBE=0; shift ;;
        --no-single) SINGLE=0; shift ;;
        --baseline) BASELINE=$2; shift 2 ;;
        --bind) BIND=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        -h | --help) usage 0 ;;
        *) common_option "$@" || usage; shift "$SHIFT" ;;
    esac
done
GRIDS=${GRIDS:-${RANKS}x1}
if ((ONE_GPU)); then
    # The model's panel and C placement with the shared window, then the setup of the
    # 2026-11-29 measurement (panel 8192, C on the device).
    VARIANTS=${VARIANTS:-shared/2/auto,shared/2/8192///device}
    BASELINE=${BASELINE:-auto/auto,auto/8192/device}
    PROBE=0
else
    # The shared window (no copy between ranks) with the products on the GPU only (the
    # default) and with the CPU allowed too, then the chunked chain.
    VARIANTS=${VARIANTS:-shared/2/8192,shared/2/8192//all,chain:64/2/8192,shared/2/4096}
    BASELINE=${BASELINE:-auto/8192}
fi
case $BIND in
    none) PLACE=(--bind-to none) ;;
    numa) PLACE=(--map-by numa --bind-to numa) ;;
    *) echo "--bind $BIND: numa or none" >&2; exit 2 ;;
esac
MPI_BIN=$BIN/hetblas-mpi
start mpi
((DRY_RUN)) || [[ -x $MPI_BIN ]] || { echo "no $MPI_BIN (see --help)"; exit 1; }

# Open MPI: the one installed, else the carried .debs unpacked into a prefix (where mpirun is
# mpirun.openmpi: Debian makes the plain name with update-alternatives, which dpkg -x skips).
MPIRUN=mpirun
if ! command -v mpirun >/dev/null; then
    P=$CACHE/openmpi
    if [[ ! -x $P/usr/bin/mpirun ]] && ((!DRY_RUN)); then
        ls "$ROOT"/.device/openmpi/*.deb >/dev/null 2>&1 || { echo "no mpirun and no .device/openmpi/*.deb"; exit 1; }
        for d in "$ROOT"/.device/openmpi/*.deb; do dpkg -x "$d" "$P"; done
    fi
    export OPAL_PREFIX=$P/usr PATH=$P/usr/bin:$PATH
    export LD_LIBRARY_PATH=$P/usr/lib/x86_64-linux-gnu:$P/usr/lib/x86_64-linux-gnu/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    MPIRUN=$P/usr/bin/mpirun.openmpi
    echo "Open MPI from the carried .debs: $P"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One node, shared memory between ranks; no network transports to probe.
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1

GPUS=$(seq -s, 0 $((RANKS - 1)))
((ONE_GPU)) && GPUS=0
single=${HETBLAS_PROFILE:-}
if ((SINGLE)); then
    echo "== one process, GPUs $GPUS"
    HETBLAS_CUDA_DEVICES=$GPUS use_profile "cuda$( ((ONE_GPU)) && echo 1 || echo "$RANKS")"
    single=${HETBLAS_PROFILE:-}
    HETBLAS_CUDA_DEVICES=$GPUS run --log "$OUT/single.log" --grep "TFLOP|GFLOP|median|devices" \
        "$H" gemm --size "$SIZE" --reps "$REPS"
fi
# mca SET: the mpirun options of an MCA set (see the header).
mca() {
    case $1 in
        "") ;;
        cma) echo "--mca btl_vader_single_copy_mechanism cma" ;;
        none) echo "--mca btl_vader_single_copy_mechanism none" ;;
        frag) echo "--mca btl_vader_single_copy_mechanism none --mca btl_vader_max_send_size 262144" ;;
        *) echo "unknown MCA set $1" >&2; exit 2 ;;
    esac
}
HETBLAS_CUDA_DEVICES=0 use_profile cuda1
# Each rank takes the GPU of its local rank (GPU 0 for all with --one-gpu); the environment
# that is set travels (every HETBLAS_* variable, so that HETBLAS_BACKENDS and the like
# reach the ranks).
# shellcheck disable=SC2016 # expanded by each rank's shell
RANK_GPU='HETBLAS_CUDA_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK exec "$0" "$@"'
# shellcheck disable=SC2016 # expanded by each rank's shell
((ONE_GPU)) && RANK_GPU='HETBLAS_CUDA_DEVICES=0 exec "$0" "$@"'
# panel_opts PANEL C: the bench options of a panel width (auto: the model's) and a placement.
panel_opts() {
    [[ ${1:-auto} != auto ]] && echo "--panel $1"
    echo "--c ${2:-auto}"
}
pass=()
for v in $(compgen -v HETBLAS_) LD_LIBRARY_PATH PATH OPAL_PREFIX; do
    [[ $v != HETBLAS_CUDA_DEVICES && -n ${!v:-} ]] && pass+=(-x "$v")
done
SHOW="^(bench|rep|warm|result|rank|trace)"
if [[ $BASELINE != none ]]; then
    echo "== 1 rank x 1 GPU: the local product of one of $RANKS ranks, $((SIZE / RANKS))x${SIZE}x$SIZE"
    for b in ${BASELINE//,/ }; do
        IFS=/ read -r devs w c <<<"$b"
        w=${w:-8192}
        name=baseline-${devs:-auto}-p$w-c${c:-auto}
        # shellcheck disable=SC2046 # panel_opts prints separate options
        run --limit 180 --log "$OUT/$name.log" --grep "$SHOW" \
            "$MPIRUN" -np 1 "${PLACE[@]}" "${pass[@]}" bash -c "$RANK_GPU" \
            "$MPI_BIN" bench --grid 1x1 -m $((SIZE / RANKS)) -n "$SIZE" -k "$SIZE" \
            $(panel_opts "$w" "$c") --devices "${devs:-auto}" --reps "$REPS" \
            --trace "$OUT/trace-$name.json"
    done
fi
# The shared window lives in Open MPI's backing files (/dev/shm, else the session directory):
# a container's small /dev/shm would refuse it.
df -h /dev/shm /tmp 2>/dev/null || true
echo "== $RANKS ranks x 1 GPU, grids $GRIDS"
for g in ${GRIDS//,/ }; do
    for v in ${VARIANTS//,/ }; do
        IFS=/ read -r tr la w set devs c <<<"$v"
        name=$g-${tr/:/}-l$la-p$w-${devs:-auto}-c${c:-auto}-${set:-default}
        # shellcheck disable=SC2046 # mca and panel_opts print separate options
        run --limit 150 --log "$OUT/mpi-$name.log" --grep "$SHOW" \
            "$MPIRUN" -np "$RANKS" "${PLACE[@]}" $(mca "$set") "${pass[@]}" bash -c "$RANK_GPU" \
            "$MPI_BIN" bench --grid "$g" --size "$SIZE" --transport "$tr" --lookahead "$la" \
            $(panel_opts "$w" "$c") --devices "${devs:-auto}" --reps "$REPS" \
            --trace "$OUT/trace-mpi-$name.json"
    done
done
if ((PROBE)); then
    echo "== broadcast bandwidth between $RANKS ranks (1 GiB and 4 GiB, GB/s), per MCA set"
    for set in "" cma none frag; do
        # shellcheck disable=SC2046 # mca prints separate options
        run --limit 120 --log "$OUT/bcast-${set:-default}.log" --grep "^bcast" \
            "$MPIRUN" -np "$RANKS" --bind-to none $(mca "$set") "$MPI_BIN" bcast \
            --mib 1024,4096 --transports ibcast,chain:64 --reps 1
    done
fi
HETBLAS_PROFILE=$single
((DRY_RUN)) && finish
{
    single_tf=$(grep -hoE "[0-9.]+ GFLOP/s" "$OUT/single.log" 2>/dev/null | tail -1 | awk '{ printf "%.2f", $1 / 1000 }')
    echo "one process, GPU(s) $GPUS: ${single_tf:-?} TFLOP/s"
    echo
    echo "| grid | transport | look-ahead | panel | C | MCA | product devices | TFLOP/s | of one process | longest wait (s) | least products' share | most outside (s) |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    for f in "$OUT"/mpi-*.log; do
        set=$(basename "$f" .log); set=${set##*-}
        # result,mpi,m,n,k,grid,seconds,TFLOP/s,transport,look-ahead,panel,longest wait,
        # devices,C asked,least products' share,most outside
        grep -h "^result,mpi" "$f" | awk -F, -v s="$set" -v one="${single_tf:-0}" '{
            printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $6, $9, $10, $11, $14, s, $13, $8,
                (one > 0 ? sprintf("%.2f", $8 / one) : "?"), $12, $15, $16 }'
    done
    echo
    echo "single rank, one GPU (the local product alone; compare with one process's TFLOP/s / $RANKS;"
    echo "products' share >= 0.909 is within 10% of its products' time):"
    for f in "$OUT"/baseline-*.log; do
        [[ -f $f ]] && grep -h "^result,mpi" "$f" | awk -F, '{
            printf "  %sx%sx%s, panel %s, C %s, product devices %s: %s s, %s TFLOP/s, products %s of the call (%s s outside)\n", $3, $4, $5, $11, $14, $13, $7, $8, $15, $16 }'
    done
    echo
    echo "where each rank's time went (median-free: every timed repetition):"
    grep -h "timeline rep" "$OUT"/mpi-*.log "$OUT"/baseline-*.log 2>/dev/null | sed 's/^/  /' || true
    echo
    echo "broadcast probe (ranks, MiB, transport, polling, seconds, GB/s):"
    cat "$OUT"/bcast-*.log 2>/dev/null | grep -h "^bcast" || true
} | tee "$OUT/mpi.md"
finish
