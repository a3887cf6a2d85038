//! `hetblas-mpi check`: every case of the distributed GEMM against an f64 reference, on
//! every grid of the ranks.

use crate::{parse_grid, rnd, Res};
use clap::Args;
use hetblas::{Runtime, Scalar, Trans};
use hetblas_mpi::{
    gemm, gemm_sub, CPlacement, DistMatrix, ProcessGrid, SummaOptions, SummaReport, Transport,
};
use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Process grids to check, PxQ,... (default: every grid of the ranks, 1xN to Nx1).
    #[arg(long, value_delimiter = ',', value_parser = parse_grid)]
    pub grids: Option<Vec<(usize, usize)>>,
    /// Name each case on rank 0 before it runs (to find one that hangs).
    #[arg(long)]
    pub verbose: bool,
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
    /// (the accelerators only, when there are any).
    all_devices: bool,
}

pub fn run(world: &SimpleCommunicator, rt: &Runtime, args: &CheckArgs) -> Res {
    let size = world.size() as usize;
    let grids: Vec<(usize, usize)> = match &args.grids {
        Some(g) => g.clone(),
        None => (1..=size)
            .filter(|p| size % p == 0)
            .map(|p| (p, size / p))
            .collect(),
    };
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
                if args.verbose && world.rank() == 0 {
                    eprintln!("grid {p}x{q} case {ci} {case:?}");
                }
                let seed = ci as u64;
                checked += run_case::<f64>(rt, &grid, case, seed)
                    .map_err(|e| format!("grid {p}x{q}, f64 case {ci} {case:?}: {e}"))?;
                checked += run_case::<f32>(rt, &grid, case, seed)
                    .map_err(|e| format!("grid {p}x{q}, f32 case {ci} {case:?}: {e}"))?;
            }
        }
        world.barrier();
    }
    // Bad arguments come back as ScaLAPACK's INFO, with C untouched.
    if let Some(grid) = ProcessGrid::new(world, 1, size).map_err(|e| e.to_string())? {
        checked += check_errors(rt, &grid)?;
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

/// The report's local products: one per panel, together the whole k, each panel once; by
/// default on the accelerators only when the runtime has any (never the CPU); the counters
/// and the timeline agree with them.
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
    let mut panels: Vec<usize> = products.iter().map(|p| p.panel).collect();
    panels.sort_unstable();
    if panels != (0..report.panels).collect::<Vec<_>>() {
        return Err(format!("panels multiplied: {panels:?}"));
    }
    if let Some(p) = products
        .iter()
        .find(|p| !p.seconds.is_finite() || p.seconds < 0.0)
    {
        return Err(format!("a local product took {} s", p.seconds));
    }
    let timed = report
        .timeline
        .iter()
        .filter(|e| e.activity == hetblas_mpi::timeline::Activity::Product)
        .count();
    if timed != products.len() {
        return Err(format!(
            "{timed} products in the timeline, {} reported",
            products.len()
        ));
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
    } else if !accelerators.is_empty() {
        Some(accelerators)
    } else {
        None
    };
    if allowed != expected {
        return Err(format!(
            "the local products were allowed devices {allowed:?}, expected {expected:?}"
        ));
    }
    if expected.is_some() && !c.all_devices {
        for p in products.iter().filter(|p| p.m > 0 && p.n > 0) {
            if p.devices.is_empty() || p.devices.iter().any(|d| host.contains(d)) {
                return Err(format!(
                    "a local product ran on {:?}, expected accelerators only",
                    p.devices
                ));
            }
        }
    }
    Ok(())
}
