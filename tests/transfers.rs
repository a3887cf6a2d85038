//! Counting the transfers the executor performs: each A and B tile crosses a link at most once
//! per device that needs it, each C tile is fetched once (beta != 0, C added on the device) or
//! never (beta == 0, or host C folded on the host), and written back exactly once; the CPU
//! device moves nothing for host operands.

mod common;

use hetblas_core::problem::Operand;
use hetblas_core::tiling::TileKey;
use hetblas_core::{GemmOptions, GemmReport, MatMut, MatRef, Trans};
use std::collections::{HashMap, HashSet};

#[allow(clippy::too_many_arguments)] // a GEMM-shaped argument list (BLAS order)
fn run(
    devices: Vec<usize>,
    m: usize,
    n: usize,
    k: usize,
    tile: usize,
    beta: f64,
    limit: Option<u64>,
    host_fold: bool,
) -> GemmReport {
    let pool = common::pool();
    let a: Vec<f64> = (0..m * k).map(|i| (i % 7) as f64 - 3.0).collect();
    let b: Vec<f64> = (0..k * n).map(|i| (i % 5) as f64 - 2.0).collect();
    let mut c = vec![1.0f64; m * n];
    pool.gemm_with(
        Trans::N,
        Trans::T,
        1.0,
        MatRef::packed(&a, m, k).unwrap(),
        MatRef::packed(&b, n, k).unwrap(),
        beta,
        MatMut::packed(&mut c, m, n).unwrap(),
        &GemmOptions::default()
            .tile(tile)
            .devices(devices)
            .memory_limit(limit)
            .host_fold(host_fold),
    )
    .unwrap()
}

fn tiles(x: usize, t: usize) -> usize {
    x.div_ceil(t)
}

#[test]
fn each_tile_crosses_each_link_at_most_once_per_device() {
    let (m, n, k, t) = (50, 41, 37, 8);
    let (mt, nt, kt) = (tiles(m, t), tiles(n, t), tiles(k, t));
    for (ndev, beta, host_fold) in
        (1..=4).flat_map(|d| [(d, 0.0, true), (d, 1.0, true), (d, 1.0, false)])
    {
        {
            let devices: Vec<usize> = (1..=ndev).collect();
            let r = run(devices, m, n, k, t, beta, None, host_fold);
            let mut fetched: HashMap<(u16, TileKey), usize> = HashMap::new();
            let mut written: HashMap<TileKey, usize> = HashMap::new();
            let mut owner: HashMap<TileKey, u16> = HashMap::new();
            for tr in &r.transfers {
                if tr.writeback {
                    *written.entry(tr.key).or_default() += 1;
                    owner.insert(tr.key, tr.device);
                } else {
                    *fetched.entry((tr.device, tr.key)).or_default() += 1;
                }
            }
            for ((d, key), count) in &fetched {
                assert_eq!(
                    *count, 1,
                    "{ndev} devices: tile {key:?} fetched {count} times by device {d}"
                );
            }
            assert_eq!(written.len(), mt * nt, "every C tile written back");
            assert!(
                written.values().all(|&c| c == 1),
                "each C tile written back once"
            );
            // C fetched once per tile iff beta != 0 and C is added on the device, by the device
            // that owns it.
            let c_fetches: Vec<_> = fetched.keys().filter(|(_, k)| k.op == Operand::C).collect();
            if beta == 0.0 {
                assert!(c_fetches.is_empty(), "beta == 0 must not read C");
            } else if host_fold {
                assert!(c_fetches.is_empty(), "host C is folded on the host");
            } else {
                assert_eq!(c_fetches.len(), mt * nt);
                for (d, key) in c_fetches {
                    assert_eq!(
                        owner[key], *d,
                        "C tile fetched by a device that does not own it"
                    );
                }
            }
            // A device fetches exactly the A/B tiles its C tiles need.
            for d in 0..ndev as u16 {
                let mine: HashSet<TileKey> = owner
                    .iter()
                    .filter(|(_, &o)| o == d)
                    .map(|(k, _)| *k)
                    .collect();
                let need_a: HashSet<(u32, u32)> = mine
                    .iter()
                    .flat_map(|c| (0..kt as u32).map(move |l| (c.r, l)))
                    .collect();
                let need_b: HashSet<(u32, u32)> = mine
                    .iter()
                    .flat_map(|c| (0..kt as u32).map(move |l| (l, c.c)))
                    .collect();
                let got_a: HashSet<(u32, u32)> = fetched
                    .keys()
                    .filter(|(dd, k)| *dd == d && k.op == Operand::A)
                    .map(|(_, k)| (k.r, k.c))
                    .collect();
                let got_b: HashSet<(u32, u32)> = fetched
                    .keys()
                    .filter(|(dd, k)| *dd == d && k.op == Operand::B)
                    .map(|(_, k)| (k.r, k.c))
                    .collect();
                assert_eq!(got_a, need_a, "device {d} A tiles");
                assert_eq!(got_b, need_b, "device {d} B tiles");
            }
            assert_eq!(r.stats.writebacks, mt * nt);
            assert_eq!(
                r.transfers.len(),
                r.stats.fetches.iter().sum::<usize>() + r.stats.writebacks
            );
        }
    }
}

#[test]
fn out_of_core_still_writes_each_c_tile_once() {
    let (m, n, k, t) = (64, 48, 80, 8);
    // Room for 5 tiles: A/B tiles must be refetched, C still goes back once.
    let r = run(vec![1], m, n, k, t, 1.0, Some(5 * 8 * 8 * 8), false);
    let mut written: HashMap<TileKey, usize> = HashMap::new();
    for tr in r.transfers.iter().filter(|t| t.writeback) {
        *written.entry(tr.key).or_default() += 1;
    }
    assert_eq!(written.len(), tiles(m, t) * tiles(n, t));
    assert!(written.values().all(|&c| c == 1));
    let ab = r.stats.fetches[0] + r.stats.fetches[1];
    assert!(
        ab > tiles(m, t) * tiles(k, t) + tiles(k, t) * tiles(n, t),
        "small cache refetches"
    );
}

#[test]
fn cpu_device_moves_nothing_for_host_operands() {
    let r = run(vec![0], 40, 30, 20, 8, 1.0, None, false);
    assert!(r.transfers.is_empty());
    assert_eq!(r.stats.gemms, 5 * 4 * 3);
}

#[test]
fn workspace_growth_and_cached_plans_stay_correct() {
    // A small call, a larger one (the workspace grows), then the small one again with new
    // buffers (cached plan, larger workspace): results must stay exact.
    use hetblas_conformance::{run_case, CaseSpec};
    let t = common::target(1, 16);
    for (n, tile) in [(64, 16), (160, 40), (64, 16), (160, 40), (64, 16)] {
        let mut s = CaseSpec::new(Trans::N, Trans::N, n, n, n);
        s.tile = Some(tile);
        s.beta = 1.0;
        s.seed = n as u64 + tile as u64;
        run_case::<f64>(&t, &s).unwrap();
    }
}

/// A traced call with host folds: every fold is on the timeline (host-queue events), after the
/// copy that brought its product back, and the result is exact.
#[test]
fn host_folds_appear_on_the_timeline() {
    let pool = common::pool();
    let (m, n, k, t) = (48usize, 40usize, 24usize, 8usize);
    let a: Vec<f64> = (0..m * k).map(|i| (i % 7) as f64 - 3.0).collect();
    let b: Vec<f64> = (0..k * n).map(|i| (i % 5) as f64 - 2.0).collect();
    let c0: Vec<f64> = (0..m * n).map(|i| (i % 3) as f64).collect();
    let mut c = c0.clone();
    let r = common::gemm_nn(
        &pool,
        (m, n, k),
        1.0,
        &a,
        &b,
        2.0,
        &mut c,
        &GemmOptions::default()
            .tile(t)
            .devices([1, 2])
            .trace(true)
            .host_fold(true),
    );
    assert!(r.host_fold);
    let trace = r.trace.expect("trace");
    let folds: Vec<_> = trace
        .intervals
        .iter()
        .filter(|i| i.label.starts_with("fold C("))
        .collect();
    assert_eq!(folds.len(), tiles(m, t) * tiles(n, t));
    for f in &folds {
        assert!(f.end >= f.start && f.start >= 0.0, "{f:?}");
        assert_eq!(f.queue, "host-fold");
    }
    for j in 0..n {
        for i in 0..m {
            let want: f64 =
                (0..k).map(|l| a[l * m + i] * b[j * k + l]).sum::<f64>() + 2.0 * c0[j * m + i];
            assert_eq!(c[j * m + i], want, "({i},{j})");
        }
    }
}
