//! GEMMT (`?gemmtr`, `?gemmt`): C's `uplo` triangle of `alpha op(A) op(B) + beta C`, C `n x n`.
//! Every case checks the triangle against the f64-accumulated reference and the other
//! triangle bit for bit against what C held: it is neither read nor written (NaN there stays
//! NaN, whatever beta).

use crate::data::{random_vec, rng};
use crate::Target;
use hetblas_core::problem::check_gemmt_args;
use hetblas_core::reference::gemm_error_bound;
use hetblas_core::scalar::{c32, c64};
use hetblas_core::{GemmOptions, MatMut, MatRef, Scalar, Trans, Uplo};

/// One GEMMT case.
#[derive(Debug, Clone, Copy)]
pub struct GemmtSpec {
    pub uplo: Uplo,
    pub transa: Trans,
    pub transb: Trans,
    pub n: usize,
    pub k: usize,
    pub alpha: c64,
    pub beta: c64,
    /// Rows of padding beyond each operand's rows (leading dimension minus rows).
    pub pad: usize,
    /// C in the memory of the target's first home device, not the host.
    pub c_on_device: bool,
    pub tile: Option<usize>,
    pub seed: u64,
}

/// Runs `s` on `t`'s compute devices; `Err` describes the first wrong entry.
pub fn run_gemmt_case<T: Scalar>(t: &Target, s: &GemmtSpec) -> Result<(), String> {
    let (n, k) = (s.n, s.k);
    let (ar, ac) = s.transa.stored_shape(n, k);
    let (br, bc) = s.transb.stored_shape(k, n);
    let (lda, ldb, ldc) = (ar + s.pad, br + s.pad, n + s.pad);
    let mut g = rng(s.seed);
    let a: Vec<T> = random_vec(&mut g, lda * ac);
    let b: Vec<T> = random_vec(&mut g, ldb * bc);
    let mut c0: Vec<T> = random_vec(&mut g, ldc * n);
    // NaN in the triangle that is not computed: it must stay there, untouched.
    for j in 0..n {
        for i in 0..n {
            if !s.uplo.contains(i, j) && (i + 2 * j) % 5 == 0 {
                c0[i + j * ldc] = T::from_f64(f64::NAN);
            }
        }
    }
    let (alpha, beta) = (T::from_c64(s.alpha), T::from_c64(s.beta));
    let opts = GemmOptions::default()
        .c_region(s.uplo)
        .tile(s.tile)
        .devices(t.compute.iter().copied());
    let av = MatRef::new(&a, ar, ac, lda).map_err(|e| e.to_string())?;
    let bv = MatRef::new(&b, br, bc, ldb).map_err(|e| e.to_string())?;
    let mut c = c0.clone();
    let pool = &t.pool;
    let run = if s.c_on_device && !t.homes.is_empty() {
        let packed: Vec<T> = (0..n)
            .flat_map(|j| c0[j * ldc..j * ldc + n].iter().copied())
            .collect();
        let mut dc = pool
            .upload(
                t.homes[0],
                MatRef::packed(&packed, n, n).map_err(|e| e.to_string())?,
            )
            .map_err(|e| e.to_string())?;
        let r = pool.gemm_with(s.transa, s.transb, alpha, av, bv, beta, &mut dc, &opts);
        let mut back = vec![T::default(); n * n];
        pool.download(
            &dc,
            MatMut::packed(&mut back, n, n).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        for j in 0..n {
            c[j * ldc..j * ldc + n].copy_from_slice(&back[j * n..j * n + n]);
        }
        r
    } else {
        let cv = MatMut::new(&mut c, n, n, ldc).map_err(|e| e.to_string())?;
        pool.gemm_with(s.transa, s.transb, alpha, av, bv, beta, cv, &opts)
    };
    run.map_err(|e| format!("{s:?}: {e}"))?;
    let elem = |x: T, t: Trans| if t.is_conjugated() { x.conj() } else { x }.to_c64();
    for j in 0..n {
        for i in 0..ldc {
            let (got, was) = (c[i + j * ldc], c0[i + j * ldc]);
            if i >= n || !s.uplo.contains(i, j) {
                if !same_bits(got, was) {
                    return Err(format!("{s:?}: C({i},{j}) outside the triangle changed"));
                }
                continue;
            }
            let (mut sum, mut abs) = (c64::new(0.0, 0.0), 0.0);
            for l in 0..k {
                let x = if s.transa.is_transposed() {
                    a[l + i * lda]
                } else {
                    a[i + l * lda]
                };
                let y = if s.transb.is_transposed() {
                    b[j + l * ldb]
                } else {
                    b[l + j * ldb]
                };
                let p = elem(x, s.transa) * elem(y, s.transb);
                sum += p;
                abs += p.norm();
            }
            let old = if s.beta == c64::new(0.0, 0.0) {
                c64::new(0.0, 0.0)
            } else {
                s.beta * was.to_c64()
            };
            let want = s.alpha * sum + old;
            let scale = s.alpha.norm() * abs + old.norm();
            let bound = gemm_error_bound(T::DTYPE, k, scale, 4.0).max(f64::MIN_POSITIVE);
            let err = (got.to_c64() - want).norm();
            // A NaN error fails too.
            if err.is_nan() || err > bound {
                return Err(format!(
                    "{} {s:?}: C({i},{j}) = {}, want {want}, error {err:e} > {bound:e}",
                    T::DTYPE,
                    got.to_c64()
                ));
            }
        }
    }
    Ok(())
}

fn same_bits<T: Scalar>(x: T, y: T) -> bool {
    let (x, y) = (x.to_c64(), y.to_c64());
    x.re.to_bits() == y.re.to_bits() && x.im.to_bits() == y.im.to_bits()
}

fn every_option<T: Scalar>(t: &Target) -> Result<(), String> {
    let transposes: &[Trans] = if T::DTYPE.is_complex() {
        &[Trans::N, Trans::T, Trans::C]
    } else {
        &[Trans::N, Trans::T]
    };
    let mut seed = 7;
    for uplo in [Uplo::Lower, Uplo::Upper] {
        for &transa in transposes {
            for &transb in transposes {
                for beta in [0.0, 1.0, -0.5] {
                    seed += 1;
                    let s = GemmtSpec {
                        uplo,
                        transa,
                        transb,
                        n: 37,
                        k: 19,
                        alpha: c64::new(0.75, if T::DTYPE.is_complex() { -0.25 } else { 0.0 }),
                        beta: c64::new(beta, 0.0),
                        pad: (seed % 3) as usize,
                        c_on_device: false,
                        tile: Some(t.small_tile),
                        seed,
                    };
                    run_gemmt_case::<T>(t, &s)?;
                }
            }
        }
    }
    Ok(())
}

/// Both triangles, every transpose of A and B, beta 0, 1 and other, odd shapes in small tiles.
pub fn gemmt_every_option_f64(t: &Target) -> Result<(), String> {
    every_option::<f64>(t)
}
pub fn gemmt_every_option_f32(t: &Target) -> Result<(), String> {
    every_option::<f32>(t)
}
pub fn gemmt_every_option_c32(t: &Target) -> Result<(), String> {
    every_option::<c32>(t)
}
pub fn gemmt_every_option_c64(t: &Target) -> Result<(), String> {
    every_option::<c64>(t)
}

/// C in a device's memory, the default tile and odd sizes; n = 0 and 1, k = 0 (the triangle
/// scaled by beta), alpha = 0.
pub fn gemmt_shapes_and_placements(t: &Target) -> Result<(), String> {
    let base = GemmtSpec {
        uplo: Uplo::Lower,
        transa: Trans::N,
        transb: Trans::T,
        n: 70,
        k: 33,
        alpha: c64::new(1.5, 0.0),
        beta: c64::new(-1.0, 0.0),
        pad: 1,
        c_on_device: false,
        tile: None,
        seed: 3,
    };
    for (n, k, alpha, c_on_device, uplo) in [
        (70, 33, 1.5, true, Uplo::Upper),
        (70, 33, 1.5, true, Uplo::Lower),
        (101, 7, 1.5, false, Uplo::Upper),
        (0, 5, 1.5, false, Uplo::Lower),
        (1, 1, 1.5, false, Uplo::Upper),
        (9, 0, 1.5, false, Uplo::Lower),
        (9, 4, 0.0, false, Uplo::Upper),
    ] {
        let s = GemmtSpec {
            n,
            k,
            alpha: c64::new(alpha, 0.0),
            c_on_device,
            uplo,
            tile: if n > 50 { Some(t.small_tile) } else { None },
            ..base
        };
        run_gemmt_case::<f64>(t, &s)?;
    }
    Ok(())
}

/// Bad arguments get reference BLAS 3.12's parameter numbers (`?gemmtr`), and nothing of C is
/// written.
pub fn gemmt_bad_arguments_are_reported(t: &Target) -> Result<(), String> {
    let a = vec![1.0f64; 64];
    let b = vec![1.0f64; 64];
    let opts = GemmOptions::default().devices(t.compute.iter().copied());
    for (args, param) in [
        ((b'X', b'N', b'N', 4, 4, 4, 4, 4), 1),
        ((b'L', b'X', b'N', 4, 4, 4, 4, 4), 2),
        ((b'U', b'N', b'Q', 4, 4, 4, 4, 4), 3),
        ((b'L', b'N', b'N', -1, 4, 4, 4, 4), 4),
        ((b'L', b'N', b'N', 4, -2, 4, 4, 4), 5),
        ((b'L', b'N', b'N', 4, 4, 3, 4, 4), 8),
        ((b'L', b'T', b'N', 4, 5, 4, 5, 4), 8),
        ((b'L', b'N', b'N', 4, 4, 4, 3, 4), 10),
        ((b'L', b'N', b'T', 4, 4, 4, 3, 4), 10),
        ((b'L', b'N', b'N', 4, 4, 4, 4, 3), 13),
    ] {
        let (uplo, ta, tb, n, k, lda, ldb, ldc) = args;
        let mut c = vec![7.0f64; 64];
        // The BLAS-style entry as the Runtime's `gemmt_blas` composes it: the check, then
        // GEMM on the slices over the triangle.
        let r = check_gemmt_args(uplo, ta, tb, n, k, lda, ldb, ldc).and_then(|(uplo, ta, tb)| {
            t.pool.gemm_blas_checked(
                ta,
                tb,
                n,
                n,
                k,
                1.0,
                &a,
                lda,
                &b,
                ldb,
                1.0,
                &mut c,
                ldc,
                &opts.clone().c_region(uplo),
            )
        });
        match r {
            Err(e) if e.blas_param() == Some(param) => {}
            other => {
                return Err(format!(
                    "{args:?}: expected parameter {param}, got {:?}",
                    other.map(|_| ())
                ))
            }
        }
        if c.iter().any(|&x| x != 7.0) {
            return Err(format!("{args:?}: C written on a bad argument"));
        }
    }
    Ok(())
}
