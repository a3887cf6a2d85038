//! Calibration: micro-benchmarks that measure the numbers the models need, on any backend,
//! through the core traits only ([`Device`], [`Link`], [`Queue`], [`crate::Event`]).
//!
//! - **Links**: square f64 tiles of growing size are copied over each link; each size repeats
//!   until the 95% confidence interval of the mean is within 5% of the mean (CoCoPeLia's rule)
//!   or a per-point time cap; `t = t_i + t_b b` is fitted to the means
//!   ([`LinkModel::fit_relative`]: relative residuals, so the small sizes fix the latency).
//! - **Bidirectional slowdown**: a link's largest tile is timed while its reverse link copies
//!   continuously; `sl = t_busy / t_idle` (at least 1). With [`CalibrationOptions::cross_links`]
//!   the same is done under every other host link (they share the host's memory and root
//!   complex), giving [`LinkProfile::slowdown_under`].
//! - **GEMM**: `T x T x T` tiles per dtype on a compute queue of each device, over growing T
//!   (stopping once one run exceeds the point cap or memory runs out).
//!
//! Every time is taken with events recorded on the queue around the operation
//! ([`crate::Event::elapsed_since`]), or the host clock around a synchronised run when the
//! backend's events carry no timestamps.
//!
//! Host buffers for copies come from the caller (`host_alloc`): for a GPU backend they should be
//! page-locked, as the executor's are. GEMM operands are initialised from host vectors through
//! the device's host link when it has one (otherwise they hold whatever the allocation held,
//! and `beta = 0` keeps the kernel from reading C).

use crate::device::{Device, DeviceKind};
use crate::error::{Error, Result};
use crate::kernel::GemmTile;
use crate::link::{Link, LinkKind};
use crate::memory::{Buffer, MemorySpace, RawTile};
use crate::model::link::LinkModel;
use crate::operand::Trans;
use crate::profile::{DeviceProfile, GemmTimes, LinkProfile, MachineProfile, HOST_LABEL};
use crate::queue::Queue;
use crate::scalar::{DType, ScalarValue};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to measure and how hard.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrationOptions {
    /// Edges of the square f64 tiles copied over links (`8 * side^2` bytes each), ascending.
    /// Sizes that do not fit the link's memory limit are skipped.
    pub link_sides: Vec<usize>,
    /// Square GEMM tile sizes T, ascending.
    pub gemm_tiles: Vec<usize>,
    /// GEMM element types (those a device does not support are skipped for it).
    pub dtypes: Vec<DType>,
    /// Target relative half-width of the 95% confidence interval of each mean.
    pub rel_ci: f64,
    /// Repetitions before the interval is trusted.
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
    /// Each GEMM sample runs back-to-back products for at least this long (sustained clocks,
    /// as in a long call, not the boost of a single product).
    pub gemm_sample: Duration,
    /// Continuous GEMM work on an accelerator before its GEMM points (clocks settle).
    pub gemm_warmup: Duration,
}

impl Default for CalibrationOptions {
    /// The full calibration: links from 4 KiB to 512 MiB, GEMM tiles 128 to 8192.
    fn default() -> Self {
        CalibrationOptions {
            link_sides: vec![
                16, 32, 64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
            ],
            gemm_tiles: vec![
                128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
            ],
            dtypes: vec![DType::F64, DType::F32],
            rel_ci: 0.05,
            min_reps: 5,
            max_reps: 500,
            point_time_cap: Duration::from_secs(2),
            bidirectional: true,
            cross_links: true,
            max_buffer_bytes: 512 << 20,
            strided_sides: vec![256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192],
            gemm_sample: Duration::from_millis(40),
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
            rel_ci: 0.05,
            min_reps: 3,
            max_reps: 100,
            point_time_cap: Duration::from_millis(250),
            bidirectional: true,
            cross_links: false,
            max_buffer_bytes: 64 << 20,
            strided_sides: vec![256, 1024, 2048],
            gemm_sample: Duration::from_millis(5),
            gemm_warmup: Duration::from_millis(100),
        }
    }
}

/// Where calibration is, for a progress bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Points measured (or skipped) so far.
    pub done: usize,
    /// Points planned.
    pub total: usize,
    /// Estimated time left, from the mean time per point so far.
    pub eta: Option<Duration>,
    /// What is being measured now ("link host->cuda0: 8 MiB").
    pub stage: String,
}

/// A repeated measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// Mean seconds.
    pub mean: f64,
    /// Half-width of the 95% confidence interval of the mean (s).
    pub half_width: f64,
    /// Repetitions taken.
    pub reps: usize,
}

/// Running mean and variance (Welford).
#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    n: usize,
    mean: f64,
    m2: f64,
}

impl Stats {
    fn push(&mut self, x: f64) {
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }

    fn half_width95(&self) -> f64 {
        if self.n < 2 {
            return f64::INFINITY;
        }
        let var = self.m2 / (self.n - 1) as f64;
        student_t975(self.n - 1) * (var / self.n as f64).sqrt()
    }
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom (two-sided 95%).
fn student_t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        // Within 0.2% of the exact quantile for df > 30.
        _ => 1.96 + 2.4 / df as f64,
    }
}

/// Runs `once` (which returns the seconds of one repetition) after one discarded warm-up run,
/// until the 95% confidence interval of the mean is within `opts.rel_ci` of it, or
/// `opts.max_reps` repetitions, or `opts.point_time_cap` spent (never fewer than
/// `opts.min_reps`, at least 2).
///
/// # Errors
/// The first error of `once`; `Internal` if a repetition reports a negative or non-finite time.
pub fn measure_until_confident(
    opts: &CalibrationOptions,
    once: &mut dyn FnMut() -> Result<f64>,
) -> Result<Measurement> {
    once()?;
    let start = Instant::now();
    let min_reps = opts.min_reps.max(2);
    let mut s = Stats::default();
    loop {
        let t = once()?;
        if !(t.is_finite() && t >= 0.0) {
            return Err(Error::internal(format!("calibration measured {t} s")));
        }
        s.push(t);
        if s.n >= min_reps {
            let hw = s.half_width95();
            if hw <= opts.rel_ci * s.mean
                || s.n >= opts.max_reps.max(min_reps)
                || start.elapsed() >= opts.point_time_cap
            {
                return Ok(Measurement {
                    mean: s.mean,
                    half_width: hw,
                    reps: s.n,
                });
            }
        }
    }
}

/// Seconds of the work `issue` puts on `queue`: events recorded before and after it, their
/// device-side difference, or the host clock around it when the events carry no timestamps.
/// The queue is synchronised afterwards so errors of the work surface here.
///
/// # Errors
/// Errors of `issue`, of recording and of synchronising.
pub fn time_on_queue(queue: &Arc<dyn Queue>, issue: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
    queue.synchronize()?;
    let host_start = Instant::now();
    let e0 = queue.record_timed()?;
    issue()?;
    let e1 = queue.record_timed()?;
    e1.synchronize()?;
    let host = host_start.elapsed().as_secs_f64();
    queue.synchronize()?;
    Ok(e1.elapsed_since(e0.as_ref()).unwrap_or(host))
}

fn f64_tile(buf: &dyn Buffer, side: usize) -> RawTile {
    RawTile {
        space: buf.space(),
        addr: buf.addr(),
        rows: side,
        cols: side,
        ld: side.max(1),
        dtype: DType::F64,
    }
}

/// Measures one link: every size of `sides` (square f64 tiles) copied from `src` to `dst`
/// (buffers in the link's spaces, large enough for the largest side), then the fit. Calls
/// `tick` after each point. Returns the model (slowdown 1) and the `(bytes, mean seconds)`
/// samples.
///
/// # Errors
/// `InvalidInput` when a buffer is too small or in the wrong space, backend errors, or a failed
/// fit (fewer than two sizes).
pub fn measure_link(
    link: &dyn Link,
    src: &dyn Buffer,
    dst: &dyn Buffer,
    sides: &[usize],
    opts: &CalibrationOptions,
    tick: &mut dyn FnMut(String),
) -> Result<(LinkModel, Vec<(usize, f64)>)> {
    let mut samples = Vec::with_capacity(sides.len());
    for &side in sides {
        let bytes = side * side * 8;
        if bytes > src.len() || bytes > dst.len() {
            return Err(Error::InvalidInput(format!(
                "calibration buffers of {} / {} B cannot hold a {side}x{side} f64 tile",
                src.len(),
                dst.len()
            )));
        }
        let (s, d) = (f64_tile(src, side), f64_tile(dst, side));
        let m = measure_until_confident(opts, &mut || {
            time_on_queue(link.queue(), &mut || link.copy(&s, &d))
        })?;
        samples.push((bytes, m.mean));
        tick(format!("link {}: {}", link.name(), human_bytes(bytes)));
    }
    let model = LinkModel::fit_relative(&samples)
        .map_err(|e| Error::Profile(format!("link {}: {e}", link.name())))?;
    Ok((model, samples))
}

/// The slowdown of copying `side x side` f64 tiles over `fg` while `bg` copies continuously:
/// `t_busy / idle_seconds`, at least 1 (a busy neighbour never speeds a link up). `bg_time` is
/// the expected time of one background copy, used to keep `bg` busy for the whole foreground
/// copy. Buffers: `fg_src`/`fg_dst` in `fg`'s spaces, `bg_src`/`bg_dst` in `bg`'s.
///
/// # Errors
/// Backend errors.
#[allow(clippy::too_many_arguments)]
pub fn measure_slowdown(
    fg: &dyn Link,
    bg: &dyn Link,
    fg_bufs: (&dyn Buffer, &dyn Buffer),
    bg_bufs: (&dyn Buffer, &dyn Buffer),
    side: usize,
    idle_seconds: f64,
    bg_time: f64,
    opts: &CalibrationOptions,
) -> Result<f64> {
    let (fs, fd) = (f64_tile(fg_bufs.0, side), f64_tile(fg_bufs.1, side));
    let (bs, bd) = (f64_tile(bg_bufs.0, side), f64_tile(bg_bufs.1, side));
    slowdown_of(fg, bg, (fs, fd), (bs, bd), idle_seconds, bg_time, opts)
}

/// [`measure_slowdown`] on given tiles (contiguous or 2D).
fn slowdown_of(
    fg: &dyn Link,
    bg: &dyn Link,
    (fs, fd): (RawTile, RawTile),
    (bs, bd): (RawTile, RawTile),
    idle_seconds: f64,
    bg_time: f64,
    opts: &CalibrationOptions,
) -> Result<f64> {
    // Enough background copies to outlast a foreground copy slowed down 2x, plus one in flight.
    let nbg = if bg_time > 0.0 {
        ((2.0 * idle_seconds / bg_time).ceil() as usize + 1).clamp(2, 1000)
    } else {
        2
    };
    let m = measure_until_confident(opts, &mut || {
        for _ in 0..nbg {
            bg.copy(&bs, &bd)?;
        }
        let t = time_on_queue(fg.queue(), &mut || fg.copy(&fs, &fd));
        let b = bg.queue().synchronize();
        let t = t?;
        b?;
        Ok(t)
    })?;
    Ok(if idle_seconds > 0.0 {
        (m.mean / idle_seconds).max(1.0)
    } else {
        1.0
    })
}

/// Host-side operand data of a GEMM tile, in the tile's dtype.
enum HostData {
    F64(Vec<f64>),
    F32(Vec<f32>),
}

impl HostData {
    /// `n` pseudo-random elements in [-1, 1) with full mantissas. Values with few significant
    /// bits (small multiples of a power of two, zeros) flip fewer multiplier bits, draw less
    /// power and run at higher clocks: on H200 such data gave 63-65 TFLOP/s DGEMM where random
    /// data sustains 55.
    fn new(dtype: DType, n: usize, seed: usize) -> HostData {
        let v = |i: usize| {
            let mut z = (i as u64 ^ ((seed as u64) << 40)).wrapping_add(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        };
        match dtype {
            DType::F64 => HostData::F64((0..n).map(v).collect()),
            DType::F32 => HostData::F32((0..n).map(|i| v(i) as f32).collect()),
        }
    }

    fn addr(&self) -> u64 {
        match self {
            HostData::F64(v) => v.as_ptr() as u64,
            HostData::F32(v) => v.as_ptr() as u64,
        }
    }
}

fn square(space: MemorySpace, addr: u64, t: usize, dtype: DType) -> RawTile {
    RawTile {
        space,
        addr,
        rows: t,
        cols: t,
        ld: t.max(1),
        dtype,
    }
}

/// Times square GEMM tiles of each size of `tiles` and `dtype` on `device`'s first compute
/// queue. `h2d` (a link from the host into the device's space) initialises the operands.
/// Stops early (returning what it has) when the device runs out of memory or one run of a size
/// takes longer than the point cap divided by `min_reps` (larger sizes would take longer still).
/// Calls `tick` once per size, measured or skipped.
///
/// # Errors
/// `Unsupported` when the device has no compute queue or does not support `dtype`; backend
/// errors other than running out of memory.
pub fn measure_gemm(
    device: &dyn Device,
    h2d: Option<&dyn Link>,
    dtype: DType,
    tiles: &[usize],
    opts: &CalibrationOptions,
    tick: &mut dyn FnMut(String),
) -> Result<Vec<(usize, f64)>> {
    let label = device.info().label();
    if !device.kernel().supports(dtype) {
        return Err(Error::Unsupported {
            device: label,
            detail: format!("gemm in {dtype}"),
        });
    }
    let queue = device
        .compute_queues()
        .first()
        .cloned()
        .ok_or_else(|| Error::Unsupported {
            device: label.clone(),
            detail: "no compute queue".into(),
        })?;
    let elem = dtype.size();
    let mut out = Vec::new();
    let mut stop = false;
    for &t in tiles {
        let bytes = t * t * elem;
        let fits = t > 0
            && bytes <= opts.max_buffer_bytes
            && (device.space().is_host() || 3 * bytes as u64 <= device.memory_budget());
        if stop || !fits {
            tick(format!("gemm {label} {dtype} T={t}: skipped"));
            continue;
        }
        match time_gemm_tile(device, h2d, &queue, dtype, t, opts) {
            Ok((m, single)) => {
                out.push((t, m.mean));
                // One run already takes a good share of the cap: larger tiles would only exceed it.
                if single * opts.min_reps.max(2) as f64 > opts.point_time_cap.as_secs_f64() {
                    stop = true;
                }
                tick(format!("gemm {label} {dtype} T={t}"));
            }
            Err(Error::OutOfMemory { .. }) => {
                stop = true;
                tick(format!("gemm {label} {dtype} T={t}: out of memory"));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// The three `t x t` operands of a timed product on `device` (random data with `seed`: on the
/// host for a device computing there, else uploaded over `h2d` into device buffers) and the
/// product itself, `C += A * B`, or `C = A * B` when C could not be initialised.
struct GemmOperands {
    op: GemmTile,
    initialised: bool,
    // Kept alive for as long as products run on them.
    _data: Vec<HostData>,
    _bufs: Vec<Box<dyn Buffer>>,
}

impl GemmOperands {
    fn new(
        device: &dyn Device,
        h2d: Option<&dyn Link>,
        dtype: DType,
        t: usize,
        seed: usize,
    ) -> Result<GemmOperands> {
        let n = t * t;
        let data: Vec<HostData> = (0..3).map(|i| HostData::new(dtype, n, seed + i)).collect();
        let space = device.space();
        // Device buffers (kept alive for the whole measurement), or the host data itself.
        let mut bufs: Vec<Box<dyn Buffer>> = Vec::new();
        let mut initialised = true;
        let tiles: Vec<RawTile> = if space.is_host() {
            data.iter()
                .map(|d| square(MemorySpace::HOST, d.addr(), t, dtype))
                .collect()
        } else {
            for _ in 0..3 {
                bufs.push(device.allocate(n * dtype.size())?);
            }
            let tiles: Vec<RawTile> = bufs
                .iter()
                .map(|b| square(space, b.addr(), t, dtype))
                .collect();
            initialised = match h2d {
                Some(link) => {
                    let r = (|| -> Result<()> {
                        for (d, dst) in data.iter().zip(&tiles) {
                            link.copy(&square(MemorySpace::HOST, d.addr(), t, dtype), dst)?;
                        }
                        link.queue().synchronize()
                    })();
                    if let Err(e) = &r {
                        tracing::warn!(device = %device.info().label(), error = %e,
                            "calibration: cannot initialise gemm operands; timing uninitialised memory");
                        // Whatever was queued must be finished before `data` goes away.
                        let _ = link.queue().synchronize();
                    }
                    r.is_ok()
                }
                None => false,
            };
            tiles
        };
        let op = GemmTile {
            transa: Trans::N,
            transb: Trans::N,
            m: t,
            n: t,
            k: t,
            alpha: ScalarValue::one(dtype),
            a: tiles[0],
            b: tiles[1],
            // Accumulate as the executor does, unless C holds unknown bits.
            beta: if initialised {
                ScalarValue::one(dtype)
            } else {
                ScalarValue::zero(dtype)
            },
            c: tiles[2],
        };
        Ok(GemmOperands {
            op,
            initialised,
            _data: data,
            _bufs: bufs,
        })
    }
}

/// Measures one tile size; returns the measurement and the time of the warm-up-free first run.
fn time_gemm_tile(
    device: &dyn Device,
    h2d: Option<&dyn Link>,
    queue: &Arc<dyn Queue>,
    dtype: DType,
    t: usize,
    opts: &CalibrationOptions,
) -> Result<(Measurement, f64)> {
    let ops = GemmOperands::new(device, h2d, dtype, t, 0)?;
    let op = ops.op;
    let kernel = device.kernel();
    // One untimed product first: the first call of a dtype loads its kernels (on H200 the
    // first f32 product took long enough to stop a quick calibration after one tile size).
    time_on_queue(queue, &mut || kernel.gemm(queue, &op))?;
    // One product to size the batches, then samples of `batch` products back to back.
    let single = time_on_queue(queue, &mut || kernel.gemm(queue, &op))?;
    let batch =
        ((opts.gemm_sample.as_secs_f64() / single.max(1e-9)).ceil() as usize).clamp(1, 10_000);
    let mut first: Option<f64> = None;
    let result = measure_until_confident(opts, &mut || {
        let s = time_on_queue(queue, &mut || {
            for _ in 0..batch {
                kernel.gemm(queue, &op)?;
            }
            Ok(())
        })? / batch as f64;
        first.get_or_insert(single);
        Ok(s)
    });
    // Nothing may still run on the operands when they are dropped.
    let sync = queue.synchronize();
    let m = result?;
    sync?;
    drop(ops);
    Ok((m, first.unwrap_or(m.mean)))
}

fn human_bytes(b: usize) -> String {
    if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else if b >= 1 << 10 {
        format!("{:.1} KiB", b as f64 / 1024.0)
    } else {
        format!("{b} B")
    }
}

/// Counts points and reports progress.
struct Tracker<'a> {
    done: usize,
    total: usize,
    start: Instant,
    progress: &'a mut dyn FnMut(Progress),
}

impl Tracker<'_> {
    fn tick(&mut self, stage: String) {
        self.done = (self.done + 1).min(self.total);
        let eta = (self.done > 0).then(|| {
            self.start
                .elapsed()
                .mul_f64((self.total - self.done) as f64 / self.done as f64)
        });
        (self.progress)(Progress {
            done: self.done,
            total: self.total,
            eta,
            stage,
        });
    }

    fn skip_to(&mut self, done: usize, stage: String) {
        if done > self.done {
            self.done = done - 1;
            self.tick(stage);
        }
    }
}

/// What was measured on a link.
struct LinkRun {
    link: Arc<dyn Link>,
    side: usize,
    model: LinkModel,
    samples: Vec<(usize, f64)>,
    slowdowns: Vec<(String, f64)>,
    bid: f64,
}

fn h2d_of(links: &[Arc<dyn Link>], space: MemorySpace) -> Option<&dyn Link> {
    links
        .iter()
        .find(|l| l.src().is_host() && l.dst() == space)
        .map(|l| l.as_ref())
}

/// The link from `space` to the host, if any.
fn d2h_of(links: &[Arc<dyn Link>], space: MemorySpace) -> Option<&dyn Link> {
    links
        .iter()
        .find(|l| l.dst().is_host() && l.src() == space)
        .map(|l| l.as_ref())
}

/// Keeps the device busy with back-to-back products for `opts.gemm_warmup`, so its clocks are
/// those of a long call when the GEMM points are measured.
fn warm_up(device: &dyn Device, h2d: Option<&dyn Link>, opts: &CalibrationOptions) -> Result<()> {
    let t = opts
        .gemm_tiles
        .iter()
        .copied()
        .filter(|&t| t <= 4096)
        .max()
        .unwrap_or(1024);
    let wopts = CalibrationOptions {
        min_reps: 1,
        max_reps: 1,
        gemm_sample: opts.gemm_warmup,
        ..opts.clone()
    };
    let Some(queue) = device.compute_queues().first().cloned() else {
        return Ok(());
    };
    match time_gemm_tile(device, h2d, &queue, DType::F64, t, &wopts) {
        Ok(_) | Err(Error::OutOfMemory { .. }) | Err(Error::Unsupported { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Largest GEMM tile measured on a device computing in host memory: a CPU's rate is flat
/// beyond a few thousand (the table's last point stands for larger tiles there), while one
/// 8192^3 DGEMM takes over a second on 16 cores and every point repeats.
const HOST_GEMM_MAX_TILE: usize = 4096;

/// The GEMM tiles calibrated on `d`.
fn gemm_tiles_for(d: &dyn Device, opts: &CalibrationOptions) -> Vec<usize> {
    opts.gemm_tiles
        .iter()
        .copied()
        .filter(|&t| !d.space().is_host() || t <= HOST_GEMM_MAX_TILE)
        .collect()
}

/// Bandwidth of 2D host<->device copies of square f64 tiles whose host side is a column block of
/// a larger matrix (host pitch [`crate::model::link::STRIDED_PITCH`]), per column length in
/// bytes.
fn measure_strided(
    link: &dyn Link,
    alloc_in: &dyn Fn(MemorySpace, usize) -> Result<Box<dyn Buffer>>,
    opts: &CalibrationOptions,
    device_limit: u64,
) -> Result<Vec<(usize, f64)>> {
    let mut out = Vec::new();
    for &side in &opts.strided_sides {
        // The host pitch of a tile of a large matrix: DMA speed depends on it as well as on the
        // column length (short columns far apart cost page walks).
        let ld = side.max(crate::model::link::STRIDED_PITCH / 8);
        let host_bytes = ld * side * 8;
        // Host buffers up to 1 GiB.
        let host_cap = opts.max_buffer_bytes.max(1 << 30);
        if host_bytes > host_cap || (side * side * 8) as u64 > device_limit {
            break;
        }
        let src = alloc_in(
            link.src(),
            if link.src().is_host() {
                host_bytes
            } else {
                side * side * 8
            },
        )?;
        let dst = alloc_in(
            link.dst(),
            if link.dst().is_host() {
                host_bytes
            } else {
                side * side * 8
            },
        )?;
        let (s, d) = (
            pitched_tile(src.as_ref(), side, ld),
            pitched_tile(dst.as_ref(), side, ld),
        );
        let q = link.queue().clone();
        let m =
            measure_until_confident(opts, &mut || time_on_queue(&q, &mut || link.copy(&s, &d)))?;
        out.push((side * 8, (side * side * 8) as f64 / m.mean));
    }
    Ok(out)
}

/// The strided table of [`measure_strided`] (host pitch [`crate::model::link::STRIDED_PITCH`])
/// measured while `device`, at the link's device end, runs f64 products of the copy's tile
/// size (at most 4096) back to back: what a pipeline's copies see. On H200 the
/// difference is large for short columns (16 KiB columns of 2048 tiles: 49 GB/s alone, 33 in
/// the pipeline's timeline) and small for long ones.
fn measure_strided_busy(
    link: &dyn Link,
    device: &dyn Device,
    h2d: &dyn Link,
    alloc_in: &dyn Fn(MemorySpace, usize) -> Result<Box<dyn Buffer>>,
    opts: &CalibrationOptions,
    alone: &[(usize, f64)],
) -> Result<Vec<(usize, f64)>> {
    let Some(queue) = device.compute_queues().first().cloned() else {
        return Ok(Vec::new());
    };
    let kernel = device.kernel();
    let pitch_rows = crate::model::link::STRIDED_PITCH / 8;
    let mut out = Vec::new();
    for &(col_bytes, alone_bps) in alone {
        let side = col_bytes / 8;
        let ld = side.max(pitch_rows);
        let gside = side.min(4096);
        let ops = match GemmOperands::new(device, Some(h2d), DType::F64, gside, 13) {
            Ok(o) if o.initialised => o,
            Ok(_) | Err(Error::OutOfMemory { .. }) => break,
            Err(e) => return Err(e),
        };
        let op = ops.op;
        let single = time_on_queue(&queue, &mut || kernel.gemm(&queue, &op))?;
        let bytes_of = |sp: MemorySpace| {
            if sp.is_host() {
                ld * side * 8
            } else {
                side * side * 8
            }
        };
        let (src, dst) = (
            alloc_in(link.src(), bytes_of(link.src()))?,
            alloc_in(link.dst(), bytes_of(link.dst()))?,
        );
        let (st, dt) = (
            pitched_tile(src.as_ref(), side, ld),
            pitched_tile(dst.as_ref(), side, ld),
        );
        // Products for twice the copy's time alone, so the copy runs under them throughout.
        let copy_s = (side * side * 8) as f64 / alone_bps.max(1.0);
        let n = ((2.0 * copy_s / single.max(1e-9)).ceil() as usize + 1).clamp(2, 10_000);
        let q = link.queue().clone();
        let m = measure_until_confident(opts, &mut || {
            for _ in 0..n {
                kernel.gemm(&queue, &op)?;
            }
            let t = time_on_queue(&q, &mut || link.copy(&st, &dt));
            let s = queue.synchronize();
            let t = t?;
            s?;
            Ok(t)
        })?;
        out.push((col_bytes, (side * side * 8) as f64 / m.mean));
        drop(ops);
    }
    Ok(out)
}

/// A square f64 tile of `side` at the start of `b`: in host memory a column block of a matrix
/// with `ld` rows, on a device packed.
fn pitched_tile(b: &dyn Buffer, side: usize, ld: usize) -> RawTile {
    RawTile {
        space: b.space(),
        addr: b.addr(),
        rows: side,
        cols: side,
        ld: if b.space().is_host() { ld } else { side },
        dtype: DType::F64,
    }
}

/// Slowdown of 2D tile copies over `fg` (square f64 tiles of `side`, host side a column block
/// of a matrix at [`crate::model::link::STRIDED_PITCH`]) while `bg`, the opposite direction, runs the same copies: what
/// a pipeline that fetches and writes back tiles at once sees.
fn measure_strided_duplex(
    fg: &dyn Link,
    bg: &dyn Link,
    alloc_in: &dyn Fn(MemorySpace, usize) -> Result<Box<dyn Buffer>>,
    side: usize,
    opts: &CalibrationOptions,
) -> Result<f64> {
    let ld = side.max(crate::model::link::STRIDED_PITCH / 8);
    let bytes_of = |s: MemorySpace| {
        if s.is_host() {
            ld * side * 8
        } else {
            side * side * 8
        }
    };
    let bufs = [
        alloc_in(fg.src(), bytes_of(fg.src()))?,
        alloc_in(fg.dst(), bytes_of(fg.dst()))?,
        alloc_in(bg.src(), bytes_of(bg.src()))?,
        alloc_in(bg.dst(), bytes_of(bg.dst()))?,
    ];
    let t: Vec<RawTile> = bufs
        .iter()
        .map(|b| pitched_tile(b.as_ref(), side, ld))
        .collect();
    let idle = measure_until_confident(opts, &mut || {
        time_on_queue(fg.queue(), &mut || fg.copy(&t[0], &t[1]))
    })?
    .mean;
    let bg_time = measure_until_confident(opts, &mut || {
        time_on_queue(bg.queue(), &mut || bg.copy(&t[2], &t[3]))
    })?
    .mean;
    slowdown_of(fg, bg, (t[0], t[1]), (t[2], t[3]), idle, bg_time, opts)
}

/// How much longer `side^3` tile products of `dtype` take on `device` while its host links
/// copy in both directions (contiguous copies of up to 64 MiB, kept busy for the whole
/// measurement; `copy_bps` sizes their number): the median ratio of three paired measurements
/// (batches of `6 * gemm_sample`), at least 1. Second: how much longer host->device copies
/// take while those products run (the same pairing), at least 1.
fn measure_gemm_under_dma(
    device: &dyn Device,
    links: (&dyn Link, &dyn Link),
    alloc_in: &dyn Fn(MemorySpace, usize) -> Result<Box<dyn Buffer>>,
    dtype: DType,
    side: usize,
    copy_bps: f64,
    opts: &CalibrationOptions,
) -> Result<(f64, f64)> {
    let (h2d, d2h) = links;
    let queue = device
        .compute_queues()
        .first()
        .cloned()
        .ok_or_else(|| Error::internal("no compute queue"))?;
    let ops = GemmOperands::new(device, Some(h2d), dtype, side, 7)?;
    if !ops.initialised {
        return Err(Error::internal(
            "calibration: cannot initialise the operands of the GEMM under DMA",
        ));
    }
    let op = ops.op;
    let space = device.space();
    let kernel = device.kernel();
    // Copy buffers: up to 64 MiB each way.
    let cside = ((opts.max_buffer_bytes.min(64 << 20) / 8) as f64).sqrt() as usize;
    let cbytes = cside * cside * 8;
    let cb = [
        alloc_in(MemorySpace::HOST, cbytes)?,
        alloc_in(space, cbytes)?,
        alloc_in(space, cbytes)?,
        alloc_in(MemorySpace::HOST, cbytes)?,
    ];
    let ct: Vec<RawTile> = cb.iter().map(|b| f64_tile(b.as_ref(), cside)).collect();
    let single = time_on_queue(&queue, &mut || kernel.gemm(&queue, &op))?;
    // Batches long enough for clocks to follow the load (0.24 s in a full calibration); copies
    // for twice as long, so that they outlast the batch even when it slows down.
    let span = 6.0 * opts.gemm_sample.as_secs_f64();
    let batch = ((span / single.max(1e-9)).ceil() as usize).clamp(1, 10_000);
    let copy_time = cbytes as f64 / copy_bps.max(1.0);
    let ncopies = ((2.0 * span / copy_time).ceil() as usize).clamp(2, 4000);
    let run = |busy: bool| -> Result<f64> {
        if busy {
            for _ in 0..ncopies {
                h2d.copy(&ct[0], &ct[1])?;
                d2h.copy(&ct[2], &ct[3])?;
            }
        }
        let t = time_on_queue(&queue, &mut || {
            for _ in 0..batch {
                kernel.gemm(&queue, &op)?;
            }
            Ok(())
        });
        let s1 = h2d.queue().synchronize();
        let s2 = d2h.queue().synchronize();
        let t = t?;
        s1?;
        s2?;
        Ok(t)
    };
    // Median of three paired (busy / alone) ratios, at least 1.
    let paired = |f: &dyn Fn(bool) -> Result<f64>| -> Result<f64> {
        let mut r = Vec::with_capacity(3);
        for _ in 0..3 {
            let alone = f(false)?;
            r.push(f(true)? / alone.max(1e-12));
        }
        r.sort_by(f64::total_cmp);
        Ok(r[1].max(1.0))
    };
    let gemm_ratio = paired(&run)?;
    // Copies for half a batch, alone and under a running batch.
    let nhalf = ((0.5 * span / copy_time).ceil() as usize).clamp(1, 2000);
    let copies = |busy: bool| -> Result<f64> {
        if busy {
            for _ in 0..batch {
                kernel.gemm(&queue, &op)?;
            }
        }
        let t = time_on_queue(h2d.queue(), &mut || {
            for _ in 0..nhalf {
                h2d.copy(&ct[0], &ct[1])?;
            }
            Ok(())
        });
        let s = queue.synchronize();
        let t = t?;
        s?;
        Ok(t)
    };
    let copy_ratio = paired(&copies)?;
    queue.synchronize()?;
    drop(ops);
    Ok((gemm_ratio, copy_ratio))
}

/// Calibrates the machine: every link between known memory spaces (host and `devices`), and
/// every device's GEMM, into a [`MachineProfile`]. `host_alloc` allocates host memory for copies
/// (page-locked for GPU backends); `progress` is called after every point.
///
/// Links touching a space that is neither the host nor one of `devices` are skipped.
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
    let by_space: HashMap<MemorySpace, &Arc<dyn Device>> =
        devices.iter().map(|d| (d.space(), d)).collect();
    let label_of = |s: MemorySpace| -> Option<String> {
        if s.is_host() {
            Some(HOST_LABEL.to_string())
        } else {
            by_space.get(&s).map(|d| d.info().label())
        }
    };
    let limit_of = |s: MemorySpace| -> u64 {
        if s.is_host() {
            u64::MAX
        } else {
            by_space.get(&s).map_or(0, |d| d.memory_budget() / 4)
        }
    };
    let alloc_in = |s: MemorySpace, bytes: usize| -> Result<Box<dyn Buffer>> {
        if s.is_host() {
            host_alloc(bytes)
        } else {
            match by_space.get(&s) {
                Some(d) => d.allocate(bytes),
                None => Err(Error::internal("no device for a calibrated space")),
            }
        }
    };

    // Plan: which links, which sizes, which slowdown pairs, which gemm points.
    let usable: Vec<&Arc<dyn Link>> = links
        .iter()
        .filter(|l| label_of(l.src()).is_some() && label_of(l.dst()).is_some())
        .collect();
    let sides_of = |l: &Arc<dyn Link>| -> Vec<usize> {
        let limit = limit_of(l.src())
            .min(limit_of(l.dst()))
            .min(opts.max_buffer_bytes as u64);
        opts.link_sides
            .iter()
            .copied()
            .filter(|&s| s > 0 && (s * s * 8) as u64 <= limit)
            .collect()
    };
    let is_host_link =
        |l: &Arc<dyn Link>| matches!(l.kind(), LinkKind::HostToDevice | LinkKind::DeviceToHost);
    let pairs: Vec<(usize, usize)> = (0..usable.len())
        .flat_map(|i| (0..usable.len()).map(move |j| (i, j)))
        .filter(|&(i, j)| {
            let (a, b) = (usable[i], usable[j]);
            if i == j {
                return false;
            }
            let reverse = a.src() == b.dst() && a.dst() == b.src();
            (opts.bidirectional && reverse)
                || (opts.cross_links && is_host_link(a) && is_host_link(b))
        })
        .collect();
    let gemm_points: usize = devices
        .iter()
        .map(|d| opts.dtypes.len() * gemm_tiles_for(d.as_ref(), opts).len())
        .sum();
    let total = usable.iter().map(|l| sides_of(l).len()).sum::<usize>() + pairs.len() + gemm_points;
    let mut tr = Tracker {
        done: 0,
        total,
        start: Instant::now(),
        progress,
    };

    // Unidirectional fits.
    let mut runs: Vec<LinkRun> = Vec::new();
    for l in &usable {
        let sides = sides_of(l);
        let expected_done = tr.done + sides.len();
        let Some(&side) = sides.last() else {
            tracing::warn!(
                link = l.name(),
                "calibration: no tile size fits; link skipped"
            );
            continue;
        };
        if sides.len() < 2 {
            tracing::warn!(
                link = l.name(),
                "calibration: one tile size fits; link skipped"
            );
            tr.skip_to(expected_done, format!("link {}: skipped", l.name()));
            continue;
        }
        let bytes = side * side * 8;
        let src = alloc_in(l.src(), bytes)?;
        let dst = alloc_in(l.dst(), bytes)?;
        let (model, samples) = measure_link(
            l.as_ref(),
            src.as_ref(),
            dst.as_ref(),
            &sides,
            opts,
            &mut |s| tr.tick(s),
        )?;
        // Buffers live only while their link is measured: a device with many links would not
        // hold them all at once.
        drop((src, dst));
        runs.push(LinkRun {
            link: (*l).clone(),
            side,
            model,
            samples,
            slowdowns: Vec::new(),
            bid: 1.0,
        });
    }

    // Slowdowns under other busy links.
    for &(i, j) in &pairs {
        let (fg_name, bg_name) = (usable[i].name().to_string(), usable[j].name().to_string());
        let fi = runs.iter().position(|r| r.link.name() == fg_name);
        let bi = runs.iter().position(|r| r.link.name() == bg_name);
        let stage = format!("slowdown of {fg_name} under {bg_name}");
        let (Some(fi), Some(bi)) = (fi, bi) else {
            tr.tick(format!("{stage}: skipped"));
            continue;
        };
        let side = runs[fi].side.min(runs[bi].side);
        let bytes = side * side * 8;
        let idle = runs[fi]
            .samples
            .iter()
            .find(|s| s.0 == bytes)
            .map_or(runs[fi].model.time(bytes), |s| s.1);
        let (f, b) = (&runs[fi], &runs[bi]);
        let bufs = [
            alloc_in(f.link.src(), bytes)?,
            alloc_in(f.link.dst(), bytes)?,
            alloc_in(b.link.src(), bytes)?,
            alloc_in(b.link.dst(), bytes)?,
        ];
        let factor = measure_slowdown(
            f.link.as_ref(),
            b.link.as_ref(),
            (bufs[0].as_ref(), bufs[1].as_ref()),
            (bufs[2].as_ref(), bufs[3].as_ref()),
            side,
            idle,
            b.model.time(bytes),
            opts,
        )?;
        drop(bufs);
        let reverse = f.link.src() == b.link.dst() && f.link.dst() == b.link.src();
        let f = &mut runs[fi];
        if reverse {
            f.bid = factor;
        }
        f.slowdowns.push((bg_name, factor));
        tr.tick(stage);
    }

    let mut profile = MachineProfile::new();
    for r in &runs {
        let (Some(src_label), Some(dst_label)) = (label_of(r.link.src()), label_of(r.link.dst()))
        else {
            continue;
        };
        profile.links.push(LinkProfile {
            name: r.link.name().to_string(),
            src_label,
            dst_label,
            kind: r.link.kind(),
            latency_s: r.model.latency_s,
            bytes_per_sec: r.model.bytes_per_sec(),
            bid_slowdown: r.bid,
            slowdown_under: r.slowdowns.clone(),
            samples: r.samples.clone(),
            strided: Vec::new(),
            strided_wide: Vec::new(),
            strided_busy: Vec::new(),
            strided_bid_slowdown: None,
        });
    }
    drop(runs);

    // Host links: 2D copies of tiles that are columns of a larger host matrix.
    for lp in profile.links.iter_mut() {
        let Some(l) = usable.iter().find(|l| l.name() == lp.name) else {
            continue;
        };
        if !matches!(l.kind(), LinkKind::HostToDevice | LinkKind::DeviceToHost) {
            continue;
        }
        let limit = limit_of(if l.src().is_host() { l.dst() } else { l.src() });
        lp.strided = measure_strided(l.as_ref(), &alloc_in, opts, limit)?;
        // The same copies while the device computes, as in a pipeline. (The wide pitch,
        // measured until 2026-11-22, came out as the strided table and is no longer measured;
        // profiles that have it still use it.)
        let dev_space = if l.src().is_host() { l.dst() } else { l.src() };
        let dev = by_space.get(&dev_space);
        let h2d = usable
            .iter()
            .find(|x| x.src().is_host() && x.dst() == dev_space);
        if let (Some(dev), Some(h2d)) = (dev, h2d) {
            if !dev.space().is_host() {
                lp.strided_busy = measure_strided_busy(
                    l.as_ref(),
                    dev.as_ref(),
                    h2d.as_ref(),
                    &alloc_in,
                    opts,
                    &lp.strided,
                )?;
            }
        }
    }
    // Host links in both directions at once, on 2D tile copies (the largest strided side
    // measured, up to 4096).
    if opts.bidirectional {
        for lp in profile.links.iter_mut() {
            let Some(fg) = usable.iter().find(|l| l.name() == lp.name) else {
                continue;
            };
            if !matches!(fg.kind(), LinkKind::HostToDevice | LinkKind::DeviceToHost) {
                continue;
            }
            let Some(bg) = usable
                .iter()
                .find(|l| l.src() == fg.dst() && l.dst() == fg.src())
            else {
                continue;
            };
            // Two device tiles at once here (one each way).
            let dev = if fg.src().is_host() {
                fg.dst()
            } else {
                fg.src()
            };
            let Some(side) = lp
                .strided
                .iter()
                .rev()
                .map(|&(col, _)| col / 8)
                .find(|&s| s <= 4096 && ((s * s * 8) as u64) * 2 <= limit_of(dev))
            else {
                continue;
            };
            lp.strided_bid_slowdown = Some(measure_strided_duplex(
                fg.as_ref(),
                bg.as_ref(),
                &alloc_in,
                side,
                opts,
            )?);
        }
    }

    // Host folds (C in host memory folded there, see crate::fold): only accelerators need them.
    // In a pipeline products land in host memory while earlier ones are folded: the rate is the
    // lower of the fold alone and the fold while a device->host link copies.
    if devices.iter().any(|d| !d.space().is_host()) {
        let alone = crate::fold::measure_rate(2048, 5)?;
        let mut rate = alone;
        let d2h = usable
            .iter()
            .find(|l| l.kind() == LinkKind::DeviceToHost && l.dst().is_host());
        if let Some(l) = d2h {
            let bps = profile
                .links
                .iter()
                .find(|p| p.name == l.name())
                .map_or(10e9, |p| p.bytes_per_sec);
            let side = ((opts.max_buffer_bytes.min(64 << 20) / 8) as f64).sqrt() as usize;
            let (src, dst) = (
                alloc_in(l.src(), side * side * 8)?,
                alloc_in(l.dst(), side * side * 8)?,
            );
            let (s, d) = (f64_tile(src.as_ref(), side), f64_tile(dst.as_ref(), side));
            // Copies for about three folds at the lone rate (a 2048^2 f64 tile each).
            let fold_s = (2048.0 * 2048.0 * 8.0) / alone.max(1.0);
            let n = ((3.0 * fold_s * bps / (side * side * 8) as f64).ceil() as usize).clamp(1, 500);
            let busy = crate::fold::measure_rate_with(
                2048,
                5,
                &mut || {
                    for _ in 0..n {
                        l.copy(&s, &d)?;
                    }
                    Ok(())
                },
                &mut || l.queue().synchronize(),
            )?;
            rate = rate.min(busy);
        }
        profile.host_fold_bytes_per_sec = Some(rate);
    }

    // GEMM per device and dtype. GPUs are measured at once, one thread each: their products
    // share nothing (each has its memory, clocks and power limit), and one after the other the
    // tables took most of a 4-GPU calibration. Devices computing on host cores (the CPU,
    // emulated devices) are measured alone, after.
    let gemm_of = |d: &Arc<dyn Device>, tick: &mut dyn FnMut(String)| -> Result<Vec<GemmTimes>> {
        let h2d = h2d_of(links, d.space());
        if !d.space().is_host() && !opts.gemm_warmup.is_zero() {
            warm_up(d.as_ref(), h2d, opts)?;
        }
        let tiles = gemm_tiles_for(d.as_ref(), opts);
        let mut gemm = Vec::new();
        for &dtype in &opts.dtypes {
            if d.kernel().supports(dtype) && !d.compute_queues().is_empty() {
                let times = measure_gemm(d.as_ref(), h2d, dtype, &tiles, opts, tick)?;
                if !times.is_empty() {
                    gemm.push(GemmTimes { dtype, times });
                }
            }
        }
        Ok(gemm)
    };
    let gpus: Vec<usize> = (0..devices.len())
        .filter(|&i| devices[i].info().kind == DeviceKind::Gpu)
        .collect();
    let mut tables: Vec<Option<Result<Vec<GemmTimes>>>> = devices.iter().map(|_| None).collect();
    if gpus.len() > 1 {
        let gemm_of = &gemm_of;
        std::thread::scope(|s| {
            let handles: Vec<_> = gpus
                .iter()
                .map(|&i| (i, s.spawn(move || gemm_of(&devices[i], &mut |_| {}))))
                .collect();
            for (i, h) in handles {
                tables[i] = Some(h.join().unwrap_or_else(|_| {
                    Err(Error::internal("a GEMM calibration thread panicked"))
                }));
            }
        });
    }
    for (d, table) in devices.iter().zip(tables) {
        let info = d.info();
        let points = opts.dtypes.len() * gemm_tiles_for(d.as_ref(), opts).len();
        let expected_done = tr.done + points;
        let gemm = match table {
            Some(r) => r?,
            None => gemm_of(d, &mut |s| tr.tick(s))?,
        };
        tr.skip_to(expected_done, format!("gemm {}: done", info.label()));
        // Products while the host links copy both ways (accelerators only), at the largest
        // measured tile up to 4096.
        let mut gemm_under_dma = Vec::new();
        let mut copy_under_gemm = Vec::new();
        let (h2d, d2h) = (h2d_of(links, d.space()), d2h_of(links, d.space()));
        if let (false, Some(h2d), Some(d2h)) = (d.space().is_host(), h2d, d2h) {
            let bps = profile
                .links
                .iter()
                .filter(|l| l.name == h2d.name() || l.name == d2h.name())
                .map(|l| l.bytes_per_sec)
                .fold(f64::INFINITY, f64::min);
            let bps = if bps.is_finite() { bps } else { 10e9 };
            for g in &gemm {
                let Some(&(t, _)) = g.times.iter().rev().find(|(t, _)| *t <= 4096) else {
                    continue;
                };
                match measure_gemm_under_dma(
                    d.as_ref(),
                    (h2d, d2h),
                    &alloc_in,
                    g.dtype,
                    t,
                    bps,
                    opts,
                ) {
                    Ok((s, c)) => {
                        gemm_under_dma.push((g.dtype, s));
                        copy_under_gemm.push((g.dtype, c));
                    }
                    Err(Error::OutOfMemory { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        profile.devices.push(DeviceProfile {
            label: info.label(),
            name: info.name.clone(),
            backend: info.backend.clone(),
            memory_bytes: info.memory_bytes,
            gemm,
            gemm_under_dma,
            copy_under_gemm,
        });
    }
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles() {
        assert_eq!(student_t975(0), f64::INFINITY);
        assert_eq!(student_t975(1), 12.706);
        assert_eq!(student_t975(30), 2.042);
        // Exact: df 60 -> 2.000, df 120 -> 1.980.
        assert!((student_t975(60) - 2.000).abs() < 0.005);
        assert!((student_t975(120) - 1.980).abs() < 0.005);
    }

    #[test]
    fn stops_when_confident() {
        let opts = CalibrationOptions {
            min_reps: 3,
            max_reps: 1000,
            point_time_cap: Duration::from_secs(60),
            ..CalibrationOptions::quick()
        };
        // Constant samples: confident at min_reps.
        let mut calls = 0;
        let m = measure_until_confident(&opts, &mut || {
            calls += 1;
            Ok(1e-3)
        })
        .unwrap();
        assert_eq!(m.reps, 3);
        assert_eq!(calls, 4, "one warm-up run");
        assert!((m.mean - 1e-3).abs() < 1e-15);
        // +-20% alternating noise: needs about (2 * 0.2 / 0.05)^2 = 64 reps.
        let mut i = 0;
        let m = measure_until_confident(&opts, &mut || {
            i += 1;
            Ok(if i % 2 == 0 { 1.2 } else { 0.8 })
        })
        .unwrap();
        assert!(m.reps > 20 && m.reps < 100, "{m:?}");
        assert!(m.half_width <= 0.05 * m.mean);
        // max_reps bounds it.
        let capped = CalibrationOptions {
            max_reps: 10,
            ..opts.clone()
        };
        let mut i = 0;
        let m = measure_until_confident(&capped, &mut || {
            i += 1;
            Ok((i % 2) as f64 * 10.0)
        })
        .unwrap();
        assert_eq!(m.reps, 10);
        // Errors propagate.
        assert!(measure_until_confident(&opts, &mut || Err(Error::internal("x"))).is_err());
        assert!(measure_until_confident(&opts, &mut || Ok(f64::NAN)).is_err());
    }

    #[test]
    fn progress_eta() {
        let mut seen = Vec::new();
        {
            let mut cb = |p: Progress| seen.push(p);
            let mut tr = Tracker {
                done: 0,
                total: 4,
                start: Instant::now(),
                progress: &mut cb,
            };
            tr.tick("a".into());
            tr.skip_to(3, "b".into());
            tr.skip_to(2, "ignored".into());
            tr.tick("c".into());
            tr.tick("over".into());
        }
        let done: Vec<usize> = seen.iter().map(|p| p.done).collect();
        assert_eq!(done, vec![1, 3, 4, 4]);
        assert!(seen.iter().all(|p| p.total == 4 && p.eta.is_some()));
        assert_eq!(seen[2].eta, Some(Duration::ZERO));
    }
}
