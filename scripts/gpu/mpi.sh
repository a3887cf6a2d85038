#!/usr/bin/env bash
# Distributed GEMM on one node: R ranks with one GPU each (hetblas-mpi, SUMMA over MPI) against
# one process with R GPUs (hetblas gemm), DGEMM with host operands; one table of the two.
#
#   bash scripts/gpu/mpi.sh [options] [env.sh options]
#     --ranks R          ranks = GPUs (default 2)
#     --size N           DGEMM N^3 (default 32768)
#     --grids LIST       process grids (default Rx1,1xR: C split by rows and B broadcast, or
#                        by columns and A broadcast)
#     --panels LIST      SUMMA panel widths to try (default 8192,16384)
#     --reps R           timed repetitions after a warm-up (default 3)
#   Preparation, on the build machine (the GPU machine has no Rust and no MPI):
#     cargo build --release --manifest-path crates/mpi/Cargo.toml, then copy
#     crates/mpi/target/release/hetblas-mpi into .device/bin/ (after device-bundle, which
#     recreates .device),
#     and `bash scripts/gpu/mpi.sh --fetch-openmpi` puts Debian's Open MPI runtime .debs
#     (about 6.5 MB) into .device/openmpi/. On the GPU machine they are unpacked with dpkg -x
#     into $CACHE/openmpi and used through OPAL_PREFIX, PATH and LD_LIBRARY_PATH; an mpirun
#     already on PATH is used instead.
# Results: $OUT/mpi.log, $OUT/mpi.md.

# shellcheck source=scripts/gpu/env.sh
source "$(dirname "$0")/env.sh"
RANKS=2 SIZE=32768 GRIDS="" PANELS=8192,16384 REPS=3
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
        --ranks) RANKS=$2; shift 2 ;;
        --size) SIZE=$2; shift 2 ;;
        --grids) GRIDS=$2; shift 2 ;;
        --panels) PANELS=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        -h | --help) usage 0 ;;
        *) common_option "$@" || usage; shift "$SHIFT" ;;
    esac
done
GRIDS=${GRIDS:-${RANKS}x1,1x${RANKS}}
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
echo "== one process, GPUs $GPUS"
HETBLAS_CUDA_DEVICES=$GPUS use_profile "cuda$RANKS"
single=$HETBLAS_PROFILE
HETBLAS_CUDA_DEVICES=$GPUS run --log "$OUT/single.log" --grep "TFLOP|GFLOP|median|devices" \
    "$H" gemm --size "$SIZE" --reps "$REPS"
echo "== $RANKS ranks x 1 GPU, grids $GRIDS"
HETBLAS_CUDA_DEVICES=0 use_profile cuda1
# Each rank takes the GPU of its local rank; the environment that is set travels.
pass=()
for v in HETBLAS_PROFILE LD_LIBRARY_PATH PATH OPAL_PREFIX; do [[ -n ${!v:-} ]] && pass+=(-x "$v"); done
for g in ${GRIDS//,/ }; do
    for w in ${PANELS//,/ }; do
        # shellcheck disable=SC2016 # expanded by each rank's shell
        run --log "$OUT/mpi-$g-panel$w.log" --grep "^(bench|rep|warm|result)" \
            "$MPIRUN" -np "$RANKS" --bind-to none "${pass[@]}" \
            bash -c 'HETBLAS_CUDA_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK exec "$0" "$@"' \
            "$MPI_BIN" bench --grid "$g" --size "$SIZE" --panel "$w" --reps "$REPS"
    done
done
HETBLAS_PROFILE=$single
((DRY_RUN)) && finish
{
    echo "| run | TFLOP/s |"
    echo "| --- | --- |"
    # hetblas gemm prints "median S s over R reps, G GFLOP/s".
    grep -hoE "[0-9.]+ GFLOP/s" "$OUT/single.log" | tail -1 |
        awk -v r="$RANKS" '{ printf "| one process, %s GPUs | %.2f |\n", r, $1 / 1000 }'
    for f in "$OUT"/mpi-*-panel*.log; do
        grep -h "^result,mpi" "$f" | awk -F, -v f="$(basename "$f" .log)" '{ print "| " f ", grid " $6 " | " $8 " |" }'
    done
} | tee "$OUT/mpi.md"
finish
