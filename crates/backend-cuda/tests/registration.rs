//! The registration cache on a GPU: a second identical call pays no pinning, and a buffer that
//! is freed and replaced by a new one at the same address is never served from the stale
//! registration (the result would silently be wrong).

use hetblas_conformance::required;
use hetblas_core::reference::check_sampled;
use hetblas_core::{Backend, DevicePool, GemmOptions, MatMut, MatRef, Trans};
use hetblas_cuda::{CudaBackend, CudaDevice};
use std::sync::Arc;

fn pool() -> Option<Arc<DevicePool>> {
    match CudaBackend.discover() {
        Ok(d) => Some(Arc::new(DevicePool::new(d.devices, d.links).unwrap())),
        Err(e) => {
            assert!(!required("cuda"), "HETBLAS_REQUIRE=cuda: {e}");
            eprintln!("SKIPPED (cuda unavailable: {e})");
            None
        }
    }
}

fn data(seed: u64, n: usize) -> Vec<f64> {
    hetblas_conformance::data::random_vec(&mut hetblas_conformance::data::rng(seed), n)
}

#[test]
fn freed_and_reallocated_buffers_are_not_served_stale() {
    let Some(pool) = pool() else { return };
    let cache = pool.devices()[0]
        .as_any()
        .downcast_ref::<CudaDevice>()
        .unwrap()
        .pin_cache()
        .clone();
    // 2048^2 f64 = 32 MiB per matrix: mmapped by malloc, so freeing unmaps and the next
    // allocation of the same size tends to land at the same address.
    let n = 2048;
    let opts = GemmOptions {
        devices: Some(vec![0]),
        tile: Some(512),
        ..Default::default()
    };
    let mut addrs = Vec::new();
    for round in 0..4u64 {
        let a = data(10 * round + 1, n * n);
        let b = data(10 * round + 2, n * n);
        let c0 = data(10 * round + 3, n * n);
        let mut c = c0.clone();
        addrs.push((a.as_ptr() as usize, c.as_ptr() as usize));
        for _ in 0..2 {
            c.copy_from_slice(&c0);
            pool.gemm_with(
                Trans::N,
                Trans::N,
                1.0,
                MatRef::packed(&a, n, n).unwrap(),
                MatRef::packed(&b, n, n).unwrap(),
                0.5,
                MatMut::packed(&mut c, n, n).unwrap(),
                &opts,
            )
            .unwrap();
            check_sampled(
                Trans::N,
                Trans::N,
                1.0,
                MatRef::packed(&a, n, n).unwrap(),
                MatRef::packed(&b, n, n).unwrap(),
                0.5,
                MatRef::packed(&c0, n, n).unwrap(),
                MatRef::packed(&c, n, n).unwrap(),
                512,
                round,
            )
            .unwrap_or_else(|e| panic!("round {round}: {e}; cache {:?}", cache.stats()));
        }
    }
    let st = cache.stats();
    eprintln!("addresses per round: {addrs:x?}; cache: {st:?}");
    assert!(
        st.hits > 0,
        "repeated calls must hit the registration cache"
    );
    let reused = addrs
        .windows(2)
        .filter(|w| w[0].0 == w[1].0 || w[0].1 == w[1].1)
        .count();
    if reused > 0 {
        assert!(
            st.stale > 0,
            "addresses were reused but no stale registration was detected"
        );
    }
}
