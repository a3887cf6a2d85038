//! The device path of SYRK/HERK, SYR2K/HER2K and SYMM/HEMM on host operands: routed like GEMM
//! ([`crate::route`], with the GEMM of the same flops standing for the routine), run by the
//! Runtime, and on a device failure C restored and the call left to the host path.

use crate::elem::Elem;
use crate::offload::{report_failure, route_call, trace_dir, write_trace, Routed};
use crate::route::{Outcome, Shape};
use hetblas::{GemmOptions, MatIn, MatMut, MatRef, Scalar, Side, SymOp, Trans, Uplo};

#[cfg(test)]
thread_local! {
    /// Symmetric calls the devices computed on this thread (the unit tests check that the
    /// device path took theirs).
    pub static SYM_DEVICE_CALLS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The hooks the routines' table lines name (`offload(offload_sym::syrk)` in `routines.rs`):
/// each routine's BLAS argument list onto [`rank`] or [`multiply`]. HERK's and HER2K's real
/// scalars go on as `T` with zero imaginary part; SYRK and HERK have no B: A stands in, unread.
macro_rules! hooks {
    ($($name:ident($($a:ident: $t:ty),*) => $call:expr;)*) => {$(
        #[doc = concat!("The ", stringify!($name), " hook (see [`hooks!`]).")]
        ///
        /// # Safety
        /// As [`rank`].
        #[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
        pub unsafe fn $name<T: Elem>($($a: $t),*) -> Outcome {
            // SAFETY: forwarded contract.
            unsafe { $call }
        }
    )*};
}

hooks! {
    syrk(uplo: u8, trans: u8, n: i64, k: i64, alpha: T, a: *const T, lda: i64, beta: T,
         c: *mut T, ldc: i64)
        => rank((false, false), uplo, trans, n, k, alpha, (a, lda), (a, lda), beta, (c, ldc));
    herk(uplo: u8, trans: u8, n: i64, k: i64, alpha: T::Real, a: *const T, lda: i64,
         beta: T::Real, c: *mut T, ldc: i64)
        => rank((false, true), uplo, trans, n, k, T::from_real(alpha), (a, lda), (a, lda),
                T::from_real(beta), (c, ldc));
    syr2k(uplo: u8, trans: u8, n: i64, k: i64, alpha: T, a: *const T, lda: i64, b: *const T,
          ldb: i64, beta: T, c: *mut T, ldc: i64)
        => rank((true, false), uplo, trans, n, k, alpha, (a, lda), (b, ldb), beta, (c, ldc));
    her2k(uplo: u8, trans: u8, n: i64, k: i64, alpha: T, a: *const T, lda: i64, b: *const T,
          ldb: i64, beta: T::Real, c: *mut T, ldc: i64)
        => rank((true, true), uplo, trans, n, k, alpha, (a, lda), (b, ldb), T::from_real(beta),
                (c, ldc));
    symm(side: u8, uplo: u8, m: i64, n: i64, alpha: T, a: *const T, lda: i64, b: *const T,
         ldb: i64, beta: T, c: *mut T, ldc: i64)
        => multiply(false, side, uplo, m, n, alpha, (a, lda), (b, ldb), beta, (c, ldc));
    hemm(side: u8, uplo: u8, m: i64, n: i64, alpha: T, a: *const T, lda: i64, b: *const T,
         ldb: i64, beta: T, c: *mut T, ldc: i64)
        => multiply(true, side, uplo, m, n, alpha, (a, lda), (b, ldb), beta, (c, ldc));
}

/// A rank update (`two`: SYR2K/HER2K) on the devices when the routing sends it there; `false`
/// leaves it to the host path. HERK's real scalars come as `T` with zero imaginary part.
///
/// # Safety
/// The arguments passed the reference checks and the arrays satisfy the BLAS contract in host
/// memory; `c` does not overlap `a` or `b`.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
pub unsafe fn rank<T: Scalar>(
    (two, herm): (bool, bool),
    uplo: u8,
    trans: u8,
    n: i64,
    k: i64,
    alpha: T,
    (a, lda): (*const T, i64),
    (b, ldb): (*const T, i64),
    beta: T,
    (c, ldc): (*mut T, i64),
) -> Outcome {
    let (Some(uplo), Some(trans)) = (Uplo::from_blas_char(uplo), Trans::from_blas_char(trans))
    else {
        return Outcome::Host(None);
    };
    let op = SymOp::Rank {
        uplo,
        trans: trans.for_dtype(T::DTYPE),
        two,
        herm,
    };
    // The GEMM of the same flops: n x n' x k, n' = (n + 1) / 2 per product.
    let cols = if two { n + 1 } else { (n + 1) / 2 };
    let (ar, ac) = trans.stored_shape(n.max(0) as usize, k.max(0) as usize);
    // SAFETY: forwarded contract.
    unsafe {
        run(
            op,
            (n, n, cols, k),
            alpha,
            (a, ar, ac, lda),
            two.then_some((b, ar, ac, ldb)),
            beta,
            (c, ldc),
        )
    }
}

/// SYMM/HEMM on the devices when the routing sends it there; `false` leaves it to the host.
///
/// # Safety
/// As [`rank`].
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
pub unsafe fn multiply<T: Scalar>(
    herm: bool,
    side: u8,
    uplo: u8,
    m: i64,
    n: i64,
    alpha: T,
    (a, lda): (*const T, i64),
    (b, ldb): (*const T, i64),
    beta: T,
    (c, ldc): (*mut T, i64),
) -> Outcome {
    let (Some(side), Some(uplo)) = (Side::from_blas_char(side), Uplo::from_blas_char(uplo)) else {
        return Outcome::Host(None);
    };
    let ka = if side == Side::Left { m } else { n };
    let (mu, nu, ku) = (m.max(0) as usize, n.max(0) as usize, ka.max(0) as usize);
    let op = SymOp::Multiply { side, uplo, herm };
    // SAFETY: forwarded contract.
    unsafe {
        run(
            op,
            (m, n, n, ka),
            alpha,
            (a, ku, ku, lda),
            Some((b, mu, nu, ldb)),
            beta,
            (c, ldc),
        )
    }
}

/// The routing and the call: C is `cm x cn`; `(gm, gk)` with `cm` the GEMM that stands for it
/// (`cm x gn x gk`).
///
/// # Safety
/// As [`rank`]; the operand tuples are (pointer, rows, cols, ld) of checked arrays.
#[allow(clippy::type_complexity)] // reason: one routine's operands, unpacked once here
unsafe fn run<T: Scalar>(
    op: SymOp,
    (cm, cn, gn, gk): (i64, i64, i64, i64),
    alpha: T,
    a: (*const T, usize, usize, i64),
    b: Option<(*const T, usize, usize, i64)>,
    beta: T,
    (c, ldc): (*mut T, i64),
) -> Outcome {
    if cm <= 0 || cn <= 0 || gk <= 0 {
        return Outcome::Host(None);
    }
    let shape = Shape {
        ta: b'N',
        tb: b'N',
        m: cm,
        n: gn,
        k: gk,
        dtype: T::DTYPE,
    };
    let name = routine_name(T::DTYPE, op);
    let ticket = match route_call(name, &shape, beta == T::default()) {
        Routed::Host(pending) => return Outcome::Host(pending),
        Routed::Devices(ticket) => ticket,
    };
    let rt = ticket.rt;
    // Device pointers stay on the host path (as before this routine had a device path).
    if [a.0 as u64, c as u64]
        .into_iter()
        .chain(b.map(|b| b.0 as u64))
        .any(|p| rt.device_owning(p).is_some())
    {
        ticket.failed();
        return Outcome::Host(None);
    }
    let (m, n) = (cm as usize, cn as usize);
    // SAFETY: the checked arrays of the caller, alive for the call (contract).
    let (av, bv, mut cv) = unsafe {
        (
            MatRef::from_raw_parts(a.0, a.1, a.2, a.3 as usize),
            b.map(|b| MatIn::Host(MatRef::from_raw_parts(b.0, b.1, b.2, b.3 as usize))),
            MatMut::from_raw_parts(c, m, n, ldc as usize),
        )
    };
    // C as it was, to give back untouched if the devices fail.
    let saved: Vec<T> = (0..n)
        .flat_map(|j| (0..m).map(move |i| (i, j)))
        .map(|(i, j)| cv.get(i, j))
        .collect();
    let started = std::time::Instant::now();
    match rt.sym_with(
        op,
        alpha,
        av,
        bv,
        beta,
        cv.rb_mut(),
        // `saved` puts C back if the devices fail: no undo log in the Runtime (`offload`).
        &GemmOptions::default()
            .trace(trace_dir().is_some())
            .preserve_c(false),
    ) {
        Ok(report) => {
            #[cfg(test)]
            SYM_DEVICE_CALLS.with(|c| c.set(c.get() + 1));
            write_trace(name, report.trace.as_ref(), started.elapsed().as_secs_f64());
            ticket.done(name, &report);
            Outcome::Done
        }
        Err(e) => {
            // Said once (every time with HETBLAS_VERBOSE), as GEMM's and the factorizations'.
            report_failure(name, &e);
            for j in 0..n {
                for i in 0..m {
                    cv.set(i, j, saved[i + j * m]);
                }
            }
            ticket.failed();
            Outcome::Host(None)
        }
    }
}

/// The routine's BLAS name ("dsyrk", "zher2k"), for the routing's shapes and the log.
fn routine_name(dtype: hetblas::DType, op: SymOp) -> &'static str {
    const NAMES: [[&str; 4]; 6] = [
        ["ssyrk", "dsyrk", "csyrk", "zsyrk"],
        ["", "", "cherk", "zherk"],
        ["ssyr2k", "dsyr2k", "csyr2k", "zsyr2k"],
        ["", "", "cher2k", "zher2k"],
        ["ssymm", "dsymm", "csymm", "zsymm"],
        ["", "", "chemm", "zhemm"],
    ];
    let row = match op {
        SymOp::Rank {
            two: false, herm, ..
        } => usize::from(herm),
        SymOp::Rank {
            two: true, herm, ..
        } => 2 + usize::from(herm),
        SymOp::Multiply { herm, .. } => 4 + usize::from(herm),
    };
    let col = match dtype {
        hetblas::DType::F32 => 0,
        hetblas::DType::F64 => 1,
        hetblas::DType::C32 => 2,
        hetblas::DType::C64 => 3,
    };
    NAMES[row][col]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::LpInt;
    use hetblas::{c64, DType, SymProblem};
    use hetblas_core::sym_reference::check_sym_sampled;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    /// Runs `call` and checks that the device path took it (counted on this thread: the call
    /// runs on the devices from the calling thread).
    fn on_the_devices(name: &str, call: impl FnOnce()) {
        let before = SYM_DEVICE_CALLS.with(|c| c.get());
        call();
        assert!(
            SYM_DEVICE_CALLS.with(|c| c.get()) > before,
            "{name} did not take the device path"
        );
    }

    /// `zherk_` and `zher2k_` of 1 GFLOP (the built-in rule) go to the unit tests' emulated
    /// devices: with alpha = 0 and beta = 1 they leave C as it was, bit for bit (the reference
    /// BLAS's quick return keeps the imaginary parts of the diagonal, which the reference test
    /// programs check); otherwise they compute the referenced triangle with a real diagonal,
    /// the other triangle and C's padding untouched.
    #[test]
    fn zherk_and_zher2k_go_to_the_devices() {
        let (n, k0) = (1024usize, 1024usize);
        let (lda, ldc) = (n + 2, n + 1);
        let mut rng = StdRng::seed_from_u64(37);
        let mut random = |len: usize| -> Vec<c64> {
            (0..len)
                .map(|_| c64::new(rng.random_range(-1.0..1.0), rng.random_range(-1.0..1.0)))
                .collect()
        };
        let (a, b, c0) = (
            random(lda * (k0 + 4)),
            random(lda * (k0 + 4)),
            random(ldc * n),
        );
        let dim = |x: usize| x as LpInt;
        let mut c = c0.clone();
        // Each call its own k: a shape's later calls are routed by what its first measured
        // (the emulated devices may well lose to the host), its first by the built-in rule.
        for (k, (two, alpha, beta)) in (k0..).zip([
            (false, c64::new(0.0, 0.0), 1.0),
            (true, c64::new(0.0, 0.0), 1.0),
            (false, c64::new(0.75, 0.0), -1.25),
            (true, c64::new(0.75, -0.5), -1.25),
        ]) {
            let name = if two { "zher2k_" } else { "zherk_" };
            on_the_devices(name, || {
                c.copy_from_slice(&c0);
                // SAFETY: A (stored n x k: trans N), B and C are host arrays of the shapes
                // passed, alive for the call; the Fortran convention passes everything by
                // reference.
                unsafe {
                    if two {
                        crate::routines::zher2k_(
                            c"L".as_ptr(),
                            c"N".as_ptr(),
                            &dim(n),
                            &dim(k),
                            &alpha,
                            a.as_ptr(),
                            &dim(lda),
                            b.as_ptr(),
                            &dim(lda),
                            &beta,
                            c.as_mut_ptr(),
                            &dim(ldc),
                        )
                    } else {
                        crate::routines::zherk_(
                            c"L".as_ptr(),
                            c"N".as_ptr(),
                            &dim(n),
                            &dim(k),
                            &alpha.re,
                            a.as_ptr(),
                            &dim(lda),
                            &beta,
                            c.as_mut_ptr(),
                            &dim(ldc),
                        )
                    }
                }
            });
            for j in 0..n {
                for i in n..ldc {
                    assert_eq!(c[i + j * ldc], c0[i + j * ldc], "{name}: padding ({i},{j})");
                }
            }
            let p = SymProblem::rank(Uplo::Lower, Trans::N, two, true, n, k, DType::C64);
            check_sym_sampled(
                &p,
                alpha,
                MatRef::new(&a, n, k, lda).unwrap(),
                two.then(|| MatRef::new(&b, n, k, lda).unwrap()),
                c64::new(beta, 0.0),
                MatRef::new(&c0, n, n, ldc).unwrap(),
                MatRef::new(&c, n, n, ldc).unwrap(),
                20000,
                7,
            )
            .unwrap_or_else(|e| panic!("{name} (alpha {alpha}, beta {beta}): {e}"));
            // The diagonal is every entry the quick return and the update treat apart.
            for i in 0..n {
                let (got, was) = (c[i + i * ldc], c0[i + i * ldc]);
                if alpha == c64::new(0.0, 0.0) {
                    assert_eq!(got, was, "{name}: diagonal ({i},{i}) changed");
                } else {
                    assert_eq!(got.im, 0.0, "{name}: diagonal ({i},{i}) is not real");
                }
            }
        }
    }

    /// `dsyrk_` of 1 GFLOP (over the built-in rule) goes to the unit tests' emulated devices
    /// and computes the referenced triangle, the other one and C's padding rows untouched.
    #[test]
    fn dsyrk_goes_to_the_devices() {
        let (n, k) = (1024usize, 1024usize);
        let (lda, ldc) = (k + 1, n + 3);
        let mut rng = StdRng::seed_from_u64(31);
        let mut random =
            |len: usize| -> Vec<f64> { (0..len).map(|_| rng.random_range(-1.0..1.0)).collect() };
        let a = random(lda * n); // stored k x n: trans T
        let c0 = random(ldc * n);
        let (alpha, beta) = (0.75f64, -1.25f64);
        let dim = |x: usize| x as LpInt;
        let mut c = c0.clone();
        on_the_devices("dsyrk_", || {
            c.copy_from_slice(&c0);
            // SAFETY: A and C are host arrays of the shapes passed, alive for the call; the
            // Fortran convention passes everything by reference.
            unsafe {
                crate::routines::dsyrk_(
                    c"U".as_ptr(),
                    c"T".as_ptr(),
                    &dim(n),
                    &dim(k),
                    &alpha,
                    a.as_ptr(),
                    &dim(lda),
                    &beta,
                    c.as_mut_ptr(),
                    &dim(ldc),
                )
            };
        });
        for j in 0..n {
            for i in n..ldc {
                assert_eq!(
                    c[i + j * ldc].to_bits(),
                    c0[i + j * ldc].to_bits(),
                    "padding ({i},{j})"
                );
            }
        }
        let p = SymProblem::rank(Uplo::Upper, Trans::T, false, false, n, k, DType::F64);
        check_sym_sampled(
            &p,
            c64::new(alpha, 0.0),
            MatRef::new(&a, k, n, lda).unwrap(),
            None,
            c64::new(beta, 0.0),
            MatRef::new(&c0, n, n, ldc).unwrap(),
            MatRef::new(&c, n, n, ldc).unwrap(),
            20000,
            5,
        )
        .unwrap();
    }
}
