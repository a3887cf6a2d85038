//! The conformance cases of the symmetric/Hermitian routines (SYRK/HERK, SYR2K/HER2K,
//! SYMM/HEMM): every uplo, trans and side, odd shapes, leading dimensions above the rows,
//! alpha = 0 with NaN operands, beta = 0 over a C of NaN, operands in device memory, and the
//! unreferenced triangle of C compared bit for bit (with [`check_sym`]).

use crate::cases::{Home, Placement};
use crate::data::{random_vec, rng};
use crate::Target;
use hetblas_core::scalar::{c32, c64};
use hetblas_core::sym_reference::{check_sym, same_bits};
use hetblas_core::{
    DType, DeviceMatrix, Error, GemmOptions, MatIn, MatMut, MatOut, MatRef, Scalar, Side, SymOp,
    SymProblem, Trans, Uplo,
};

/// One symmetric call to run and check.
#[derive(Debug, Clone)]
pub struct SymSpec {
    pub op: SymOp,
    /// C is `m x n` (`m == n` for the rank updates); `k` is op(A)'s columns for the rank updates
    /// and ignored for SYMM (A's order follows the side).
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub alpha: c64,
    pub beta: c64,
    /// Extra leading dimension of A, B, C beyond their rows.
    pub pad: (usize, usize, usize),
    pub tile: Option<usize>,
    pub seed: u64,
    pub placement: Placement,
    /// C (both triangles and its padding) is NaN before the call.
    pub nan_c: bool,
    /// A and B are NaN (with alpha = 0 they must not be read).
    pub nan_ab: bool,
}

impl SymSpec {
    pub fn new(op: SymOp, m: usize, n: usize, k: usize) -> SymSpec {
        SymSpec {
            op,
            m,
            n,
            k,
            alpha: c64::new(1.25, -0.5),
            beta: c64::new(-0.75, 0.25),
            pad: (0, 0, 0),
            tile: None,
            seed: 7,
            placement: Placement::HOST,
            nan_c: false,
            nan_ab: false,
        }
    }

    fn problem(&self, dtype: DType) -> SymProblem {
        match self.op {
            SymOp::Rank {
                uplo,
                trans,
                two,
                herm,
            } => SymProblem::rank(uplo, trans, two, herm, self.n, self.k, dtype),
            SymOp::Multiply { side, uplo, herm } => {
                SymProblem::multiply(side, uplo, herm, self.m, self.n, dtype)
            }
        }
    }
}

fn upload<T: Scalar>(
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

/// Runs one symmetric call on the target and checks it: the referenced part against the
/// f64-accumulated reference, the rest of C (and host C's padding) bit for bit.
pub fn run_sym_case<T: Scalar>(t: &Target, s: &SymSpec) -> Result<(), String> {
    let dt = T::DTYPE;
    let p = s.problem(dt);
    let (a_shape, b_shape) = match s.op {
        SymOp::Rank { trans, .. } => {
            let sh = trans.stored_shape(p.n, p.k);
            (sh, sh)
        }
        SymOp::Multiply { .. } => ((p.k, p.k), (p.m, p.n)),
    };
    let (lda, ldb, ldc) = (
        a_shape.0.max(1) + s.pad.0,
        b_shape.0.max(1) + s.pad.1,
        p.m.max(1) + s.pad.2,
    );
    let mut r = rng(s.seed);
    let mut a: Vec<T> = random_vec(&mut r, lda * a_shape.1.max(1));
    let mut b: Vec<T> = random_vec(&mut r, ldb * b_shape.1.max(1));
    let mut c: Vec<T> = random_vec(&mut r, ldc * p.n.max(1));
    let nan = T::from_f64(f64::NAN);
    if s.nan_ab {
        a.iter_mut().chain(b.iter_mut()).for_each(|x| *x = nan);
    }
    if s.nan_c {
        c.iter_mut().for_each(|x| *x = nan);
    }
    // The scalars the routine really takes (HERK's alpha and beta, HER2K's beta, are real).
    let real = |x: c64| c64::new(x.re, 0.0);
    let (mut alpha, mut beta) = (s.alpha, s.beta);
    if !dt.is_complex() {
        (alpha, beta) = (real(alpha), real(beta));
    }
    if let SymOp::Rank {
        herm: true, two, ..
    } = s.op
    {
        beta = real(beta);
        if !two {
            alpha = real(alpha);
        }
    }
    let c0 = c.clone();
    let av = MatRef::new(&a, a_shape.0, a_shape.1, lda).map_err(|e| e.to_string())?;
    let bv = MatRef::new(&b, b_shape.0, b_shape.1, ldb).map_err(|e| e.to_string())?;
    let c0v = MatRef::new(&c0, p.m, p.n, ldc).map_err(|e| e.to_string())?;
    let uses_b = !matches!(s.op, SymOp::Rank { two: false, .. });
    let da = upload(t, s.placement.a, av)?;
    let db = if uses_b {
        upload(t, s.placement.b, bv)?
    } else {
        None
    };
    let mut dc = upload(t, s.placement.c, c0v)?;
    let opts = GemmOptions::default()
        .tile(s.tile)
        .devices(t.compute.iter().copied());
    let a_in: MatIn<'_, T> = da.as_ref().map_or(MatIn::Host(av), MatIn::Device);
    let b_in: Option<MatIn<'_, T>> =
        uses_b.then(|| db.as_ref().map_or(MatIn::Host(bv), MatIn::Device));
    {
        let c_out: MatOut<'_, T> = match dc.as_mut() {
            Some(d) => MatOut::Device(d),
            None => MatOut::Host(MatMut::new(&mut c, p.m, p.n, ldc).map_err(|e| e.to_string())?),
        };
        t.pool
            .sym_with(
                s.op,
                T::from_c64(alpha),
                a_in,
                b_in,
                T::from_c64(beta),
                c_out,
                &opts,
            )
            .map_err(|e| format!("{} failed: {e} ({s:?})", s.op.name()))?;
    }
    if let Some(d) = &dc {
        t.pool
            .download(
                d,
                MatMut::new(&mut c, p.m, p.n, ldc).map_err(|e| e.to_string())?,
            )
            .map_err(|e| format!("download: {e}"))?;
    }
    // Host C's padding rows belong to the caller (a downloaded C has none written either).
    for j in 0..p.n {
        for i in p.m..ldc {
            if !same_bits(&c[i + j * ldc], &c0[i + j * ldc]) {
                return Err(format!("padding C[{i} + {j}*ldc] was overwritten ({s:?})"));
            }
        }
    }
    let got = MatRef::new(&c, p.m, p.n, ldc).map_err(|e| e.to_string())?;
    let bref = uses_b.then_some(bv);
    check_sym(&p, alpha, av, bref, beta, c0v, got, 2.0).map_err(|e| format!("{e} [{s:?}]"))?;
    Ok(())
}

/// Every routine BLAS defines for `dtype`, with every uplo and trans/side it takes.
pub fn all_ops(dtype: DType) -> Vec<SymOp> {
    let mut ops = Vec::new();
    for uplo in [Uplo::Lower, Uplo::Upper] {
        for herm in [false, true] {
            if herm && !dtype.is_complex() {
                continue;
            }
            let transes: &[Trans] = match (dtype.is_complex(), herm) {
                (false, _) => &[Trans::N, Trans::T, Trans::C],
                (true, false) => &[Trans::N, Trans::T],
                (true, true) => &[Trans::N, Trans::C],
            };
            for &trans in transes {
                for two in [false, true] {
                    ops.push(SymOp::Rank {
                        uplo,
                        trans: trans.for_dtype(dtype),
                        two,
                        herm,
                    });
                }
            }
            for side in [Side::Left, Side::Right] {
                ops.push(SymOp::Multiply { side, uplo, herm });
            }
        }
    }
    ops
}

/// Every routine and option in `T`, on odd shapes with padded leading dimensions: one diagonal
/// block (the model's block) and a recursive split into small blocks (GEMMs off the diagonal).
fn every_option<T: Scalar>(t: &Target, seed: u64) -> Result<(), String> {
    for (i, op) in all_ops(T::DTYPE).into_iter().enumerate() {
        for tile in [None, Some(8)] {
            let mut s = SymSpec::new(op, 29, 29, 13);
            if let SymOp::Multiply { .. } = op {
                s.m = 23;
                s.n = 19;
            }
            s.tile = tile;
            s.pad = (3, 2, 1);
            s.seed = seed + i as u64;
            run_sym_case::<T>(t, &s)?;
        }
    }
    Ok(())
}

pub fn sym_every_option_f32(t: &Target) -> Result<(), String> {
    every_option::<f32>(t, 100)
}
pub fn sym_every_option_f64(t: &Target) -> Result<(), String> {
    every_option::<f64>(t, 200)
}
pub fn sym_every_option_c32(t: &Target) -> Result<(), String> {
    every_option::<c32>(t, 300)
}
pub fn sym_every_option_c64(t: &Target) -> Result<(), String> {
    every_option::<c64>(t, 400)
}

/// alpha = 0 reads neither A nor B (both NaN), and scales the referenced part of C by beta;
/// beta = 0 as well writes zeros over it.
pub fn sym_alpha_zero_reads_no_operands(t: &Target) -> Result<(), String> {
    fn run<T: Scalar>(t: &Target) -> Result<(), String> {
        for op in all_ops(T::DTYPE) {
            for beta in [c64::new(0.5, 0.0), c64::new(0.0, 0.0)] {
                let mut s = SymSpec::new(op, 17, 17, 9);
                s.alpha = c64::new(0.0, 0.0);
                s.beta = beta;
                s.nan_ab = true;
                s.tile = Some(8);
                run_sym_case::<T>(t, &s)?;
            }
        }
        Ok(())
    }
    run::<f64>(t)?;
    run::<c64>(t)
}

/// beta = 0 overwrites a C full of NaN in its referenced part, and leaves the NaN of the other
/// triangle as they were, bit for bit.
pub fn sym_beta_zero_overwrites_nan(t: &Target) -> Result<(), String> {
    fn run<T: Scalar>(t: &Target) -> Result<(), String> {
        for op in all_ops(T::DTYPE) {
            let mut s = SymSpec::new(op, 21, 21, 11);
            s.beta = c64::new(0.0, 0.0);
            s.nan_c = true;
            s.tile = Some(8);
            s.pad = (1, 1, 2);
            run_sym_case::<T>(t, &s)?;
        }
        Ok(())
    }
    run::<f32>(t)?;
    run::<c32>(t)
}

/// Operands in device memory (each home of the target): the result and the untouched
/// triangle are the same as with host operands.
pub fn sym_device_operands(t: &Target) -> Result<(), String> {
    let mut placements = vec![Placement::HOST];
    for h in 0..t.homes.len() {
        let d = Home::Device(h);
        placements.push(Placement { a: d, b: d, c: d });
        placements.push(Placement {
            a: Home::Host,
            b: d,
            c: Home::Host,
        });
        placements.push(Placement {
            a: Home::Host,
            b: Home::Host,
            c: d,
        });
    }
    for placement in placements {
        for op in all_ops(DType::C64) {
            let mut s = SymSpec::new(op, 26, 26, 10);
            s.placement = placement;
            s.tile = Some(8);
            run_sym_case::<c64>(t, &s)?;
        }
    }
    Ok(())
}

/// n = 0 and m = 0 return at once; k = 0 scales the referenced part of C by beta (a HERK
/// diagonal becoming real).
pub fn sym_quick_returns(t: &Target) -> Result<(), String> {
    for op in all_ops(DType::C64) {
        for (m, n, k) in [(0, 0, 5), (5, 5, 0), (1, 1, 1), (0, 4, 3), (4, 0, 3)] {
            if op.triangular_c() && m != n {
                continue;
            }
            run_sym_case::<c64>(t, &SymSpec::new(op, m, n, k))?;
        }
    }
    Ok(())
}

/// The grid of the reference BLAS test programs (xblat3 and x?cblat3 with Debian's inputs),
/// a little thinned: orders in {0, 1, 2, 3, 5, 9} with inner sizes in {0, 1, 2, 5} (SYMM/HEMM:
/// eight shapes of C from those orders), alpha in {0, 1, 0.7 - 0.9i}, beta in {0, 1, 1.3 - 1.1i}
/// (real parts for the real types and HERK's scalars), every uplo, trans and side, leading
/// dimensions one above the rows, in one diagonal block and (f64, c64) split into blocks of two.
/// Every entry of C, its padding and the other triangle included, is compared with the
/// reference semantics: among them the quick return of alpha = 0 (or k = 0) with beta = 1 that
/// leaves C as it was, the imaginary part of a Hermitian diagonal included.
pub fn sym_reference_program_grid(t: &Target) -> Result<(), String> {
    fn run<T: Scalar>(t: &Target, seed: u64, tiles: &[Option<usize>]) -> Result<(), String> {
        const ORDERS: [usize; 6] = [0, 1, 2, 3, 5, 9];
        const INNER: [usize; 4] = [0, 1, 2, 5];
        // SYMM/HEMM's C (m x n): both empty cases, square, wide and tall.
        const SYMM_SHAPES: [(usize, usize); 8] = [
            (0, 3),
            (3, 0),
            (1, 1),
            (2, 5),
            (5, 2),
            (3, 9),
            (9, 3),
            (9, 9),
        ];
        let alphas = [c64::new(0.0, 0.0), c64::new(1.0, 0.0), c64::new(0.7, -0.9)];
        let betas = [c64::new(0.0, 0.0), c64::new(1.0, 0.0), c64::new(1.3, -1.1)];
        for (i, op) in all_ops(T::DTYPE).into_iter().enumerate() {
            // (m, n, k): the rank updates' C is n x n with inner size k; SYMM's C is m x n.
            let shapes: Vec<(usize, usize, usize)> = match op {
                SymOp::Rank { .. } => ORDERS
                    .iter()
                    .flat_map(|&n| INNER.iter().map(move |&k| (n, n, k)))
                    .collect(),
                SymOp::Multiply { .. } => SYMM_SHAPES.iter().map(|&(m, n)| (m, n, 0)).collect(),
            };
            for (m, n, k) in shapes {
                for alpha in alphas {
                    for beta in betas {
                        for &tile in tiles {
                            let mut s = SymSpec::new(op, m, n, k);
                            (s.alpha, s.beta, s.tile) = (alpha, beta, tile);
                            s.pad = (1, 1, 1);
                            s.seed = seed + i as u64;
                            run_sym_case::<T>(t, &s)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }
    // The split into blocks is the same code in every precision: once per real and complex.
    run::<f32>(t, 500, &[None])?;
    run::<f64>(t, 600, &[None, Some(2)])?;
    run::<c32>(t, 700, &[None])?;
    run::<c64>(t, 800, &[None, Some(2)])
}

/// Operands that disagree in shape are reported with the routine's parameter number; a
/// Hermitian routine on a real type is refused.
pub fn sym_bad_arguments_are_reported(t: &Target) -> Result<(), String> {
    let a = vec![1.0f64; 64];
    let b = vec![1.0f64; 64];
    let mut c = vec![0.0f64; 64];
    let opts = GemmOptions::default().devices(t.compute.iter().copied());
    let syrk = SymOp::Rank {
        uplo: Uplo::Lower,
        trans: Trans::N,
        two: false,
        herm: false,
    };
    let view = |r, c_| MatRef::new(&a, r, c_, r).unwrap();
    let expect = |r: Result<hetblas_core::GemmReport, Error>, param: u32| match r {
        Err(e) if e.blas_param() == Some(param) => Ok(()),
        other => Err(format!("expected parameter {param}, got {other:?}")),
    };
    // op(A) has 5 rows, C is 4 x 4.
    expect(
        t.pool.sym_with(
            syrk,
            1.0,
            view(5, 3),
            None,
            0.0,
            MatMut::new(&mut c, 4, 4, 4).unwrap(),
            &opts,
        ),
        3,
    )?;
    // C not square.
    expect(
        t.pool.sym_with(
            syrk,
            1.0,
            view(4, 3),
            None,
            0.0,
            MatMut::new(&mut c, 4, 3, 4).unwrap(),
            &opts,
        ),
        3,
    )?;
    // SYR2K: B differs from A.
    let syr2k = SymOp::Rank {
        uplo: Uplo::Upper,
        trans: Trans::T,
        two: true,
        herm: false,
    };
    let bv = MatRef::new(&b, 2, 4, 2).unwrap();
    expect(
        t.pool.sym_with(
            syr2k,
            1.0,
            view(3, 4),
            Some(MatIn::Host(bv)),
            0.0,
            MatMut::new(&mut c, 4, 4, 4).unwrap(),
            &opts,
        ),
        4,
    )?;
    // SYMM right: A must be n x n.
    let symm = SymOp::Multiply {
        side: Side::Right,
        uplo: Uplo::Lower,
        herm: false,
    };
    let bv = MatRef::new(&b, 3, 4, 3).unwrap();
    expect(
        t.pool.sym_with(
            symm,
            1.0,
            view(3, 3),
            Some(MatIn::Host(bv)),
            0.0,
            MatMut::new(&mut c, 3, 4, 3).unwrap(),
            &opts,
        ),
        4,
    )?;
    let herk = SymOp::Rank {
        uplo: Uplo::Lower,
        trans: Trans::N,
        two: false,
        herm: true,
    };
    match t.pool.sym_with(
        herk,
        1.0,
        view(4, 3),
        None,
        0.0,
        MatMut::new(&mut c, 4, 4, 4).unwrap(),
        &opts,
    ) {
        Err(Error::InvalidInput(_)) => Ok(()),
        other => Err(format!("HERK on f64: expected InvalidInput, got {other:?}")),
    }
}
