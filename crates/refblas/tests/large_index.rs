//! Operands that span more than 2^31 elements: every index is computed in 64 bits. The arrays
//! are allocated zeroed (the allocator maps such sizes lazily), and only the few entries the
//! calls touch become resident.

use hetblas_refblas as rb;

/// Beyond i32::MAX.
const HUGE: usize = (1 << 31) + 5;

#[test]
fn gemv_with_a_leading_dimension_beyond_i32() {
    let (m, n, lda) = (1usize, 2usize, HUGE);
    let mut a = vec![0.0f32; (n - 1) * lda + m];
    a[0] = 2.0;
    a[lda] = 3.0;
    let x = [5.0f32, 7.0];
    let mut y = [1.0f32];
    // SAFETY: A is m x n with leading dimension lda; x holds n entries, y m.
    unsafe {
        rb::gemv(
            b'N',
            m as i64,
            n as i64,
            1.0,
            a.as_ptr(),
            lda as i64,
            x.as_ptr(),
            1,
            1.0,
            y.as_mut_ptr(),
            1,
        )
    };
    assert_eq!(y[0], 1.0 + 2.0 * 5.0 + 3.0 * 7.0);
}

#[test]
fn axpy_with_an_increment_beyond_i32() {
    let mut x = vec![0.0f32; HUGE + 1];
    x[0] = 1.0;
    x[HUGE] = 2.0;
    let mut y = [10.0f32, 20.0];
    // SAFETY: x holds 2 entries at increment HUGE, y 2 at increment 1.
    unsafe { rb::axpy(2, 3.0, x.as_ptr(), HUGE as i64, y.as_mut_ptr(), 1) };
    assert_eq!(y, [13.0, 26.0]);
    // A negative increment starts from the end.
    let mut y = [10.0f32, 20.0];
    // SAFETY: as above.
    unsafe { rb::axpy(2, 3.0, x.as_ptr(), -(HUGE as i64), y.as_mut_ptr(), 1) };
    assert_eq!(y, [16.0, 23.0]);
}

#[test]
fn gemm_with_b_beyond_i32_both_paths() {
    // m = 1 runs the plain loops; m = 40,000 (m*n*k above the threshold) the blocked kernels.
    for m in [1usize, 40_000] {
        let (n, k, ldb) = (2usize, 1usize, HUGE);
        let a: Vec<f32> = (0..m).map(|i| (i % 7) as f32).collect();
        let mut b = vec![0.0f32; ldb + 1];
        b[0] = 2.0;
        b[ldb] = -1.0;
        let mut c = vec![f32::NAN; m * n];
        // SAFETY: A is m x k (lda m), B k x n (ldb), C m x n (ldc m).
        unsafe {
            rb::gemm(
                b'N',
                b'N',
                m as i64,
                n as i64,
                k as i64,
                1.0,
                a.as_ptr(),
                m as i64,
                b.as_ptr(),
                ldb as i64,
                0.0,
                c.as_mut_ptr(),
                m as i64,
            )
        };
        for i in 0..m {
            assert_eq!((c[i], c[i + m]), (a[i] * 2.0, -a[i]), "m={m} row {i}");
        }
    }
}
