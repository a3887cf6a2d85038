//! The conformance cases. Each is a plain function over a [`Target`]; `run_case` is the one
//! parametrised GEMM check the cases (and the property tests) are built from.

use crate::check::{check_against_reference, Tolerance};
use crate::data::{random_scalar, random_vec, rng};
use crate::Target;
use hetblas_core::scalar::{c32, c64, Complex64};
use hetblas_core::trace::Activity;
use hetblas_core::{
    Blocking, DeviceMatrix, DevicePool, Error, GemmOptions, GemmReport, MatIn, MatMut, MatOut,
    MatRef, Scalar, Trans,
};

/// Where an operand lives for a case: the host, or `Target::homes[i]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Home {
    Host,
    Device(usize),
}

/// Placement of (A, B, C).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub a: Home,
    pub b: Home,
    pub c: Home,
}

impl Placement {
    pub const HOST: Placement = Placement {
        a: Home::Host,
        b: Home::Host,
        c: Home::Host,
    };
}

/// One GEMM to run and check.
#[derive(Debug, Clone)]
pub struct CaseSpec {
    pub ta: Trans,
    pub tb: Trans,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub alpha: f64,
    pub beta: f64,
    /// Imaginary parts of alpha and beta (complex dtypes only; ignored for real ones).
    pub alpha_im: f64,
    pub beta_im: f64,
    /// Extra leading dimension of A, B, C beyond their rows (host operands).
    pub pad: (usize, usize, usize),
    pub tile: Option<usize>,
    /// Non-square tiles and their group (takes precedence over `tile`).
    pub blocking: Option<Blocking>,
    pub seed: u64,
    pub placement: Placement,
    /// Fill C (and its padding) with NaN before the call.
    pub nan_c: bool,
    pub memory_limit: Option<u64>,
    /// Host C: `Some(true)` folded on the host, `Some(false)` added on the devices, `None` the
    /// model's choice.
    pub host_fold: Option<bool>,
    /// With host folds, the last C tiles whose C is sent instead; `None`: the model's choice.
    pub fold_tail: Option<usize>,
    /// `Some(true)` splits K across the devices (each reduces and writes a block of C's
    /// columns); `None`: the model.
    pub k_split: Option<bool>,
    /// Record the call's timeline (`GemmReport::trace`).
    pub trace: bool,
}

impl CaseSpec {
    pub fn new(ta: Trans, tb: Trans, m: usize, n: usize, k: usize) -> CaseSpec {
        CaseSpec {
            ta,
            tb,
            m,
            n,
            k,
            alpha: 1.0,
            beta: 0.0,
            alpha_im: 0.0,
            beta_im: 0.0,
            pad: (0, 0, 0),
            tile: None,
            blocking: None,
            seed: 1,
            placement: Placement::HOST,
            nan_c: false,
            memory_limit: None,
            host_fold: None,
            fold_tail: None,
            k_split: None,
            trace: false,
        }
    }
}

fn dev_in<T: Scalar>(
    t: &Target,
    home: Home,
    host: MatRef<'_, T>,
) -> Result<Option<DeviceMatrix<T>>, String> {
    match home {
        Home::Host => Ok(None),
        Home::Device(i) => {
            let d = *t.homes.get(i).ok_or("placement names a missing home")?;
            t.pool
                .upload(d, host)
                .map(Some)
                .map_err(|e| format!("upload to device {d}: {e}"))
        }
    }
}

/// Runs one GEMM on the target and checks it against the reference (and checks that host C's
/// padding rows were not touched). Returns the report.
pub fn run_case<T: Scalar>(t: &Target, s: &CaseSpec) -> Result<GemmReport, String> {
    let mut r = rng(s.seed);
    let (ar, ac) = s.ta.stored_shape(s.m, s.k);
    let (br, bc) = s.tb.stored_shape(s.k, s.n);
    let (lda, ldb, ldc) = (
        ar.max(1) + s.pad.0,
        br.max(1) + s.pad.1,
        s.m.max(1) + s.pad.2,
    );
    let a: Vec<T> = random_vec(&mut r, lda * ac.max(1));
    let b: Vec<T> = random_vec(&mut r, ldb * bc.max(1));
    let mut c: Vec<T> = random_vec(&mut r, ldc * s.n.max(1));
    if s.nan_c {
        c.iter_mut().for_each(|x| *x = T::from_f64(f64::NAN));
    }
    let c0 = c.clone();
    let alpha = T::from_c64(Complex64::new(s.alpha, s.alpha_im));
    let beta = T::from_c64(Complex64::new(s.beta, s.beta_im));
    let av = MatRef::new(&a, ar, ac, lda).map_err(|e| e.to_string())?;
    let bv = MatRef::new(&b, br, bc, ldb).map_err(|e| e.to_string())?;
    let c0v = MatRef::new(&c0, s.m, s.n, ldc).map_err(|e| e.to_string())?;

    let da = dev_in(t, s.placement.a, av)?;
    let db = dev_in(t, s.placement.b, bv)?;
    let mut dc = dev_in(t, s.placement.c, c0v)?;
    let opts = GemmOptions::default()
        .tile(s.tile)
        .blocking(s.blocking)
        .devices(t.compute.iter().copied())
        .memory_limit(s.memory_limit)
        .host_fold(s.host_fold)
        .fold_tail(s.fold_tail)
        .k_split(s.k_split)
        .trace(s.trace);
    let a_in: MatIn<'_, T> = da.as_ref().map_or(MatIn::Host(av), MatIn::Device);
    let b_in: MatIn<'_, T> = db.as_ref().map_or(MatIn::Host(bv), MatIn::Device);
    let report = {
        let c_out: MatOut<'_, T> = match dc.as_mut() {
            Some(d) => MatOut::Device(d),
            None => MatOut::Host(MatMut::new(&mut c, s.m, s.n, ldc).map_err(|e| e.to_string())?),
        };
        t.pool
            .gemm_with(s.ta, s.tb, alpha, a_in, b_in, beta, c_out, &opts)
            .map_err(|e| format!("gemm failed: {e} ({s:?})"))?
    };
    if let Some(d) = &dc {
        t.pool
            .download(
                d,
                MatMut::new(&mut c, s.m, s.n, ldc).map_err(|e| e.to_string())?,
            )
            .map_err(|e| format!("download: {e}"))?;
    } else {
        // Host C: the rows between m and ldc belong to the caller and must be untouched.
        for j in 0..s.n {
            for i in s.m..ldc {
                let (g, w) = (c[i + j * ldc], c0[i + j * ldc]);
                if !(g == w || (g.is_nan() && w.is_nan())) {
                    return Err(format!("padding C[{i} + {j}*ldc] was overwritten ({s:?})"));
                }
            }
        }
    }
    let got = MatRef::new(&c, s.m, s.n, ldc).map_err(|e| e.to_string())?;
    check_against_reference(
        s.ta,
        s.tb,
        alpha,
        av,
        bv,
        beta,
        c0v,
        got,
        Tolerance::default(),
    )
    .map_err(|e| format!("{e} [{s:?}]"))?;
    Ok(report)
}

const TRANS: [Trans; 3] = [Trans::N, Trans::T, Trans::C];

fn transposes_for<T: Scalar>(t: &Target, seed: u64) -> Result<(), String> {
    let mut r = rng(seed);
    // (alpha, beta) as (re, im) pairs; complex types also get scalars off the real axis.
    let mut ab = vec![
        ((1.0, 0.0), (0.0, 0.0)),
        ((1.0, 0.0), (1.0, 0.0)),
        ((random_scalar(&mut r), 0.0), (random_scalar(&mut r), 0.0)),
    ];
    if T::DTYPE.is_complex() {
        ab.push((
            (random_scalar(&mut r), random_scalar(&mut r)),
            (random_scalar(&mut r), random_scalar(&mut r)),
        ));
        ab.push(((0.0, 1.0), (0.0, -1.0)));
    }
    let mut n = 0;
    for ta in TRANS {
        for tb in TRANS {
            for &(alpha, beta) in &ab {
                n += 1;
                let mut s = CaseSpec::new(ta, tb, 37, 29, 41);
                (s.alpha, s.alpha_im) = alpha;
                (s.beta, s.beta_im) = beta;
                s.tile = Some(t.small_tile);
                s.seed = seed + n;
                s.pad = (n as usize % 3, (n as usize + 1) % 3, (n as usize + 2) % 3);
                // Host C: folded on the host, or sent to the device and added there.
                s.host_fold = Some(n % 2 == 0);
                run_case::<T>(t, &s)?;
            }
        }
    }
    Ok(())
}

/// Every transpose pair (N, T, C) x alpha/beta in {(1, 0), (1, 1), random}, f64.
pub fn all_transposes_f64(t: &Target) -> Result<(), String> {
    transposes_for::<f64>(t, 100)
}

/// The same in f32.
pub fn all_transposes_f32(t: &Target) -> Result<(), String> {
    transposes_for::<f32>(t, 200)
}

/// Every transpose pair in c32 (C conjugates), with complex alpha and beta too.
pub fn all_transposes_c32(t: &Target) -> Result<(), String> {
    transposes_for::<c32>(t, 250)
}

/// Every transpose pair in c64 (C conjugates), with complex alpha and beta too.
pub fn all_transposes_c64(t: &Target) -> Result<(), String> {
    transposes_for::<c64>(t, 260)
}

/// beta == 0 must not read C: NaN in C does not reach the result, for host and device C.
pub fn beta_zero_ignores_nan_in_c(t: &Target) -> Result<(), String> {
    let mut homes = vec![Home::Host];
    if !t.homes.is_empty() {
        homes.push(Home::Device(0));
    }
    for (i, &home) in homes.iter().enumerate() {
        for tile in [Some(t.small_tile), None] {
            let mut s = CaseSpec::new(Trans::T, Trans::N, 33, 21, 18);
            s.alpha = -1.5;
            s.nan_c = true;
            s.tile = tile;
            s.placement.c = home;
            s.seed = 300 + i as u64;
            run_case::<f64>(t, &s)?;
            run_case::<f32>(t, &s)?;
        }
    }
    Ok(())
}

/// Host folds of every C tile, of all but the last two (whose C is sent), and none.
const FOLD_MODES: [(Option<bool>, Option<usize>); 3] = [
    (Some(true), Some(0)),
    (Some(true), Some(2)),
    (Some(false), None),
];

/// Leading dimensions well above the row counts, every operand.
pub fn leading_dimensions_larger_than_rows(t: &Target) -> Result<(), String> {
    for (i, (ta, tb)) in [(Trans::N, Trans::N), (Trans::T, Trans::T)]
        .into_iter()
        .enumerate()
    {
        let mut s = CaseSpec::new(ta, tb, 26, 19, 23);
        s.pad = (5, 7, 11);
        s.alpha = 0.75;
        s.beta = -0.5;
        s.tile = Some(t.small_tile);
        s.seed = 400 + i as u64;
        // Every tile folded, the last two tiles' C sent (late) and the rest folded, C sent.
        for (host_fold, tail) in FOLD_MODES {
            (s.host_fold, s.fold_tail) = (host_fold, tail);
            let r = run_case::<f64>(t, &s)?;
            if r.host_fold && r.fold_tail != tail.unwrap_or(0) {
                return Err(format!(
                    "fold tail {} ran, {tail:?} asked ({s:?})",
                    r.fold_tail
                ));
            }
            run_case::<f32>(t, &s)?;
        }
    }
    Ok(())
}

/// m = 0, n = 0 (nothing happens), k = 0 and alpha = 0 (C = beta * C, exactly; beta = 0 writes
/// zeros even over NaN).
pub fn quick_returns(t: &Target) -> Result<(), String> {
    let opts = GemmOptions::default().devices(t.compute.iter().copied());
    let pool: &DevicePool = &t.pool;
    // m = 0 and n = 0: C untouched.
    for (m, n) in [(0usize, 5usize), (5, 0)] {
        let a = vec![1.0f64; 5 * 4];
        let b = vec![1.0f64; 5 * 4];
        let mut c = vec![7.0f64; 25];
        pool.gemm_with(
            Trans::N,
            Trans::N,
            1.0,
            MatRef::new(&a, m, 4, 5).map_err(|e| e.to_string())?,
            MatRef::new(&b, 4, n, 4).map_err(|e| e.to_string())?,
            1.0,
            MatMut::new(&mut c, m, n, 5).map_err(|e| e.to_string())?,
            &opts,
        )
        .map_err(|e| e.to_string())?;
        if c.iter().any(|&x| x != 7.0) {
            return Err(format!("m={m} n={n}: C was modified"));
        }
    }
    // k = 0 or alpha = 0: C = beta * C.
    for (k, alpha, beta, nan) in [
        (0usize, 1.0f64, 0.5f64, false),
        (0, 1.0, 0.0, true),
        (3, 0.0, 1.0, false),
        (3, 0.0, 0.0, true),
        (3, 0.0, -2.0, false),
    ] {
        let a = vec![1.0f64; 6 * 3];
        let b = vec![1.0f64; 3 * 4];
        let mut r = rng(500 + k as u64);
        let mut c: Vec<f64> = random_vec(&mut r, 6 * 4);
        if nan {
            c.iter_mut().for_each(|x| *x = f64::NAN);
        }
        let want: Vec<f64> = c
            .iter()
            .map(|&x| if beta == 0.0 { 0.0 } else { beta * x })
            .collect();
        let homes = if t.homes.is_empty() {
            vec![Home::Host]
        } else {
            vec![Home::Host, Home::Device(0)]
        };
        for home in homes {
            let mut cc = c.clone();
            let av = MatRef::new(&a, 6, k, 6).map_err(|e| e.to_string())?;
            let bv = MatRef::new(&b, k, 4, k.max(1)).map_err(|e| e.to_string())?;
            match home {
                Home::Host => {
                    pool.gemm_with(
                        Trans::N,
                        Trans::N,
                        alpha,
                        av,
                        bv,
                        beta,
                        MatMut::new(&mut cc, 6, 4, 6).map_err(|e| e.to_string())?,
                        &opts,
                    )
                    .map_err(|e| e.to_string())?;
                }
                Home::Device(i) => {
                    let mut dc = pool
                        .upload(
                            t.homes[i],
                            MatRef::new(&c, 6, 4, 6).map_err(|e| e.to_string())?,
                        )
                        .map_err(|e| e.to_string())?;
                    pool.gemm_with(Trans::N, Trans::N, alpha, av, bv, beta, &mut dc, &opts)
                        .map_err(|e| e.to_string())?;
                    pool.download(
                        &dc,
                        MatMut::new(&mut cc, 6, 4, 6).map_err(|e| e.to_string())?,
                    )
                    .map_err(|e| e.to_string())?;
                }
            }
            if cc != want {
                return Err(format!(
                    "k={k} alpha={alpha} beta={beta} {home:?}: got {cc:?}, want {want:?}"
                ));
            }
        }
    }
    Ok(())
}

/// 1s, primes, skinny and fat shapes.
pub fn tiny_and_skinny_shapes(t: &Target) -> Result<(), String> {
    let shapes = [
        (1, 1, 1),
        (1, 23, 17),
        (23, 1, 17),
        (23, 17, 1),
        (2, 3, 1),
        (1, 1, 97),
        (97, 1, 1),
        (13, 17, 19),
        (3, 61, 2),
    ];
    for (i, &(m, n, k)) in shapes.iter().enumerate() {
        let ta = TRANS[i % 3];
        let tb = TRANS[(i + 1) % 3];
        let mut s = CaseSpec::new(ta, tb, m, n, k);
        s.alpha = 1.25;
        s.beta = if i % 2 == 0 { 0.0 } else { 0.5 };
        s.tile = Some(t.small_tile);
        s.seed = 600 + i as u64;
        run_case::<f64>(t, &s)?;
        run_case::<f32>(t, &s)?;
    }
    Ok(())
}

/// Shapes that are not multiples of anything, with the tile hetblas chooses.
pub fn odd_shapes_default_tile(t: &Target) -> Result<(), String> {
    for (i, &(m, n, k)) in [(129usize, 67usize, 201usize), (65, 130, 33)]
        .iter()
        .enumerate()
    {
        let mut s = CaseSpec::new(Trans::N, Trans::T, m, n, k);
        s.alpha = -0.5;
        s.beta = 2.0;
        s.seed = 700 + i as u64;
        run_case::<f64>(t, &s)?;
        run_case::<f32>(t, &s)?;
    }
    Ok(())
}

/// All 8 placements of (A, B, C) over {host, device}; with two or more homes also mixed
/// placements across devices.
pub fn operand_placements(t: &Target) -> Result<(), String> {
    let mut placements = Vec::new();
    let choices: Vec<Home> = if t.homes.is_empty() {
        vec![Home::Host]
    } else {
        vec![Home::Host, Home::Device(0)]
    };
    for &a in &choices {
        for &b in &choices {
            for &c in &choices {
                placements.push(Placement { a, b, c });
            }
        }
    }
    if t.homes.len() >= 2 {
        let (d0, d1) = (Home::Device(0), Home::Device(1));
        placements.push(Placement {
            a: d0,
            b: d1,
            c: Home::Host,
        });
        placements.push(Placement {
            a: d1,
            b: Home::Host,
            c: d0,
        });
        placements.push(Placement {
            a: d0,
            b: d1,
            c: d1,
        });
    }
    for (i, &p) in placements.iter().enumerate() {
        let mut s = CaseSpec::new(TRANS[i % 3], TRANS[(i + 2) % 3], 45, 38, 52);
        s.placement = p;
        s.alpha = 0.5;
        s.beta = if i % 2 == 0 { 1.5 } else { 0.0 };
        s.nan_c = s.beta == 0.0;
        s.tile = Some(t.small_tile);
        s.seed = 800 + i as u64;
        run_case::<f64>(t, &s).map_err(|e| format!("placement {p:?}: {e}"))?;
        run_case::<f32>(t, &s).map_err(|e| format!("placement {p:?}: {e}"))?;
    }
    Ok(())
}

fn expect_param(r: Result<GemmReport, Error>, param: u32, what: &str) -> Result<(), String> {
    match r {
        Err(e) if e.blas_param() == Some(param) => Ok(()),
        other => Err(format!(
            "{what}: expected parameter {param} error, got {other:?}"
        )),
    }
}

/// Bad arguments give typed errors with the reference BLAS parameter numbers; nothing panics.
pub fn bad_arguments_are_reported(t: &Target) -> Result<(), String> {
    let pool = &t.pool;
    let o = GemmOptions::default().devices(t.compute.iter().copied());
    let a = vec![1.0f64; 100];
    let b = vec![1.0f64; 100];
    let mut c = vec![1.0f64; 100];
    let mut g = |ta: u8, tb: u8, m: i64, n: i64, k: i64, lda: i64, ldb: i64, ldc: i64| {
        pool.gemm_blas(ta, tb, m, n, k, 1.0, &a, lda, &b, ldb, 1.0, &mut c, ldc, &o)
    };
    expect_param(g(b'Q', b'N', 2, 2, 2, 2, 2, 2), 1, "transa")?;
    expect_param(g(b'N', b'?', 2, 2, 2, 2, 2, 2), 2, "transb")?;
    expect_param(g(b'N', b'N', -1, 2, 2, 2, 2, 2), 3, "m < 0")?;
    expect_param(g(b'N', b'N', 2, -3, 2, 2, 2, 2), 4, "n < 0")?;
    expect_param(g(b'N', b'N', 2, 2, -1, 2, 2, 2), 5, "k < 0")?;
    expect_param(g(b'N', b'N', 3, 2, 2, 2, 2, 3), 8, "lda < m")?;
    expect_param(g(b'T', b'N', 3, 2, 4, 3, 4, 3), 8, "lda < k (transposed)")?;
    expect_param(g(b'N', b'N', 2, 2, 3, 2, 2, 2), 10, "ldb < k")?;
    expect_param(g(b'N', b'T', 2, 5, 3, 2, 4, 2), 10, "ldb < n (transposed)")?;
    expect_param(g(b'N', b'N', 4, 2, 2, 4, 2, 3), 13, "ldc < m")?;
    match g(b'N', b'N', 20, 20, 20, 20, 20, 20) {
        Err(Error::InvalidInput(_)) => {}
        other => {
            return Err(format!(
                "short slices: expected InvalidInput, got {other:?}"
            ))
        }
    }
    // Views of inconsistent shapes: m, n, k.
    let av = MatRef::new(&a, 4, 3, 4).map_err(|e| e.to_string())?;
    let bv = MatRef::new(&b, 3, 5, 3).map_err(|e| e.to_string())?;
    let bad_b = MatRef::new(&b, 2, 5, 2).map_err(|e| e.to_string())?;
    let mut cm = vec![0.0f64; 100];
    expect_param(
        pool.gemm_with(
            Trans::N,
            Trans::N,
            1.0,
            av,
            bv,
            0.0,
            MatMut::new(&mut cm, 5, 5, 5).map_err(|e| e.to_string())?,
            &o,
        ),
        3,
        "op(A) rows vs C rows",
    )?;
    expect_param(
        pool.gemm_with(
            Trans::N,
            Trans::N,
            1.0,
            av,
            bv,
            0.0,
            MatMut::new(&mut cm, 4, 4, 4).map_err(|e| e.to_string())?,
            &o,
        ),
        4,
        "op(B) cols vs C cols",
    )?;
    expect_param(
        pool.gemm_with(
            Trans::N,
            Trans::N,
            1.0,
            av,
            bad_b,
            0.0,
            MatMut::new(&mut cm, 4, 5, 4).map_err(|e| e.to_string())?,
            &o,
        ),
        5,
        "op(A) cols vs op(B) rows",
    )?;
    // Options that cannot work are input errors, not panics.
    for bad in [
        GemmOptions::default().devices([usize::MAX]),
        GemmOptions::default().devices([]),
        GemmOptions::default()
            .tile(0)
            .devices(t.compute.iter().copied()),
    ] {
        match pool.gemm_with(
            Trans::N,
            Trans::N,
            1.0,
            av,
            bv,
            0.0,
            MatMut::new(&mut cm, 4, 5, 4).map_err(|e| e.to_string())?,
            &bad,
        ) {
            Err(Error::InvalidInput(_)) => {}
            other => {
                return Err(format!(
                    "options {bad:?}: expected InvalidInput, got {other:?}"
                ))
            }
        }
    }
    Ok(())
}

/// The second identical call reuses the cached plan and gives the same result.
pub fn repeated_call_reuses_plan(t: &Target) -> Result<(), String> {
    let mut s = CaseSpec::new(Trans::N, Trans::N, 71, 53, 47);
    s.tile = Some(t.small_tile);
    s.beta = 1.0;
    s.seed = 900;
    let r1 = run_case::<f64>(t, &s)?;
    let r2 = run_case::<f64>(t, &s)?;
    if r1.plan_cached || !r2.plan_cached {
        return Err(format!(
            "plan cache: first call cached={}, second cached={}",
            r1.plan_cached, r2.plan_cached
        ));
    }
    Ok(())
}

/// Many tiles through a cache far smaller than the operands (out-of-core): still exact.
pub fn multi_tile_with_small_cache(t: &Target) -> Result<(), String> {
    let tile = t.small_tile;
    for (i, beta) in [0.0, 1.0].into_iter().enumerate() {
        let mut s = CaseSpec::new(Trans::N, Trans::T, tile * 4 + 3, tile * 3 + 1, tile * 5 + 2);
        s.tile = Some(tile);
        s.beta = beta;
        s.alpha = 1.0;
        // Room for 5 tiles of f64 per device: far less than A + B + C.
        s.memory_limit = Some((5 * tile * tile * 8) as u64);
        s.seed = 1000 + i as u64;
        run_case::<f64>(t, &s)?;
    }
    Ok(())
}

/// Non-square tiles accumulated one C tile at a time (the streaming blocking of thin-by-fat
/// problems) and in groups, with edge tiles in every dimension, every transpose of A and B,
/// beta 0 and not, C folded on the host or added on the device, and a small cache.
pub fn non_square_blockings(t: &Target) -> Result<(), String> {
    let tile = t.small_tile;
    let mut n = 0u64;
    for (ta, tb) in [
        (Trans::N, Trans::N),
        (Trans::T, Trans::N),
        (Trans::N, Trans::C),
    ] {
        for group in [1, 4] {
            for beta in [0.0, 0.5] {
                n += 1;
                let mut s = CaseSpec::new(ta, tb, tile + 3, tile * 3 + 1, tile * 6 + 5);
                s.blocking = Some(Blocking {
                    tm: tile + 3,
                    tn: (tile / 2).max(1),
                    tk: tile * 2,
                    group,
                });
                s.alpha = 0.75;
                s.beta = beta;
                s.seed = 3000 + n;
                s.host_fold = Some(n.is_multiple_of(2));
                if n.is_multiple_of(3) {
                    // Room for 6 of the largest tiles: A tiles are evicted and fetched again.
                    s.memory_limit = Some((6 * (tile + 35) * tile * 2 * 8) as u64);
                }
                let r = run_case::<f64>(t, &s)?;
                let b = s.blocking.expect("set above");
                if r.tile != Some((b.tm, b.tn, b.tk)) {
                    return Err(format!("asked for blocking {b}, ran {:?}", r.tile));
                }
            }
        }
    }
    Ok(())
}

/// A K-split asked for: every transpose, beta = 0 over NaN and beta != 0, padded leading
/// dimensions, K not a multiple of the devices, right. Where two or more computing devices
/// have their own memory the call must have split K over them, and its timeline must hold
/// each one's products and the write-back of C; elsewhere the usual C split runs.
pub fn k_split_sums_partials(t: &Target) -> Result<(), String> {
    let tile = t.small_tile;
    let splittable = t
        .compute
        .iter()
        .filter(|&&i| {
            let d = &t.pool.devices()[i];
            !d.space().is_host() && d.kernel().supports_add()
        })
        .count();
    let mut n = 0u64;
    for (ta, tb) in [
        (Trans::N, Trans::N),
        (Trans::T, Trans::C),
        (Trans::C, Trans::T),
    ] {
        for (beta, nan_c) in [(0.0, true), (0.5, false)] {
            n += 1;
            let mut s = CaseSpec::new(ta, tb, tile + 3, 2 * tile - 1, 5 * tile + 7);
            s.k_split = Some(true);
            s.trace = true;
            s.alpha = -0.75;
            s.beta = beta;
            s.nan_c = nan_c;
            s.seed = 4100 + n;
            // Leading dimensions beyond the rows: the devices' K slices and C's column
            // blocks are views with a pitch.
            if n.is_multiple_of(2) {
                s.pad = (3, 2, 5);
            }
            let r = run_case::<f64>(t, &s)?;
            if splittable < 2 {
                if !r.k_split.is_empty() {
                    return Err(format!("K split over {:?} without two devices", r.k_split));
                }
                continue;
            }
            if r.k_split.len() < 2 || r.k_split.iter().sum::<usize>() != s.k {
                return Err(format!("K extents {:?} for k = {} ({s:?})", r.k_split, s.k));
            }
            let tr = r
                .trace
                .as_ref()
                .ok_or("no timeline of a K-split asked to trace")?;
            for d in &r.devices {
                let gemms = tr
                    .intervals
                    .iter()
                    .filter(|i| &i.device == d && i.activity == Activity::Gemm)
                    .count();
                if gemms == 0 {
                    return Err(format!("the timeline has no product on {d}"));
                }
            }
            if !tr.intervals.iter().any(|i| i.label == "C out") {
                return Err("the timeline has no write-back of C".into());
            }
            if tr
                .intervals
                .iter()
                .any(|i| i.start < 0.0 || i.end < i.start)
            {
                return Err("an interval before the call or ending before it starts".into());
            }
        }
    }
    Ok(())
}

/// Runs `s` in c32 and c64.
fn complex_both(t: &Target, s: &CaseSpec) -> Result<(), String> {
    run_case::<c32>(t, s)?;
    run_case::<c64>(t, s)?;
    Ok(())
}

/// Complex GEMM at the edges: beta = 0 over a C full of NaN (host and device C, small and
/// default tiles), leading dimensions above the rows, odd shapes with the default tile, every
/// placement of the operands, a cache far smaller than the operands, and a conjugated operand
/// whose result the reference for the unconjugated one rejects (so a backend that took C for
/// T would fail here).
pub fn complex_edge_cases(t: &Target) -> Result<(), String> {
    let mut homes = vec![Home::Host];
    if !t.homes.is_empty() {
        homes.push(Home::Device(0));
    }
    let mut seed = 5000;
    let mut next = || {
        seed += 1;
        seed
    };
    for &home in &homes {
        for tile in [Some(t.small_tile), None] {
            let mut s = CaseSpec::new(Trans::C, Trans::N, 33, 21, 18);
            (s.alpha, s.alpha_im) = (-1.5, 0.25);
            s.nan_c = true;
            s.tile = tile;
            s.placement.c = home;
            s.seed = next();
            complex_both(t, &s)?;
        }
    }
    for (ta, tb) in [
        (Trans::N, Trans::C),
        (Trans::C, Trans::T),
        (Trans::C, Trans::C),
    ] {
        let mut s = CaseSpec::new(ta, tb, 26, 19, 23);
        s.pad = (5, 7, 11);
        (s.alpha, s.alpha_im) = (0.75, -0.5);
        (s.beta, s.beta_im) = (-0.5, 0.25);
        s.tile = Some(t.small_tile);
        s.seed = next();
        for (host_fold, tail) in FOLD_MODES {
            (s.host_fold, s.fold_tail) = (host_fold, tail);
            complex_both(t, &s)?;
        }
    }
    for (m, n, k) in [
        (129usize, 67usize, 201usize),
        (1, 23, 17),
        (23, 1, 1),
        (3, 61, 2),
    ] {
        let mut s = CaseSpec::new(Trans::C, Trans::T, m, n, k);
        (s.alpha, s.alpha_im) = (-0.5, 1.0);
        (s.beta, s.beta_im) = (2.0, -1.0);
        s.seed = next();
        complex_both(t, &s)?;
    }
    let choices: Vec<Home> = homes.clone();
    let mut i = 0;
    for &a in &choices {
        for &b in &choices {
            for &c in &choices {
                i += 1;
                let mut s = CaseSpec::new(TRANS[i % 3], TRANS[(i + 2) % 3], 45, 38, 52);
                s.placement = Placement { a, b, c };
                (s.alpha, s.alpha_im) = (0.5, 0.5);
                s.beta = if i % 2 == 0 { 1.5 } else { 0.0 };
                s.nan_c = s.beta == 0.0;
                s.tile = Some(t.small_tile);
                s.seed = next();
                complex_both(t, &s).map_err(|e| format!("placement {:?}: {e}", s.placement))?;
            }
        }
    }
    let tile = t.small_tile;
    let mut s = CaseSpec::new(Trans::C, Trans::N, tile * 4 + 3, tile * 3 + 1, tile * 5 + 2);
    s.tile = Some(tile);
    (s.beta, s.beta_im) = (1.0, 1.0);
    // Room for 5 tiles of c64 per device: far less than A + B + C.
    s.memory_limit = Some((5 * tile * tile * 16) as u64);
    s.seed = next();
    run_case::<c64>(t, &s)?;
    conjugation_is_checked(t)
}

/// A conjugate-transposed product passes the check for `C` and fails the one for `T`.
fn conjugation_is_checked(t: &Target) -> Result<(), String> {
    let (m, n, k) = (17, 13, 11);
    let mut r = rng(5100);
    let a: Vec<c64> = random_vec(&mut r, k * m);
    let b: Vec<c64> = random_vec(&mut r, k * n);
    let c0 = vec![c64::new(f64::NAN, f64::NAN); m * n];
    let mut c = c0.clone();
    let av = MatRef::packed(&a, k, m).map_err(|e| e.to_string())?;
    let bv = MatRef::packed(&b, n, k).map_err(|e| e.to_string())?;
    let one = c64::new(1.0, 0.0);
    let zero = c64::new(0.0, 0.0);
    let opts = GemmOptions::default()
        .tile(Some(t.small_tile))
        .devices(t.compute.iter().copied());
    t.pool
        .gemm_with(
            Trans::C,
            Trans::C,
            one,
            av,
            bv,
            zero,
            MatMut::packed(&mut c, m, n).map_err(|e| e.to_string())?,
            &opts,
        )
        .map_err(|e| e.to_string())?;
    let got = MatRef::packed(&c, m, n).map_err(|e| e.to_string())?;
    let c0v = MatRef::packed(&c0, m, n).map_err(|e| e.to_string())?;
    let check =
        |ta, tb| check_against_reference(ta, tb, one, av, bv, zero, c0v, got, Tolerance::default());
    check(Trans::C, Trans::C)?;
    for (ta, tb) in [
        (Trans::T, Trans::C),
        (Trans::C, Trans::T),
        (Trans::T, Trans::T),
    ] {
        if check(ta, tb).is_ok() {
            return Err(format!(
                "the CC product also passes as {ta:?}{tb:?}: conjugation is not tested"
            ));
        }
    }
    Ok(())
}

/// alpha = 0 reads neither A nor B (both full of NaN) and gives C = beta * C exactly, in every
/// dtype, for host and device C; beta = 0 then writes zeros over a C full of NaN.
pub fn alpha_zero_reads_no_operands(t: &Target) -> Result<(), String> {
    alpha_zero_for::<f64>(t)?;
    alpha_zero_for::<f32>(t)?;
    alpha_zero_for::<c32>(t)?;
    alpha_zero_for::<c64>(t)
}

fn alpha_zero_for<T: Scalar>(t: &Target) -> Result<(), String> {
    let opts = GemmOptions::default().devices(t.compute.iter().copied());
    let nan = T::from_c64(Complex64::new(f64::NAN, f64::NAN));
    let (m, n, k) = (6, 4, 3);
    let a = vec![nan; m * k];
    let b = vec![nan; k * n];
    let betas = [
        Complex64::new(0.0, 0.0),
        Complex64::new(1.0, 0.0),
        Complex64::new(-2.0, 0.5),
    ];
    let homes = if t.homes.is_empty() {
        vec![Home::Host]
    } else {
        vec![Home::Host, Home::Device(0)]
    };
    for (i, &beta) in betas.iter().enumerate() {
        let beta = T::from_c64(beta);
        let mut c: Vec<T> = random_vec(&mut rng(5200 + i as u64), m * n);
        let zero_beta = beta == T::default();
        if zero_beta {
            c.iter_mut().for_each(|x| *x = nan);
        }
        let want: Vec<T> = c
            .iter()
            .map(|&x| if zero_beta { T::default() } else { beta * x })
            .collect();
        // A stored k x m (used conjugate-transposed), B stored n x k (used transposed).
        let av = MatRef::packed(&a, k, m).map_err(|e| e.to_string())?;
        let bv = MatRef::packed(&b, n, k).map_err(|e| e.to_string())?;
        for &home in &homes {
            let mut cc = c.clone();
            match home {
                Home::Host => {
                    t.pool
                        .gemm_with(
                            Trans::C,
                            Trans::T,
                            T::default(),
                            av,
                            bv,
                            beta,
                            MatMut::packed(&mut cc, m, n).map_err(|e| e.to_string())?,
                            &opts,
                        )
                        .map_err(|e| e.to_string())?;
                }
                Home::Device(h) => {
                    let mut dc = t
                        .pool
                        .upload(
                            t.homes[h],
                            MatRef::packed(&c, m, n).map_err(|e| e.to_string())?,
                        )
                        .map_err(|e| e.to_string())?;
                    t.pool
                        .gemm_with(
                            Trans::C,
                            Trans::T,
                            T::default(),
                            av,
                            bv,
                            beta,
                            &mut dc,
                            &opts,
                        )
                        .map_err(|e| e.to_string())?;
                    t.pool
                        .download(
                            &dc,
                            MatMut::packed(&mut cc, m, n).map_err(|e| e.to_string())?,
                        )
                        .map_err(|e| e.to_string())?;
                }
            }
            if cc != want {
                return Err(format!(
                    "{} alpha = 0, beta = {beta}, {home:?}: got {cc:?}, want {want:?}",
                    T::DTYPE
                ));
            }
        }
    }
    Ok(())
}

/// Device memory handed over by address, as a program's own device pointers are: the device
/// that owns it says so (and host memory is no device's), and GEMM on the borrowed matrices
/// computes where they live, leaves the rows of C beyond m alone and frees nothing.
pub fn borrowed_device_memory(t: &Target) -> Result<(), String> {
    let e = |e: Error| e.to_string();
    let mut r = rng(900);
    let (m, n, k, ldc) = (45, 38, 52, 48);
    let a: Vec<f64> = random_vec(&mut r, m * k);
    let b: Vec<f64> = random_vec(&mut r, k * n);
    let c0: Vec<f64> = random_vec(&mut r, ldc * n);
    let (alpha, beta) = (random_scalar(&mut r), random_scalar(&mut r));
    if let Some(d) = t.pool.device_owning(a.as_ptr() as u64) {
        return Err(format!("device {d} claims host memory"));
    }
    let opts = GemmOptions::default().devices(t.compute.iter().copied());
    for &home in &t.homes {
        let owned_a = t
            .pool
            .upload(home, MatRef::packed(&a, m, k).map_err(e)?)
            .map_err(e)?;
        let owned_c = t
            .pool
            .upload(home, MatRef::packed(&c0, ldc, n).map_err(e)?)
            .map_err(e)?;
        let (pa, pc) = (owned_a.raw().addr, owned_c.raw().addr);
        for p in [pa, pa + 8 * (m * k - 1) as u64, pc] {
            let owner = t.pool.device_owning(p);
            if owner != Some(home) {
                return Err(format!("address {p:#x} of device {home}: owner {owner:?}"));
            }
        }
        {
            // SAFETY: both regions are allocations of device `home` holding the shapes given,
            // alive until `owned_a` and `owned_c` drop after this block.
            let (lent_a, mut lent_c) = unsafe {
                (
                    t.pool.borrow_matrix::<f64>(home, pa, m, k, m).map_err(e)?,
                    t.pool
                        .borrow_matrix::<f64>(home, pc, m, n, ldc)
                        .map_err(e)?,
                )
            };
            let bv = MatRef::packed(&b, k, n).map_err(e)?;
            t.pool
                .gemm_with(
                    Trans::N,
                    Trans::N,
                    alpha,
                    &lent_a,
                    bv,
                    beta,
                    &mut lent_c,
                    &opts,
                )
                .map_err(|x| format!("gemm on borrowed memory of device {home}: {x}"))?;
        }
        let mut c = vec![f64::NAN; ldc * n];
        t.pool
            .download(&owned_c, MatMut::packed(&mut c, ldc, n).map_err(e)?)
            .map_err(|x| format!("the owner's matrix after the borrow: {x}"))?;
        for j in 0..n {
            for i in m..ldc {
                if c[i + j * ldc] != c0[i + j * ldc] {
                    return Err(format!("C({i}, {j}) beyond m was written"));
                }
            }
        }
        check_against_reference(
            Trans::N,
            Trans::N,
            alpha,
            MatRef::packed(&a, m, k).map_err(e)?,
            MatRef::packed(&b, k, n).map_err(e)?,
            beta,
            MatRef::new(&c0, m, n, ldc).map_err(e)?,
            MatRef::new(&c, m, n, ldc).map_err(e)?,
            Tolerance::default(),
        )?;
    }
    Ok(())
}
