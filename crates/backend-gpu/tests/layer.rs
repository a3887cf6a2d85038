//! The GPU layer's own behaviour, over the runtime faked in host memory (`fake`): discovery,
//! staged and registered copies, the registration probes, kernels on their own streams only,
//! events reused once dropped, and events of another backend refused with a typed error.

mod fake;

use fake::{Fake, FakeBackend};
use hetblas_conformance::data::{random_vec, rng};
use hetblas_core::host_queue::{HostEvent, HostQueue};
use hetblas_core::{
    DType, Device, Error, Event, GemmTile, HostAccess, Link, LinkKind, MemorySpace, Queue, RawTile,
    ScalarValue, Trans,
};
use hetblas_gpu::{GpuDiscovery, GpuEvent};
use std::sync::Arc;

fn gpus() -> GpuDiscovery<Fake> {
    FakeBackend::new()
        .discover_gpus()
        .expect("the fake runtime is always there")
}

fn tile(space: MemorySpace, addr: u64, rows: usize, cols: usize, ld: usize) -> RawTile {
    RawTile {
        space,
        addr,
        rows,
        cols,
        ld,
        dtype: DType::F64,
    }
}

#[test]
fn discovery_names_devices_links_and_queues() {
    let d = gpus();
    assert_eq!(d.devices.len(), 2);
    assert_eq!(d.devices[1].info().label(), "fake:1");
    let queues: Vec<_> = d.devices[0]
        .compute_queues()
        .iter()
        .map(|q| q.name().to_string())
        .collect();
    assert_eq!(queues, ["fake0/compute0", "fake0/compute1"]);
    let mut links: Vec<_> = d
        .links
        .iter()
        .map(|l| (l.name().to_string(), l.kind(), l.queue().name().to_string()))
        .collect();
    links.sort_by(|a, b| a.0.cmp(&b.0));
    let want = [
        ("fake0->fake1", LinkKind::Peer, "fake1<-fake0"),
        ("fake0->host", LinkKind::DeviceToHost, "fake0/d2h"),
        ("fake1->fake0", LinkKind::Peer, "fake0<-fake1"),
        ("fake1->host", LinkKind::DeviceToHost, "fake1/d2h"),
        ("host->fake0", LinkKind::HostToDevice, "fake0/h2d"),
        ("host->fake1", LinkKind::HostToDevice, "fake1/h2d"),
    ];
    let got: Vec<_> = links
        .iter()
        .map(|(n, k, q)| (n.as_str(), *k, q.as_str()))
        .collect();
    assert_eq!(got, want);
    let peer = d.links.iter().find(|l| l.name() == "fake0->fake1").unwrap();
    assert_eq!(
        (peer.src(), peer.dst()),
        (d.devices[0].space(), d.devices[1].space())
    );
}

/// Host -> device 0 -> device 1 (peer) -> host, strided on both host ends, `rounds` times
/// (more than the staging ring has slots); returns what came back each round.
fn round_trips(
    d: &GpuDiscovery<Fake>,
    src: &[f64],
    rows: usize,
    cols: usize,
    ld: usize,
    rounds: usize,
) -> Vec<Vec<f64>> {
    let find = |name: &str| d.links.iter().find(|l| l.name() == name).unwrap().clone();
    let (h2d, peer, d2h) = (
        find("host->fake0"),
        find("fake0->fake1"),
        find("fake1->host"),
    );
    let b0 = d.devices[0].allocate(rows * cols * 8).unwrap();
    let b1 = d.devices[1].allocate(rows * cols * 8).unwrap();
    let on0 = tile(d.devices[0].space(), b0.addr(), rows, cols, rows);
    let on1 = tile(d.devices[1].space(), b1.addr(), rows, cols, rows);
    (0..rounds)
        .map(|_| {
            let mut out = vec![f64::NAN; ld * cols];
            h2d.copy(
                &tile(MemorySpace::HOST, src.as_ptr() as u64, rows, cols, ld),
                &on0,
            )
            .unwrap();
            peer.copy(&on0, &on1).unwrap();
            d2h.copy(
                &on1,
                &tile(MemorySpace::HOST, out.as_mut_ptr() as u64, rows, cols, ld),
            )
            .unwrap();
            d2h.queue().synchronize().unwrap();
            out
        })
        .collect()
}

#[test]
fn staged_and_registered_copies_carry_strided_tiles() {
    let d = gpus();
    let (rows, cols, ld) = (37, 29, 50);
    let src: Vec<f64> = random_vec(&mut rng(1), ld * cols);
    let check = |outs: Vec<Vec<f64>>| {
        for out in outs {
            for j in 0..cols {
                assert_eq!(
                    out[j * ld..j * ld + rows],
                    src[j * ld..j * ld + rows],
                    "column {j}"
                );
                // Between columns the destination is untouched.
                assert!(out[j * ld + rows..(j + 1) * ld].iter().all(|x| x.is_nan()));
            }
        }
    };
    // Not registered: both host ends go through the staging ring (6 rounds over 4 slots).
    check(round_trips(&d, &src, rows, cols, ld, 6));
    let pins = d.devices[0].pin_cache().clone();
    assert_eq!(pins.stats().registrations, 0);
    // Registered: direct copies.
    let dev = &d.devices[0];
    dev.prepare_host(src.as_ptr() as u64, src.len() * 8, HostAccess::Read)
        .unwrap();
    assert!(pins.is_pinned(src.as_ptr() as u64, src.len() * 8));
    check(round_trips(&d, &src, rows, cols, ld, 2));
    assert_eq!(pins.stats().registrations, 1);
    dev.release_host(src.as_ptr() as u64, src.len() * 8)
        .unwrap();
}

/// The staging ring's page-locked buffers are a one-time cost of the call that allocates them:
/// each link counts the time ([`Link::staging_alloc_seconds`]), which stops growing once its
/// slots hold the size and grows again for a larger tile.
#[test]
fn staging_buffers_are_counted_when_allocated_only() {
    let d = gpus();
    let find = |name: &str| d.links.iter().find(|l| l.name() == name).unwrap().clone();
    let (h2d, d2h) = (find("host->fake0"), find("fake1->host"));
    let spent = || h2d.staging_alloc_seconds() + d2h.staging_alloc_seconds();
    assert_eq!(spent(), 0.0);
    let (rows, cols) = (37, 29);
    let src = random_vec(&mut rng(2), rows * cols);
    // Twice round the ring: every slot holds the size.
    round_trips(&d, &src, rows, cols, rows, 8);
    let filled = spent();
    assert!(filled > 0.0);
    round_trips(&d, &src, rows, cols, rows, 8);
    assert_eq!(spent(), filled, "slots of the size are reused");
    let big = random_vec(&mut rng(3), 4 * rows * cols);
    round_trips(&d, &big, 2 * rows, 2 * cols, 2 * rows, 1);
    let grown = spent();
    assert!(grown > filled, "a larger tile allocates");
    // The whole ring grew with that one copy each way: the next calls of the size allocate
    // nothing, though each takes the ring's next slot.
    round_trips(&d, &big, 2 * rows, 2 * cols, 2 * rows, 4);
    assert_eq!(spent(), grown, "every idle slot grew at once");
}

#[test]
fn cache_hits_are_verified_and_the_write_probe_restores_the_data() {
    let d = gpus();
    let dev = &d.devices[0];
    let pins = dev.pin_cache().clone();
    let data: Vec<f64> = random_vec(&mut rng(2), 3 * 4096);
    let (addr, len) = registered_then_hit(dev, &data);
    // The runtime lost the registration behind the cache's back: the next hit is stale and
    // registered again.
    let start = addr / hetblas_gpu::registration::PAGE * hetblas_gpu::registration::PAGE;
    assert!(fake::forget_registration(start));
    dev.prepare_host(addr, len, HostAccess::Read).unwrap();
    let st = pins.stats();
    assert_eq!((st.registrations, st.stale), (2, 1), "{st:?}");
    dev.release_host(addr, len).unwrap();
    assert!(!pins.is_pinned(addr, len));
}

/// A 3x2 = (3x4)(4x2) f64 GEMM in device 0's memory; returns the tile and its buffers.
fn small_gemm(dev: &dyn Device) -> (GemmTile, Vec<Box<dyn hetblas_core::Buffer>>, Vec<f64>) {
    let (a, b): (Vec<f64>, Vec<f64>) = (
        (1..=12).map(f64::from).collect(),
        (1..=8).map(f64::from).collect(),
    );
    let bufs: Vec<_> = [12, 8, 6]
        .iter()
        .map(|&n| dev.allocate(n * 8).unwrap())
        .collect();
    for (buf, v) in bufs.iter().zip([&a, &b]) {
        // SAFETY: fake device memory is host memory of at least v.len() words.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), buf.addr() as *mut f64, v.len()) };
    }
    let t = |i: usize, r, c| tile(dev.space(), bufs[i].addr(), r, c, r);
    let op = GemmTile {
        transa: Trans::N,
        transb: Trans::N,
        m: 3,
        n: 2,
        k: 4,
        alpha: ScalarValue::F64(2.0),
        a: t(0, 3, 4),
        b: t(1, 4, 2),
        beta: ScalarValue::F64(0.0),
        c: t(2, 3, 2),
    };
    let want = (0..6)
        .map(|e| {
            let (i, j) = (e % 3, e / 3);
            2.0 * (0..4).map(|l| a[i + 3 * l] * b[l + 4 * j]).sum::<f64>()
        })
        .collect();
    (op, bufs, want)
}

#[test]
fn kernels_run_on_their_own_streams_only() {
    let d = gpus();
    let (dev0, dev1) = (d.devices[0].as_ref(), d.devices[1].as_ref());
    let (op, bufs, want) = small_gemm(dev0);
    let q = dev0.compute_queues()[1].clone();
    dev0.kernel().gemm(&q, &op).unwrap();
    q.synchronize().unwrap();
    // SAFETY: the C buffer holds 6 words of fake (host) memory.
    let got = unsafe { std::slice::from_raw_parts(bufs[2].addr() as *const f64, 6) };
    assert_eq!(got, want.as_slice());
    for foreign in [
        dev1.compute_queues()[0].clone(),
        HostQueue::new("host").unwrap() as Arc<dyn Queue>,
    ] {
        assert!(matches!(
            dev0.kernel().gemm(&foreign, &op),
            Err(Error::Unsupported { .. })
        ));
    }
}

#[test]
fn events_of_another_backend_are_refused_with_a_typed_error() {
    let d = gpus();
    let (s0, s1) = (
        d.devices[0].compute_queues()[0].clone(),
        d.devices[1].compute_queues()[0].clone(),
    );
    let own = s1.record_timed().unwrap();
    let later = s1.record_timed().unwrap();
    assert!(s0.can_wait(own.as_ref()));
    s0.wait(&own).unwrap();
    assert!(later.elapsed_since(own.as_ref()).is_some_and(|t| t >= 0.0));
    assert!(GpuEvent::<Fake>::of(own.as_ref()).is_some());
    let host: Arc<dyn Event> = HostEvent::completed();
    assert!(!s0.can_wait(host.as_ref()));
    assert!(matches!(s0.wait(&host), Err(Error::Unsupported { .. })));
    assert_eq!(own.elapsed_since(host.as_ref()), None);
    // A host queue waits for anything, on its own thread.
    let hq = HostQueue::new("fold").unwrap();
    assert!(hq.can_wait(own.as_ref()));
    hq.wait(&own).unwrap();
    hq.synchronize().unwrap();
}

/// A dropped event's handle is recorded again by its stream's next record of the same kind
/// (timed or not), not created anew; a reused timed handle still times.
#[test]
fn dropped_events_are_recorded_again_not_created() {
    let d = gpus();
    let s = hetblas_gpu::GpuStream::<Fake>::new(d.devices[0].context(), "events".into(), false)
        .unwrap();
    let raw = |e: &Arc<GpuEvent<Fake>>| e.raw();
    let (untimed, timed) = (
        s.record_typed(false).unwrap(),
        s.record_typed(true).unwrap(),
    );
    let (u, t) = (raw(&untimed), raw(&timed));
    assert_ne!(u, t);
    drop((untimed, timed));
    // The dropped handle goes to the next record of its kind, and to that one only: a handle
    // is never held by two live events.
    let (first, second) = (
        s.record_typed(false).unwrap(),
        s.record_typed(false).unwrap(),
    );
    assert_eq!(raw(&first), u);
    assert_ne!(raw(&second), u);
    let again = s.record_typed(true).unwrap();
    assert_eq!(raw(&again), t);
    let later = s.record_typed(true).unwrap();
    assert_ne!(raw(&later), t);
    assert!(later
        .elapsed_since(again.as_ref())
        .is_some_and(|x| x >= 0.0));
}

/// More events than a pool keeps: those beyond it are destroyed when dropped, the rest when the
/// stream and its last event are gone; none twice, none recorded after destruction.
#[test]
fn pooled_events_are_destroyed_once_with_their_stream() {
    let d = gpus();
    let s =
        hetblas_gpu::GpuStream::<Fake>::new(d.devices[0].context(), "pool".into(), false).unwrap();
    let mut events: Vec<_> = (0..300)
        .map(|i| s.record_typed(i % 3 == 0).unwrap())
        .collect();
    let handles: Vec<u64> = events.iter().map(|e| e.raw()).collect();
    assert!(handles.iter().all(|&h| fake::event_live(h)));
    let kept = events.pop().expect("300 events");
    drop(events);
    // Reused after the drops: still live, recorded without error.
    let again = s.record_typed(false).unwrap();
    assert!(fake::event_live(again.raw()));
    drop(s);
    // The pool outlives the stream while an event holds it.
    assert!(fake::event_live(kept.raw()));
    drop((again, kept));
    assert!(
        handles.iter().all(|&h| !fake::event_live(h)),
        "a pooled handle was not destroyed"
    );
    assert_eq!(fake::events_destroyed_twice(), 0);
}

/// An output whose first word already holds one of the probe's marks: the hit is verified and
/// the word put back. (That the other mark is written is what makes a stale mapping visible;
/// the fake's copies always land, so only a GPU could show a stale one.)
#[test]
fn the_write_probe_restores_a_first_word_equal_to_a_mark() {
    let d = gpus();
    let dev = &d.devices[0];
    let mut data: Vec<f64> = random_vec(&mut rng(3), 2 * 4096);
    data[1] = f64::from_bits(0xa5a5_a5a5_a5a5_a5a5);
    let (addr, len) = registered_then_hit(dev, &data);
    dev.release_host(addr, len).unwrap();
}

/// `data` from its second word, prepared for reading and writing twice on a fresh device: one
/// registration, then a verified hit whose write probe leaves the data as it was (bit for bit).
/// Returns the range.
fn registered_then_hit(dev: &hetblas_gpu::GpuDevice<Fake>, data: &[f64]) -> (u64, usize) {
    let (addr, len) = (data.as_ptr() as u64 + 8, (data.len() - 1) * 8);
    let before: Vec<u64> = data.iter().map(|x| x.to_bits()).collect();
    dev.prepare_host(addr, len, HostAccess::ReadWrite).unwrap();
    dev.prepare_host(addr, len, HostAccess::ReadWrite).unwrap();
    let st = dev.pin_cache().stats();
    assert_eq!((st.registrations, st.hits, st.stale), (1, 1, 0), "{st:?}");
    let after: Vec<u64> = data.iter().map(|x| x.to_bits()).collect();
    assert!(
        after == before,
        "the write probe must restore the caller's word"
    );
    (addr, len)
}

#[test]
fn devices_own_their_runtimes_device_memory_only() {
    let d = gpus();
    let (d0, d1) = (&d.devices[0], &d.devices[1]);
    let buf = d1.allocate(4096).expect("device memory");
    let (start, last) = (buf.addr(), buf.addr() + 4095);
    assert!(d1.owns_address(start) && d1.owns_address(last));
    assert!(
        !d0.owns_address(start),
        "device 1's memory is not device 0's"
    );
    let host = [0u8; 64];
    assert!(!d1.owns_address(host.as_ptr() as u64), "host memory");
    drop(buf);
    assert!(!d1.owns_address(start), "freed memory is no device's");
}
