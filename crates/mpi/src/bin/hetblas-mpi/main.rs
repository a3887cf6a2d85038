//! `hetblas-mpi`: the distributed GEMM's checks, benchmark and network probe, run under
//! `mpirun`.
//!
//!   mpirun -np 4 hetblas-mpi check [--grids 1x4,2x2,4x1]   every case against a reference
//!   mpirun -np 2 hetblas-mpi bench --grid 2x1 --size 32768 [--block N] [--panel W] [--reps R]
//!                                  [-m M -n N -k K] [--devices auto|gpu|all|0,1] [--c auto|host|D]
//!                                  [--transport T] [--lookahead L] [--no-overlap]
//!                   per rank, for the first timed repetition: each local product's seconds and
//!                   the runtime's devices, tile and fold, and the registration statistics
//!   mpirun -np 2 hetblas-mpi pingpong                       latency and bandwidth, ranks 0-1
//!   mpirun -np 2 hetblas-mpi bcast [--mib 256,1024] [--transports ibcast,chain:64] [--nap-us N]
//!                                                           panel broadcast bandwidth
//!
//!   hetblas-mpi project --profile FILE [options]              simulated scaling table (no MPI;
//!                                                           see `project.rs`)
//!
//! `HETBLAS_MPI_TRACE=1` makes `check` name each case before it runs (to find one that hangs).

use hetblas::{Runtime, Scalar, Trans};
use hetblas_cuda::PinStats;
use hetblas_mpi::{
    gemm, gemm_in, gemm_sub, CPlacement, DistMatrix, NetworkLink, ProcessGrid, SummaOptions,
    SummaReport, Transport, Workspace,
};
use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use std::process::ExitCode;

mod project;
use std::time::Instant;

fn main() -> ExitCode {
    // The projection is a computation on models: no MPI.
    if std::env::args().nth(1).as_deref() == Some("project") {
        return match project::run(&std::env::args().skip(2).collect::<Vec<_>>()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("hetblas-mpi project: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let Some((universe, _)) = mpi::initialize_with_threading(mpi::Threading::Funneled) else {
        eprintln!("MPI was already initialised");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let result = match args.first().map(String::as_str) {
        Some("check") => check(&world, opt("--grids")),
        Some("bench") => bench(&world, &opt),
        Some("pingpong") => pingpong(&world),
        Some("bcast") => bcast(&world, &opt),
        _ => Err(
            "usage: hetblas-mpi check|bench|pingpong|bcast [options] (see the source header)"
                .into(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rank {}: {e}", world.rank());
            world.abort(1)
        }
    }
}

type Res = std::result::Result<(), String>;

/// A deterministic pseudo-random value in [-1, 1) for entry (i, j) of matrix `seed`.
fn rnd(seed: u64, i: usize, j: usize) -> f64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add((i as u64) << 32 ^ j as u64);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

fn parse_grid(s: &str) -> Result<(usize, usize), String> {
    let (p, q) = s
        .split_once('x')
        .ok_or(format!("grid {s:?}: expected PxQ"))?;
    Ok((
        p.parse().map_err(|_| format!("grid {s:?}"))?,
        q.parse().map_err(|_| format!("grid {s:?}"))?,
    ))
}

/// One case of the check.
#[derive(Debug, Clone, Copy)]
struct Case {
    m: usize,
    n: usize,
    k: usize,
    ta: Trans,
    tb: Trans,
    alpha: f64,
    beta: f64,
    /// Block sizes (mb, nb) of A, B and C, and C's source process.
    ab: (usize, usize),
    bb: (usize, usize),
    cb: (usize, usize),
    csrc: (usize, usize),
    panel: Option<usize>,
    place: CPlacement,
    overlap: bool,
    lookahead: usize,
    transport: Transport,
    /// Submatrix offsets (A, B, C), exercised through `gemm_sub`.
    offset: usize,
    /// The local products may use every device of the runtime (the CPU too), not the default
    /// (with C on a device, the accelerators only).
    all_devices: bool,
}

fn check(world: &SimpleCommunicator, grids: Option<String>) -> Res {
    let size = world.size() as usize;
    let grids: Vec<(usize, usize)> = match grids {
        Some(g) => g.split(',').map(parse_grid).collect::<Result<_, _>>()?,
        None => (1..=size)
            .filter(|p| size % p == 0)
            .map(|p| (p, size / p))
            .collect(),
    };
    let rt = Runtime::discover().map_err(|e| e.to_string())?;
    let devices: Vec<String> = rt.devices().iter().map(|d| d.info().name.clone()).collect();
    if world.rank() == 0 {
        println!("devices per rank: {devices:?}");
    }
    let ts = [Trans::N, Trans::T];
    let mut cases = Vec::new();
    // Every transpose pair on odd shapes, with aligned and misaligned blockings, alpha/beta
    // cases (beta = 0 with NaN in C), several panel widths, C on the host and on a device.
    let shapes = [(37, 29, 41), (50, 1, 23), (1, 31, 9), (64, 48, 96)];
    let scalars = [(1.0, 0.0), (-0.7, 0.4), (1.0, 1.0), (0.0, 2.5)];
    let blocks = [(4, 4), (5, 3), (16, 16), (1, 7)];
    let mut v = 0usize;
    for &ta in &ts {
        for &tb in &ts {
            for (si, &(m, n, k)) in shapes.iter().enumerate() {
                v += 1;
                let (alpha, beta) = scalars[(v + si) % scalars.len()];
                let blk = blocks[v % blocks.len()];
                // Aligned: A's rows and B's columns blocked like C's; misaligned otherwise.
                let aligned = v % 2 == 0;
                let (ab, bb) = if aligned {
                    ((blk.0, blk.1), (blk.1, blk.1))
                } else {
                    ((blk.1 + 2, blk.0), (blk.0 + 1, blk.1 + 3))
                };
                cases.push(Case {
                    m,
                    n,
                    k,
                    ta,
                    tb,
                    alpha,
                    beta,
                    ab,
                    bb,
                    cb: (blk.0, blk.1),
                    csrc: (0, 0),
                    panel: [None, Some(1), Some(8)][v % 3],
                    place: [CPlacement::Auto, CPlacement::Host][v % 2],
                    overlap: v % 5 != 0,
                    lookahead: 1 + v % 3,
                    // Small chunks, so that a k-block travels in several.
                    transport: [
                        Transport::Chain { chunk_bytes: 64 },
                        Transport::Ibcast,
                        Transport::Chain {
                            chunk_bytes: 1 << 20,
                        },
                    ][(v / 3) % 3],
                    offset: 0,
                    all_devices: v % 4 == 1,
                });
            }
        }
    }
    // Shared windows: panels of one k-block each (panel width 1), every transpose pair, both
    // places of C, several look-aheads (readers and owners reuse slots), aligned or not.
    for (i, &(ta, tb)) in [
        (Trans::N, Trans::N),
        (Trans::T, Trans::N),
        (Trans::N, Trans::T),
        (Trans::T, Trans::T),
    ]
    .iter()
    .enumerate()
    {
        let blk = blocks[i];
        cases.push(Case {
            m: 45,
            n: 38,
            k: 53,
            ta,
            tb,
            alpha: 0.9,
            beta: [0.0, 0.6][i % 2],
            ab: blk,
            bb: (blk.1, blk.1),
            cb: blk,
            csrc: (0, 0),
            panel: Some(1),
            place: [CPlacement::Auto, CPlacement::Host][i % 2],
            overlap: true,
            lookahead: 1 + i,
            transport: Transport::Shared,
            offset: 0,
            all_devices: i == 3,
        });
    }
    // Edge shapes and submatrices.
    let base = cases[0];
    for (m, n, k) in [(0, 5, 3), (6, 0, 2), (9, 7, 0)] {
        cases.push(Case {
            m,
            n,
            k,
            beta: 0.5,
            ..base
        });
    }
    for (i, &ta) in [Trans::N, Trans::T, Trans::C].iter().enumerate() {
        cases.push(Case {
            m: 23,
            n: 19,
            k: 31,
            ta,
            tb: [Trans::T, Trans::N, Trans::C][i],
            alpha: 1.5,
            beta: -0.5,
            ab: (3, 3),
            bb: (3, 3),
            cb: (3, 3),
            csrc: (1, 1),
            panel: Some(6),
            place: CPlacement::Auto,
            overlap: true,
            lookahead: 3,
            transport: Transport::Chain { chunk_bytes: 40 },
            offset: 2 + i,
            all_devices: false,
        });
    }

    let mut checked = 0usize;
    for &(p, q) in &grids {
        let grid = ProcessGrid::new(world, p, q).map_err(|e| e.to_string())?;
        if let Some(grid) = grid {
            for (ci, case) in cases.iter().enumerate() {
                if std::env::var_os("HETBLAS_MPI_TRACE").is_some() && world.rank() == 0 {
                    eprintln!("grid {p}x{q} case {ci} {case:?}");
                }
                let seed = ci as u64;
                checked += run_case::<f64>(&rt, &grid, case, seed)
                    .map_err(|e| format!("grid {p}x{q}, f64 case {ci} {case:?}: {e}"))?;
                checked += run_case::<f32>(&rt, &grid, case, seed)
                    .map_err(|e| format!("grid {p}x{q}, f32 case {ci} {case:?}: {e}"))?;
            }
        }
        world.barrier();
    }
    // Bad arguments come back as ScaLAPACK's INFO, with C untouched.
    if let Some(grid) = ProcessGrid::new(world, 1, size).map_err(|e| e.to_string())? {
        checked += check_errors(&rt, &grid)?;
    }
    let mut total = 0usize;
    world.all_reduce_into(
        &checked,
        &mut total,
        mpi::collective::SystemOperation::sum(),
    );
    if world.rank() == 0 {
        println!(
            "check: {} grids x {} cases x f64/f32 passed ({total} entries checked on {size} ranks)",
            grids.len(),
            cases.len()
        );
    }
    Ok(())
}

/// Shape mismatches and a local array too small for its descriptor are refused with
/// ScaLAPACK's INFO and leave C as it was; returns the number of C entries checked.
fn check_errors(rt: &Runtime, grid: &ProcessGrid) -> Result<usize, String> {
    let mk = |m, n, s| DistMatrix::from_fn(grid, m, n, 4, 4, |i, j| rnd(s, i, j));
    let e = |e: hetblas_mpi::DistError| e.to_string();
    let (a, b) = (mk(10, 7, 90).map_err(e)?, mk(7, 9, 91).map_err(e)?);
    let mut c = mk(11, 9, 92).map_err(e)?;
    let before = c.local().to_vec();
    let opts = SummaOptions::default();
    let t = Trans::N;
    let got = gemm(rt, grid, t, t, 1.0, &a, &b, 0.0, &mut c, &opts).map(|_| ());
    if got.as_ref().map_err(|e| e.info()) != Err(Some(-3)) {
        return Err(format!("A 10x7 with C 11x9: expected INFO -3, got {got:?}"));
    }
    let mut c2 = mk(10, 9, 92).map_err(e)?;
    let got = gemm(rt, grid, t, t, 1.0, &a, &a, 0.0, &mut c2, &opts).map(|_| ());
    if got.as_ref().map_err(|e| e.info()) != Err(Some(-4)) {
        return Err(format!(
            "B 10x7 for op(B) 7x9: expected INFO -4, got {got:?}"
        ));
    }
    // A local array shorter than its descriptor says (LLD_ is entry 9 of DESCA, argument 10).
    let mut short = a.as_dist_ref();
    short.desc.lld += 3;
    let got = gemm_sub(
        rt,
        grid,
        t,
        t,
        10,
        9,
        7,
        1.0,
        short,
        b.as_dist_ref(),
        0.0,
        c.as_dist_mut(),
        &opts,
    )
    .map(|_| ());
    let lc = a.local_shape().1;
    if lc > 0 && got.as_ref().map_err(|e| e.info()) != Err(Some(-1009)) {
        return Err(format!("short local A: expected INFO -1009, got {got:?}"));
    }
    if c.local() != &before[..] {
        return Err("a refused call changed C".into());
    }
    Ok(before.len())
}

/// Runs one case and checks every local entry of C; returns the number checked.
fn run_case<T: Scalar + Equivalence + Default>(
    rt: &Runtime,
    grid: &ProcessGrid,
    c: &Case,
    seed: u64,
) -> Result<usize, String> {
    // Entries as stored in T, read back exactly in f64 for the reference.
    let rnd_t = |s: u64, i: usize, j: usize| T::from_f64(rnd(s, i, j));
    let rnd = |s: u64, i: usize, j: usize| rnd_t(s, i, j).to_f64();
    let o = c.offset;
    let (am, an) = c.ta.stored_shape(c.m, c.k);
    let (bm, bn) = c.tb.stored_shape(c.k, c.n);
    let src = (
        c.csrc.0.min(grid.nprow() - 1),
        c.csrc.1.min(grid.npcol() - 1),
    );
    let e = |e: hetblas_mpi::DistError| e.to_string();
    let (sa, sb, sc) = (3 * seed + 1, 3 * seed + 2, 3 * seed + 3);
    let a = DistMatrix::from_fn(grid, am + o, an + o, c.ab.0, c.ab.1, |i, j| rnd_t(sa, i, j))
        .map_err(e)?;
    let b = DistMatrix::from_fn(grid, bm + o, bn + o, c.bb.0, c.bb.1, |i, j| rnd_t(sb, i, j))
        .map_err(e)?;
    // beta = 0: C starts as NaN, which must not reach the result.
    let c0 = |i, j| {
        if c.beta == 0.0 {
            T::from_f64(f64::NAN)
        } else {
            rnd_t(sc, i, j)
        }
    };
    let mut cm =
        DistMatrix::from_fn_at(grid, c.m + o, c.n + o, c.cb.0, c.cb.1, src, c0).map_err(e)?;
    let mut opts = SummaOptions::default()
        .c_placement(c.place)
        .no_overlap(!c.overlap)
        .lookahead(c.lookahead)
        .transport(c.transport);
    opts.panel_width = c.panel;
    if c.all_devices {
        opts.devices = Some((0..rt.devices().len()).collect());
    }
    let (alpha, beta) = (T::from_f64(c.alpha), T::from_f64(c.beta));
    let report = if o == 0 {
        gemm(rt, grid, c.ta, c.tb, alpha, &a, &b, beta, &mut cm, &opts).map_err(e)?
    } else {
        let (mut ar, mut br) = (a.as_dist_ref(), b.as_dist_ref());
        (ar.i0, ar.j0, br.i0, br.j0) = (o, o - 1, o - 1, o);
        let mut cw = cm.as_dist_mut();
        (cw.i0, cw.j0) = (o - 2, o);
        gemm_sub(
            rt, grid, c.ta, c.tb, c.m, c.n, c.k, alpha, ar, br, beta, cw, &opts,
        )
        .map_err(e)?
    };
    check_products(rt, c, &report)?;
    // Reference for every local entry: f64 dot products of the global generators.
    let (ao, bo, co) = if o == 0 {
        ((0, 0), (0, 0), (0, 0))
    } else {
        ((o, o - 1), (o - 1, o), (o - 2, o))
    };
    let opa = |i: usize, l: usize| {
        let (r, s) = if c.ta.is_transposed() { (l, i) } else { (i, l) };
        rnd(sa, ao.0 + r, ao.1 + s)
    };
    let opb = |l: usize, j: usize| {
        let (r, s) = if c.tb.is_transposed() { (j, l) } else { (l, j) };
        rnd(sb, bo.0 + r, bo.1 + s)
    };
    let mut bad = None;
    let mut count = 0;
    let (af, bf) = (alpha.to_f64(), beta.to_f64());
    let u = T::DTYPE.unit_roundoff();
    cm.for_each_local(|gi, gj, got| {
        let got = got.to_f64();
        let inside = gi >= co.0 && gi < co.0 + c.m && gj >= co.1 && gj < co.1 + c.n;
        let want = if inside {
            let (i, j) = (gi - co.0, gj - co.1);
            let (mut s, mut abs) = (0.0, 0.0);
            for l in 0..c.k {
                let p = opa(i, l) * opb(l, j);
                s += p;
                abs += p.abs();
            }
            let c0v = rnd(sc, gi, gj);
            let (want, sum) = if c.beta == 0.0 {
                (af * s, af.abs() * abs)
            } else {
                (af * s + bf * c0v, af.abs() * abs + bf.abs() * c0v.abs())
            };
            let bound =
                4.0 * (c.k as f64 + 2.0) * u * sum + 2.0 * u * want.abs() + f64::MIN_POSITIVE;
            (want, bound)
        } else {
            // Outside the submatrix C is untouched.
            (c0(gi, gj).to_f64(), 0.0)
        };
        count += 1;
        let ok = if want.0.is_nan() {
            got.is_nan()
        } else {
            (got - want.0).abs() <= want.1
        };
        if !ok && bad.is_none() {
            bad = Some(format!(
                "C({gi},{gj}) = {got:e}, expected {:e} (bound {:e})",
                want.0, want.1
            ));
        }
    });
    bad.map_or(Ok(count), Err)
}

/// The report's local products: one per panel, together the whole k, and with C on a device
/// and no devices asked for, on the accelerators only (never the CPU).
fn check_products(rt: &Runtime, c: &Case, report: &SummaReport) -> Res {
    if c.m == 0 || c.n == 0 || c.k == 0 || c.alpha == 0.0 {
        return Ok(());
    }
    let products = &report.products;
    if products.len() != report.panels {
        return Err(format!(
            "{} panels but {} local products reported",
            report.panels,
            products.len()
        ));
    }
    let k: usize = products.iter().map(|p| p.k).sum();
    if k != c.k {
        return Err(format!("the local products' k add up to {k}, not {}", c.k));
    }
    if let Some(p) = products
        .iter()
        .find(|p| !p.seconds.is_finite() || p.seconds < 0.0)
    {
        return Err(format!("a local product took {} s", p.seconds));
    }
    let host: Vec<String> = rt
        .devices()
        .iter()
        .filter(|d| d.space().is_host())
        .map(|d| d.info().label())
        .collect();
    let accelerators: Vec<usize> = (0..rt.devices().len())
        .filter(|&i| !rt.devices()[i].space().is_host())
        .collect();
    let allowed = report.product_devices.clone();
    let expected = if c.all_devices {
        Some((0..rt.devices().len()).collect())
    } else if report.c_on_device {
        Some(accelerators)
    } else {
        None
    };
    if allowed != expected {
        return Err(format!(
            "the local products were allowed devices {allowed:?}, expected {expected:?}"
        ));
    }
    if report.c_on_device && !c.all_devices {
        for p in products.iter().filter(|p| p.m > 0 && p.n > 0) {
            if p.devices.is_empty() || p.devices.iter().any(|d| host.contains(d)) {
                return Err(format!(
                    "C on a device: a local product ran on {:?}, expected accelerators only",
                    p.devices
                ));
            }
        }
    }
    Ok(())
}

fn bench(world: &SimpleCommunicator, opt: &dyn Fn(&str) -> Option<String>) -> Res {
    let (p, q) = parse_grid(&opt("--grid").unwrap_or_else(|| format!("{}x1", world.size())))?;
    let num = |name: &str, default: usize| -> Result<usize, String> {
        opt(name).map_or(Ok(default), |v| {
            v.parse().map_err(|_| format!("{name} {v:?}"))
        })
    };
    let size = num("--size", 4096)?;
    let (m, n, k) = (num("-m", size)?, num("-n", size)?, num("-k", size)?);
    let reps = num("--reps", 3)?;
    let mut opts = SummaOptions::default();
    opts.panel_width = opt("--panel")
        .map(|v| v.parse())
        .transpose()
        .map_err(|_| "--panel")?;
    opts.c_placement = match opt("--c").as_deref() {
        None | Some("auto") => CPlacement::Auto,
        Some("host") => CPlacement::Host,
        Some(d) => CPlacement::Device(d.parse().map_err(|_| format!("--c {d:?}"))?),
    };
    opts.no_overlap = args_has("--no-overlap");
    if let Some(l) = opt("--lookahead") {
        opts.lookahead = l.parse().map_err(|_| format!("--lookahead {l:?}"))?;
    }
    if let Some(t) = opt("--transport") {
        opts.transport = t.parse()?;
    }
    let devices = opt("--devices").unwrap_or_else(|| "auto".into());
    // Default blocks: each rank's share in one block per dimension (the layout a distributed
    // application built for this grid would choose; SUMMA then reads A and B in place).
    let mb = num("--block", m.div_ceil(p))?;
    let nb = num("--block", n.div_ceil(q))?;
    // k-blocks as wide as the panels: one broadcast per operand and panel, no joining.
    let kb = num("--kblock", opts.panel_width.unwrap_or(4096).min(k).max(1))?;
    let Some(grid) = ProcessGrid::new(world, p, q).map_err(|e| e.to_string())? else {
        return Ok(());
    };
    let rt = Runtime::discover().map_err(|e| e.to_string())?;
    opts.devices = parse_devices(&rt, &devices)?;
    let e = |e: hetblas_mpi::DistError| e.to_string();
    let t = Instant::now();
    let a = DistMatrix::from_fn(&grid, m, k, mb, kb, |i, j| rnd(1, i, j)).map_err(e)?;
    let b = DistMatrix::from_fn(&grid, k, n, kb, nb, |i, j| rnd(2, i, j)).map_err(e)?;
    let mut c = DistMatrix::from_fn(&grid, m, n, mb, nb, |i, j| rnd(3, i, j)).map_err(e)?;
    if grid.comm().rank() == 0 {
        let devs: Vec<String> = rt.devices().iter().map(|d| d.info().name.clone()).collect();
        println!(
            "bench {m}x{n}x{k} f64, grid {p}x{q}, blocks {mb}x{nb} (k {kb}), {:?}, look-ahead {}, \
             rank 0 devices {devs:?}, product devices {devices}, setup {:.1} s",
            opts.transport,
            opts.lookahead,
            t.elapsed().as_secs_f64()
        );
    }
    // Each rank's runtime as it sees itself: its devices (what HETBLAS_CUDA_DEVICES left it)
    // and whether the calibrated profile matched them.
    let me = grid.comm().rank();
    let labels: Vec<String> = rt.devices().iter().map(|d| d.info().label()).collect();
    print_ranks(
        grid.comm(),
        &format!(
            "rank {me}: devices {labels:?}, product devices {}; {}",
            opts.devices
                .as_ref()
                .map_or("auto (with C on a device: its accelerators)".into(), |d| {
                    format!("{d:?}")
                }),
            rt.profile_status()
        ),
    );
    let mut times = Vec::new();
    // Panel buffers kept across repetitions, as an application calling repeatedly would.
    let mut ws = Workspace::<f64>::new();
    for r in 0..=reps {
        grid.comm().barrier();
        let pins_before = pin_stats(&rt);
        let t = Instant::now();
        let rep = gemm_in(
            &rt,
            &grid,
            Trans::N,
            Trans::N,
            1.0,
            &a,
            &b,
            0.5,
            &mut c,
            &opts,
            &mut ws,
        )
        .map_err(e)?;
        grid.comm().barrier();
        let s = t.elapsed().as_secs_f64();
        // The longest wait of any rank: the one that holds the others at the next barrier.
        let mut worst_wait = 0.0f64;
        grid.comm().all_reduce_into(
            &rep.wait_seconds,
            &mut worst_wait,
            mpi::collective::SystemOperation::max(),
        );
        if grid.comm().rank() == 0 {
            println!(
                "{} {:.3} s, {:.2} TFLOP/s; rank 0: {} panels of {}, C on device {}, compute {:.3} s, \
                 waiting {:.3} s (most of any rank {worst_wait:.3} s), redistribution {:.3} s",
                if r == 0 { "warm-up" } else { "rep" },
                s,
                2.0 * (m * n * k) as f64 / s / 1e12,
                rep.panels,
                rep.panel_width,
                rep.c_on_device,
                rep.compute_seconds,
                rep.wait_seconds,
                rep.redistribute_seconds
            );
        }
        if r == 1 {
            let pins = pin_stats(&rt).map(|now| (pins_before.unwrap_or_default(), now));
            print_ranks(grid.comm(), &diagnosis(me, &rep, pins.as_ref()));
        }
        if r > 0 {
            times.push((s, worst_wait));
        }
    }
    ws.release(&rt).map_err(e)?;
    // The local arrays the products read in place were page-locked by the calls.
    for local in [a.local(), b.local(), c.local()] {
        rt.release_host(local).map_err(|e| e.to_string())?;
    }
    times.sort_by(|x, y| x.0.total_cmp(&y.0));
    if grid.comm().rank() == 0 && !times.is_empty() {
        let (med, wait) = times[times.len() / 2];
        let transport = match opts.transport {
            Transport::Ibcast => "ibcast".to_string(),
            Transport::Chain { chunk_bytes } => format!("chain:{}", chunk_bytes >> 20),
            Transport::Shared => "shared".to_string(),
        };
        let lookahead = if opts.no_overlap { 0 } else { opts.lookahead };
        // Fields after the TFLOP/s: transport, look-ahead, panel width, longest wait, the
        // products' devices (--devices).
        println!(
            "result,mpi,{m},{n},{k},{p}x{q},{med:.4},{:.2},{transport},{lookahead},{},{wait:.3},\
             {devices}",
            2.0 * (m * n * k) as f64 / med / 1e12,
            opts.panel_width.unwrap_or(4096)
        );
    }
    Ok(())
}

/// The devices of the local products from `--devices`: `auto` (the summa default: with C on a
/// device, the accelerators), `gpu` (the accelerators), `all`, or a list of indices.
fn parse_devices(rt: &Runtime, spec: &str) -> Result<Option<Vec<usize>>, String> {
    let all = 0..rt.devices().len();
    match spec {
        "auto" => Ok(None),
        "all" => Ok(Some(all.collect())),
        "gpu" => {
            let gpus: Vec<usize> = all
                .filter(|&i| !rt.devices()[i].space().is_host())
                .collect();
            if gpus.is_empty() {
                return Err("--devices gpu: this runtime has no accelerator".into());
            }
            Ok(Some(gpus))
        }
        list => list
            .split(',')
            .map(|v| match v.trim().parse::<usize>() {
                Ok(i) if i < rt.devices().len() => Ok(i),
                _ => Err(format!("--devices {spec:?}: {v:?} is not a device index")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
    }
}

/// The registration statistics of the runtime's GPUs (one cache per GPU runtime, shared by
/// its devices); `None` without a GPU.
fn pin_stats(rt: &Runtime) -> Option<PinStats> {
    rt.devices().iter().find_map(|d| {
        hetblas_cuda::CudaDevice::of(d.as_ref())
            .map(|g| g.pin_cache().stats())
            .or_else(|| hetblas_hip::HipDevice::of(d.as_ref()).map(|g| g.pin_cache().stats()))
    })
}

/// One rank's lines on a repetition: each local product (seconds, rate, the runtime's
/// devices, shares, tile and fold), and the registrations it made (`pins`: the statistics
/// before and after).
fn diagnosis(rank: i32, rep: &SummaReport, pins: Option<&(PinStats, PinStats)>) -> String {
    let mut out = format!(
        "rank {rank}: {} products, compute {:.3} s, waiting {:.3} s, preparing host arrays {:.3} s",
        rep.products.len(),
        rep.compute_seconds,
        rep.wait_seconds,
        rep.prepare_seconds
    );
    for (i, p) in rep.products.iter().enumerate() {
        let shares: Vec<String> = p.weights.iter().map(|w| format!("{w:.3}")).collect();
        let moved: Vec<String> = p
            .link_bytes
            .iter()
            .map(|(l, b)| format!("{l} {}", human_bytes(*b)))
            .collect();
        out += &format!(
            "\nrank {rank} product {i}: {}x{}x{} {:.3} s, {:.2} TFLOP/s, devices {:?} shares [{}], \
             tile {:?}, host fold {}, plan cached {} ({:.3} s planning), moved [{}]{}",
            p.m,
            p.n,
            p.k,
            p.seconds,
            p.tflops(),
            p.devices,
            shares.join(", "),
            p.tile,
            p.host_fold,
            p.plan_cached,
            p.planning_seconds,
            moved.join(", "),
            if p.notes.is_empty() {
                String::new()
            } else {
                format!("; {}", p.notes.join("; "))
            }
        );
    }
    out += &match pins {
        None => format!("\nrank {rank} registrations: no GPU registration cache"),
        Some((before, now)) => format!(
            "\nrank {rank} registrations in this repetition: {} new ({:.2} GiB, {:.3} s), {} hits, \
             {} refused, {} evicted, {} stale, {} merged; since the start: {} registrations \
             ({:.2} GiB, {:.3} s registering, {:.2} GiB pre-faulted), {} hits, {} refused \
             (refused memory is copied through staging buffers)",
            now.registrations - before.registrations,
            (now.bytes_registered - before.bytes_registered) as f64 / GIB,
            now.seconds_registering - before.seconds_registering,
            now.hits - before.hits,
            now.failures - before.failures,
            now.evictions - before.evictions,
            now.stale - before.stale,
            now.merges - before.merges,
            now.registrations,
            now.bytes_registered as f64 / GIB,
            now.seconds_registering,
            now.bytes_prefaulted as f64 / GIB,
            now.hits,
            now.failures
        ),
    };
    out
}

const GIB: f64 = (1u64 << 30) as f64;

/// `b` bytes as GiB, or MiB below one GiB.
fn human_bytes(b: u64) -> String {
    if b as f64 >= GIB {
        format!("{:.2} GiB", b as f64 / GIB)
    } else {
        format!("{:.2} MiB", b as f64 / (1u64 << 20) as f64)
    }
}

/// Prints every rank's `text` on rank 0, in rank order (gathered, so that the lines of
/// different ranks do not interleave). Collective over `comm`.
fn print_ranks(comm: &SimpleCommunicator, text: &str) {
    let root = comm.process_at_rank(0);
    let bytes = text.as_bytes();
    let len = bytes.len() as i32;
    if comm.rank() == 0 {
        let mut lens = vec![0i32; comm.size() as usize];
        root.gather_into_root(&len, &mut lens[..]);
        let displs: Vec<i32> = lens
            .iter()
            .scan(0, |at, &l| {
                let d = *at;
                *at += l;
                Some(d)
            })
            .collect();
        let mut all = vec![0u8; lens.iter().sum::<i32>() as usize];
        let mut part = mpi::datatype::PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
        root.gather_varcount_into_root(bytes, &mut part);
        for (&d, &l) in displs.iter().zip(&lens) {
            println!(
                "{}",
                String::from_utf8_lossy(&all[d as usize..(d + l) as usize])
            );
        }
    } else {
        root.gather_into(&len);
        root.gather_varcount_into(bytes);
    }
}

fn args_has(flag: &str) -> bool {
    std::env::args().any(|a| a == flag)
}

/// Ping-pong between ranks 0 and 1 over message sizes 8 B .. 64 MiB; fits latency and
/// bandwidth (least squares on the one-way times) and prints them as a [`NetworkLink`].
fn pingpong(world: &SimpleCommunicator) -> Res {
    if world.size() < 2 {
        return Err("pingpong needs two ranks".into());
    }
    let rank = world.rank();
    let mut points = Vec::new();
    for shift in (3..=26).step_by(1) {
        let bytes = 1usize << shift;
        let mut buf = vec![0u8; bytes];
        let reps = if bytes < 1 << 20 { 50 } else { 5 };
        world.barrier();
        let t = Instant::now();
        for _ in 0..reps {
            if rank == 0 {
                world.process_at_rank(1).send(&buf[..]);
                world.process_at_rank(1).receive_into(&mut buf[..]);
            } else if rank == 1 {
                world.process_at_rank(0).receive_into(&mut buf[..]);
                world.process_at_rank(0).send(&buf[..]);
            }
        }
        points.push((bytes as f64, t.elapsed().as_secs_f64() / reps as f64 / 2.0));
    }
    if rank == 0 {
        let n = points.len() as f64;
        let (sx, sy) = points
            .iter()
            .fold((0.0, 0.0), |(a, b), p| (a + p.0, b + p.1));
        let (mx, my) = (sx / n, sy / n);
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for &(x, y) in &points {
            sxy += (x - mx) * (y - my);
            sxx += (x - mx) * (x - mx);
        }
        let slope = sxy / sxx;
        let link = NetworkLink {
            latency_s: points[0].1,
            bandwidth: 1.0 / slope,
        };
        for (b, t) in &points {
            println!(
                "{:>10} B  {:>10.2} us  {:>8.2} GB/s",
                b,
                t * 1e6,
                b / t / 1e9
            );
        }
        println!("{link:?}");
    }
    Ok(())
}

/// Broadcast bandwidth from rank 0 to the others, per message size and transport, polled as
/// SUMMA polls (yielding, or sleeping `--nap-us` between tests): the median of `--reps` after a
/// warm-up, as bytes per second of the message.
fn bcast(world: &SimpleCommunicator, opt: &dyn Fn(&str) -> Option<String>) -> Res {
    let list = |name: &str, default: &str| -> Vec<String> {
        opt(name)
            .unwrap_or_else(|| default.into())
            .split(',')
            .map(str::to_string)
            .collect()
    };
    let sizes = list("--mib", "256,512,1024")
        .iter()
        .map(|v| v.parse::<usize>().map_err(|_| format!("--mib {v:?}")))
        .collect::<Result<Vec<_>, _>>()?;
    let transports = list("--transports", "ibcast,chain:64,chain:16")
        .iter()
        .map(|t| t.parse::<Transport>())
        .collect::<Result<Vec<_>, _>>()?;
    let reps: usize = opt("--reps").map_or(Ok(3), |v| v.parse().map_err(|_| "--reps"))?;
    let nap = opt("--nap-us")
        .map(|v| v.parse::<u64>().map_err(|_| format!("--nap-us {v:?}")))
        .transpose()?
        .map(std::time::Duration::from_micros);
    for &mib in &sizes {
        let mut buf = vec![0.0f64; (mib << 20) / 8];
        if world.rank() == 0 {
            buf.iter_mut().enumerate().for_each(|(i, x)| *x = i as f64);
        }
        for &t in &transports {
            if world.rank() != 0 {
                buf.fill(0.0);
            }
            let mut times = Vec::new();
            for r in 0..=reps {
                world.barrier();
                let t0 = Instant::now();
                hetblas_mpi::broadcast::broadcast(world, 0, &mut buf, t, nap);
                world.barrier();
                if r > 0 {
                    times.push(t0.elapsed().as_secs_f64());
                }
            }
            // The data arrived: the last element is what rank 0 wrote.
            let last = buf.len() - 1;
            if buf[last] != last as f64 {
                return Err(format!("{t:?}: rank {} got wrong data", world.rank()));
            }
            times.sort_by(f64::total_cmp);
            let med = times[times.len() / 2];
            if world.rank() == 0 {
                println!(
                    "bcast,{},{mib},{t:?},{},{med:.4},{:.2}",
                    world.size(),
                    nap.map_or("yield".to_string(), |d| format!("sleep{}us", d.as_micros())),
                    (mib << 20) as f64 / med / 1e9
                );
            }
        }
    }
    Ok(())
}
