//! The registration cache on a GPU: a second identical call pays no pinning, and a buffer that
//! is freed and replaced by a new one at the same address is never served from the stale
//! registration (the result would silently be wrong).

use hetblas_core::reference::check_sampled;
use hetblas_core::{DevicePool, GemmOptions, MatMut, MatRef, Trans};
use hetblas_cuda::{CudaBackend, PinCache};
use std::sync::Arc;

/// The pool of the CUDA GPUs, and the registration cache they share.
fn pool() -> Option<(Arc<DevicePool>, Arc<PinCache>)> {
    let d = hetblas_conformance::discovered_or_skip("cuda", CudaBackend.discover_gpus())?;
    let cache = d.devices[0].pin_cache().clone();
    let d = d.into_discovery();
    Some((
        Arc::new(DevicePool::new(d.devices, d.links).unwrap()),
        cache,
    ))
}

fn data(seed: u64, n: usize) -> Vec<f64> {
    hetblas_conformance::data::random_vec(&mut hetblas_conformance::data::rng(seed), n)
}

/// `c = A B + beta c0` (n x n) on GPU 0 in 512 tiles, checked at 512 sampled entries.
#[allow(clippy::too_many_arguments)] // the test problem and its placement, passed once
fn gemm_checked(
    pool: &DevicePool,
    n: usize,
    a: &[f64],
    b: &[f64],
    beta: f64,
    c0: &[f64],
    c: &mut [f64],
    seed: u64,
) -> Result<(usize, f64), String> {
    c.copy_from_slice(c0);
    let opts = GemmOptions::default().devices([0]).tile(512);
    pool.gemm_with(
        Trans::N,
        Trans::N,
        1.0,
        MatRef::packed(a, n, n).unwrap(),
        MatRef::packed(b, n, n).unwrap(),
        beta,
        MatMut::packed(c, n, n).unwrap(),
        &opts,
    )
    .map_err(|e| e.to_string())?;
    check_sampled(
        Trans::N,
        Trans::N,
        1.0,
        MatRef::packed(a, n, n).unwrap(),
        MatRef::packed(b, n, n).unwrap(),
        beta,
        MatRef::packed(c0, n, n).unwrap(),
        MatRef::packed(c, n, n).unwrap(),
        512,
        seed,
    )
}

#[test]
fn freed_and_reallocated_buffers_are_not_served_stale() {
    let Some((pool, cache)) = pool() else { return };
    // 2048^2 f64 = 32 MiB per matrix: mmapped by malloc, so freeing unmaps and the next
    // allocation of the same size tends to land at the same address.
    let n = 2048;
    let mut addrs = Vec::new();
    for round in 0..4u64 {
        let a = data(10 * round + 1, n * n);
        let b = data(10 * round + 2, n * n);
        let c0 = data(10 * round + 3, n * n);
        let mut c = c0.clone();
        addrs.push((a.as_ptr() as usize, c.as_ptr() as usize));
        for _ in 0..2 {
            gemm_checked(&pool, n, &a, &b, 0.5, &c0, &mut c, round)
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

/// Host buffers registered and then freed without `release_host` (what the comparison harness
/// did between problems) leave their ranges in the driver's address map; on H200 a later
/// `cuMemAlloc` failed with `CUDA_ERROR_ALREADY_MAPPED` after a run of shrinking problems. The
/// device drops registrations of unmapped memory and retries: every allocation here must
/// succeed, and a GEMM afterwards on fresh buffers must be right.
#[test]
fn device_allocations_survive_freed_registered_buffers() {
    let Some((pool, cache)) = pool() else { return };
    let dev = pool.devices()[0].clone();
    // Shrinking problems, as the harness ran them: 8192^2 f64 (512 MiB) down to 1024^2.
    let sides = [
        8192usize, 8192, 7168, 6144, 6144, 5120, 4096, 4096, 3072, 2048, 2048, 1024,
    ];
    for (round, &n) in sides.iter().enumerate() {
        let host: Vec<Vec<f64>> = (0..3).map(|_| vec![1.0f64; n * n]).collect();
        for h in &host {
            dev.prepare_host(
                h.as_ptr() as u64,
                std::mem::size_of_val(h.as_slice()),
                hetblas_core::HostAccess::Read,
            )
            .unwrap();
        }
        let mats: Vec<_> = (0..3)
            .map(|_| pool.alloc_matrix::<f64>(0, n, n))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("round {round} (n = {n}): {e}; cache {:?}", cache.stats()));
        drop(mats);
        // Freed while still registered.
        drop(host);
    }
    eprintln!("after freeing registered buffers: {:?}", cache.stats());
    let n = 1536;
    let (a, b, c0) = (data(91, n * n), data(92, n * n), data(93, n * n));
    let mut c = vec![0.0; n * n];
    gemm_checked(&pool, n, &a, &b, -1.5, &c0, &mut c, 7).unwrap();
}

/// A fresh output array (what NumPy allocates for every `a @ b`) is faulted in on several
/// threads before it is page-locked, and the beta = 0 result written into it is right.
/// A fresh output (no page of it backed) is staged, never page-locked by the call that first
/// writes it: page-locking faults every page in on one thread, which cost more than the whole
/// product at 16384 on an H200 host. Its write-backs go through the staging ring and the copy-out
/// stream, every tile lands (checked), and once written it is registered by the next call.
#[test]
fn a_fresh_output_is_staged_then_registered_once_written() {
    let Some((pool, cache)) = pool() else { return };
    // 4096^2 f64 = 128 MiB: above the fresh-output threshold; zeroed by calloc through a fresh
    // mapping, so not one page of C is backed before the call. Tiles of 1024: 16 write-backs,
    // more than the staging ring's slots.
    let n = 4096;
    assert!(n * n * 8 >= hetblas_gpu::registration::prefault::MIN_BYTES);
    let (a, b) = (data(101, n * n), data(102, n * n));
    let mut c = vec![0.0f64; n * n];
    let zeros = vec![0.0f64; n * n];
    for (call, seed) in [(0, 11u64), (1, 12)] {
        let before = cache.stats();
        let opts = GemmOptions::default().devices([0]).tile(1024);
        pool.gemm_with(
            Trans::N,
            Trans::N,
            1.0,
            MatRef::packed(&a, n, n).unwrap(),
            MatRef::packed(&b, n, n).unwrap(),
            0.0,
            MatMut::packed(&mut c, n, n).unwrap(),
            &opts,
        )
        .unwrap();
        let st = cache.stats();
        eprintln!("call {call}: registration cache {st:?}");
        let c_registered = cache.is_pinned(c.as_ptr() as u64, n * n * 8);
        // First call: C staged (A and B registered); second: C registered.
        assert_eq!(c_registered, call == 1, "call {call}: {st:?}");
        if call == 1 {
            assert_eq!(st.registrations, before.registrations + 1, "{st:?}");
        }
        check_sampled(
            Trans::N,
            Trans::N,
            1.0,
            MatRef::packed(&a, n, n).unwrap(),
            MatRef::packed(&b, n, n).unwrap(),
            0.0,
            MatRef::packed(&zeros, n, n).unwrap(),
            MatRef::packed(&c, n, n).unwrap(),
            4096,
            seed,
        )
        .unwrap();
    }
}

/// A buffer made ready whole (`DevicePool::prepare_host`, what the distributed GEMM does with
/// its local arrays and shared windows) serves every call on views inside it: the calls
/// register nothing more, and release gives the whole range back.
#[test]
fn a_buffer_prepared_whole_serves_every_view() {
    let Some((pool, cache)) = pool() else { return };
    // A as four column panels of n x n, each multiplied by its own call.
    let (n, panels) = (1024, 4);
    let a = data(121, n * n * panels);
    let b = data(122, n * n);
    let c0 = data(123, n * n);
    let mut c = c0.clone();
    let before = cache.stats();
    pool.prepare_host(&a, hetblas_core::HostAccess::Read)
        .unwrap();
    pool.prepare_host(&b, hetblas_core::HostAccess::Read)
        .unwrap();
    pool.prepare_host(&c, hetblas_core::HostAccess::ReadWrite)
        .unwrap();
    let prepared = cache.stats();
    assert!(
        prepared.registrations >= before.registrations + 3
            && prepared.bytes_registered - before.bytes_registered
                >= (std::mem::size_of_val(a.as_slice()) + 2 * n * n * 8) as u64,
        "{prepared:?}"
    );
    assert!(cache.is_pinned(a.as_ptr() as u64, std::mem::size_of_val(a.as_slice())));
    let opts = GemmOptions::default().devices([0]).tile(512);
    for p in 0..panels {
        let panel = &a[p * n * n..(p + 1) * n * n];
        c.copy_from_slice(&c0);
        pool.gemm_with(
            Trans::N,
            Trans::N,
            1.0,
            MatRef::packed(panel, n, n).unwrap(),
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
            MatRef::packed(panel, n, n).unwrap(),
            MatRef::packed(&b, n, n).unwrap(),
            0.5,
            MatRef::packed(&c0, n, n).unwrap(),
            MatRef::packed(&c, n, n).unwrap(),
            512,
            p as u64,
        )
        .unwrap_or_else(|e| panic!("panel {p}: {e}"));
    }
    let after = cache.stats();
    assert_eq!(
        after.registrations, prepared.registrations,
        "views of prepared buffers were registered again: {after:?}"
    );
    assert!(after.hits >= prepared.hits + panels as u64, "{after:?}");
    for buf in [&a[..], &b[..], &c[..]] {
        pool.release_host(buf).unwrap();
        assert!(!cache.is_pinned(buf.as_ptr() as u64, 8));
    }
}
