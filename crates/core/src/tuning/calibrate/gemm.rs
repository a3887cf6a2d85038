//! Phase 5, the kernels: `T x T x T` GEMM tiles per dtype on a compute queue of each device,
//! over growing T (stopping once one run exceeds the point cap or memory runs out), after a
//! warm-up that brings the clocks to those of a long call; then, on accelerators, products
//! while the host links copy both ways.
//!
//! GEMM operands are initialised from host vectors of random values through the device's host
//! link when it has one (otherwise they hold whatever the allocation held, and `beta = 0`
//! keeps the kernel from reading C).

use super::links::f64_tile;
use super::progress::Tracker;
use super::stats::{measure_until_confident, time_on_queue, Measurement};
use super::{CalibrationOptions, Machine};
use crate::device::Device;
use crate::device::DeviceKind;
use crate::error::{Error, Result};
use crate::kernel::GemmTile;
use crate::link::Link;
use crate::memory::{Buffer, MemorySpace, RawTile};
use crate::operand::Trans;
use crate::profile::{DeviceProfile, GemmTimes, LinkProfile};
use crate::queue::Queue;
use crate::scalar::{DType, ScalarValue};
use std::sync::Arc;

/// Host-side operand data of a GEMM tile, in the tile's dtype: a complex element is its two
/// real parts side by side, as BLAS stores it.
pub(super) enum HostData {
    F64(Vec<f64>),
    F32(Vec<f32>),
}

impl HostData {
    /// `n` pseudo-random elements in [-1, 1) with full mantissas. Values with few significant
    /// bits (small multiples of a power of two, zeros) flip fewer multiplier bits, draw less
    /// power and run at higher clocks: on H200 such data gave 63-65 TFLOP/s DGEMM where random
    /// data sustains 55.
    pub(super) fn new(dtype: DType, n: usize, seed: usize) -> HostData {
        let v = |i: usize| {
            let mut z = (i as u64 ^ ((seed as u64) << 40)).wrapping_add(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        };
        let reals = n * dtype.size() / dtype.real().size();
        match dtype.real() {
            DType::F32 => HostData::F32((0..reals).map(|i| v(i) as f32).collect()),
            _ => HostData::F64((0..reals).map(v).collect()),
        }
    }

    pub(super) fn addr(&self) -> u64 {
        match self {
            HostData::F64(v) => v.as_ptr() as u64,
            HostData::F32(v) => v.as_ptr() as u64,
        }
    }
}

pub(super) fn square(space: MemorySpace, addr: u64, t: usize, dtype: DType) -> RawTile {
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
pub(super) struct GemmOperands {
    pub(super) op: GemmTile,
    pub(super) initialised: bool,
    // Kept alive for as long as products run on them.
    _data: Vec<HostData>,
    _bufs: Vec<Box<dyn Buffer>>,
}

impl GemmOperands {
    pub(super) fn new(
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
pub(super) fn time_gemm_tile(
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

pub(super) fn h2d_of(links: &[Arc<dyn Link>], space: MemorySpace) -> Option<&dyn Link> {
    links
        .iter()
        .find(|l| l.src().is_host() && l.dst() == space)
        .map(|l| l.as_ref())
}

/// The link from `space` to the host, if any.
pub(super) fn d2h_of(links: &[Arc<dyn Link>], space: MemorySpace) -> Option<&dyn Link> {
    links
        .iter()
        .find(|l| l.dst().is_host() && l.src() == space)
        .map(|l| l.as_ref())
}

/// Keeps the device busy with back-to-back products for `opts.gemm_warmup`, so its clocks are
/// those of a long call when the GEMM points are measured.
pub(super) fn warm_up(
    device: &dyn Device,
    h2d: Option<&dyn Link>,
    opts: &CalibrationOptions,
) -> Result<()> {
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
pub(super) const HOST_GEMM_MAX_TILE: usize = 4096;

/// The GEMM tiles calibrated on `d`.
pub(super) fn gemm_tiles_for(d: &dyn Device, opts: &CalibrationOptions) -> Vec<usize> {
    opts.gemm_tiles
        .iter()
        .copied()
        .filter(|&t| !d.space().is_host() || t <= HOST_GEMM_MAX_TILE)
        .collect()
}

/// How much longer `side^3` tile products of `dtype` take on `device` while its host links
/// copy in both directions (contiguous copies of up to 64 MiB, kept busy for the whole
/// measurement; `copy_bps` sizes their number): the median ratio of three paired measurements
/// (batches of `6 * gemm_sample`), at least 1. Second: how much longer host->device copies
/// take while those products run (the same pairing), at least 1.
pub(super) fn measure_gemm_under_dma(
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

/// The GEMM points planned over `devices` (for progress).
pub(super) fn points(devices: &[Arc<dyn Device>], opts: &CalibrationOptions) -> usize {
    devices
        .iter()
        .map(|d| opts.dtypes.len() * gemm_tiles_for(d.as_ref(), opts).len())
        .sum()
}

/// Phase 5: every device's profile: its GEMM tables and, on accelerators, its products under
/// copies. `links` are the measured links (their bandwidths set the copy load).
pub(super) fn device_profiles(
    m: &Machine<'_>,
    links: &[LinkProfile],
    opts: &CalibrationOptions,
    tr: &mut Tracker<'_>,
) -> Result<Vec<DeviceProfile>> {
    let mut tables = gpu_tables(m, opts);
    let mut profiles = Vec::with_capacity(m.devices.len());
    for (i, d) in m.devices.iter().enumerate() {
        let info = d.info();
        let expected_done = tr.done + opts.dtypes.len() * gemm_tiles_for(d.as_ref(), opts).len();
        let gemm = match tables[i].take() {
            Some(r) => r?,
            None => gemm_table(m.links, d, opts, &mut |s| tr.tick(s))?,
        };
        tr.skip_to(expected_done, format!("gemm {}: done", info.label()));
        let (gemm_under_dma, copy_under_gemm) = under_dma(m, d, &gemm, links, opts)?;
        profiles.push(DeviceProfile {
            label: info.label(),
            name: info.name.clone(),
            backend: info.backend.clone(),
            memory_bytes: info.memory_bytes,
            gemm,
            gemm_under_dma,
            copy_under_gemm,
        });
    }
    Ok(profiles)
}

/// One device's GEMM table per dtype it supports, after a warm-up on accelerators.
fn gemm_table(
    links: &[Arc<dyn Link>],
    d: &Arc<dyn Device>,
    opts: &CalibrationOptions,
    tick: &mut dyn FnMut(String),
) -> Result<Vec<GemmTimes>> {
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
}

/// The GPUs' tables, measured at once, one thread each, when there are several: their
/// products share nothing (each has its memory, clocks and power limit), and one after the
/// other the tables took most of a 4-GPU calibration. Per device: `None` for devices left to
/// measure one at a time (one GPU, and devices computing on host cores: the CPU, emulated
/// devices).
fn gpu_tables(m: &Machine<'_>, opts: &CalibrationOptions) -> Vec<Option<Result<Vec<GemmTimes>>>> {
    let mut tables: Vec<Option<Result<Vec<GemmTimes>>>> = m.devices.iter().map(|_| None).collect();
    let gpus: Vec<usize> = (0..m.devices.len())
        .filter(|&i| m.devices[i].info().kind == DeviceKind::Gpu)
        .collect();
    if gpus.len() > 1 {
        let (devices, links) = (m.devices, m.links);
        std::thread::scope(|s| {
            let handles: Vec<_> = gpus
                .iter()
                .map(|&i| {
                    (
                        i,
                        s.spawn(move || gemm_table(links, &devices[i], opts, &mut |_| {})),
                    )
                })
                .collect();
            for (i, h) in handles {
                tables[i] = Some(h.join().unwrap_or_else(|_| {
                    Err(Error::internal("a GEMM calibration thread panicked"))
                }));
            }
        });
    }
    tables
}

/// Products while the host links copy both ways (accelerators only), at the largest measured
/// tile up to 4096: (GEMM slowdown, copy slowdown) per dtype. A dtype whose operands do not fit
/// beside the copy buffers is left out.
#[allow(clippy::type_complexity)] // two parallel (dtype, factor) tables, as the profile keeps them
fn under_dma(
    m: &Machine<'_>,
    d: &Arc<dyn Device>,
    gemm: &[GemmTimes],
    links: &[LinkProfile],
    opts: &CalibrationOptions,
) -> Result<(Vec<(DType, f64)>, Vec<(DType, f64)>)> {
    let mut gemm_under_dma = Vec::new();
    let mut copy_under_gemm = Vec::new();
    let (h2d, d2h) = (h2d_of(m.links, d.space()), d2h_of(m.links, d.space()));
    let (false, Some(h2d), Some(d2h)) = (d.space().is_host(), h2d, d2h) else {
        return Ok((gemm_under_dma, copy_under_gemm));
    };
    let bps = links
        .iter()
        .filter(|l| l.name == h2d.name() || l.name == d2h.name())
        .map(|l| l.bytes_per_sec)
        .fold(f64::INFINITY, f64::min);
    let bps = if bps.is_finite() { bps } else { 10e9 };
    for g in gemm {
        let Some(&(t, _)) = g.times.iter().rev().find(|(t, _)| *t <= 4096) else {
            continue;
        };
        match measure_gemm_under_dma(
            d.as_ref(),
            (h2d, d2h),
            &|s, b| m.alloc_in(s, b),
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
    Ok((gemm_under_dma, copy_under_gemm))
}
