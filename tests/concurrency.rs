//! Calls from many threads on one pool: every result right whatever the interleaving, no
//! deadlock, memory flat, memory pressure waited out, and calls that overlap on the devices.

mod common;

use hetblas_core::reference::check_entries;
use hetblas_core::{DevicePool, GemmOptions, MatMut, MatRef, Trans};
use hetblas_cpu::EmulatedConfig;
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::emulated_pool;

/// splitmix64: seeded, dependency-free random numbers for operands and shapes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> usize {
        (self.next() % n) as usize
    }
    /// Uniform in [-1, 1), never exactly zero in practice.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
    fn fill(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.unit()).collect()
    }
}

/// `c = alpha A B + beta c0` (n x n, packed) on `pool` with `opts`, checked entry by entry
/// against the f64-accumulated reference; the call's report.
#[allow(clippy::too_many_arguments)] // the problem and its options, passed once
fn checked_square_call(
    pool: &DevicePool,
    n: usize,
    alpha: f64,
    a: &[f64],
    b: &[f64],
    beta: f64,
    c0: &[f64],
    opts: &GemmOptions,
) -> hetblas_core::GemmReport {
    let mut c = c0.to_vec();
    let (av, bv) = (
        MatRef::packed(a, n, n).unwrap(),
        MatRef::packed(b, n, n).unwrap(),
    );
    let report = pool
        .gemm_with(
            Trans::N,
            Trans::N,
            alpha,
            av,
            bv,
            beta,
            MatMut::packed(&mut c, n, n).unwrap(),
            opts,
        )
        .unwrap();
    check_entries(
        Trans::N,
        Trans::N,
        alpha,
        av,
        bv,
        beta,
        MatRef::packed(c0, n, n).unwrap(),
        MatRef::packed(&c, n, n).unwrap(),
        usize::MAX,
        0,
        2.0,
    )
    .unwrap();
    report
}

/// One random call (shape, transposes, scalars, devices, tile) run on `pool` and checked entry
/// by entry against the f64-accumulated reference.
fn random_call(pool: &DevicePool, rng: &mut Rng, ndev: usize) -> Result<(), String> {
    let (m, n, k) = (1 + rng.below(96), 1 + rng.below(96), 1 + rng.below(96));
    let ta = if rng.below(2) == 0 {
        Trans::N
    } else {
        Trans::T
    };
    let tb = if rng.below(2) == 0 {
        Trans::N
    } else {
        Trans::T
    };
    let (ar, ac) = ta.stored_shape(m, k);
    let (br, bc) = tb.stored_shape(k, n);
    let (lda, ldb, ldc) = (ar + rng.below(3), br + rng.below(3), m + rng.below(3));
    let a = rng.fill(lda * ac);
    let b = rng.fill(ldb * bc);
    let c0 = rng.fill(ldc * n);
    let alpha = [1.0, -0.5, 2.25][rng.below(3)];
    let beta = [0.0, 1.0, 0.75][rng.below(3)];
    let mut opts = GemmOptions::default().tile([16, 32, 48][rng.below(3)]);
    if rng.below(2) == 0 {
        // A random non-empty subset of the devices.
        let mask = 1 + rng.below((1 << ndev) - 1);
        opts = opts.devices((0..ndev).filter(|d| mask & (1 << d) != 0));
    }
    let mut c = c0.clone();
    let av = MatRef::new(&a, ar, ac, lda).unwrap();
    let bv = MatRef::new(&b, br, bc, ldb).unwrap();
    pool.gemm_with(
        ta,
        tb,
        alpha,
        av,
        bv,
        beta,
        MatMut::new(&mut c, m, n, ldc).unwrap(),
        &opts,
    )
    .map_err(|e| format!("{m}x{n}x{k} {ta:?}{tb:?}: {e}"))?;
    check_entries(
        ta,
        tb,
        alpha,
        av,
        bv,
        beta,
        MatRef::new(&c0, m, n, ldc).unwrap(),
        MatRef::new(&c, m, n, ldc).unwrap(),
        usize::MAX,
        0,
        2.0,
    )
    .map_err(|e| format!("{m}x{n}x{k} {ta:?}{tb:?} alpha {alpha} beta {beta}: {e}"))?;
    // Padding rows of C are not C: untouched.
    for j in 0..n {
        for i in m..ldc {
            if c[j * ldc + i].to_bits() != c0[j * ldc + i].to_bits() {
                return Err(format!("padding C({i},{j}) written"));
            }
        }
    }
    Ok(())
}

/// Resident set size of this process, from /proc/self/statm.
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// Runs `threads` x `calls` random calls; returns the errors. Fails the test on a timeout
/// (a deadlock) instead of hanging.
fn hammer(pool: &Arc<DevicePool>, threads: usize, calls: usize, seed: u64) -> Vec<String> {
    let (tx, rx) = mpsc::channel();
    let ndev = pool.devices().len();
    let start = Arc::new(Barrier::new(threads));
    for t in 0..threads {
        let (pool, tx, start) = (pool.clone(), tx.clone(), start.clone());
        std::thread::spawn(move || {
            let mut rng = Rng(seed ^ (t as u64 * 0x1234_5678_9ABC));
            start.wait();
            let errors: Vec<String> = (0..calls)
                .filter_map(|_| random_call(&pool, &mut rng, ndev).err())
                .collect();
            tx.send(errors).unwrap();
        });
    }
    drop(tx);
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut errors = Vec::new();
    for _ in 0..threads {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(e) => errors.extend(e),
            Err(e) => panic!("calls did not finish within 300 s (deadlock?): {e}"),
        }
    }
    errors
}

#[test]
fn sixteen_threads_of_mixed_calls_on_three_devices_are_all_right() {
    // Memory for a few calls' slots at a time, not sixteen: calls also wait for each other's
    // workspaces.
    let pool = emulated_pool(&vec![
        EmulatedConfig {
            memory_bytes: 1 << 20,
            ..Default::default()
        };
        3
    ]);
    // A first round grows the workspaces and the caches; memory must not grow after it.
    let warm = hammer(&pool, 16, 20, 1);
    assert!(warm.is_empty(), "{} wrong: {:?}", warm.len(), &warm[..1]);
    let before = rss_bytes();
    let errors = hammer(&pool, 16, 200, 2);
    let after = rss_bytes();
    assert!(
        errors.is_empty(),
        "{} of 3200 calls wrong, first: {}",
        errors.len(),
        errors[0]
    );
    // Workspaces are bounded by the devices' memory (3 MiB), plans and decisions by their
    // caches; 64 MiB leaves room for the allocator's own slack.
    let grown = after.saturating_sub(before);
    assert!(grown < 64 << 20, "RSS grew by {} MiB", grown >> 20);
    // Every workspace went back: released, the devices' memory is whole again.
    pool.release_workspaces().unwrap();
    for d in pool.devices() {
        assert_eq!(d.memory_budget(), 1 << 20, "{}", d.info().label());
    }
}

/// Every call needs a whole device's memory: concurrent calls wait for each other's
/// workspaces instead of failing, and every result is right.
#[test]
fn memory_pressure_from_other_calls_waits_instead_of_failing() {
    let pool = emulated_pool(&[EmulatedConfig {
        memory_bytes: 1 << 20,
        ..Default::default()
    }]);
    let n = 200;
    let mut rng = Rng(7);
    let a = Arc::new(rng.fill(n * n));
    let b = Arc::new(rng.fill(n * n));
    let start = Arc::new(Barrier::new(6));
    let handles: Vec<_> = (0..6)
        .map(|t| {
            let (pool, a, b, start) = (pool.clone(), a.clone(), b.clone(), start.clone());
            std::thread::spawn(move || {
                let c0 = Rng(100 + t).fill(n * n);
                start.wait();
                for _ in 0..5 {
                    let mut c = c0.clone();
                    let av = MatRef::packed(&a, n, n).unwrap();
                    let bv = MatRef::packed(&b, n, n).unwrap();
                    // Tiles of 64: 48 tiles of 32 KiB do not fit in 1 MiB, so the plan takes
                    // every slot the device has.
                    let opts = GemmOptions::default().tile(64);
                    let c_view = MatMut::packed(&mut c, n, n).unwrap();
                    pool.gemm_with(Trans::N, Trans::N, 1.5, av, bv, 0.5, c_view, &opts)
                        .map_err(|e| e.to_string())?;
                    let (c0v, cv) = (
                        MatRef::packed(&c0, n, n).unwrap(),
                        MatRef::packed(&c, n, n).unwrap(),
                    );
                    check_entries(Trans::N, Trans::N, 1.5, av, bv, 0.5, c0v, cv, 4000, t, 2.0)?;
                }
                Ok::<(), String>(())
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap().unwrap();
    }
}

/// N calls from N threads on one throttled emulated device, every result checked. Each call is
/// one tile: fetch A, fetch B, product, write-back, all in sequence.
#[test]
fn concurrent_calls_on_one_device_are_right() {
    concurrent_calls_on_one_device(false);
}

/// Those calls overlap on the device (one call's copies run while another computes): they
/// finish well before the same calls one after another. A timing claim, for an idle machine
/// (`scripts/gpu/tests.sh`).
#[test]
#[ignore = "timing: run on an idle machine (scripts/gpu/tests.sh)"]
fn timing_concurrent_calls_overlap_on_the_devices() {
    concurrent_calls_on_one_device(true);
}

/// [`concurrent_calls_on_one_device_are_right`], and with `timing` the overlap timed.
fn concurrent_calls_on_one_device(timing: bool) {
    let pool = emulated_pool(&[EmulatedConfig {
        memory_bytes: 64 << 20,
        // 256^3 in ~40 ms; each 512 KiB tile crosses the link in ~40 ms. (At 20 ms a stage,
        // a 16-core host measured 1.29-1.30x where a 2-core one measured 1.45x: the calls'
        // own costs, the same whatever the stages' length, weighed too much.)
        flops_per_sec: Some(0.8e9),
        host_link_bytes_per_sec: Some(12.5e6),
        ..Default::default()
    }]);
    let n = 256;
    let calls = 4;
    let mut rng = Rng(11);
    let a = Arc::new(rng.fill(n * n));
    let b = Arc::new(rng.fill(n * n));
    let opts = GemmOptions::default().tile(n);
    let one = |pool: &DevicePool, c: &mut [f64]| {
        let av = MatRef::packed(&a, n, n).unwrap();
        let bv = MatRef::packed(&b, n, n).unwrap();
        pool.gemm_with(
            Trans::N,
            Trans::N,
            1.0,
            av,
            bv,
            0.0,
            MatMut::packed(c, n, n).unwrap(),
            &opts,
        )
        .unwrap();
        let zero = vec![0.0; n * n];
        check_entries(
            Trans::N,
            Trans::N,
            1.0,
            av,
            bv,
            0.0,
            MatRef::packed(&zero, n, n).unwrap(),
            MatRef::packed(c, n, n).unwrap(),
            2000,
            3,
            2.0,
        )
        .unwrap();
    };
    // Warm: workspaces for `calls` concurrent calls, the plan cached.
    let mut cs = vec![vec![0.0; n * n]; calls];
    std::thread::scope(|s| {
        for c in cs.iter_mut() {
            s.spawn(|| one(&pool, c));
        }
    });
    if !timing {
        return;
    }
    let t = Instant::now();
    for c in cs.iter_mut() {
        one(&pool, c);
    }
    let sequential = t.elapsed().as_secs_f64();
    let t = Instant::now();
    std::thread::scope(|s| {
        for c in cs.iter_mut() {
            s.spawn(|| one(&pool, c));
        }
    });
    let concurrent = t.elapsed().as_secs_f64();
    // One after another: 4 x (40 + 40 + 40 + 40 ms) = 640 ms. Together: the host->device link
    // carries 8 tiles back to back (320 ms), products and write-backs follow behind: ~400 ms.
    // Calls run one at a time would measure 1.0x. A 2-core host measured 1.57x; the 16-core
    // H200 host 1.35x or 1.26x, the same in every round of a process (4 processes of
    // 2026-11-24): 1.2 proves the overlap without failing on that host.
    let speedup = sequential / concurrent;
    assert!(
        speedup >= 1.2,
        "{calls} concurrent calls ran only {speedup:.2}x faster than one after another \
         (sequential {sequential:.4} s, concurrent {concurrent:.4} s)"
    );
}

/// Two traced calls on one throttled device, the second started while the first computes:
/// both right, both traced, every task of each in its trace.
#[test]
fn traced_concurrent_calls_on_one_device_are_right() {
    traced_concurrent_calls(false);
}

/// Those two calls' timelines interleave (the second's transfers run under the first's
/// products; the products themselves follow each other on the one in-order compute queue). A
/// traced call once took its time origin by draining the device's compute queue, which made it
/// wait for every call in flight (one compute queue here, so that the first call has issued
/// all its products by then). A timing claim, for an idle machine (`scripts/gpu/tests.sh`).
#[test]
#[ignore = "timing: run on an idle machine (scripts/gpu/tests.sh)"]
fn timing_traced_concurrent_calls_interleave_on_one_device() {
    traced_concurrent_calls(true);
}

/// [`traced_concurrent_calls_on_one_device_are_right`]; with `timing`, the interleaving.
fn traced_concurrent_calls(timing: bool) {
    use hetblas_core::trace::{Activity, Interval};
    let pool = emulated_pool(&[EmulatedConfig {
        memory_bytes: 64 << 20,
        // A 64^3 product in ~3 ms; a 32 KiB tile crosses the link in ~1.3 ms.
        flops_per_sec: Some(1.6e8),
        host_link_bytes_per_sec: Some(25e6),
        compute_queues: 1,
        ..Default::default()
    }]);
    let n = 256;
    let mut rng = Rng(21);
    let a = Arc::new(rng.fill(n * n));
    let b = Arc::new(rng.fill(n * n));
    let c0 = Arc::new(rng.fill(n * n));
    let opts = GemmOptions::default().tile(64).trace(true);
    let t0 = Instant::now();
    // Runs one call `delay` after t0; its intervals on t0's clock.
    let one = |delay: Duration| -> Vec<Interval> {
        std::thread::sleep(delay.saturating_sub(t0.elapsed()));
        let start = t0.elapsed().as_secs_f64();
        let report = checked_square_call(&pool, n, 0.5, &a, &b, 1.5, &c0, &opts);
        let shift = start + report.execute_start;
        report
            .trace
            .expect("a traced call has a trace")
            .intervals
            .into_iter()
            .map(|iv| Interval {
                start: iv.start + shift,
                end: iv.end + shift,
                ..iv
            })
            .collect()
    };
    // Warm: the workspaces of two calls at once, the plan, the trace epoch.
    std::thread::scope(|s| {
        s.spawn(|| one(Duration::ZERO));
        s.spawn(|| one(Duration::ZERO));
    });
    {
        let t = t0.elapsed();
        let (first, second) = std::thread::scope(|s| {
            let first = s.spawn(|| one(t));
            let second = s.spawn(|| one(t + Duration::from_millis(20)));
            (first.join().unwrap(), second.join().unwrap())
        });
        // 4 x 4 C tiles of 4 k steps each: 64 products per call.
        for ivs in [&first, &second] {
            let gemms = ivs.iter().filter(|i| i.label.starts_with("gemm")).count();
            assert_eq!(gemms, 64, "gemm intervals of a call");
        }
        if !timing {
            return;
        }
        let gemm_end = |ivs: &[Interval]| -> f64 {
            ivs.iter()
                .filter(|i| i.label.starts_with("gemm"))
                .map(|i| i.end)
                .fold(0.0, f64::max)
        };
        let start = |ivs: &[Interval]| ivs.iter().map(|i| i.start).fold(f64::INFINITY, f64::min);
        let (e1, s2) = (gemm_end(&first), start(&second));
        // Seconds of one call's fetches that run under the other's products.
        let under = |fetches: &[Interval], products: &[Interval]| -> f64 {
            let mut t = 0.0;
            for f in fetches.iter().filter(|i| i.activity == Activity::Fetch) {
                for p in products.iter().filter(|i| i.label.starts_with("gemm")) {
                    t += (f.end.min(p.end) - f.start.max(p.start)).max(0.0);
                }
            }
            t
        };
        let overlap = under(&second, &first) + under(&first, &second);
        // Each call alone computes for ~0.2 s; a tenth of that overlapped is no accident.
        assert!(
            s2 < e1 && overlap > 0.02,
            "concurrent traced calls did not interleave: the second call began at {s2:.4} s, \
             the first's products ended at {e1:.4} s; fetches under the other call's products: \
             {overlap:.4} s"
        );
    }
}

/// Two calls folding on the host at once, one on a slow device and one on a fast one: both
/// fold, both right.
#[test]
fn concurrent_calls_folding_on_the_host_are_right() {
    concurrent_folding_calls(false);
}

/// Host folds of concurrent calls do not queue behind each other: a call on a fast device
/// finishes while a call started before it still waits for its slow product. (With one fold
/// queue for the pool, the fast call's folds sat behind the slow call's fold, which waits for
/// that product: the fast call ended with the slow one.) A timing claim, for an idle machine
/// (`scripts/gpu/tests.sh`).
#[test]
#[ignore = "timing: run on an idle machine (scripts/gpu/tests.sh)"]
fn timing_a_call_folding_on_the_host_does_not_wait_for_another_calls_fold() {
    concurrent_folding_calls(true);
}

/// [`concurrent_calls_folding_on_the_host_are_right`]; with `timing`, the fast call ending
/// first.
fn concurrent_folding_calls(timing: bool) {
    let pool = emulated_pool(&[
        EmulatedConfig {
            memory_bytes: 16 << 20,
            // 128^3 (4.2 MFLOP) in ~0.4 s.
            flops_per_sec: Some(1e7),
            ..Default::default()
        },
        EmulatedConfig {
            memory_bytes: 16 << 20,
            ..Default::default()
        },
    ]);
    let n = 128;
    let mut rng = Rng(31);
    let a = Arc::new(rng.fill(n * n));
    let b = Arc::new(rng.fill(n * n));
    let c0 = Arc::new(rng.fill(n * n));
    let t0 = Instant::now();
    // One call on `device` started `delay` after t0; returns when it ended (since t0).
    let one = |device: usize, delay: Duration| -> Duration {
        std::thread::sleep(delay.saturating_sub(t0.elapsed()));
        let mut c = c0.to_vec();
        let (av, bv) = (
            MatRef::packed(&a, n, n).unwrap(),
            MatRef::packed(&b, n, n).unwrap(),
        );
        let opts = GemmOptions::default()
            .tile(n)
            .host_fold(true)
            .devices([device]);
        let report = pool
            .gemm_with(
                Trans::N,
                Trans::N,
                -0.5,
                av,
                bv,
                1.25,
                MatMut::packed(&mut c, n, n).unwrap(),
                &opts,
            )
            .unwrap();
        let ended = t0.elapsed();
        assert!(report.host_fold, "the call was to fold on the host");
        check_entries(
            Trans::N,
            Trans::N,
            -0.5,
            av,
            bv,
            1.25,
            MatRef::packed(&c0, n, n).unwrap(),
            MatRef::packed(&c, n, n).unwrap(),
            usize::MAX,
            0,
            2.0,
        )
        .unwrap();
        ended
    };
    // Warm: the plans, and the fold queues of two calls at once.
    std::thread::scope(|s| {
        s.spawn(|| one(0, Duration::ZERO));
        s.spawn(|| one(1, Duration::ZERO));
    });
    let t = t0.elapsed();
    let (slow, fast) = std::thread::scope(|s| {
        let slow = s.spawn(|| one(0, t));
        let fast = s.spawn(|| one(1, t + Duration::from_millis(50)));
        (slow.join().unwrap(), fast.join().unwrap())
    });
    if !timing {
        return;
    }
    let (slow, fast) = ((slow - t).as_secs_f64(), (fast - t).as_secs_f64());
    // The fast call needs a few ms after its start at 0.05 s; the slow one ~0.4 s.
    assert!(
        fast < 0.25 && fast + 0.1 < slow,
        "the fast call ended at {fast:.3} s, the slow one at {slow:.3} s (from their start)"
    );
}

/// TRSM calls from six threads on a device whose memory holds the tiles of about one call at a
/// time: a call that finds the memory taken waits for another call's buffers instead of
/// failing (as GEMM calls do), and every solution is right.
#[test]
fn concurrent_trsm_calls_wait_for_memory_instead_of_failing() {
    use hetblas_core::problem::triangular::{Diag, Side, TriOptions, TriRoutine, Uplo};
    use hetblas_core::TriCallOptions;
    let pool = emulated_pool(&[EmulatedConfig {
        memory_bytes: 1 << 20,
        ..Default::default()
    }]);
    let (m, n) = (192, 192);
    let o = TriOptions {
        side: Side::Left,
        uplo: Uplo::Lower,
        transa: Trans::N,
        diag: Diag::NonUnit,
    };
    let case = Arc::new(hetblas_conformance::tri::TriCase {
        routine: TriRoutine::Trsm,
        opts: o,
        m,
        n,
        alpha: hetblas_core::scalar::c64::new(1.0, 0.0),
        pad: (0, 0),
        tile: Some(64),
        devices: None,
        b_home: None,
        seed: 5,
    });
    let a: Arc<Vec<f64>> = Arc::new(hetblas_conformance::tri::triangular(&o, m, m, 5));
    let start = Arc::new(Barrier::new(6));
    let handles: Vec<_> = (0..6)
        .map(|t| {
            let (pool, a, start, case) = (pool.clone(), a.clone(), start.clone(), case.clone());
            std::thread::spawn(move || {
                let b0 = Rng(200 + t).fill(m * n);
                start.wait();
                for _ in 0..5 {
                    let mut x = b0.clone();
                    pool.tri_with(
                        TriRoutine::Trsm,
                        o,
                        1.0,
                        MatRef::new(&a, m, m, m).unwrap(),
                        MatMut::new(&mut x, m, n, m).unwrap(),
                        &TriCallOptions::default().tile(case.tile),
                    )
                    .map_err(|e| e.to_string())?;
                    hetblas_conformance::tri::check_tri(&case, &a, m, &b0, &x, m, case.alpha)?;
                }
                Ok::<(), String>(())
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap().unwrap();
    }
}

/// What a call reports of the time before its execution: planning, workspaces and host checks
/// are parts of `execute_start`, and with waiting they never add up to more. The first call
/// page-locks its host operands and allocates its workspaces; a repeated one reuses both.
#[test]
fn the_parts_before_execution_are_within_its_start() {
    let pool = emulated_pool(&[EmulatedConfig::default()]);
    let n = 192;
    let mut rng = Rng(5);
    let (a, b, c0) = (rng.fill(n * n), rng.fill(n * n), rng.fill(n * n));
    let opts = GemmOptions::default().tile(64).host_fold(false);
    for call in 0..3 {
        let r = checked_square_call(&pool, n, 1.0, &a, &b, 0.5, &c0, &opts);
        let parts = r.planning_seconds + r.workspace_seconds + r.host_check_seconds;
        assert!(
            r.workspace_seconds >= 0.0 && r.host_check_seconds >= 0.0,
            "call {call}: {r:?}"
        );
        assert!(
            parts + r.waited_seconds <= r.execute_start + 1e-6,
            "call {call}: planning {} + workspaces {} + host checks {} + waited {} > \
             execute_start {}",
            r.planning_seconds,
            r.workspace_seconds,
            r.host_check_seconds,
            r.waited_seconds,
            r.execute_start
        );
    }
}
