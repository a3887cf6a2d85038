//! Property tests of complex GEMM (c32, c64) against the complex<f64>-accumulating reference:
//! random shapes, every transpose pair (C conjugating), complex alpha/beta including 0 and 1,
//! ld > rows, NaN in C when beta = 0, on the CPU device and on 1..4 emulated devices with tiles
//! smaller than the matrix.

mod common;

use hetblas_conformance::{run_case, CaseSpec};
use hetblas_core::scalar::{c32, c64};
use hetblas_core::{Scalar, Trans};
use proptest::prelude::*;

fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![Just(1usize), 1usize..40]
}

fn trans() -> impl Strategy<Value = Trans> {
    prop::sample::select(vec![Trans::N, Trans::T, Trans::C])
}

/// (re, im): 0, 1, i, or random.
fn scalar() -> impl Strategy<Value = (f64, f64)> {
    prop_oneof![
        Just((0.0, 0.0)),
        Just((1.0, 0.0)),
        Just((0.0, 1.0)),
        (-2.0f64..2.0, -2.0f64..2.0)
    ]
}

#[derive(Debug, Clone)]
struct Case {
    spec: CaseSpec,
    ndev: usize,
}

fn case() -> impl Strategy<Value = Case> {
    (
        (dim(), dim(), dim()),
        (trans(), trans()),
        (scalar(), scalar()),
        (0usize..3, 0usize..3, 0usize..3),
        2usize..12,
        0usize..=4,
        any::<u64>(),
    )
        .prop_map(
            |((m, n, k), (ta, tb), (alpha, beta), pad, tile, ndev, seed)| {
                let mut spec = CaseSpec::new(ta, tb, m, n, k);
                (spec.alpha, spec.alpha_im) = alpha;
                (spec.beta, spec.beta_im) = beta;
                spec.pad = pad;
                spec.tile = Some(tile.min(m.max(n).max(k).max(2) - 1).max(1));
                spec.seed = seed;
                spec.nan_c = beta == (0.0, 0.0);
                Case { spec, ndev }
            },
        )
}

fn run<T: Scalar>(c: &Case) -> Result<(), TestCaseError> {
    let t = common::target(c.ndev, c.spec.tile.unwrap_or(8));
    run_case::<T>(&t, &c.spec)
        .map(|_| ())
        .map_err(TestCaseError::fail)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn zgemm_matches_reference(c in case()) {
        run::<c64>(&c)?;
    }

    #[test]
    fn cgemm_matches_reference(c in case()) {
        run::<c32>(&c)?;
    }
}
