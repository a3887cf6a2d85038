//! The registration cache and the host links on a HIP device (skipped without one unless
//! HETBLAS_REQUIRE=hip): registered and staged copies both ways carry the right data, the
//! write probe leaves the caller's memory as it was, and a buffer whose pages were replaced
//! (mmap MAP_FIXED over a registered range, as a free + re-allocation does) still uploads its
//! new contents, not the stale pinned pages.

use hetblas_core::{DType, Device, HostAccess, Link, LinkKind, MemorySpace, RawTile};
use hetblas_hip::{HipBackend, PinCache};
use std::sync::Arc;

const ROWS: usize = 128;
const COLS: usize = 1024; // ROWS * COLS f64 = 1 MiB = 256 pages
const BYTES: usize = ROWS * COLS * 8;

struct Setup {
    dev: Arc<dyn Device>,
    pins: Arc<PinCache>,
    h2d: Arc<dyn Link>,
    d2h: Arc<dyn Link>,
}

fn setup() -> Option<Setup> {
    let d = hetblas_conformance::discovered_or_skip("hip", HipBackend.discover_gpus())?;
    let pins = d.devices[0].pin_cache().clone();
    let d = d.into_discovery();
    let dev = d.devices[0].clone();
    let find = |kind: LinkKind| {
        d.links
            .iter()
            .find(|l| l.kind() == kind && (l.src() == dev.space() || l.dst() == dev.space()))
            .cloned()
            .expect("host links of device 0")
    };
    Some(Setup {
        h2d: find(LinkKind::HostToDevice),
        d2h: find(LinkKind::DeviceToHost),
        dev,
        pins,
    })
}

fn tile(space: MemorySpace, addr: u64) -> RawTile {
    RawTile {
        space,
        addr,
        rows: ROWS,
        cols: COLS,
        ld: ROWS,
        dtype: DType::F64,
    }
}

/// Host region -> device -> a fresh Vec (staged: never registered); returns the Vec.
fn round_trip(s: &Setup, host: u64) -> Vec<f64> {
    let buf = s.dev.allocate(BYTES).expect("device buffer");
    let on_dev = tile(s.dev.space(), buf.addr());
    s.h2d.copy(&tile(MemorySpace::HOST, host), &on_dev).unwrap();
    let up = s.h2d.queue().record().unwrap();
    s.d2h.queue().wait(&up).unwrap();
    let mut out = vec![f64::NAN; ROWS * COLS];
    s.d2h
        .copy(&on_dev, &tile(MemorySpace::HOST, out.as_mut_ptr() as u64))
        .unwrap();
    s.d2h.queue().synchronize().unwrap();
    out
}

/// A Vec -> device -> the host region (registered: direct DMA into it).
fn write_back(s: &Setup, from: &[f64], host: u64) {
    let buf = s.dev.allocate(BYTES).expect("device buffer");
    let on_dev = tile(s.dev.space(), buf.addr());
    s.h2d
        .copy(&tile(MemorySpace::HOST, from.as_ptr() as u64), &on_dev)
        .unwrap();
    let up = s.h2d.queue().record().unwrap();
    s.d2h.queue().wait(&up).unwrap();
    s.d2h.copy(&on_dev, &tile(MemorySpace::HOST, host)).unwrap();
    s.d2h.queue().synchronize().unwrap();
}

fn map(at: Option<u64>) -> *mut f64 {
    let (hint, flags) = match at {
        Some(a) => (a as *mut libc::c_void, libc::MAP_FIXED),
        None => (std::ptr::null_mut(), 0),
    };
    // SAFETY: an anonymous private mapping; with MAP_FIXED it replaces exactly the pages of a
    // mapping this test made and owns.
    let p = unsafe {
        libc::mmap(
            hint,
            BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | flags,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED, "mmap failed");
    p as *mut f64
}

fn fill(p: *mut f64, f: impl Fn(usize) -> f64) -> Vec<f64> {
    // SAFETY: p is a live mapping of BYTES bytes owned by this test.
    let s = unsafe { std::slice::from_raw_parts_mut(p, ROWS * COLS) };
    for (i, x) in s.iter_mut().enumerate() {
        *x = f(i);
    }
    s.to_vec()
}

/// Panics with the first difference (not a megabyte of numbers).
fn same(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let bad = got.iter().zip(want).filter(|(g, w)| g != w).count();
    if let Some(i) = got.iter().zip(want).position(|(g, w)| g != w) {
        panic!(
            "{what}: {bad} of {} values differ, first at {i}: got {}, want {}",
            want.len(),
            got[i],
            want[i]
        );
    }
}

fn read(p: *mut f64) -> Vec<f64> {
    // SAFETY: as in `fill`.
    unsafe { std::slice::from_raw_parts(p, ROWS * COLS) }.to_vec()
}

#[test]
fn registered_and_staged_copies_survive_remapping() {
    let Some(s) = setup() else { return };
    let pins = s.pins.clone();
    let p = map(None);
    let addr = p as u64;

    // 1. Registered upload, staged download.
    let a = fill(p, |i| i as f64 + 0.5);
    s.dev.prepare_host(addr, BYTES, HostAccess::Read).unwrap();
    let after_first = pins.stats();
    same(&round_trip(&s, addr), &a, "registered upload");

    // 2. A cache hit, with the write probe: the caller's memory is unchanged.
    s.dev
        .prepare_host(addr, BYTES, HostAccess::ReadWrite)
        .unwrap();
    same(
        &read(p),
        &a,
        "the write probe must restore the caller's word",
    );
    let hit = pins.stats();
    if pins.is_pinned(addr, BYTES) {
        assert!(hit.hits > after_first.hits, "{hit:?}");
    }

    // 3. Staged upload, registered download straight into the region.
    let c: Vec<f64> = (0..ROWS * COLS).map(|i| -(i as f64)).collect();
    write_back(&s, &c, addr);
    same(&read(p), &c, "registered download");

    // 4. New pages behind the same addresses: the upload must carry the new contents.
    let q = map(Some(addr));
    assert_eq!(q, p);
    let b = fill(p, |i| (i as f64) * 3.0 + 7.0);
    s.dev
        .prepare_host(addr, BYTES, HostAccess::ReadWrite)
        .unwrap();
    assert_eq!(
        round_trip(&s, addr),
        b,
        "stale registration used after remap"
    );
    write_back(&s, &c, addr);
    assert_eq!(
        read(p),
        c,
        "device->host copy went to stale pages after remap"
    );
    eprintln!("registration cache after the test: {:?}", pins.stats());

    s.dev.release_host(addr, BYTES).unwrap();
    // SAFETY: the mapping made above; no copy is in flight and nothing refers to it any more.
    unsafe { libc::munmap(p as *mut libc::c_void, BYTES) };
}
