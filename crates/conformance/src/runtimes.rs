//! Two runtimes of one backend in one process (a library and the program each building one,
//! or two threads each building their own): their page-locking of host memory meets where
//! operands of the two share pages.

use crate::check::{check_against_reference, Tolerance};
use crate::data::{random_vec, rng};
use crate::Target;
use hetblas_core::{GemmOptions, MatIn, MatMut, MatOut, MatRef, Trans};

/// The order of an operand: 100 x 100 f64 is 80,000 bytes, not a whole number of 4 KiB
/// pages, so operands laid end to end share their edge pages.
const N: usize = 100;

/// Two pools of two runtimes multiply operands laid end to end in one allocation (A1 A2 B1
/// B2 C1 C2), so that each operand shares its edge pages with the other pool's: one pool after
/// the other, then both at once, twice. Every result matches the reference. (A runtime that
/// took the other's registration for its own copied across that registration's edge, which
/// CUDA refuses with `CUDA_ERROR_INVALID_VALUE`.)
pub fn pools_sharing_pages(first: &Target, second: &Target) -> Result<(), String> {
    let len = N * N;
    let mut all: Vec<f64> = random_vec(&mut rng(900), 6 * len);
    let c0: Vec<f64> = all[4 * len..].to_vec();
    let (inputs, outputs) = all.split_at_mut(4 * len);
    let operand = |i: usize| matrix(&inputs[i * len..(i + 1) * len]);
    let (a1, a2, b1, b2) = (operand(0)?, operand(1)?, operand(2)?, operand(3)?);
    for round in 0..3 {
        outputs.copy_from_slice(&c0);
        let (c1, c2) = outputs.split_at_mut(len);
        if round == 0 {
            multiply(first, a1, b1, c1)?;
            multiply(second, a2, b2, c2)?;
        } else {
            std::thread::scope(|s| {
                let other = s.spawn(|| multiply(second, a2, b2, c2));
                let mine = multiply(first, a1, b1, c1);
                mine.and(
                    other
                        .join()
                        .map_err(|_| "the second pool's thread panicked")?,
                )
            })?;
        }
        let (c1, c2) = outputs.split_at(len);
        for (which, a, b, c, c0) in [(1, a1, b1, c1, &c0[..len]), (2, a2, b2, c2, &c0[len..])] {
            check_against_reference(
                Trans::N,
                Trans::N,
                1.0,
                a,
                b,
                0.5,
                matrix(c0)?,
                matrix(c)?,
                Tolerance::default(),
            )
            .map_err(|e| format!("round {round}, pool {which}: {e}"))?;
        }
    }
    Ok(())
}

fn matrix(s: &[f64]) -> Result<MatRef<'_, f64>, String> {
    MatRef::new(s, N, N, N).map_err(|e| e.to_string())
}

/// `c = a b + c / 2` on the target's devices, in small tiles (several copies per operand).
fn multiply(
    t: &Target,
    a: MatRef<'_, f64>,
    b: MatRef<'_, f64>,
    c: &mut [f64],
) -> Result<(), String> {
    let opts = GemmOptions::default()
        .devices(t.compute.iter().copied())
        .tile(Some(t.small_tile));
    let c = MatMut::new(c, N, N, N).map_err(|e| e.to_string())?;
    t.pool
        .gemm_with(
            Trans::N,
            Trans::N,
            1.0,
            MatIn::Host(a),
            MatIn::Host(b),
            0.5,
            MatOut::Host(c),
            &opts,
        )
        .map(|_| ())
        .map_err(|e| format!("[{}] gemm failed: {e}", t.name))
}
