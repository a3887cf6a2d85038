//! DGEMM 2048^3 on the CPU: hetblas through the full pipeline (problem, plan cache, executor,
//! CPU device queue) against calling the same CBLAS library directly.

use criterion::{criterion_group, criterion_main, Criterion};
use hetblas_bench::random_data;
use hetblas_core::{Device, DevicePool, MatMut, MatRef, Trans};
use hetblas_cpu::CpuDevice;
use std::sync::Arc;

fn bench(c: &mut Criterion) {
    let n: usize = std::env::var("HETBLAS_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2048);
    let cpu = CpuDevice::new(&Default::default()).expect("cpu device");
    let blas = cpu.blas().clone();
    eprintln!("host BLAS: {}", blas.describe());
    let pool = DevicePool::new(vec![cpu as Arc<dyn Device>], vec![]).expect("pool");
    let a = random_data::<f64>(1, n * n);
    let b = random_data::<f64>(2, n * n);
    let mut cm = random_data::<f64>(3, n * n);
    let mut g = c.benchmark_group(format!("dgemm_{n}"));
    g.sample_size(10);
    g.measurement_time(std::time::Duration::from_secs(12));
    g.bench_function("hetblas_pipeline", |bch| {
        bch.iter(|| {
            pool.gemm(
                Trans::N,
                Trans::N,
                1.0,
                MatRef::packed(&a, n, n).unwrap(),
                MatRef::packed(&b, n, n).unwrap(),
                0.5,
                MatMut::packed(&mut cm, n, n).unwrap(),
            )
            .unwrap()
        })
    });
    g.bench_function("cblas_direct", |bch| {
        bch.iter(|| {
            // SAFETY: packed n x n matrices of the right length, C distinct from A and B.
            unsafe {
                blas.dgemm(
                    Trans::N,
                    Trans::N,
                    n,
                    n,
                    n,
                    1.0,
                    a.as_ptr(),
                    n,
                    b.as_ptr(),
                    n,
                    0.5,
                    cm.as_mut_ptr(),
                    n,
                )
                .unwrap()
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
