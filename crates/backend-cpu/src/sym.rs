//! The symmetric/Hermitian tiles on host memory, through the host BLAS's GEMM: a diagonal tile
//! of a rank update is its product into a temporary, added into the referenced triangle of C
//! only (the other triangle is neither read nor written); a SYMM/HEMM tile expands its A block
//! to the full matrix and multiplies. The extra work is one tile's copy, small next to its
//! product.

use crate::blas::HostBlas;
use crate::kernel::run_gemm;
use hetblas_core::scalar::c64;
use hetblas_core::sym::{Side, SymOp};
use hetblas_core::{GemmTile, RawTile, Result, Scalar, ScalarValue, SymTile, Trans};

/// Runs one symmetric tile now, on the calling thread.
///
/// # Safety
/// The tiles of `op` are valid host memory of their shapes, C writable and not overlapping A or
/// B (as for [`run_gemm`]).
pub unsafe fn run_sym(blas: &dyn HostBlas, op: &SymTile) -> Result<()> {
    use hetblas_core::scalar::{c32, DType};
    // SAFETY: forwarded caller contract.
    unsafe {
        match op.dtype() {
            DType::F32 => run_typed::<f32>(blas, op),
            DType::F64 => run_typed::<f64>(blas, op),
            DType::C32 => run_typed::<c32>(blas, op),
            DType::C64 => run_typed::<c64>(blas, op),
        }
    }
}

/// A packed temporary as a tile in `space`-less host memory.
fn temp_tile<T: Scalar>(v: &mut [T], rows: usize, cols: usize, like: &RawTile) -> RawTile {
    RawTile {
        addr: v.as_mut_ptr() as u64,
        rows,
        cols,
        ld: rows.max(1),
        ..*like
    }
}

/// # Safety
/// As [`run_sym`].
unsafe fn run_typed<T: Scalar>(blas: &dyn HostBlas, op: &SymTile) -> Result<()> {
    op.check()?;
    let (m, n, k) = (op.m, op.n, op.k);
    if m == 0 || n == 0 {
        return Ok(());
    }
    let dt = op.dtype();
    let alpha_zero = op.alpha.is_zero();
    let at = |t: &RawTile, i: usize, j: usize| (t.addr as *mut T).wrapping_add(i + j * t.ld);
    match op.op {
        SymOp::Rank {
            uplo,
            trans,
            two,
            herm,
        } => {
            // tmp = alpha op(A) op(B)^T [+ alpha' op(B) op(A)^T], every entry of the square.
            let mut tmp = vec![T::default(); n * n];
            if !alpha_zero && k > 0 {
                let tconj = op.op.tconj().for_dtype(dt);
                let (ta, tb) = if trans == Trans::N {
                    (Trans::N, tconj)
                } else {
                    (trans.for_dtype(dt), Trans::N)
                };
                let c = temp_tile(&mut tmp, n, n, &op.c);
                let first = GemmTile {
                    transa: ta,
                    transb: tb,
                    m: n,
                    n,
                    k,
                    alpha: op.alpha,
                    a: op.a,
                    b: if two { op.b } else { op.a },
                    beta: ScalarValue::zero(dt),
                    c,
                };
                // SAFETY: A and B are the caller's tiles; `c` is the temporary above.
                unsafe { run_gemm(blas, &first) }?;
                if two {
                    let alpha2 = if herm {
                        ScalarValue::of_c64(dt, op.alpha.as_c64().conj())
                    } else {
                        op.alpha
                    };
                    let second = GemmTile {
                        alpha: alpha2,
                        a: op.b,
                        b: op.a,
                        beta: ScalarValue::one(dt),
                        ..first
                    };
                    // SAFETY: as above.
                    unsafe { run_gemm(blas, &second) }?;
                }
            }
            let beta = op.beta.as_c64();
            let beta_zero = op.beta.is_zero();
            for j in 0..n {
                for i in 0..n {
                    if !uplo.contains(i, j) {
                        continue;
                    }
                    let p = at(&op.c, i, j);
                    let mut v = tmp[i + j * n].to_c64();
                    if !beta_zero {
                        // SAFETY: (i, j) lies inside C (checked shape), valid host memory.
                        let old = unsafe { p.read() }.to_c64();
                        let old = if herm && i == j {
                            c64::new(old.re, 0.0)
                        } else {
                            old
                        };
                        v += beta * old;
                    }
                    if herm && i == j {
                        v = c64::new(v.re, 0.0);
                    }
                    // SAFETY: as above; C is writable (caller contract).
                    unsafe { p.write(T::from_c64(v)) };
                }
            }
        }
        SymOp::Multiply { side, uplo, herm } => {
            if alpha_zero {
                let beta = op.beta.as_c64();
                for j in 0..n {
                    for i in 0..m {
                        let p = at(&op.c, i, j);
                        let v = if op.beta.is_zero() {
                            T::default()
                        } else {
                            // SAFETY: (i, j) lies inside C, valid and writable host memory.
                            T::from_c64(beta * unsafe { p.read() }.to_c64())
                        };
                        // SAFETY: as above.
                        unsafe { p.write(v) };
                    }
                }
                return Ok(());
            }
            // The full k x k matrix of the stored triangle.
            let mut full = vec![T::default(); k * k];
            for j in 0..k {
                for i in 0..k {
                    let (si, sj, conj) = if uplo.contains(i, j) {
                        (i, j, false)
                    } else {
                        (j, i, herm)
                    };
                    // SAFETY: (si, sj) lies inside A (checked shape), valid host memory.
                    let x = unsafe { at(&op.a, si, sj).read() };
                    full[i + j * k] = if herm && i == j {
                        T::from_c64(c64::new(x.to_c64().re, 0.0))
                    } else if conj {
                        x.conj()
                    } else {
                        x
                    };
                }
            }
            let a = temp_tile(&mut full, k, k, &op.a);
            let (a, b) = match side {
                Side::Left => (a, op.b),
                Side::Right => (op.b, a),
            };
            let g = GemmTile {
                transa: Trans::N,
                transb: Trans::N,
                m,
                n,
                k,
                alpha: op.alpha,
                a,
                b,
                beta: op.beta,
                c: op.c,
            };
            // SAFETY: the caller's tiles and the temporary above.
            unsafe { run_gemm(blas, &g) }?;
        }
    }
    Ok(())
}
