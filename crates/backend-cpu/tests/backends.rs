//! The CPU and the emulated devices found through the `Backend` trait, as the runtime finds
//! every backend.

use hetblas_core::{Backend, DeviceKind, LinkKind, MemorySpace};
use hetblas_cpu::{CpuBackend, EmulatedBackend, EmulatedConfig};
use std::collections::HashSet;

#[test]
fn cpu_backend_finds_the_host_cpu() {
    let d = CpuBackend::default()
        .discover()
        .expect("the CPU is always there");
    assert_eq!(CpuBackend::default().name(), "cpu");
    assert_eq!(d.devices.len(), 1);
    assert!(
        d.links.is_empty(),
        "the CPU computes in host memory: no links"
    );
    let cpu = &d.devices[0];
    assert_eq!(cpu.info().kind, DeviceKind::Cpu);
    assert!(cpu.space().is_host());
}

#[test]
fn emulated_backend_finds_the_devices_asked_for() {
    let n = 3;
    let config = EmulatedConfig {
        memory_bytes: 8 << 20,
        ..Default::default()
    };
    let backend = EmulatedBackend::new(vec![config; n]);
    assert_eq!(backend.name(), "emulated");
    let d = backend.discover().expect("emulated devices");
    assert_eq!(d.devices.len(), n);
    let spaces: HashSet<MemorySpace> = d.devices.iter().map(|x| x.space()).collect();
    assert_eq!(spaces.len(), n, "one memory space each");
    assert!(spaces.iter().all(|s| !s.is_host()));
    for (i, dev) in d.devices.iter().enumerate() {
        assert_eq!(dev.info().kind, DeviceKind::Emulated);
        assert_eq!(dev.info().index, i);
        assert_eq!(dev.memory_budget(), 8 << 20);
    }
    // Host to each and back, and each to every other.
    let count = |k: LinkKind| d.links.iter().filter(|l| l.kind() == k).count();
    assert_eq!(count(LinkKind::HostToDevice), n);
    assert_eq!(count(LinkKind::DeviceToHost), n);
    assert_eq!(count(LinkKind::Peer), n * (n - 1));
    // None asked for: nothing found, and no error.
    let none = EmulatedBackend::new(vec![]).discover().expect("empty");
    assert!(none.devices.is_empty() && none.links.is_empty());
}

/// An allocation beyond the device's memory is an out-of-memory error, whatever its size: the
/// accounting added without a check (a panic in debug builds for sizes near 2^64), and two
/// threads could both pass the check and together exceed the memory.
#[test]
fn emulated_allocation_is_checked_and_accounted_exactly() {
    let config = EmulatedConfig {
        memory_bytes: 1 << 20,
        ..Default::default()
    };
    let d = EmulatedBackend::new(vec![config])
        .discover()
        .expect("emulated device");
    let dev = &d.devices[0];
    let held = dev.allocate(1 << 19).expect("half the memory");
    for bytes in [usize::MAX, usize::MAX - (1 << 19) + 1, (1 << 19) + 1] {
        assert!(
            matches!(
                dev.allocate(bytes),
                Err(hetblas_core::Error::OutOfMemory { .. })
            ),
            "{bytes} B"
        );
    }
    assert_eq!(dev.memory_budget(), 1 << 19);
    // Many threads at once for the rest, in quarters: exactly two succeed.
    let got: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| s.spawn(|| dev.allocate(1 << 18).ok()))
            .collect();
        hs.into_iter().filter_map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(got.len(), 2);
    assert_eq!(dev.memory_budget(), 0);
    drop((got, held));
    assert_eq!(dev.memory_budget(), 1 << 20);
}

/// Threads of this process (Linux), or None.
fn threads() -> Option<usize> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))?
        .trim()
        .parse()
        .ok()
}

/// Each emulated device started n^2 + 3n + 3 threads at creation (a queue thread per link,
/// n^2 links for n devices: 10,303 threads for 100 devices). Queue threads now start with
/// their first operation: building a node starts none, and a copy starts only its link's.
#[test]
fn emulated_devices_start_no_thread_until_used() {
    use hetblas_core::Link;
    let Some(before) = threads() else {
        eprintln!("no /proc/self/status: skipped");
        return;
    };
    let n = 40;
    let configs = vec![EmulatedConfig::default(); n];
    let node = hetblas_cpu::emulated_node(
        &configs,
        hetblas_cpu::choose_blas(&Default::default()).unwrap().blas,
    )
    .expect("40 emulated devices");
    let after = threads().unwrap();
    // Other tests of this binary may start a few threads meanwhile; 40 devices used to start
    // 1,723.
    assert!(
        after < before + 100,
        "{n} devices started {} threads",
        after - before
    );
    // A queue used once has its thread, and works.
    let link: &std::sync::Arc<dyn Link> = &node.links[0];
    link.queue()
        .synchronize()
        .expect("a fresh queue synchronizes");
    drop(node);
}
