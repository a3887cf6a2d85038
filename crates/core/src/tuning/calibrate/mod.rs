//! Calibration: micro-benchmarks that measure the numbers the models need, through the core
//! traits only. [`calibrate`] runs the phases in order, one file each (`links`, `strided`,
//! `host_fold`, `staged`, `gemm`); [`measure_panels`] times a factorization's panel op apart;
//! `recheck` re-checks a previous profile of the same hardware in seconds. Every point repeats
//! until its 95% confidence interval is within 5% of the mean or a time cap (`stats`).
//!
//! Host buffers for copies come from `host_alloc`: for a GPU backend they should be page-locked,
//! as the executor's are.

mod gemm;
mod host_fold;
mod links;
mod panel;
mod progress;
mod recheck;
mod staged;
mod stats;
mod strided;

pub use panel::{measure_panels, PanelTime};
pub use progress::Progress;
pub use recheck::{recheck, Recheck, Target, FOLD_TOLERANCE, RECHECK_TOLERANCE, RESCALE_LIMIT};

use crate::device::Device;
use crate::error::{Error, Result};
use crate::link::Link;
use crate::memory::{Buffer, MemorySpace};
use crate::profile::{MachineProfile, HOST_LABEL};
use crate::scalar::DType;
use progress::Tracker;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// What to measure and how hard.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrationOptions {
    /// Edges of the square f64 tiles copied over links (`8 * side^2` bytes each), ascending.
    /// Sizes that do not fit the link's memory limit are skipped.
    pub link_sides: Vec<usize>,
    /// Square GEMM tile sizes T, ascending.
    pub gemm_tiles: Vec<usize>,
    /// GEMM element types (those a device does not support are skipped for it); the models
    /// take an unmeasured complex one from its real one.
    pub dtypes: Vec<DType>,
    /// Target relative half-width of the 95% confidence interval of each mean.
    pub rel_ci: f64,
    /// Repetitions before the interval is trusted (at least 2).
    pub min_reps: usize,
    /// Repetitions at most.
    pub max_reps: usize,
    /// Time spent on one point at most (after `min_reps`).
    pub point_time_cap: Duration,
    /// Measure the slowdown of each link while its reverse link is busy.
    pub bidirectional: bool,
    /// Also measure each host link's slowdown while each other host link is busy.
    pub cross_links: bool,
    /// Largest buffer calibration allocates, in bytes (per buffer).
    pub max_buffer_bytes: usize,
    /// Host links: column lengths (f64 elements) of the strided 2D tile copies measured.
    pub strided_sides: Vec<usize>,
    /// Each GEMM sample runs back-to-back products for at least this long (sustained clocks).
    pub gemm_sample: Duration,
    /// Continuous GEMM work on an accelerator before its GEMM points (clocks settle).
    pub gemm_warmup: Duration,
}

impl Default for CalibrationOptions {
    /// The full calibration: links from 2 KiB to 512 MiB, GEMM tiles 128 to 8192 (3072 on
    /// devices computing in host memory, real dtypes only there).
    fn default() -> Self {
        CalibrationOptions {
            link_sides: vec![
                16, 32, 64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
            ],
            gemm_tiles: vec![
                128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
            ],
            dtypes: vec![DType::F64, DType::F32, DType::C64, DType::C32],
            rel_ci: 0.05,
            // H200's products and large copies vary by under 1% from sample to sample.
            min_reps: 3,
            max_reps: 500,
            point_time_cap: Duration::from_secs(1),
            bidirectional: true,
            cross_links: true,
            max_buffer_bytes: 512 << 20,
            strided_sides: vec![256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192],
            gemm_sample: Duration::from_millis(20),
            gemm_warmup: Duration::from_secs(2),
        }
    }
}

impl CalibrationOptions {
    /// A calibration of a few seconds: fewer, smaller points and short caps.
    pub fn quick() -> CalibrationOptions {
        CalibrationOptions {
            link_sides: vec![16, 64, 256, 1024, 2048],
            gemm_tiles: vec![256, 512, 1024, 2048],
            dtypes: vec![DType::F64, DType::F32],
            max_reps: 100,
            point_time_cap: Duration::from_millis(250),
            cross_links: false,
            max_buffer_bytes: 64 << 20,
            strided_sides: vec![256, 1024, 2048],
            gemm_sample: Duration::from_millis(5),
            gemm_warmup: Duration::from_millis(100),
            ..CalibrationOptions::default()
        }
    }
}

/// Calibrates the machine: every link between the host and `devices`, and every device's GEMM,
/// into a [`MachineProfile`]. `host_alloc` allocates host memory for copies; `progress` is
/// called after every point.
///
/// # Errors
/// Allocation failures of the smallest link size, backend errors, failed fits.
pub fn calibrate(
    devices: &[Arc<dyn Device>],
    links: &[Arc<dyn Link>],
    host_alloc: &dyn Fn(usize) -> Result<Box<dyn Buffer>>,
    opts: &CalibrationOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<MachineProfile> {
    let m = Machine::new(devices, links, host_alloc);
    let pairs = links::slowdown_pairs(&m.usable, opts);
    let host_links = m
        .usable
        .iter()
        .filter(|l| l.src().is_host() != l.dst().is_host())
        .count();
    let total = m
        .usable
        .iter()
        .map(|l| m.link_sides(l, opts).len())
        .sum::<usize>()
        + pairs.len()
        + strided::tables(&m)
        + if opts.bidirectional { host_links } else { 0 }
        + 2
        + devices
            .iter()
            .map(|d| gemm::points(d.as_ref(), opts) + usize::from(!d.space().is_host()))
            .sum::<usize>();
    let mut tr = Tracker::new(total, progress);
    let mut phases = Phases::default();

    let mut runs = links::fit_links(&m, opts, &mut tr)?;
    phases.end("link fits");
    links::measure_slowdowns(&m, &pairs, &mut runs, opts, &mut tr)?;
    phases.end("link slowdowns");
    let mut profile = MachineProfile::new();
    profile.links = links::link_profiles(&m, runs);
    let expected = tr.done + strided::tables(&m);
    strided::host_link_tiles(&m, &mut profile.links, opts, &mut |s| tr.tick(s))?;
    tr.skip_to(expected, "2D copies: done".into());
    phases.end("2D copies");
    if opts.bidirectional {
        let expected = tr.done + host_links;
        strided::host_link_duplex(&m, &mut profile.links, opts, &mut |s| tr.tick(s))?;
        tr.skip_to(expected, "2D copies both ways: done".into());
        phases.end("2D copies both ways");
    }
    profile.host_fold_bytes_per_sec = host_fold::rate(&m, &profile.links, opts)?;
    tr.tick("host fold".into());
    phases.end("host fold");
    staged::measure(&m, &mut profile.links)?;
    tr.tick("staged write-backs".into());
    phases.end("staged write-backs");
    profile.devices = gemm::device_profiles(&m, &profile.links, opts, &mut tr, &mut phases)?;
    profile.calibration_seconds = phases.done;
    Ok(profile)
}

/// Seconds of each phase of a calibration ([`MachineProfile::calibration_seconds`]).
#[derive(Debug)]
pub(super) struct Phases {
    since: std::time::Instant,
    done: Vec<(String, f64)>,
}

impl Default for Phases {
    fn default() -> Self {
        Phases {
            since: std::time::Instant::now(),
            done: Vec::new(),
        }
    }
}

impl Phases {
    /// The phase `name` ended now (it began where the last one ended).
    pub(super) fn end(&mut self, name: &str) {
        let now = std::time::Instant::now();
        self.done
            .push((name.to_string(), (now - self.since).as_secs_f64()));
        self.since = now;
    }
}

/// The machine being calibrated: its devices by space, its links, and where buffers come from.
pub(super) struct Machine<'a> {
    pub(super) devices: &'a [Arc<dyn Device>],
    pub(super) links: &'a [Arc<dyn Link>],
    /// The links whose both ends are the host or one of `devices`.
    pub(super) usable: Vec<&'a Arc<dyn Link>>,
    by_space: HashMap<MemorySpace, &'a Arc<dyn Device>>,
    host_alloc: &'a dyn Fn(usize) -> Result<Box<dyn Buffer>>,
}

impl<'a> Machine<'a> {
    fn new(
        devices: &'a [Arc<dyn Device>],
        links: &'a [Arc<dyn Link>],
        host_alloc: &'a dyn Fn(usize) -> Result<Box<dyn Buffer>>,
    ) -> Machine<'a> {
        let mut m = Machine {
            devices,
            links,
            usable: Vec::new(),
            by_space: devices.iter().map(|d| (d.space(), d)).collect(),
            host_alloc,
        };
        m.usable = links
            .iter()
            .filter(|l| m.label_of(l.src()).is_some() && m.label_of(l.dst()).is_some())
            .collect();
        m
    }

    /// The profile's label of a space: "host", or its device's label.
    pub(super) fn label_of(&self, s: MemorySpace) -> Option<String> {
        if s.is_host() {
            Some(HOST_LABEL.to_string())
        } else {
            self.by_space.get(&s).map(|d| d.info().label())
        }
    }

    pub(super) fn device_in(&self, s: MemorySpace) -> Option<&'a Arc<dyn Device>> {
        self.by_space.get(&s).copied()
    }

    /// Bytes of space `s` one calibration buffer may take: a quarter of a device's budget.
    pub(super) fn limit_of(&self, s: MemorySpace) -> u64 {
        if s.is_host() {
            u64::MAX
        } else {
            self.by_space.get(&s).map_or(0, |d| d.memory_budget() / 4)
        }
    }

    pub(super) fn alloc_in(&self, s: MemorySpace, bytes: usize) -> Result<Box<dyn Buffer>> {
        match self.by_space.get(&s) {
            _ if s.is_host() => (self.host_alloc)(bytes),
            Some(d) => d.allocate(bytes),
            None => Err(Error::internal("no device for a calibrated space")),
        }
    }

    /// The tile sides measured on `l`: those of `opts.link_sides` that fit both ends, smallest
    /// first (the link's buffers are sized by the last).
    pub(super) fn link_sides(&self, l: &Arc<dyn Link>, opts: &CalibrationOptions) -> Vec<usize> {
        let limit = self
            .limit_of(l.src())
            .min(self.limit_of(l.dst()))
            .min(opts.max_buffer_bytes as u64);
        let mut sides: Vec<usize> = opts
            .link_sides
            .iter()
            .copied()
            .filter(|&s| s > 0 && (s * s * 8) as u64 <= limit)
            .collect();
        sides.sort_unstable();
        sides.dedup();
        sides
    }

    pub(super) fn usable_named(&self, name: &str) -> Option<&'a Arc<dyn Link>> {
        self.usable.iter().find(|l| l.name() == name).copied()
    }
}
