//! A device->host link whose stream fails while a staged write-back's copy-out still runs: the
//! queue's synchronisation reports the failure only once the copy-out is over, since the caller
//! may free or restore the destination as soon as it returns. A test binary of its own: it sets
//! the fake runtime's process-wide failure switches.

mod fake;

use fake::{FakeBackend, COPY_OUT_WAIT_MS, FAIL_STREAM_SYNC};
use hetblas_core::{DType, Device, Link, MemorySpace, RawTile};
use std::sync::atomic::Ordering;

fn tile(space: MemorySpace, addr: u64, rows: usize, cols: usize) -> RawTile {
    RawTile {
        space,
        addr,
        rows,
        cols,
        ld: rows,
        dtype: DType::F64,
    }
}

#[test]
fn a_failed_stream_still_waits_for_its_copy_outs() {
    let d = FakeBackend::new()
        .discover_gpus()
        .expect("the fake runtime is always there");
    let find = |name: &str| d.links.iter().find(|l| l.name() == name).unwrap().clone();
    let (h2d, d2h) = (find("host->fake0"), find("fake0->host"));
    let (rows, cols) = (64, 48);
    let src: Vec<f64> = (0..rows * cols).map(|i| i as f64 + 0.5).collect();
    let buf = d.devices[0].allocate(rows * cols * 8).unwrap();
    let on0 = tile(d.devices[0].space(), buf.addr(), rows, cols);
    h2d.copy(
        &tile(MemorySpace::HOST, src.as_ptr() as u64, rows, cols),
        &on0,
    )
    .unwrap();
    h2d.queue().synchronize().unwrap();

    // Unregistered host memory: the write-back is staged, and its copy-out waits 300 ms for its
    // DMA on the link's copy-out thread.
    let mut out = vec![f64::NAN; rows * cols];
    COPY_OUT_WAIT_MS.store(300, Ordering::SeqCst);
    d2h.copy(
        &on0,
        &tile(MemorySpace::HOST, out.as_mut_ptr() as u64, rows, cols),
    )
    .unwrap();
    FAIL_STREAM_SYNC.store(true, Ordering::SeqCst);
    let synced = d2h.queue().synchronize();
    FAIL_STREAM_SYNC.store(false, Ordering::SeqCst);
    COPY_OUT_WAIT_MS.store(0, Ordering::SeqCst);

    assert!(synced.is_err(), "the stream's failure is reported");
    // Read through a volatile load: the copy-out thread wrote it.
    let got: Vec<f64> = (0..out.len())
        // SAFETY: index within `out`, which lives here; no thread writes it any more (the
        // synchronisation above waited for the copy-out: what this test checks).
        .map(|i| unsafe { std::ptr::read_volatile(out.as_ptr().add(i)) })
        .collect();
    assert_eq!(got, src, "the copy-out was over when synchronize returned");
    drop(out);
    d2h.queue().synchronize().expect("the link works again");
}
