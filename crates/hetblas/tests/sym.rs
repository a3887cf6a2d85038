//! The Runtime's symmetric routines (syrk, herk, syr2k, her2k, symm, hemm) on the CPU and two
//! emulated devices, host and device operands, checked against the f64-accumulated reference
//! (the unreferenced triangle bit for bit).

use hetblas::{c64, MatMut, MatRef, Runtime, Side, SymProblem, Trans, Uplo};
use hetblas_core::sym_reference::check_sym;
use hetblas_core::DType;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

fn runtime() -> Runtime {
    Runtime::builder()
        .emulated(2)
        .without_profile()
        .build()
        .expect("runtime")
}

fn real(r: &mut StdRng, len: usize) -> Vec<f64> {
    (0..len).map(|_| r.random_range(-1.0..1.0)).collect()
}

fn complex(r: &mut StdRng, len: usize) -> Vec<c64> {
    (0..len)
        .map(|_| c64::new(r.random_range(-1.0..1.0), r.random_range(-1.0..1.0)))
        .collect()
}

#[test]
fn every_routine_through_the_runtime() {
    let rt = runtime();
    let mut r = StdRng::seed_from_u64(16);
    let (n, k) = (45, 20);
    // SYRK, op(A) = A^T (A k x n), lower.
    let a = real(&mut r, k * n);
    let c0 = real(&mut r, n * n);
    let mut c = c0.clone();
    let av = MatRef::new(&a, k, n, k).unwrap();
    rt.syrk(
        Uplo::Lower,
        Trans::T,
        0.5,
        av,
        2.0,
        MatMut::new(&mut c, n, n, n).unwrap(),
    )
    .unwrap();
    let p = SymProblem::rank(Uplo::Lower, Trans::T, false, false, n, k, DType::F64);
    let (c0v, cv) = (
        MatRef::new(&c0, n, n, n).unwrap(),
        MatRef::new(&c, n, n, n).unwrap(),
    );
    check_sym(
        &p,
        c64::new(0.5, 0.0),
        av,
        None,
        c64::new(2.0, 0.0),
        c0v,
        cv,
        2.0,
    )
    .unwrap();

    // HERK, op(A) = A (n x k), upper: the diagonal comes out real.
    let a = complex(&mut r, n * k);
    let c0 = complex(&mut r, n * n);
    let mut c = c0.clone();
    let av = MatRef::new(&a, n, k, n).unwrap();
    rt.herk(
        Uplo::Upper,
        Trans::N,
        -1.5,
        av,
        0.25,
        MatMut::new(&mut c, n, n, n).unwrap(),
    )
    .unwrap();
    let p = SymProblem::rank(Uplo::Upper, Trans::N, false, true, n, k, DType::C64);
    let (c0v, cv) = (
        MatRef::new(&c0, n, n, n).unwrap(),
        MatRef::new(&c, n, n, n).unwrap(),
    );
    check_sym(
        &p,
        c64::new(-1.5, 0.0),
        av,
        None,
        c64::new(0.25, 0.0),
        c0v,
        cv,
        2.0,
    )
    .unwrap();

    // SYR2K and HER2K.
    let (a, b) = (real(&mut r, n * k), real(&mut r, n * k));
    let c0 = real(&mut r, n * n);
    let mut c = c0.clone();
    let (av, bv) = (
        MatRef::new(&a, n, k, n).unwrap(),
        MatRef::new(&b, n, k, n).unwrap(),
    );
    rt.syr2k(
        Uplo::Upper,
        Trans::N,
        1.25,
        av,
        bv,
        -1.0,
        MatMut::new(&mut c, n, n, n).unwrap(),
    )
    .unwrap();
    let p = SymProblem::rank(Uplo::Upper, Trans::N, true, false, n, k, DType::F64);
    let (c0v, cv) = (
        MatRef::new(&c0, n, n, n).unwrap(),
        MatRef::new(&c, n, n, n).unwrap(),
    );
    check_sym(
        &p,
        c64::new(1.25, 0.0),
        av,
        Some(bv),
        c64::new(-1.0, 0.0),
        c0v,
        cv,
        2.0,
    )
    .unwrap();

    let (a, b) = (complex(&mut r, k * n), complex(&mut r, k * n));
    let c0 = complex(&mut r, n * n);
    let mut c = c0.clone();
    let (av, bv) = (
        MatRef::new(&a, k, n, k).unwrap(),
        MatRef::new(&b, k, n, k).unwrap(),
    );
    let alpha = c64::new(0.5, -2.0);
    rt.her2k(
        Uplo::Lower,
        Trans::C,
        alpha,
        av,
        bv,
        0.5,
        MatMut::new(&mut c, n, n, n).unwrap(),
    )
    .unwrap();
    let p = SymProblem::rank(Uplo::Lower, Trans::C, true, true, n, k, DType::C64);
    let (c0v, cv) = (
        MatRef::new(&c0, n, n, n).unwrap(),
        MatRef::new(&c, n, n, n).unwrap(),
    );
    check_sym(&p, alpha, av, Some(bv), c64::new(0.5, 0.0), c0v, cv, 2.0).unwrap();

    // SYMM (right) and HEMM (left).
    let (m, nn) = (31, 40);
    let a = real(&mut r, nn * nn);
    let (b, c0) = (real(&mut r, m * nn), real(&mut r, m * nn));
    let mut c = c0.clone();
    let (av, bv) = (
        MatRef::new(&a, nn, nn, nn).unwrap(),
        MatRef::new(&b, m, nn, m).unwrap(),
    );
    rt.symm(
        Side::Right,
        Uplo::Lower,
        0.75,
        av,
        bv,
        0.0,
        MatMut::new(&mut c, m, nn, m).unwrap(),
    )
    .unwrap();
    let p = SymProblem::multiply(Side::Right, Uplo::Lower, false, m, nn, DType::F64);
    let (c0v, cv) = (
        MatRef::new(&c0, m, nn, m).unwrap(),
        MatRef::new(&c, m, nn, m).unwrap(),
    );
    check_sym(
        &p,
        c64::new(0.75, 0.0),
        av,
        Some(bv),
        c64::new(0.0, 0.0),
        c0v,
        cv,
        2.0,
    )
    .unwrap();

    let a = complex(&mut r, m * m);
    let (b, c0) = (complex(&mut r, m * nn), complex(&mut r, m * nn));
    let mut c = c0.clone();
    let (av, bv) = (
        MatRef::new(&a, m, m, m).unwrap(),
        MatRef::new(&b, m, nn, m).unwrap(),
    );
    let (alpha, beta) = (c64::new(1.0, 1.0), c64::new(-0.5, 0.5));
    rt.hemm(
        Side::Left,
        Uplo::Upper,
        alpha,
        av,
        bv,
        beta,
        MatMut::new(&mut c, m, nn, m).unwrap(),
    )
    .unwrap();
    let p = SymProblem::multiply(Side::Left, Uplo::Upper, true, m, nn, DType::C64);
    let (c0v, cv) = (
        MatRef::new(&c0, m, nn, m).unwrap(),
        MatRef::new(&c, m, nn, m).unwrap(),
    );
    check_sym(&p, alpha, av, Some(bv), beta, c0v, cv, 2.0).unwrap();
}

/// Operands in an emulated device's memory: C comes back with its other triangle as it was.
#[test]
fn device_operands() {
    let rt = runtime();
    let emu = rt
        .devices()
        .iter()
        .position(|d| d.info().backend == "emulated")
        .expect("an emulated device");
    let mut r = StdRng::seed_from_u64(17);
    let (n, k) = (38, 12);
    let a = real(&mut r, n * k);
    let c0 = vec![f64::NAN; n * n];
    let av = MatRef::new(&a, n, k, n).unwrap();
    let da = rt.upload(emu, av).unwrap();
    let mut dc = rt.upload(emu, MatRef::new(&c0, n, n, n).unwrap()).unwrap();
    rt.syrk(Uplo::Upper, Trans::N, 1.0, &da, 0.0, &mut dc)
        .unwrap();
    let mut c = vec![0.0; n * n];
    rt.download(&dc, MatMut::new(&mut c, n, n, n).unwrap())
        .unwrap();
    let p = SymProblem::rank(Uplo::Upper, Trans::N, false, false, n, k, DType::F64);
    let (c0v, cv) = (
        MatRef::new(&c0, n, n, n).unwrap(),
        MatRef::new(&c, n, n, n).unwrap(),
    );
    check_sym(
        &p,
        c64::new(1.0, 0.0),
        av,
        None,
        c64::new(0.0, 0.0),
        c0v,
        cv,
        2.0,
    )
    .unwrap();
}
