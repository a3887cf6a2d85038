//! Property tests against the f64-accumulating reference GEMM: random shapes (1, primes,
//! non-multiples of the tile), every transpose pair, alpha/beta in {0, 1, random}, ld > rows, on
//! the CPU device and on 1..4 emulated devices with tiles smaller than the matrix, f32 and f64.

mod common;

use hetblas_conformance::{run_case, CaseSpec};
use hetblas_core::{Scalar, Trans};
use proptest::prelude::*;

fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![
        Just(1usize),
        prop::sample::select(vec![2usize, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37]),
        1usize..48,
    ]
}

fn trans() -> impl Strategy<Value = Trans> {
    prop::sample::select(vec![Trans::N, Trans::T, Trans::C])
}

fn scalar() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), Just(1.0), -2.0f64..2.0]
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
        (0usize..4, 0usize..4, 0usize..4),
        2usize..12,
        0usize..=4,
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(
            |((m, n, k), (ta, tb), (alpha, beta), pad, tile, ndev, seed, nan)| {
                let mut spec = CaseSpec::new(ta, tb, m, n, k);
                spec.alpha = alpha;
                spec.beta = beta;
                spec.pad = pad;
                // Tiles smaller than the matrix (unless the matrix is tiny).
                spec.tile = Some(tile.min(m.max(n).max(k).max(2) - 1).max(1));
                spec.seed = seed;
                spec.nan_c = nan && beta == 0.0;
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
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn dgemm_matches_reference(c in case()) {
        run::<f64>(&c)?;
    }

    #[test]
    fn sgemm_matches_reference(c in case()) {
        run::<f32>(&c)?;
    }
}
