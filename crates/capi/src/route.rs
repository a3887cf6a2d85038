//! Which real GEMMs on host operands go to the hetblas Runtime: the routing decision, in two
//! stages so that small calls cost nothing.
//!
//! 1. **Pre-filter** ([`prefilter`], no Runtime, no lock, no allocation): a flop count.
//!    Without a machine profile on disk it is the whole built-in rule (below), so a program
//!    whose calls the rule keeps on the host never starts the Runtime. With a profile file it
//!    is [`MODEL_MIN_FLOPS`]: below that a host BLAS finishes in about the time a GPU call
//!    spends on its fixed costs (0.3 ms of setup per call, measured on H200), so no model can
//!    predict a gain worth its own cost.
//! 2. **Decision** ([`decide`], the Runtime started): with a calibrated profile in use, the
//!    model. The Runtime predicts the call's time on the devices its autotuner would choose
//!    (every subset balanced, links included: [`hetblas::Runtime::predict_gemm`]) and the host
//!    BLAS time is the profile's CPU GEMM rate at the call's size ([`host_seconds`]; without a
//!    CPU entry, [`HOST_FLOPS_PER_CORE`] per core). The call goes to the devices only when
//!    they are predicted faster and the chosen devices are not the CPU alone. Without a
//!    profile, the built-in rule: at least 1 GFLOP (`2*m*n*k >= 1e9`) and at least 32 flop
//!    per operand byte. Below that intensity a PCIe host link (about 50 GB/s) bounds a GPU
//!    below what a multicore CPU BLAS does in place, and below 1 GFLOP the CPU finishes in
//!    about a millisecond, which the offload's fixed costs (planning, transfer latency,
//!    synchronisation) would eat.
//!
//! `HETBLAS_OFFLOAD_FLOPS=x` replaces both: every real GEMM of at least `x` flops goes.
//!
//! After a shape's first call, what its calls measured decides ([`crate::measured`]).

use hetblas::Runtime;
use hetblas_core::problem::GemmProblem;
use hetblas_core::{DType, DeviceKind, MemorySpace, Trans};
use std::sync::OnceLock;

/// Below this many flops the model is not asked (see the module documentation).
pub const MODEL_MIN_FLOPS: f64 = 1e8;

/// Host BLAS rate per core, f64, when the profile has no CPU GEMM entry: the H200 nodes' 16
/// cores measured 0.8-0.95 TFLOP/s with OpenBLAS (50-60 GFLOP/s a core). f32 is twice this.
pub const HOST_FLOPS_PER_CORE: f64 = 50e9;

/// The gate of the device path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// The built-in rule without a profile (`flops` and `intensity` flop per byte), the model
    /// with one.
    Auto { flops: f64, intensity: f64 },
    /// `HETBLAS_OFFLOAD_FLOPS=x`.
    Flops(f64),
}

impl Rule {
    /// The built-in rule.
    pub const BUILT_IN: Rule = Rule::Auto {
        flops: 1e9,
        intensity: 32.0,
    };

    /// The flops below which [`prefilter`] keeps every call on the host, profile or not.
    pub fn floor(self) -> f64 {
        match self {
            Rule::Flops(x) => x,
            Rule::Auto { flops, .. } => MODEL_MIN_FLOPS.min(flops),
        }
    }
}

/// The rule in force: `HETBLAS_OFFLOAD_FLOPS` when set, else [`Rule::BUILT_IN`].
pub fn rule() -> Rule {
    crate::settings::settings()
        .offload_flops
        .map_or(Rule::BUILT_IN, Rule::Flops)
}

/// What a device hook did with a call.
#[derive(Debug)]
pub enum Outcome {
    /// The devices computed it.
    Done,
    /// It is the host's; `Some` when the routing considered it, whose host time is then
    /// measured ([`crate::measured`]).
    Host(Option<crate::measured::Pending>),
}

/// Whether a calibrated profile file exists where the Runtime looks for one (checked once).
fn profile_on_disk() -> bool {
    static ON_DISK: OnceLock<bool> = OnceLock::new();
    *ON_DISK.get_or_init(|| {
        crate::settings::settings()
            .profile
            .as_ref()
            .is_some_and(|p| p.is_file())
    })
}

/// A GEMM's shape as the routing sees it.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub ta: u8,
    pub tb: u8,
    pub m: i64,
    pub n: i64,
    pub k: i64,
    pub dtype: DType,
}

impl Shape {
    fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    fn passes_built_in(&self, min_flops: f64, intensity: f64) -> bool {
        let (m, n, k) = (self.m as f64, self.n as f64, self.k as f64);
        let bytes = self.dtype.size() as f64 * (m * k + k * n + m * n);
        self.flops() >= min_flops && self.flops() >= intensity * bytes
    }

    /// The stored shapes (rows, cols) of A and B.
    pub fn stored(&self) -> ((i64, i64), (i64, i64)) {
        let a = if trans(self.ta).is_transposed() {
            (self.k, self.m)
        } else {
            (self.m, self.k)
        };
        let b = if trans(self.tb).is_transposed() {
            (self.n, self.k)
        } else {
            (self.k, self.n)
        };
        (a, b)
    }

    /// The core's problem for this call, all operands in host memory.
    pub fn problem(&self, beta_zero: bool) -> GemmProblem {
        GemmProblem {
            transa: trans(self.ta),
            transb: trans(self.tb),
            m: self.m as usize,
            n: self.n as usize,
            k: self.k as usize,
            dtype: self.dtype,
            beta_zero,
            locations: [MemorySpace::HOST; 3],
            sym: None,
        }
    }
}

/// A checked BLAS transpose character ('N', 'T' or 'C'): 'C' conjugates complex operands (real
/// types take it as 'T'). (It once mapped every character but 'N' to 'T': a complex GEMMT with
/// an operand in device memory computed A^T B for A^H B.)
pub fn trans(c: u8) -> Trans {
    Trans::from_blas_char(c).unwrap_or(Trans::T)
}

/// Stage 1: whether the call may go to the devices, decided without the Runtime.
pub fn prefilter(rule: Rule, shape: &Shape) -> bool {
    if shape.m <= 0 || shape.n <= 0 || shape.k <= 0 {
        return false;
    }
    match rule {
        Rule::Flops(x) => shape.flops() >= x,
        Rule::Auto { flops, intensity } if !profile_on_disk() => {
            shape.passes_built_in(flops, intensity)
        }
        Rule::Auto { flops, .. } => shape.flops() >= MODEL_MIN_FLOPS.min(flops),
    }
}

/// The outcome of stage 2, with what it rests on (for `HETBLAS_VERBOSE`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// `HETBLAS_OFFLOAD_FLOPS` sent it.
    Forced,
    /// The built-in rule (no profile) sent it, or kept it on the host.
    BuiltIn { offload: bool },
    /// The model's prediction: seconds on the devices it would choose, on the host BLAS.
    Model {
        devices: f64,
        host: f64,
        offload: bool,
    },
    /// The model chose the CPU alone: the host BLAS does the same in place.
    ModelCpuOnly,
}

impl Verdict {
    pub fn offload(&self) -> bool {
        match *self {
            Verdict::Forced => true,
            Verdict::BuiltIn { offload } | Verdict::Model { offload, .. } => offload,
            Verdict::ModelCpuOnly => false,
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Verdict::Forced => f.write_str("HETBLAS_OFFLOAD_FLOPS"),
            Verdict::BuiltIn { offload: true } => f.write_str("built-in rule"),
            Verdict::BuiltIn { offload: false } => f.write_str("below the built-in rule"),
            Verdict::Model { devices, host, .. } => write!(
                f,
                "model: devices {:.3} ms, host BLAS {:.3} ms",
                devices * 1e3,
                host * 1e3
            ),
            Verdict::ModelCpuOnly => f.write_str("model: the CPU alone is fastest"),
        }
    }
}

/// Stage 2: the decision for a call that passed [`prefilter`], with the Runtime started. The
/// host BLAS's estimate is [`host_seconds`] times `host_scale` (what the host measured in this
/// program against the model: [`crate::measured::host_scale`]).
pub fn decide(
    rule: Rule,
    rt: &Runtime,
    shape: &Shape,
    beta_zero: bool,
    host_scale: f64,
) -> Verdict {
    let (min_flops, intensity) = match rule {
        Rule::Flops(_) => return Verdict::Forced,
        Rule::Auto { flops, intensity } => (flops, intensity),
    };
    let problem = shape.problem(beta_zero);
    match rt.predict_gemm(&problem) {
        Some(p) => {
            let on_host = |&i: &usize| rt.devices()[i].info().kind == DeviceKind::Cpu;
            if p.devices.iter().all(on_host) {
                return Verdict::ModelCpuOnly;
            }
            let host = host_seconds(rt, &problem) * host_scale;
            Verdict::Model {
                devices: p.seconds,
                host,
                offload: p.seconds < host,
            }
        }
        None => Verdict::BuiltIn {
            offload: shape.passes_built_in(min_flops, intensity),
        },
    }
}

/// Predicted seconds of the call on the host BLAS: the profile's GEMM rate of the CPU device
/// (the same host BLAS library, measured by calibration) at the call's equivalent square size,
/// else [`HOST_FLOPS_PER_CORE`] times the cores. The profile's CPU entry is read whether or not
/// the Runtime has the CPU device (the drop-in's leaves it out).
pub fn host_seconds(rt: &Runtime, p: &GemmProblem) -> f64 {
    let flops = 2.0 * p.m as f64 * p.n as f64 * p.k as f64;
    let size = (p.m as f64 * p.n as f64 * p.k as f64).cbrt();
    let measured = rt.profile().and_then(|profile| {
        profile
            .devices
            .iter()
            .filter(|d| d.backend == "cpu")
            .find_map(|d| d.exec_table(p.dtype))
            .map(|table| table.rate_at(size))
    });
    let rate = measured.unwrap_or_else(|| {
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get()) as f64;
        let per_core = if p.dtype == DType::F32 {
            2.0 * HOST_FLOPS_PER_CORE
        } else {
            HOST_FLOPS_PER_CORE
        };
        cores * per_core
    });
    flops / rate.max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetblas::{EmulatedConfig, MachineProfile};
    use hetblas_core::profile::{DeviceProfile, GemmTimes};
    use std::sync::Arc;

    /// The Runtime is told what the caller asked: 'C' conjugates (complex operands in device
    /// memory go through this), either case.
    #[test]
    fn transpose_characters_keep_the_conjugation() {
        assert_eq!(trans(b'N'), Trans::N);
        assert_eq!(trans(b'n'), Trans::N);
        assert_eq!(trans(b'T'), Trans::T);
        assert_eq!(trans(b'C'), Trans::C);
        assert_eq!(trans(b'c'), Trans::C);
    }

    fn shape(m: i64, n: i64, k: i64) -> Shape {
        Shape {
            ta: b'N',
            tb: b'N',
            m,
            n,
            k,
            dtype: DType::F64,
        }
    }

    #[test]
    fn built_in_rule_needs_work_and_intensity() {
        let passes = |m, n, k| shape(m, n, k).passes_built_in(1e9, 32.0);
        assert!(!passes(64, 64, 64), "0.5 MFLOP stays on the host");
        assert!(passes(4096, 4096, 4096), "137 GFLOP, 341 flop/B goes");
        // Plenty of work, too little reuse: A alone is 20 GB for 40 GFLOP (2 flop/B).
        assert!(!passes(50_000, 8, 50_000));
        // A skinny product with a dimension above 2^31: 0.5 flop/B.
        let mut s = shape((1 << 31) + 7, 2, 2);
        s.dtype = DType::F32;
        assert!(!s.passes_built_in(1e9, 32.0));
    }

    #[test]
    fn flop_threshold_replaces_the_rule() {
        assert!(prefilter(Rule::Flops(0.0), &shape(1, 1, 1)));
        assert!(
            !prefilter(Rule::Flops(0.0), &shape(1, 1, 0)),
            "no work, no offload"
        );
        assert!(prefilter(Rule::Flops(1e6), &shape(50_000, 8, 50_000)));
        assert!(!prefilter(Rule::Flops(1e6), &shape(10, 10, 10)));
    }

    /// A CPU and two emulated devices (nominal 2 TFLOP/s each) with no profile.
    fn runtime() -> Runtime {
        let fast = EmulatedConfig {
            flops_per_sec: Some(2e12),
            ..EmulatedConfig::default()
        };
        Runtime::builder()
            .only(&["cpu"])
            .emulated_with(vec![fast.clone(), fast])
            .without_profile()
            .build()
            .expect("runtime")
    }

    /// A profile giving every device of `rt` a flat GEMM rate: `cpu` for the CPU, `emulated`
    /// for the others.
    fn profile(rt: &Runtime, cpu: f64, emulated: f64) -> Arc<MachineProfile> {
        let mut p = MachineProfile::new();
        for d in rt.devices() {
            let info = d.info();
            let rate = if info.kind == DeviceKind::Cpu {
                cpu
            } else {
                emulated
            };
            let times = [256usize, 1024, 4096, 16384]
                .iter()
                .map(|&t| (t, 2.0 * (t as f64).powi(3) / rate))
                .collect();
            p.devices.push(DeviceProfile {
                label: info.label(),
                name: info.name.clone(),
                backend: info.backend.clone(),
                memory_bytes: info.memory_bytes,
                gemm: vec![GemmTimes {
                    dtype: DType::F64,
                    times,
                }],
                gemm_under_dma: Vec::new(),
                copy_under_gemm: Vec::new(),
            });
        }
        Arc::new(p)
    }

    #[test]
    fn without_a_profile_the_built_in_rule_decides() {
        let rt = runtime();
        let big = shape(4096, 4096, 4096);
        assert_eq!(
            decide(Rule::BUILT_IN, &rt, &big, false, 1.0),
            Verdict::BuiltIn { offload: true }
        );
        let skinny = shape(50_000, 8, 50_000);
        assert_eq!(
            decide(Rule::BUILT_IN, &rt, &skinny, false, 1.0),
            Verdict::BuiltIn { offload: false }
        );
        assert_eq!(
            decide(Rule::Flops(0.0), &rt, &skinny, false, 1.0),
            Verdict::Forced
        );
    }

    #[test]
    fn the_model_offloads_only_when_the_devices_are_faster() {
        let rt = runtime();
        let s = shape(2048, 2048, 2048);
        // Devices 100x faster than the CPU: the model sends the call, and says why.
        rt.set_profile(Some(profile(&rt, 20e9, 2e12)));
        let v = decide(Rule::BUILT_IN, &rt, &s, false, 1.0);
        let Verdict::Model {
            devices,
            host,
            offload,
        } = v
        else {
            panic!("the profile's model should decide: {v:?}");
        };
        assert!(offload && devices < host, "{v}");
        let expected_host = 2.0 * 2048f64.powi(3) / 20e9;
        assert!(
            (host - expected_host).abs() < 0.01 * expected_host,
            "host time {host} from the CPU's profiled rate, expected {expected_host}"
        );

        // The same shape with a CPU 100x faster than the devices: it stays on the host,
        // although the built-in rule (which knows no rates) would send it.
        rt.set_profile(Some(profile(&rt, 2e12, 20e9)));
        assert!(s.passes_built_in(1e9, 32.0));
        let v = decide(Rule::BUILT_IN, &rt, &s, false, 1.0);
        assert!(!v.offload(), "a profile where offload loses kept it: {v}");

        // HETBLAS_OFFLOAD_FLOPS overrides the model.
        assert!(decide(Rule::Flops(1.0), &rt, &s, false, 1.0).offload());
    }

    #[test]
    fn host_time_without_a_cpu_entry_is_the_documented_estimate() {
        let rt = runtime();
        let s = shape(1000, 1000, 1000);
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get()) as f64;
        let t = host_seconds(&rt, &s.problem(true));
        let expected = 2e9 / (cores * HOST_FLOPS_PER_CORE);
        assert!(
            (t - expected).abs() < 1e-9 * expected.max(1.0),
            "{t} vs {expected}"
        );
    }
}
