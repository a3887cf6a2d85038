//! Fuzzing the Rust API against the reference BLAS (`hetblas-refblas`): every argument of
//! `gemm_blas` (transpose characters, negative and zero sizes, leading dimensions, NaN scalars)
//! and of `gemm_with` on host views (transposes, sizes 0 and 1, padding, device choices among
//! the CPU and emulated devices, tile sizes), in f32 and f64.
//!
//! - Bad arguments: the same BLAS parameter number as refblas's `gemm_check`.
//! - Where the math is exact (quick returns, `alpha = 0` or `k = 0`, rows of C's padding):
//!   bit-identical to refblas.
//! - Elsewhere: within the dtype's error bound of refblas, entry by entry, NaN where refblas
//!   has NaN and the same infinity where it has one.
//!
//! A panic fails the case (proptest catches it). The case counts below add up to 100,000.

mod common;

use hetblas_core::reference::gemm_error_bound;
use hetblas_core::{DevicePool, GemmOptions, MatMut, MatRef, Scalar, Trans};
use hetblas_refblas as refblas;
use proptest::prelude::*;
use proptest::test_runner::Config;
use std::sync::Arc;

/// The element types fuzzed: hetblas's and refblas's scalar traits together.
trait Elem: Scalar + refblas::scalar::Scalar {}
impl Elem for f32 {}
impl Elem for f64 {}

/// Scalars: the special ones (0, 1, -1, NaN, infinity) often, random ones otherwise.
fn scalar() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => Just(0.0),
        3 => Just(1.0),
        1 => Just(-1.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        4 => -2.0f64..2.0,
    ]
}

/// Operand data: random in [-1, 1), with an occasional NaN or infinity.
fn data(len: usize, seed: u64, special: bool) -> Vec<f64> {
    let mut s = seed;
    (0..len)
        .map(|i| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            if special && i == (seed as usize % len.max(1)) {
                [f64::NAN, f64::INFINITY][(z & 1) as usize]
            } else {
                (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
            }
        })
        .collect()
}

fn typed<T: Scalar>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::from_f64(x)).collect()
}

/// Elements a column-major `rows x cols` matrix with leading dimension `ld` spans.
fn span(rows: usize, cols: usize, ld: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        (cols - 1) * ld + rows
    }
}

/// The pool: [cpu, emu0, emu1, emu2] (the shared test pool's first devices).
fn pool() -> Arc<DevicePool> {
    common::pool()
}

/// Compares hetblas's C with refblas's: bit-identical when `exact`, else within the bound
/// of each entry (NaN for NaN, the same infinity for an infinity). Rows past m (padding) are
/// bit-identical always.
#[allow(clippy::too_many_arguments)] // one GEMM's operands and scalars
fn compare<T: Elem>(
    (ta, tb): (Trans, Trans),
    (m, n, k): (usize, usize, usize),
    alpha: T,
    (a, lda): (&[T], usize),
    (b, ldb): (&[T], usize),
    beta: T,
    (c0, ldc): (&[T], usize),
    got: &[T],
    want: &[T],
    exact: bool,
    infinite_inputs: bool,
) -> Result<(), TestCaseError> {
    let at = |x: &[T], ld: usize, t: Trans, i: usize, l: usize| {
        if t.is_transposed() {
            x[l + i * ld].to_f64()
        } else {
            x[i + l * ld].to_f64()
        }
    };
    for j in 0..n {
        for i in 0..ldc {
            let idx = i + j * ldc;
            if idx >= got.len() {
                break;
            }
            let (g, w) = (got[idx].to_f64(), want[idx].to_f64());
            if exact || i >= m {
                prop_assert!(
                    g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                    "C({i},{j}) = {g:e}, refblas {w:e} (bit-identical expected)"
                );
                continue;
            }
            if !w.is_finite() {
                // With an infinity among the inputs, whether an entry ends NaN or infinite
                // depends on the order of the operations (inf - inf): both are right then.
                prop_assert!(
                    (w.is_nan() && g.is_nan()) || g == w || (infinite_inputs && !g.is_finite()),
                    "C({i},{j}) = {g:e}, refblas {w:e}"
                );
                continue;
            }
            let abs: f64 = (0..k)
                .map(|l| (at(a, lda, ta, i, l) * at(b, ldb, tb, l, j)).abs())
                .sum();
            let sum = alpha.to_f64().abs() * abs
                + if beta == T::default() {
                    0.0
                } else {
                    beta.to_f64().abs() * c0[idx].to_f64().abs()
                };
            // Both are within the bound of the exact value: twice the bound between them.
            let bound = 2.0 * gemm_error_bound(T::DTYPE, k, sum, 2.0)
                + 4.0 * T::DTYPE.unit_roundoff() * w.abs()
                + f64::MIN_POSITIVE;
            prop_assert!(
                (g - w).abs() <= bound,
                "C({i},{j}) = {g:e}, refblas {w:e}: difference beyond {bound:e}"
            );
        }
    }
    Ok(())
}

const TRANS_CHARS: &[u8] = b"NnTtCcX ";

#[derive(Debug, Clone)]
struct BlasCase {
    transa: u8,
    transb: u8,
    m: i64,
    n: i64,
    k: i64,
    /// Leading dimensions relative to the least legal one (negative: too small).
    pads: (i64, i64, i64),
    alpha: f64,
    beta: f64,
    seed: u64,
    special: bool,
    devices: usize,
}

fn blas_case() -> impl Strategy<Value = BlasCase> {
    // Mostly legal arguments (so that most cases compute), one bad one now and then.
    let trans = || {
        prop_oneof![
            9 => prop::sample::select(&TRANS_CHARS[..6]),
            1 => prop::sample::select(TRANS_CHARS),
        ]
    };
    let size = || prop_oneof![1 => Just(-1i64), 2 => Just(0i64), 3 => Just(1i64), 14 => 0i64..24];
    let pad = || prop_oneof![1 => -2i64..0, 9 => 0i64..3];
    (
        (trans(), trans()),
        (size(), size(), size()),
        (pad(), pad(), pad()),
        (scalar(), scalar()),
        any::<u64>(),
        prop::bool::weighted(0.1),
        0usize..5,
    )
        .prop_map(
            |((transa, transb), (m, n, k), pads, (alpha, beta), seed, special, devices)| BlasCase {
                transa,
                transb,
                m,
                n,
                k,
                pads,
                alpha,
                beta,
                seed,
                special,
                devices,
            },
        )
}

/// Device choices: hetblas decides, the CPU, one, two or three emulated devices.
fn device_options(choice: usize, tile: usize) -> GemmOptions {
    let opts = GemmOptions::default();
    match choice {
        0 => opts,
        1 => opts.devices([0]),
        2 => opts.devices([1]).tile(tile),
        3 => opts.devices([1, 2]).tile(tile),
        _ => opts.devices([1, 2, 3]).tile(tile),
    }
}

fn blas_run<T: Elem>(c: &BlasCase) -> Result<(), TestCaseError> {
    let notrans = |t: u8| t == b'N' || t == b'n';
    // The least legal leading dimensions (as far as the arguments make sense), then the pads.
    let (ar, br) = (
        if notrans(c.transa) { c.m } else { c.k },
        if notrans(c.transb) { c.k } else { c.n },
    );
    let lda = ar.max(1) + c.pads.0;
    let ldb = br.max(1) + c.pads.1;
    let ldc = c.m.max(1) + c.pads.2;
    let info = refblas::gemm_check(c.transa, c.transb, c.m, c.n, c.k, lda, ldb, ldc);
    // Operands sized for the arguments (empty where they are illegal, never read then).
    let (ac, bc) = (
        if notrans(c.transa) { c.k } else { c.m },
        if notrans(c.transb) { c.n } else { c.k },
    );
    let len = |r: i64, cols: i64, ld: i64| {
        if info != 0 {
            0
        } else {
            span(r as usize, cols as usize, ld as usize)
        }
    };
    let a: Vec<T> = typed(&data(len(ar, ac, lda), c.seed, c.special));
    let b: Vec<T> = typed(&data(len(br, bc, ldb), c.seed ^ 1, c.special));
    let c0: Vec<T> = typed(&data(len(c.m, c.n, ldc), c.seed ^ 2, c.special));
    let (alpha, beta) = (T::from_f64(c.alpha), T::from_f64(c.beta));
    let mut got = c0.clone();
    let r = pool().gemm_blas(
        c.transa,
        c.transb,
        c.m,
        c.n,
        c.k,
        alpha,
        &a,
        lda,
        &b,
        ldb,
        beta,
        &mut got,
        ldc,
        &device_options(c.devices, 1 + (c.seed % 5) as usize),
    );
    if info != 0 {
        let param = match &r {
            Err(e) => e.blas_param(),
            Ok(_) => None,
        };
        prop_assert_eq!(param, Some(info as u32), "hetblas said {:?}", r.map(|_| ()));
        prop_assert!(got
            .iter()
            .zip(&c0)
            .all(|(x, y)| x.to_f64().to_bits() == y.to_f64().to_bits()));
        return Ok(());
    }
    prop_assert!(r.is_ok(), "hetblas failed: {:?}", r.err());
    let mut want = c0.clone();
    // SAFETY: the arguments passed gemm_check and every operand spans what they describe.
    unsafe {
        refblas::gemm(
            c.transa,
            c.transb,
            c.m,
            c.n,
            c.k,
            alpha,
            a.as_ptr(),
            lda,
            b.as_ptr(),
            ldb,
            beta,
            want.as_mut_ptr(),
            ldc,
        )
    };
    let trans = |t: u8| match t.to_ascii_uppercase() {
        b'N' => Trans::N,
        b'T' => Trans::T,
        _ => Trans::C,
    };
    let (m, n, k) = (c.m as usize, c.n as usize, c.k as usize);
    let exact = m == 0 || n == 0 || k == 0 || alpha == T::default();
    compare(
        (trans(c.transa), trans(c.transb)),
        (m, n, k),
        alpha,
        (&a, lda as usize),
        (&b, ldb as usize),
        beta,
        (&c0, ldc as usize),
        &got,
        &want,
        exact,
        c.special || c.alpha.is_infinite() || c.beta.is_infinite(),
    )
}

#[derive(Debug, Clone)]
struct ViewCase {
    ta: Trans,
    tb: Trans,
    m: usize,
    n: usize,
    k: usize,
    pads: (usize, usize, usize),
    alpha: f64,
    beta: f64,
    seed: u64,
    special: bool,
    devices: usize,
    tile: usize,
}

fn view_case() -> impl Strategy<Value = ViewCase> {
    let dim = || prop_oneof![1 => Just(0usize), 2 => Just(1usize), 7 => 0usize..24];
    (
        (
            prop::sample::select(vec![Trans::N, Trans::T, Trans::C]),
            prop::sample::select(vec![Trans::N, Trans::T, Trans::C]),
        ),
        (dim(), dim(), dim()),
        (0usize..3, 0usize..3, 0usize..3),
        (scalar(), scalar()),
        any::<u64>(),
        prop::bool::weighted(0.1),
        0usize..5,
        1usize..6,
    )
        .prop_map(
            |((ta, tb), (m, n, k), pads, (alpha, beta), seed, special, devices, tile)| ViewCase {
                ta,
                tb,
                m,
                n,
                k,
                pads,
                alpha,
                beta,
                seed,
                special,
                devices,
                tile,
            },
        )
}

fn view_run<T: Elem>(c: &ViewCase) -> Result<(), TestCaseError> {
    let (ar, ac) = c.ta.stored_shape(c.m, c.k);
    let (br, bc) = c.tb.stored_shape(c.k, c.n);
    let (lda, ldb, ldc) = (
        ar.max(1) + c.pads.0,
        br.max(1) + c.pads.1,
        c.m.max(1) + c.pads.2,
    );
    let a: Vec<T> = typed(&data(span(ar, ac, lda), c.seed, c.special));
    let b: Vec<T> = typed(&data(span(br, bc, ldb), c.seed ^ 1, c.special));
    let c0: Vec<T> = typed(&data(span(c.m, c.n, ldc), c.seed ^ 2, c.special));
    let (alpha, beta) = (T::from_f64(c.alpha), T::from_f64(c.beta));
    let mut got = c0.clone();
    let av = MatRef::new(&a, ar, ac, lda);
    let bv = MatRef::new(&b, br, bc, ldb);
    let cv = MatMut::new(&mut got, c.m, c.n, ldc);
    let (av, bv, cv) = match (av, bv, cv) {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        (a, b, cv) => {
            return Err(TestCaseError::fail(format!(
                "views of legal shapes refused: {:?} {:?} {:?}",
                a.err(),
                b.err(),
                cv.err()
            )))
        }
    };
    let r = pool().gemm_with(
        c.ta,
        c.tb,
        alpha,
        av,
        bv,
        beta,
        cv,
        &device_options(c.devices, c.tile),
    );
    prop_assert!(r.is_ok(), "hetblas failed: {:?}", r.err());
    let ch = |t: Trans| t.as_char() as u8;
    let mut want = c0.clone();
    // SAFETY: legal arguments (the views were accepted) and operands spanning them.
    unsafe {
        refblas::gemm(
            ch(c.ta),
            ch(c.tb),
            c.m as i64,
            c.n as i64,
            c.k as i64,
            alpha,
            a.as_ptr(),
            lda as i64,
            b.as_ptr(),
            ldb as i64,
            beta,
            want.as_mut_ptr(),
            ldc as i64,
        )
    };
    let exact = c.m == 0 || c.n == 0 || c.k == 0 || alpha == T::default();
    compare(
        (c.ta, c.tb),
        (c.m, c.n, c.k),
        alpha,
        (&a, lda),
        (&b, ldb),
        beta,
        (&c0, ldc),
        &got,
        &want,
        exact,
        c.special || c.alpha.is_infinite() || c.beta.is_infinite(),
    )
}

/// A shape mismatch between the views is the BLAS parameter of the size that disagrees.
fn mismatch_run(c: &ViewCase, which: usize) -> Result<(), TestCaseError> {
    let (m, n, k) = (c.m + 1, c.n + 1, c.k + 1);
    // Grow one of op(A)'s rows, op(B)'s columns or op(B)'s rows by one.
    let (am, bn, bk) = match which {
        0 => (m + 1, n, k),
        1 => (m, n + 1, k),
        _ => (m, n, k + 1),
    };
    let (ar2, ac2) = c.ta.stored_shape(am, k);
    let (br2, bc2) = c.tb.stored_shape(bk, bn);
    let a = vec![1.0f64; ar2 * ac2];
    let b = vec![1.0f64; br2 * bc2];
    let mut cc = vec![1.0f64; m * n];
    let r = pool().gemm_with(
        c.ta,
        c.tb,
        1.0,
        MatRef::packed(&a, ar2, ac2).unwrap(),
        MatRef::packed(&b, br2, bc2).unwrap(),
        0.0,
        MatMut::packed(&mut cc, m, n).unwrap(),
        &GemmOptions::default(),
    );
    let want = [3u32, 4, 5][which];
    prop_assert_eq!(r.err().and_then(|e| e.blas_param()), Some(want));
    prop_assert!(cc.iter().all(|&x| x == 1.0));
    Ok(())
}

proptest! {
    #![proptest_config(Config::with_cases(30_000))]
    #[test]
    fn gemm_blas_f64_matches_refblas(c in blas_case()) {
        blas_run::<f64>(&c)?;
    }
}

proptest! {
    #![proptest_config(Config::with_cases(20_000))]
    #[test]
    fn gemm_blas_f32_matches_refblas(c in blas_case()) {
        blas_run::<f32>(&c)?;
    }
}

proptest! {
    #![proptest_config(Config::with_cases(25_000))]
    #[test]
    fn gemm_with_views_f64_matches_refblas(c in view_case()) {
        view_run::<f64>(&c)?;
    }
}

proptest! {
    #![proptest_config(Config::with_cases(20_000))]
    #[test]
    fn gemm_with_views_f32_matches_refblas(c in view_case()) {
        view_run::<f32>(&c)?;
    }
}

proptest! {
    #![proptest_config(Config::with_cases(5_000))]
    #[test]
    fn mismatched_views_give_the_parameter_of_the_size(c in view_case(), which in 0usize..3) {
        mismatch_run(&c, which)?;
    }
}
