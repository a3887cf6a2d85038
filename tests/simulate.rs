//! The simulator against real runs on emulated devices (whose rates and links are modelled
//! exactly by a nominal profile): the same task order on every queue, every task of the plan
//! in both timelines, the DAG honoured in virtual time (over the multi-device tests' shapes,
//! and over TRSM/TRMM tile DAGs on one and two devices); and the energy objective on emulated
//! devices with a fake power source. The makespans within 10% of the runs' (median) and the
//! energy a run's trace gives are timing claims, checked by the ignored `timing_*` twins on an
//! idle machine (`scripts/gpu/tests.sh`).

mod common;

use hetblas_core::energy::{DevicePower, Objective};
use hetblas_core::problem::triangular::{Diag, Side, TriOptions, TriRoutine, Uplo};
use hetblas_core::scalar::DType;
use hetblas_core::sim::nominal_profile;
use hetblas_core::trace::Trace;
use hetblas_core::{
    DevicePool, GemmOptions, GemmReport, MatMut, MatRef, SolvePlacement, Trans, TriCallOptions,
    TriReport,
};
use hetblas_cpu::EmulatedConfig;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::emulated as pool;

fn data(len: usize, seed: u64) -> Vec<f64> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        })
        .collect()
}

fn run(
    pool: &DevicePool,
    (m, n, k): (usize, usize, usize),
    beta: f64,
    opts: &GemmOptions,
) -> GemmReport {
    let a = data(m * k, 1);
    let b = data(k * n, 2);
    let mut c = data(m * n, 3);
    // Warm-up: plan, workspaces.
    common::gemm_nn(pool, (m, n, k), 1.0, &a, &b, beta, &mut c, opts);
    common::gemm_nn(pool, (m, n, k), 1.0, &a, &b, beta, &mut c, opts)
}

/// The traced makespan of a run (its wall time without a trace).
fn span(r: &GemmReport) -> f64 {
    r.trace
        .as_ref()
        .map_or(r.seconds, |t| t.span().1 - t.span().0)
}

/// Per queue, the labels of its tasks in start order.
fn per_queue(t: &Trace) -> BTreeMap<String, Vec<String>> {
    let mut iv = t.intervals.clone();
    iv.sort_by(|a, b| a.start.total_cmp(&b.start));
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for i in iv {
        out.entry(i.queue.clone())
            .or_default()
            .push(i.label.clone());
    }
    out
}

struct Case {
    name: &'static str,
    configs: Vec<EmulatedConfig>,
    shape: (usize, usize, usize),
    tile: usize,
    beta: f64,
}

fn emu(flops: f64, host_bw: Option<f64>, peer_bw: Option<f64>, latency_us: u64) -> EmulatedConfig {
    EmulatedConfig {
        flops_per_sec: Some(flops),
        host_link_bytes_per_sec: host_bw,
        peer_link_bytes_per_sec: peer_bw,
        link_latency: Duration::from_micros(latency_us),
        ..Default::default()
    }
}

#[test]
fn simulated_order_matches_emulated_runs() {
    gemm_against_runs(false);
}

#[test]
#[ignore = "timing: run on an idle machine (scripts/gpu/tests.sh)"]
fn timing_simulated_makespan_matches_emulated_runs() {
    gemm_against_runs(true);
}

/// Each GEMM case run and simulated: the same order; with `timing`, the makespans within 10%
/// (median).
fn gemm_against_runs(timing: bool) {
    // The shapes and devices of tests/multi_device.rs, every device throttled (the simulator
    // needs a rate), at sizes where a run takes 0.1-0.3 s.
    let cases = [
        Case {
            name: "1x/2x/4x, 512x512x64 tile 32",
            configs: vec![
                emu(5e7, None, None, 0),
                emu(1e8, None, None, 0),
                emu(2e8, None, None, 0),
            ],
            shape: (512, 512, 64),
            tile: 32,
            beta: 0.0,
        },
        Case {
            name: "peer faster than host, 256x256x192 tile 32",
            configs: vec![emu(1e8, Some(0.5e9), Some(4e9), 20); 2],
            shape: (256, 256, 192),
            tile: 32,
            beta: 1.0,
        },
        Case {
            name: "host faster than peer, 256x256x192 tile 32",
            configs: vec![emu(1e8, Some(4e9), Some(0.5e9), 20); 2],
            shape: (256, 256, 192),
            tile: 32,
            beta: 1.0,
        },
        Case {
            name: "fast and slow, 1024x128x64 tile 64",
            configs: vec![emu(2e8, Some(2e9), None, 10), emu(5e7, Some(2e9), None, 10)],
            shape: (1024, 128, 64),
            tile: 64,
            beta: 0.5,
        },
        Case {
            name: "link-bound, 384x384x384 tile 128",
            configs: vec![emu(4e8, Some(0.2e9), Some(1e9), 20); 2],
            shape: (384, 384, 384),
            tile: 128,
            beta: 1.0,
        },
    ];
    let mut errors = Vec::new();
    for c in &cases {
        let (pool, devices, links) = pool(&c.configs);
        let latency = c.configs[0].link_latency.as_secs_f64();
        let profile = nominal_profile(&devices, &links, &[DType::F64], latency);
        let all: Vec<usize> = (0..devices.len()).collect();
        let opts = GemmOptions::default().devices(all).tile(c.tile).trace(true);
        let r = run(&pool, c.shape, c.beta, &opts);
        let real = r.trace.as_ref().expect("trace");
        let sim = pool.simulate_report(&r, Some(&profile)).unwrap();
        let measured = span(&r);
        let err = (sim.makespan - measured) / measured;
        println!(
            "{}: measured {:.4} s, simulated {:.4} s ({:+.1}%)",
            c.name,
            measured,
            sim.makespan,
            100.0 * err
        );
        errors.push(err.abs());
        // Same tasks on the same queues in the same order.
        assert_same_order(c.name, real, &sim.trace);
        // Busy shares are shares of the makespan.
        assert!(sim
            .devices
            .iter()
            .all(|d| d.share > 0.0 && d.share <= 1.0 + 1e-9));
    }
    let median = median(errors.clone());
    assert!(
        !timing || median < 0.10,
        "median |error| {median:.3}: {errors:?}"
    );
}

/// The median of |simulated / measured - 1| over `errors`.
fn median(mut errors: Vec<f64>) -> f64 {
    errors.sort_by(f64::total_cmp);
    errors[errors.len() / 2]
}

/// The real and simulated traces have the same queues, each with the same tasks in the same
/// order.
fn assert_same_order(name: &str, real: &Trace, sim: &Trace) {
    let (rq, sq) = (per_queue(real), per_queue(sim));
    assert_eq!(
        rq.keys().collect::<Vec<_>>(),
        sq.keys().collect::<Vec<_>>(),
        "{name}: queues"
    );
    for (q, labels) in &rq {
        assert_eq!(labels, &sq[q], "{name}: order on {q}");
    }
}

struct TriSimCase {
    name: &'static str,
    configs: Vec<EmulatedConfig>,
    routine: TriRoutine,
    opts: TriOptions,
    m: usize,
    n: usize,
    tile: usize,
}

/// A traced call of `c` (after a warm-up) on every device of `pool`.
fn run_tri(pool: &DevicePool, c: &TriSimCase, devices: usize) -> TriReport {
    let k = if c.opts.side == Side::Left { c.m } else { c.n };
    let a = hetblas_conformance::tri::triangular::<f64>(&c.opts, k, k, 11);
    let b0 = data(c.m * c.n, 12);
    let call = TriCallOptions::default()
        .tile(c.tile)
        .devices(0..devices)
        .solve(SolvePlacement::OnDevice)
        .trace(true);
    let once = || {
        let mut b = b0.clone();
        pool.tri_with(
            c.routine,
            c.opts,
            0.5,
            MatRef::new(&a, k, k, k).unwrap(),
            MatMut::new(&mut b, c.m, c.n, c.m).unwrap(),
            &call,
        )
        .unwrap()
    };
    once();
    once()
}

fn tri_span(r: &TriReport) -> f64 {
    r.trace
        .as_ref()
        .map_or(r.seconds, |t| t.span().1 - t.span().0)
}

#[test]
fn simulated_tile_dags_order_as_emulated_runs() {
    tile_dags_against_runs(false);
}

#[test]
#[ignore = "timing: run on an idle machine (scripts/gpu/tests.sh)"]
fn timing_simulated_tile_dags_match_emulated_runs() {
    tile_dags_against_runs(true);
}

/// Each TRSM/TRMM case run and simulated: the same order, every task in both timelines, the
/// DAG honoured; with `timing`, the makespans within 10% (median).
fn tile_dags_against_runs(timing: bool) {
    // Every device throttled, links slow enough that fetches and write-backs matter (a 64 x 64
    // f64 tile takes 0.3 ms at 0.1 GB/s against 2.6 ms for its update at 2e8 flop/s), sizes
    // where a run takes 0.1-0.3 s. The left, lower, non-transposed TRSM is the one
    // `compare.sh --simulate --routine trsm` times on the GPUs.
    let lower = TriOptions {
        side: Side::Left,
        uplo: Uplo::Lower,
        transa: Trans::N,
        diag: Diag::NonUnit,
    };
    let cases = [
        TriSimCase {
            name: "trsm LLNN 384x384 tile 64, 1 device",
            configs: vec![emu(2e8, Some(0.1e9), None, 20)],
            routine: TriRoutine::Trsm,
            opts: lower,
            m: 384,
            n: 384,
            tile: 64,
        },
        TriSimCase {
            name: "trsm LLNN 384x384 tile 64, 2 devices",
            configs: vec![emu(2e8, Some(0.1e9), Some(1e9), 20); 2],
            routine: TriRoutine::Trsm,
            opts: lower,
            m: 384,
            n: 384,
            tile: 64,
        },
        TriSimCase {
            name: "trsm RUTU 256x448 tile 64, fast and slow device",
            configs: vec![
                emu(2e8, Some(0.2e9), None, 10),
                emu(1e8, Some(0.2e9), None, 10),
            ],
            routine: TriRoutine::Trsm,
            opts: TriOptions {
                side: Side::Right,
                uplo: Uplo::Upper,
                transa: Trans::T,
                diag: Diag::Unit,
            },
            m: 256,
            n: 448,
            tile: 64,
        },
        TriSimCase {
            name: "trsm LLNN 512x256 tile 128, link-bound, 2 devices",
            configs: vec![emu(8e8, Some(0.05e9), None, 20); 2],
            routine: TriRoutine::Trsm,
            opts: lower,
            m: 512,
            n: 256,
            tile: 128,
        },
        TriSimCase {
            name: "trmm LUNN 320x384 tile 64, 2 devices",
            configs: vec![emu(2e8, Some(0.1e9), None, 20); 2],
            routine: TriRoutine::Trmm,
            opts: TriOptions {
                uplo: Uplo::Upper,
                ..lower
            },
            m: 320,
            n: 384,
            tile: 64,
        },
    ];
    let mut errors = Vec::new();
    for c in &cases {
        let (pool, devices, links) = pool(&c.configs);
        let latency = c.configs[0].link_latency.as_secs_f64();
        let profile = nominal_profile(&devices, &links, &[DType::F64], latency);
        let r = run_tri(&pool, c, devices.len());
        assert_eq!(
            r.devices.len(),
            devices.len(),
            "{}: {:?}",
            c.name,
            r.devices
        );
        let real = r.trace.as_ref().expect("trace");
        let sim = pool.simulate_tri_report(&r, Some(&profile)).unwrap();
        let plan = r.plan.as_ref().expect("plan");
        assert_eq!(sim.trace.intervals.len(), plan.tasks.len(), "{}", c.name);
        assert_eq!(real.intervals.len(), plan.tasks.len(), "{}", c.name);
        let measured = tri_span(&r);
        let err = (sim.makespan - measured) / measured;
        println!(
            "{}: measured {:.4} s, simulated {:.4} s ({:+.1}%)",
            c.name,
            measured,
            sim.makespan,
            100.0 * err
        );
        errors.push(err.abs());
        assert_same_order(c.name, real, &sim.trace);
        // Every task starts after its predecessors end (the DAG is honoured in virtual time).
        let mut span = vec![(f64::NAN, f64::NAN); plan.tasks.len()];
        for (_, tasks) in &sim.order {
            for &t in tasks {
                let d = plan.tasks[t as usize].device as usize;
                let (_, label, _, _) = plan.describe(&plan.tasks[t as usize]);
                let iv = sim
                    .trace
                    .intervals
                    .iter()
                    .find(|i| i.label == label && i.device == r.devices[d])
                    .expect("interval of a task");
                span[t as usize] = (iv.start, iv.end);
            }
        }
        for (t, task) in plan.tasks.iter().enumerate() {
            for &d in &task.deps {
                assert!(
                    span[t].0 >= span[d as usize].1 - 1e-12,
                    "{}: task {t} starts before its predecessor {d} ends",
                    c.name
                );
            }
        }
        assert!(sim
            .devices
            .iter()
            .all(|d| d.share > 0.0 && d.share <= 1.0 + 1e-9));
    }
    let median = median(errors.clone());
    assert!(
        !timing || median < 0.10,
        "median |error| {median:.3}: {errors:?}"
    );
}

/// Energy of a real run from its trace and a fake power source: each device draws its busy
/// power while one of its compute queues runs and its idle power otherwise, over the wall
/// time of the call; devices of the pool that took no part idle throughout.
fn traced_energy(r: &GemmReport, power: &[DevicePower]) -> f64 {
    let t = r.trace.as_ref().expect("trace");
    let (s, e) = t.span();
    let wall = e - s;
    power
        .iter()
        .map(|p| {
            let busy = if r.devices.contains(&p.label) {
                t.busy_fraction(|i| i.device == p.label && i.queue.contains("compute")) * wall
            } else {
                0.0
            };
            p.busy_w * busy + p.idle_w * (wall - busy)
        })
        .sum()
}

/// The energy objective leaves the hungry device out, and the plans, replayed by the
/// simulator with the same power figures, say the call it chose costs less energy.
#[test]
fn energy_objective_leaves_out_the_hungry_device() {
    energy_objective(false);
}

/// The energy of the two runs from their traces: a timing claim.
#[test]
#[ignore = "timing: run on an idle machine (scripts/gpu/tests.sh)"]
fn timing_energy_objective_saves_energy_in_a_run() {
    energy_objective(true);
}

fn energy_objective(timing: bool) {
    // A fast device drawing 400 W beside a frugal one at half its speed drawing 50 W.
    let (pool, devices, links) = pool(&[emu(2e8, None, None, 0), emu(1e8, None, None, 0)]);
    let mut profile = nominal_profile(&devices, &links, &[DType::F64], 0.0);
    let power: Vec<DevicePower> = [(400.0, 10.0), (50.0, 10.0)]
        .iter()
        .zip(&devices)
        .map(|(&(busy, idle), d)| DevicePower {
            label: d.info().label(),
            busy_w: busy,
            idle_w: idle,
            source: "test".into(),
        })
        .collect();
    profile.power = power.clone();
    let profile = Arc::new(profile);
    pool.set_profile(Some(profile.clone()));
    let shape = (256, 256, 256);
    let base = GemmOptions::default().tile(64).trace(true);
    let time = run(&pool, shape, 1.0, &base.clone().objective(Objective::Time));
    let energy = run(&pool, shape, 1.0, &base.objective(Objective::Energy));
    assert_eq!(time.devices.len(), 2, "time takes both: {:?}", time.devices);
    assert_eq!(energy.devices, vec![devices[1].info().label()]);
    // Every device of the pool draws: the one left out idles through the call.
    let simulated = |r: &GemmReport| {
        let sim = pool.simulate_report(r, Some(&profile)).unwrap();
        let idle: f64 = power
            .iter()
            .filter(|p| !r.devices.contains(&p.label))
            .map(|p| p.idle_w * sim.makespan)
            .sum();
        sim.energy(|label| profile.power_of(label)) + idle
    };
    let (st, se) = (simulated(&time), simulated(&energy));
    println!("simulated: time objective {st:.3} J, energy objective {se:.3} J");
    assert!(se < 0.85 * st, "simulated energy {se} J against {st} J");
    if !timing {
        return;
    }
    let (jt, je) = (traced_energy(&time, &power), traced_energy(&energy, &power));
    println!(
        "time objective {:.3} J in {:.3} s, energy objective {:.3} J in {:.3} s",
        jt, time.seconds, je, energy.seconds
    );
    assert!(je < 0.85 * jt, "energy {je} J against {jt} J");
}

/// `predict --routine syrk`'s list: every candidate square tile with its simulated makespan,
/// and the model's block is the smallest within `SYM_TIE` of the fastest of them.
#[test]
fn the_symmetric_tile_is_the_fastest_simulated_candidate() {
    use hetblas_core::sym::SymProblem;
    let (pool, devices, links) = pool(&[emu(2e9, Some(20e9), None, 5)]);
    let profile = nominal_profile(&devices, &links, &[DType::F64], 0.0);
    let p = SymProblem::rank(
        hetblas_core::sym::Uplo::Lower,
        Trans::N,
        false,
        false,
        4096,
        1024,
        DType::F64,
    );
    assert!(pool.sym_tile_predictions(&p).is_empty(), "no profile yet");
    pool.set_profile(Some(Arc::new(profile)));
    let list = pool.sym_tile_predictions(&p);
    assert!(list.len() >= 3, "{list:?}");
    let scored: Vec<(usize, f64)> = list.iter().filter_map(|&(t, s)| Some((t, s?))).collect();
    let best = scored[hetblas_core::pool::sym_pick(&scored).expect("replayable candidates")];
    let fastest = scored.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
    assert!(best.1 <= fastest * (1.0 + hetblas_core::pool::SYM_TIE));
    assert_eq!(
        pool.sym_block(&p, &GemmOptions::default()),
        best.0,
        "{list:?}"
    );
    let predicted = pool.predict_sym(&p).expect("a prediction").seconds;
    assert!(
        (predicted - best.1).abs() <= 1e-9 * best.1,
        "{predicted} vs {list:?}"
    );
}
