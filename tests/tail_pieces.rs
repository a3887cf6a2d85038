//! Late C chains in pieces (`hetblas_core::plan::Task::pieces`): every pool of this test binary
//! splits the C fetch, add and write-back of the last group of tiles of every plan in three
//! (`DevicePool::set_tail_pieces`), whatever their size. The shared conformance suite runs on
//! emulated devices that way, and a device made to fail at each of its copies in turn, some of
//! them between the pieces of a write-back, must leave a correct C.

mod common;

use hetblas_conformance::{conformance_suite, Target};
use hetblas_core::fault::{FaultKind, FaultOp, FaultSpec};
use hetblas_core::{DevicePool, GemmOptions, MatMut, MatRef, Trans};
use hetblas_cpu::EmulatedConfig;

/// `pool`, its plans' last late C chains in three pieces.
fn in_pieces(pool: std::sync::Arc<DevicePool>) -> std::sync::Arc<DevicePool> {
    pool.set_tail_pieces(Some(3));
    pool
}

fn targets() -> Option<Vec<Target>> {
    let targets = vec![common::target(1, 16), common::target(3, 16)];
    for t in &targets {
        t.pool.set_tail_pieces(Some(3));
    }
    Some(targets)
}

conformance_suite!(targets);

/// The plan splits the chains (so the suite above is not vacuous), and the result is exact.
#[test]
fn the_last_tiles_go_in_pieces_and_c_is_exact() {
    let report = common::gemm_exact(
        &in_pieces(common::pool()),
        (96, 90, 64),
        &GemmOptions::default().devices([1]).tile(32),
    );
    let plan = report.plan.expect("the report's plan");
    let split = plan.tasks.iter().filter(|t| t.pieces == 3).count();
    assert!(split >= 3, "{split} tasks in pieces");
}

/// Device 0 of two fails at its 1st, 2nd, ... copy, until a call runs without a fault. Every
/// call must end with C exact; some faults stop a write-back between its pieces, and then
/// only the columns not written back run again (run whole with beta = -1, those columns
/// would hold C + 2 A B).
#[test]
fn a_fault_between_the_pieces_of_a_write_back_reruns_only_the_rest() {
    let config = EmulatedConfig {
        memory_bytes: 16 << 20,
        compute_queues: 1,
        ..Default::default()
    };
    let (pool, emus) = common::emulated_handles(&[config.clone(), config]);
    pool.set_tail_pieces(Some(3));
    let (m, n, k) = (96, 90, 64);
    let common::ExactCase { a, b, c0, want } = common::ExactCase::new(m, n, k);
    let opts = GemmOptions::default().tile(32).host_fold(false);
    let (mut in_part, mut recovered) = (0, 0);
    for kind in [FaultKind::Error, FaultKind::Lost] {
        for at in 1.. {
            emus[0]
                .faults()
                .arm([FaultSpec::new(0, FaultOp::Copy, at, kind)]);
            let mut c = c0.clone();
            let report = pool
                .gemm_with(
                    Trans::N,
                    Trans::N,
                    1.0,
                    MatRef::packed(&a, m, k).unwrap(),
                    MatRef::packed(&b, k, n).unwrap(),
                    -1.0,
                    MatMut::packed(&mut c, m, n).unwrap(),
                    &opts,
                )
                .unwrap_or_else(|e| panic!("{kind:?} at copy {at}: {e}"));
            emus[0].faults().disarm();
            assert!(pool.reprobe().is_empty(), "a healed device stays excluded");
            for x in 0..m * n {
                assert_eq!(
                    c[x],
                    want[x],
                    "{kind:?} at copy {at}: C({}, {}) (before {}) ({:?})",
                    x % m,
                    x / m,
                    c0[x],
                    report.recovered
                );
            }
            if report.recovered.is_empty() {
                break;
            }
            recovered += 1;
            in_part += report
                .recovered
                .iter()
                .map(|f| f.tiles_in_part)
                .sum::<usize>();
        }
    }
    assert!(recovered > 10, "{recovered} faulted calls");
    assert!(
        in_part > 0,
        "no fault landed between the pieces of a write-back"
    );
}

/// One k step, a cache of a few slots and edge tiles, in pieces: C exact. (A late C fetch may
/// reuse a slot that another tile's chain released; the executor then waits for that chain
/// whole, not piece by piece, as its pieces are other columns: `chain_tile` in the executor.
/// These shapes did not expose the piece-by-piece wait when it was tried: a smoke test.)
#[test]
fn a_slot_reused_across_chains_of_other_widths_is_waited_for_whole() {
    for memory in [48 << 10, 64 << 10, 96 << 10] {
        let config = EmulatedConfig {
            memory_bytes: memory,
            compute_queues: 1,
            ..Default::default()
        };
        let pool = in_pieces(common::emulated_pool(&[config]));
        for (m, n, k) in [(100, 70, 30), (70, 100, 32), (129, 95, 17)] {
            let report = common::gemm_exact(
                &pool,
                (m, n, k),
                &GemmOptions::default().tile(32).host_fold(false),
            );
            let plan = report.plan.expect("the report's plan");
            assert!(
                plan.tasks.iter().any(|t| t.pieces == 3),
                "{memory} ({m}, {n}, {k}): nothing split"
            );
        }
    }
}
