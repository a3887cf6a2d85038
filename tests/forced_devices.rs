//! A forced device set is the devices a call may use, not a duty for each: on an emulated node
//! whose accelerator has a narrow host link, the CPU takes a share and the call's plan is
//! faster than on the accelerator alone (simulated; timed in an ignored test); where the CPU is predicted to slow the call, it gets no
//! tiles and the report says so. Results exact in both.

mod common;

use hetblas_core::profile::{DeviceProfile, GemmTimes, MachineProfile};
use hetblas_core::sim::nominal_profile;
use hetblas_core::{DType, DevicePool, GemmOptions, GemmReport, Link};
use hetblas_cpu::EmulatedConfig;
use std::sync::{Arc, Mutex};

/// One test at a time: the CPU device and the emulated one share this machine's cores.
static SERIAL: Mutex<()> = Mutex::new(());

/// [cpu, one emulated device], the CPU calibrated at `cpu_flops`.
fn pool(cpu_flops: f64, accel: EmulatedConfig) -> DevicePool {
    let (pool, devices) = common::cpu_and_emulated(&[accel]);
    let cpu = &devices[0];
    let mut profile = MachineProfile::new();
    profile.devices.push(DeviceProfile {
        label: cpu.info().label(),
        name: cpu.info().name.clone(),
        backend: cpu.info().backend.clone(),
        memory_bytes: cpu.info().memory_bytes,
        gemm: vec![GemmTimes {
            dtype: DType::F64,
            times: [64usize, 128, 256, 512]
                .iter()
                .map(|&t| (t, 2.0 * (t as f64).powi(3) / cpu_flops))
                .collect(),
        }],
        gemm_under_dma: Vec::new(),
        copy_under_gemm: Vec::new(),
    });
    pool.set_profile(Some(Arc::new(profile)));
    pool
}

/// The accelerator's host link carries 10 MB/s: a 512x512x64 DGEMM with beta != 0 moves 4.5 MB
/// (C both ways), 0.45 s of link time against 34 Mflop of compute. The CPU (calibrated
/// 100 MFLOP/s, half of it beside an accelerator: 0.34 s alone) computes part of C in host
/// memory, moving nothing; together they are predicted to take 0.27 s.
fn narrow_link_calls() -> (DevicePool, GemmReport, GemmReport) {
    let accel = EmulatedConfig {
        flops_per_sec: Some(2e9),
        host_link_bytes_per_sec: Some(10e6),
        ..Default::default()
    };
    let pool = pool(1e8, accel);
    let shape = (512, 512, 64);
    let both = GemmOptions::default().devices([0, 1]).tile(128);
    let alone = GemmOptions::default().devices([1]).tile(128);
    common::gemm_exact(&pool, shape, &both); // warm-up: plans, workspaces
    let together = common::gemm_exact(&pool, shape, &both);
    common::gemm_exact(&pool, shape, &alone);
    let single = common::gemm_exact(&pool, shape, &alone);
    (pool, together, single)
}

/// The CPU takes a share beside the narrow-link accelerator, and the plan of both, replayed
/// by the simulator on the devices' rates (the accelerator's and its link's nominal ones, the
/// CPU's calibrated one), ends well before the plan of the accelerator alone.
#[test]
fn the_cpu_gains_beside_a_narrow_link_accelerator() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (pool, together, single) = narrow_link_calls();
    assert_eq!(together.devices, vec!["cpu:0", "emulated:0"]);
    let cpu_share = together.stats.c_share[0];
    assert!(cpu_share > 0.2 && cpu_share < 0.8, "CPU share {cpu_share}");
    assert!(together.notes.is_empty(), "{:?}", together.notes);
    assert_eq!(single.devices, vec!["emulated:0"]);
    let links: Vec<Arc<dyn Link>> = pool.links().cloned().collect();
    let mut profile = nominal_profile(pool.devices(), &links, &[DType::F64], 0.0);
    profile
        .devices
        .extend(pool.profile().expect("the CPU's profile").devices.clone());
    let sim = |r: &GemmReport| pool.simulate_report(r, Some(&profile)).unwrap().makespan;
    let (both, alone) = (sim(&together), sim(&single));
    assert!(
        both < 0.8 * alone,
        "simulated: CPU + accelerator {both:.3} s against the accelerator alone {alone:.3} s"
    );
}

/// The same in wall time: a timing claim, for an idle machine (`scripts/gpu/tests.sh`).
#[test]
#[ignore = "timing: run on an idle machine (scripts/gpu/tests.sh)"]
fn timing_the_cpu_gains_beside_a_narrow_link_accelerator() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (_, together, single) = narrow_link_calls();
    assert!(
        together.seconds < 0.8 * single.seconds,
        "CPU + accelerator {:.3} s against the accelerator alone {:.3} s",
        together.seconds,
        single.seconds
    );
}

/// A CPU calibrated at 10 MFLOP/s beside a fast accelerator: forced into the call, it is given
/// no tiles, and the report says why.
#[test]
fn a_cpu_predicted_to_slow_the_call_gets_no_tiles() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let accel = EmulatedConfig {
        flops_per_sec: Some(5e9),
        ..Default::default()
    };
    let pool = pool(1e7, accel);
    let r = common::gemm_exact(
        &pool,
        (256, 192, 128),
        &GemmOptions::default().devices([0, 1]).tile(64),
    );
    assert_eq!(r.devices, vec!["emulated:0"]);
    assert_eq!(
        r.notes,
        vec!["cpu:0: no tiles, predicted to slow the call".to_string()]
    );
    assert_eq!(r.stats.c_tiles, vec![12]);
}
