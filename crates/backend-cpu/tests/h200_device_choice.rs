//! The default device choice on a node of one H200 and its 16-core host, as the recorded
//! profile (`docs/profiles/nvidia-h200-x1.json`) prices it: devices that stand in for the GPU
//! and the CPU carry their labels, so the balancer and the pipeline model read the profile's
//! tables for them. No GPU is needed.

use hetblas_core::autotune::{
    decide, device_rates, subset_rates, DecisionRequest, FoldRequest, PlanHints,
};
use hetblas_core::energy::Objective;
use hetblas_core::memory::{Buffer, HostAccess};
use hetblas_core::problem::GemmProblem;
use hetblas_core::profile::MachineProfile;
use hetblas_core::{
    DType, Device, DeviceInfo, DeviceKind, DevicePool, GemmOptions, GemmReport, Kernel, Link,
    MatMut, MatRef, MemorySpace, Queue, Result, Trans,
};
use hetblas_cpu::{emulated_node, CpuDevice, EmulatedConfig, RustGemm};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::Instant;

/// `inner` under another name (and, for the GPU, the H200's memory).
#[derive(Debug)]
struct Labelled {
    info: DeviceInfo,
    inner: Arc<dyn Device>,
}

impl Device for Labelled {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn space(&self) -> MemorySpace {
        self.inner.space()
    }
    fn memory_budget(&self) -> u64 {
        self.info.memory_bytes / 10 * 9
    }
    fn allocate(&self, bytes: usize) -> Result<Box<dyn Buffer>> {
        self.inner.allocate(bytes)
    }
    fn compute_queues(&self) -> &[Arc<dyn Queue>] {
        self.inner.compute_queues()
    }
    fn kernel(&self) -> &dyn Kernel {
        self.inner.kernel()
    }
    fn prepare_host(&self, addr: u64, bytes: usize, access: HostAccess) -> Result<()> {
        self.inner.prepare_host(addr, bytes, access)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn h200_node() -> (Arc<dyn Device>, Arc<dyn Device>, MachineProfile) {
    let (gpu, cpu, profile, _) = h200_node_links();
    (gpu, cpu, profile)
}

/// The GPU's and the CPU's stand-ins, the profile, and the emulated device's links to the host.
type Node = (
    Arc<dyn Device>,
    Arc<dyn Device>,
    MachineProfile,
    Vec<Arc<dyn Link>>,
);

/// [`h200_node`] with the emulated device's links to the host.
fn h200_node_links() -> Node {
    let profile: MachineProfile =
        serde_json::from_str(include_str!("../../../docs/profiles/nvidia-h200-x1.json"))
            .expect("the recorded profile parses");
    let node = emulated_node(
        &[EmulatedConfig {
            compute_queues: 2,
            ..EmulatedConfig::default()
        }],
        Arc::new(RustGemm::new(1)),
    )
    .expect("an emulated device");
    let gpu: Arc<dyn Device> = Arc::new(Labelled {
        info: DeviceInfo {
            backend: "cuda".into(),
            vendor: "NVIDIA".into(),
            name: "NVIDIA H200".into(),
            index: 0,
            kind: DeviceKind::Gpu,
            memory_bytes: 150_109_880_320,
            detail: String::new(),
        },
        inner: node.devices[0].clone(),
    });
    let cpu_inner: Arc<dyn Device> =
        CpuDevice::with_blas(Arc::new(RustGemm::new(1)), Vec::new()).unwrap();
    let cpu: Arc<dyn Device> = Arc::new(Labelled {
        info: DeviceInfo {
            memory_bytes: 135_148_564_480,
            ..cpu_inner.info().clone()
        },
        inner: cpu_inner,
    });
    assert_eq!(cpu.info().label(), "cpu:0");
    (gpu, cpu, profile, node.links)
}

/// The device subset `decide` takes for a host-operand problem, by label: the default (every
/// device) and with `cuda:0,cpu:0` forced.
fn chosen(
    m: usize,
    n: usize,
    k: usize,
    dtype: DType,
    beta_zero: bool,
) -> [(Vec<String>, Vec<f64>); 2] {
    let (gpu, cpu, profile) = h200_node();
    let devices = [gpu, cpu];
    let p = GemmProblem::host(m, n, k, dtype, beta_zero);
    let bw = |_: MemorySpace, _: MemorySpace| Some(54.27e9);
    let decide = |only: Option<&[usize]>| {
        let d = decide(&DecisionRequest {
            problem: &p,
            devices: &devices,
            held: &[0, 0],
            profile: Some(&profile),
            link_bandwidth: &bw,
            only,
            excluded: &[],
            forced: None,
            memory_limit: None,
            host_fold: FoldRequest::default(),
            objective: Objective::Time,
        })
        .expect("a decision");
        let labels = d.devices.iter().map(|&i| devices[i].info().label());
        (labels.collect::<Vec<_>>(), d.weights)
    };
    [decide(None), decide(Some(&[0, 1]))]
}

/// Where the GPU alone was measured fastest on that node (2026-11-24, `hetblas gemm`, 15
/// repetitions, two rounds), the CPU does not join, by default or when forced beside it. The
/// balancer had priced the GPU's share beside the CPU from the GPU's plan alone (host folds, the
/// model's blocking), where a plan of several devices sends C in square tiles: it added the
/// CPU to the first four and ran them 6-19% slower (6392x9996x326 SGEMM 8.9-9.5 ms against
/// 7.4-8.0; 125x6488x25167 DGEMM 30.2-30.3 against 25.4-25.5), and ran 2000x2000x100 on the
/// CPU alone (2.2-2.8 ms against 1.5 on the GPU), the GPU's rough fixed cost exceeding the
/// pipeline model's whole time.
#[test]
fn the_gpu_alone_where_it_was_measured_fastest() {
    for (m, n, k, dtype, beta_zero) in [
        (6392, 9996, 326, DType::F32, false),
        (9615, 12514, 535, DType::F64, false),
        (31270, 119, 16771, DType::F64, false),
        (125, 6488, 25167, DType::F64, true),
        (2000, 2000, 100, DType::F64, false),
        (8192, 8192, 8192, DType::F64, false),
    ] {
        for (how, (set, _)) in ["default", "forced"]
            .iter()
            .zip(chosen(m, n, k, dtype, beta_zero))
        {
            assert_eq!(
                set,
                ["cuda:0"],
                "{m}x{n}x{k} {dtype} beta_zero={beta_zero} ({how})"
            );
        }
    }
}

/// Where the CPU was measured to help, it still joins: 20000x20000x64 SGEMM, beta = 1 (C-bound)
/// ran 32.8-33.2 ms with the GPU's share at 0.69 of C, against 38.7-38.9 on the GPU alone and
/// 41.0-41.8 with the share the balancer gave it before (0.59).
#[test]
fn the_cpu_joins_where_it_was_measured_to_help() {
    for (set, weights) in chosen(20000, 20000, 64, DType::F32, false) {
        assert_eq!(set, ["cuda:0", "cpu:0"]);
        assert!(weights[0] > 0.64 && weights[0] < 0.8, "{weights:?}");
    }
}

/// Nodes of several accelerators keep one pricing for every subset: the split applies to one
/// accelerator beside the CPU only.
#[test]
fn several_accelerators_keep_one_pricing() {
    let (gpu, cpu, profile) = h200_node();
    let p = GemmProblem::host(6392, 9996, 326, DType::F32, false);
    let bw = |_: MemorySpace, _: MemorySpace| Some(54.27e9);
    let hints = PlanHints::default();
    let rates = |devs: &[&Arc<dyn Device>]| device_rates(&p, devs, 4096, Some(&profile), &bw);
    let one = [&gpu, &cpu];
    assert!(subset_rates(&p, &one, rates(&one).unwrap(), Some(&profile), &hints).is_some());
    let two = [&gpu, &gpu, &cpu];
    assert!(subset_rates(&p, &two, rates(&two).unwrap(), Some(&profile), &hints).is_none());
    let alone = [&gpu];
    assert!(subset_rates(&p, &alone, rates(&alone).unwrap(), Some(&profile), &hints).is_none());
}

/// DGEMM 2048x2048x16 (C = 1, beta 1) on the H200 node's GPU with its profile, which folds C
/// on the host at the calibrated rate: the pool, and calls that check their result.
struct FoldingCall {
    pool: DevicePool,
    a: Vec<f64>,
    b: Vec<f64>,
    c: RefCell<Vec<f64>>,
    calls: Cell<u32>,
}

impl FoldingCall {
    const M: usize = 2048;
    const N: usize = 2048;
    const K: usize = 16;

    fn new() -> FoldingCall {
        let (gpu, _, profile, links) = h200_node_links();
        let pool = DevicePool::new(vec![gpu], links).expect("a pool");
        pool.set_profile(Some(Arc::new(profile)));
        let (m, n, k) = (Self::M, Self::N, Self::K);
        FoldingCall {
            pool,
            a: (0..m * k).map(|i| (i % 7) as f64 - 3.0).collect(),
            b: (0..k * n).map(|i| (i % 5) as f64 - 2.0).collect(),
            c: RefCell::new(vec![1.0f64; m * n]),
            calls: Cell::new(0),
        }
    }

    /// C += A B.
    fn call(&self) -> GemmReport {
        self.call_with(&GemmOptions::default())
    }

    /// C += A B with `opts`.
    fn call_with(&self, opts: &GemmOptions) -> GemmReport {
        let (m, n, k) = (Self::M, Self::N, Self::K);
        self.calls.set(self.calls.get() + 1);
        self.pool
            .gemm_with(
                Trans::N,
                Trans::N,
                1.0,
                MatRef::new(&self.a, m, k, m).unwrap(),
                MatRef::new(&self.b, k, n, k).unwrap(),
                1.0,
                MatMut::new(&mut self.c.borrow_mut(), m, n, m).unwrap(),
                opts,
            )
            .expect("the call runs")
    }

    /// Every call added A B to C = 1.
    fn check(&self) {
        let (m, k) = (Self::M, Self::K);
        for (i, j) in [(0, 0), (1, 2047), (2047, 1), (1000, 999)] {
            let dot: f64 = (0..k).map(|l| self.a[i + l * m] * self.b[l + j * k]).sum();
            let c = self.c.borrow()[i + j * m];
            assert_eq!(c, 1.0 + f64::from(self.calls.get()) * dot, "C({i},{j})");
        }
    }
}

/// Host folds that run slower than calibrated are priced at the rate they reached: on the H200
/// node's profile a problem the model folds is then sent whole, the call says why, and its
/// result is right.
#[test]
fn slow_folds_turn_the_model_to_sending_c() {
    let case = FoldingCall::new();
    let first = case.call();
    assert!(first.host_fold, "the calibrated rate folds: {first:?}");
    assert!(first.notes.is_empty(), "{:?}", first.notes);
    // Folds of this process at `gbs` GB/s.
    let fold_at = |gbs: f64| {
        for _ in 0..64 {
            case.pool
                .fold_speed()
                .record(32 << 20, (32u64 << 20) as f64 / (gbs * 1e9));
        }
    };
    // At 2 GB/s against the profile's 21.8: the lowest level.
    fold_at(2.0);
    let second = case.call();
    assert!(!second.host_fold, "slow folds still fold: {second:?}");
    assert!(
        second
            .notes
            .iter()
            .any(|n| n.starts_with("host folds priced at 2.7 GB/s, not the calibrated 21.8")),
        "{:?}",
        second.notes
    );
    let priced = || {
        case.pool
            .decision_profile()
            .unwrap()
            .host_fold_bytes_per_sec
    };
    let calibrated = case
        .pool
        .profile()
        .unwrap()
        .host_fold_bytes_per_sec
        .unwrap();
    assert_eq!(priced(), Some(calibrated / 8.0));
    // Folds at 5 GB/s, 2/8 of the calibrated rate: one step away, not taken.
    fold_at(5.0);
    case.call();
    assert_eq!(priced(), Some(calibrated / 8.0));
    // At 9 GB/s, 3/8: two steps, taken.
    fold_at(9.0);
    case.call();
    assert_eq!(priced(), Some(calibrated * 3.0 / 8.0));
    case.check();
}

/// A call the pipeline model tiled reports the model's prices (what the drop-in's learned
/// tilings judge a measured call by): its choice's seconds, and every square tile it weighed,
/// the one that ran among them at that price when it is square; a forced tile is priced alone;
/// with no profile there are none.
#[test]
fn the_report_carries_the_models_prices() {
    let case = FoldingCall::new();
    let report = case.call();
    let prices = report.prices.clone().expect("the model tiled the call");
    assert!(prices.chosen_seconds > 0.0, "{prices:?}");
    assert!(prices.square.len() >= 3, "{prices:?}");
    assert!(
        prices.square.windows(2).all(|w| w[0].0 < w[1].0),
        "sorted by side: {prices:?}"
    );
    assert!(prices.square.iter().all(|&(_, s)| s > 0.0), "{prices:?}");
    let (tm, tn, tk) = report.tile.expect("tiles");
    let side = tm.max(tn);
    // The model tiles this call in squares (K clamps the third side).
    assert!(tm == tn && tk == FoldingCall::K, "{:?}", report.tile);
    let own = prices
        .square
        .iter()
        .find(|p| p.0 == side)
        .expect("its tile");
    assert!(
        (own.1 - prices.chosen_seconds).abs() <= 1e-12 * own.1.max(1.0),
        "{own:?} against {prices:?}"
    );
    // A forced square tile: priced alone.
    let forced = case.call_with(&GemmOptions::default().tile(512));
    let p = forced.prices.expect("priced");
    assert_eq!(p.square.len(), 1, "{p:?}");
    assert_eq!(p.square[0].0, 512);
    assert_eq!(forced.tile, Some((512, 512, 16)));
    // Without a profile the model does not tile, and prices nothing.
    case.pool.set_profile(None);
    assert_eq!(case.call().prices, None);
    case.check();
}

/// Only the folds of a call that ran alone are counted: folds beside another call of the pool
/// say nothing of the next call, which may run alone (on one H200 they priced the calls after
/// four concurrent ones at the concurrent calls' rate, and the first of those ran 2.2-2.7x
/// slower).
#[test]
fn folds_beside_another_call_are_not_counted() {
    let case = FoldingCall::new();
    // Another call in flight (held as the pool's calls hold it) for the whole call.
    let other = case.pool.fold_speed().call();
    let beside = case.call();
    assert!(beside.host_fold, "the calibrated rate folds: {beside:?}");
    assert_eq!(case.pool.fold_speed().observed(Instant::now()), None);
    drop(other);
    let alone = case.call();
    assert!(alone.host_fold, "{alone:?}");
    assert!(
        case.pool.fold_speed().observed(Instant::now()).is_some(),
        "the folds of a call alone are counted"
    );
    case.check();
}
