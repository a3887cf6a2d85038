//! No argument set panics: every call returns Ok or a typed error, and argument errors carry
//! the parameter number reference BLAS reports (computed here independently, as xerbla would).

mod common;

use hetblas_core::{Error, GemmOptions};
use proptest::prelude::*;

/// The reference BLAS INFO for DGEMM arguments, written out from the Fortran source's checks.
#[allow(clippy::too_many_arguments)] // a GEMM-shaped argument list (BLAS order)
fn xerbla_info(ta: u8, tb: u8, m: i64, n: i64, k: i64, lda: i64, ldb: i64, ldc: i64) -> u32 {
    let valid = |c: u8| matches!(c, b'N' | b'n' | b'T' | b't' | b'C' | b'c');
    let nota = matches!(ta, b'N' | b'n');
    let notb = matches!(tb, b'N' | b'n');
    let nrowa = if nota { m } else { k };
    let nrowb = if notb { k } else { n };
    if !valid(ta) {
        1
    } else if !valid(tb) {
        2
    } else if m < 0 {
        3
    } else if n < 0 {
        4
    } else if k < 0 {
        5
    } else if lda < nrowa.max(1) {
        8
    } else if ldb < nrowb.max(1) {
        10
    } else if ldc < m.max(1) {
        13
    } else {
        0
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_arguments_never_panic(
        ta in prop::sample::select(b"NnTtCcXx \0".to_vec()),
        tb in prop::sample::select(b"NnTtCcQz".to_vec()),
        m in -3i64..12, n in -3i64..12, k in -3i64..12,
        lda in -2i64..14, ldb in -2i64..14, ldc in -2i64..14,
        alen in 0usize..160, blen in 0usize..160, clen in 0usize..160,
        ndev in 0usize..=3,
    ) {
        let pool = common::pool();
        let devices = if ndev == 0 { vec![0] } else { (1..=ndev).collect() };
        let opts = GemmOptions::default().tile(3).devices(devices);
        let a = vec![0.5f64; alen];
        let b = vec![0.25f64; blen];
        let mut c = vec![1.0f64; clen];
        let r = pool.gemm_blas(ta, tb, m, n, k, 1.0, &a, lda, &b, ldb, 0.0, &mut c, ldc, &opts);
        let info = xerbla_info(ta, tb, m, n, k, lda, ldb, ldc);
        match r {
            Ok(_) => prop_assert_eq!(info, 0),
            Err(Error::InvalidArgument { param, .. }) => prop_assert_eq!(param, info),
            // Valid BLAS arguments over slices too short for them: an input error.
            Err(Error::InvalidInput(_)) => prop_assert_eq!(info, 0),
            Err(other) => prop_assert!(false, "unexpected error {other:?}"),
        }
    }
}

/// Options are validated on quick returns too: m = 0 with a device that does not exist was
/// accepted.
#[test]
fn bad_options_are_refused_on_quick_returns() {
    let pool = common::pool();
    let (a, b) = (vec![1.0f64; 4], vec![1.0f64; 4]);
    for (m, n, k) in [(0, 2, 2), (2, 0, 2), (2, 2, 0)] {
        let mut c = vec![1.0f64; 4];
        let r = pool.gemm_blas(
            b'N',
            b'N',
            m,
            n,
            k,
            1.0,
            &a,
            2,
            &b,
            2,
            0.5,
            &mut c,
            2,
            &GemmOptions::default().devices([99]),
        );
        assert!(
            matches!(&r, Err(Error::InvalidInput(msg)) if msg.contains("99")),
            "{m}x{n}x{k}: {r:?}"
        );
        assert_eq!(c, vec![1.0; 4], "C written by a refused call");
    }
}

/// A matrix on the CPU device (host memory) uploads and downloads: it was refused as "copy
/// within one space".
#[test]
fn a_matrix_on_the_cpu_device_round_trips() {
    use hetblas_core::{MatMut, MatRef};
    let pool = common::pool();
    let (r, c, ld) = (5, 3, 7);
    let host: Vec<f64> = (0..ld * c).map(|i| i as f64 * 0.5 - 3.0).collect();
    let m = pool
        .upload(0, MatRef::new(&host, r, c, ld).unwrap())
        .expect("upload to cpu:0");
    let mut back = vec![f64::NAN; r * c];
    pool.download(&m, MatMut::packed(&mut back, r, c).unwrap())
        .expect("download from cpu:0");
    for j in 0..c {
        for i in 0..r {
            assert_eq!(back[i + j * r], host[i + j * ld]);
        }
    }
}

/// A leading dimension of 2^31 or more on the CPU device: refused ("exceeds the 32-bit CBLAS
/// interface") before, which failed the whole call when the CPU was the device chosen. One
/// column, so the operands are a few elements whatever their leading dimension.
#[test]
fn the_cpu_device_takes_leading_dimensions_beyond_32_bits() {
    use hetblas_core::{MatMut, MatRef, Trans};
    let pool = common::pool();
    let big = (1usize << 31) + 7;
    let (m, k) = (5, 1);
    let a: Vec<f64> = (0..m).map(|i| i as f64 * 0.25 - 0.5).collect();
    let b = [1.5f64];
    let c0: Vec<f64> = (0..m).map(|i| 1.0 - i as f64 * 0.125).collect();
    let mut c = c0.clone();
    let opts = GemmOptions::default().devices(vec![0]);
    pool.gemm_with(
        Trans::N,
        Trans::N,
        2.0,
        MatRef::new(&a, m, k, big).unwrap(),
        MatRef::new(&b, 1, 1, big).unwrap(),
        0.5,
        MatMut::new(&mut c, m, 1, big).unwrap(),
        &opts,
    )
    .expect("lda, ldb, ldc >= 2^31 on cpu:0");
    for i in 0..m {
        // 2 * a * 1.5 + 0.5 * c0: exact in binary.
        assert_eq!(c[i], 3.0 * a[i] + 0.5 * c0[i], "C({i}, 0)");
    }
}

#[test]
fn every_routine_refuses_a_bad_device_list() {
    use hetblas_core::problem::triangular::{Diag, TriOptions, TriRoutine};
    use hetblas_core::{FactorOptions, MatMut, MatRef, Side, Trans, TriCallOptions, Uplo};
    let pool = common::pool();
    let n = 8;
    let spd: Vec<f64> = (0..n * n)
        .map(|x| if x % (n + 1) == 0 { n as f64 } else { 0.5 })
        .collect();
    let tri: Vec<f64> = (0..n * n)
        .map(|x| if x % (n + 1) == 0 { 1.0 } else { 0.0 })
        .collect();
    let refused = |what: &str, r: Result<(), Error>, needle: &str| {
        assert!(
            matches!(&r, Err(Error::InvalidInput(msg)) if msg.contains(needle)),
            "{what}: {r:?}"
        );
    };
    for (list, needle) in [(vec![], "empty"), (vec![99], "99"), (vec![0, 0], "twice")] {
        let mut a = spd.clone();
        let r = pool.potrf(
            Uplo::Lower,
            MatMut::packed(&mut a, n, n).unwrap(),
            &FactorOptions::default().devices(list.clone()),
        );
        refused("potrf", r.map(|_| ()), needle);
        assert_eq!(a, spd, "A written by a refused call");
        let mut b = spd.clone();
        let r = pool.tri_with(
            TriRoutine::Trsm,
            TriOptions {
                side: Side::Left,
                uplo: Uplo::Lower,
                transa: Trans::N,
                diag: Diag::NonUnit,
            },
            1.0,
            MatRef::packed(&tri, n, n).unwrap(),
            MatMut::packed(&mut b, n, n).unwrap(),
            &TriCallOptions::default().devices(list.clone()),
        );
        refused("trsm", r.map(|_| ()), needle);
        assert_eq!(b, spd, "B written by a refused call");
    }
    let mut a = spd.clone();
    let r = pool.potrf(
        Uplo::Lower,
        MatMut::packed(&mut a, n, n).unwrap(),
        &FactorOptions::default().nb(0),
    );
    refused("potrf nb 0", r.map(|_| ()), "block width 0");
}
