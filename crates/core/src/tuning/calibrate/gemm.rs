//! Phase 6, the kernels: `T x T x T` GEMM tiles per dtype on a compute queue of each device,
//! over growing T, after a warm-up that brings the clocks to those of a long call; then, on
//! accelerators, products while the host links copy both ways. Operands hold random values
//! uploaded over the device's host link (without one, `beta = 0` keeps C unread).

use super::links::f64_tile;
use super::progress::Tracker;
use super::stats::{
    batch, measure_warm_until_confident, repeat, time_beside, time_on_queue, Measurement,
};
use super::{CalibrationOptions, Machine, Phases};
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
    /// `n` pseudo-random elements in [-1, 1) with full mantissas (values with few significant
    /// bits draw less power and run at higher clocks), a function of index and `seed`.
    pub(super) fn new(dtype: DType, n: usize, seed: usize) -> HostData {
        let reals = n * dtype.size() / dtype.real().size();
        match dtype.real() {
            DType::F32 => HostData::F32(random_reals(reals, seed, |x| x as f32)),
            _ => HostData::F64(random_reals(reals, seed, |x| x)),
        }
    }

    pub(super) fn addr(&self) -> u64 {
        match self {
            HostData::F64(v) => v.as_ptr() as u64,
            HostData::F32(v) => v.as_ptr() as u64,
        }
    }
}

/// `n` values of a hash of (index, `seed`) in [-1, 1), converted by `conv`, filled in parallel.
fn random_reals<T: Copy + Default + Send>(n: usize, seed: usize, conv: fn(f64) -> T) -> Vec<T> {
    let v = |i: usize| {
        let mut z = (i as u64 ^ ((seed as u64) << 40)).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    };
    let mut out = vec![T::default(); n];
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let chunk = n.div_ceil(threads).max(1 << 16);
    std::thread::scope(|s| {
        for (c, part) in out.chunks_mut(chunk).enumerate() {
            s.spawn(move || {
                for (j, x) in part.iter_mut().enumerate() {
                    *x = conv(v(c * chunk + j));
                }
            });
        }
    });
    out
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

/// Times square GEMM tiles of each size of `tiles` on `device`'s first compute queue (operands
/// initialised over `h2d`), calling `tick` once per size. Stops early when the device runs out
/// of memory or one run takes more than the point cap divided by `min_reps`.
pub fn measure_gemm(
    device: &dyn Device,
    h2d: Option<&dyn Link>,
    dtype: DType,
    tiles: &[usize],
    opts: &CalibrationOptions,
    tick: &mut dyn FnMut(String),
) -> Result<Vec<(usize, f64)>> {
    let label = device.info().label();
    let queue = gemm_queue(device, dtype)?;
    let fits = |t: usize| {
        let bytes = t * t * dtype.size();
        t > 0
            && bytes <= opts.max_buffer_bytes
            && (device.space().is_host() || 3 * bytes as u64 <= device.memory_budget())
    };
    // One set of operands for every size: the largest that the device can hold.
    let sizes: Vec<usize> = tiles.iter().copied().filter(|&t| fits(t)).collect();
    let mut bench = GemmBench::largest(device, h2d, dtype, &sizes, 0)?;
    let max = bench.as_ref().map_or(0, |b| b.max);
    let mut out = Vec::new();
    let mut stop = false;
    for &t in tiles {
        let Some(bench) = bench.as_mut().filter(|_| !stop && fits(t) && t <= max) else {
            tick(format!("gemm {label} {dtype} T={t}: skipped"));
            continue;
        };
        match time_gemm_tile(bench, &queue, t, opts) {
            Ok((m, single)) => {
                out.push((t, m.mean));
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

/// The first compute queue of `device`, which must support `dtype`.
fn gemm_queue(device: &dyn Device, dtype: DType) -> Result<Arc<dyn Queue>> {
    let unsupported = |detail| Error::Unsupported {
        device: device.info().label(),
        detail,
    };
    if !device.kernel().supports(dtype) {
        return Err(unsupported(format!("gemm in {dtype}")));
    }
    let queue = device.compute_queues().first().cloned();
    queue.ok_or_else(|| unsupported("no compute queue".into()))
}

/// Operands of timed products on one device in one dtype, for square tiles up to `max`:
/// random host data (`seed`) and, outside host memory, three device buffers whose packed
/// `t x t` heads are uploaded over `h2d` when the size changes.
pub(super) struct GemmBench<'a> {
    pub(super) device: &'a dyn Device,
    h2d: Option<&'a dyn Link>,
    dtype: DType,
    pub(super) max: usize,
    data: Vec<HostData>,
    bufs: Vec<Box<dyn Buffer>>,
    /// The size whose operands the device buffers hold (0: none yet).
    loaded: usize,
    /// Whether they hold the random data (else the upload failed: C is not read).
    pub(super) initialised: bool,
}

impl<'a> GemmBench<'a> {
    /// Host data and device buffers for tiles up to `max` (`OutOfMemory` when they don't fit).
    pub(super) fn new(
        device: &'a dyn Device,
        h2d: Option<&'a dyn Link>,
        dtype: DType,
        max: usize,
        seed: usize,
    ) -> Result<GemmBench<'a>> {
        let n = max * max;
        let mut bufs: Vec<Box<dyn Buffer>> = Vec::new();
        if !device.space().is_host() {
            for _ in 0..3 {
                bufs.push(device.allocate(n * dtype.size())?);
            }
        }
        let data = (0..3).map(|i| HostData::new(dtype, n, seed + i)).collect();
        Ok(GemmBench {
            device,
            h2d,
            dtype,
            max,
            data,
            bufs,
            loaded: 0,
            initialised: device.space().is_host(),
        })
    }

    /// A bench for the largest of `sizes` that the device can hold (`None`: not even the
    /// smallest).
    pub(super) fn largest(
        device: &'a dyn Device,
        h2d: Option<&'a dyn Link>,
        dtype: DType,
        sizes: &[usize],
        seed: usize,
    ) -> Result<Option<GemmBench<'a>>> {
        let mut sizes: Vec<usize> = sizes.iter().copied().filter(|&t| t > 0).collect();
        sizes.sort_unstable();
        while let Some(max) = sizes.pop() {
            match GemmBench::new(device, h2d, dtype, max, seed) {
                Ok(b) => return Ok(Some(b)),
                Err(Error::OutOfMemory { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// The product `C += A * B` of `t x t` tiles (`t` at most `max`; `C = A * B` when C could
    /// not be initialised). Earlier products must be synchronised before another size is asked.
    pub(super) fn op(&mut self, t: usize) -> GemmTile {
        let t = t.min(self.max);
        let (dtype, space) = (self.dtype, self.device.space());
        let tiles: Vec<RawTile> = if space.is_host() {
            self.data
                .iter()
                .map(|d| square(MemorySpace::HOST, d.addr(), t, dtype))
                .collect()
        } else {
            let tiles: Vec<RawTile> = self
                .bufs
                .iter()
                .map(|b| square(space, b.addr(), t, dtype))
                .collect();
            if self.loaded != t {
                self.loaded = t;
                self.initialised = self.upload(&tiles);
            }
            tiles
        };
        GemmTile {
            transa: Trans::N,
            transb: Trans::N,
            m: t,
            n: t,
            k: t,
            alpha: ScalarValue::one(dtype),
            a: tiles[0],
            b: tiles[1],
            // Accumulate as the executor does, unless C holds unknown bits.
            beta: if self.initialised {
                ScalarValue::one(dtype)
            } else {
                ScalarValue::zero(dtype)
            },
            c: tiles[2],
        }
    }

    /// The host data's heads into `tiles` (packed, as the tiles are); whether it worked.
    fn upload(&self, tiles: &[RawTile]) -> bool {
        let Some(link) = self.h2d else {
            return false;
        };
        let t = tiles[0].rows;
        let r = (|| -> Result<()> {
            for (d, dst) in self.data.iter().zip(tiles) {
                link.copy(&square(MemorySpace::HOST, d.addr(), t, self.dtype), dst)?;
            }
            link.queue().synchronize()
        })();
        if let Err(e) = &r {
            tracing::warn!(device = %self.device.info().label(), error = %e,
                "calibration: cannot initialise gemm operands; timing uninitialised memory");
            // Whatever was queued must be finished before the data can go away.
            let _ = link.queue().synchronize();
        }
        r.is_ok()
    }
}

/// Measures one tile size on `bench`, and the time of its first run.
pub(super) fn time_gemm_tile(
    bench: &mut GemmBench<'_>,
    queue: &Arc<dyn Queue>,
    t: usize,
    opts: &CalibrationOptions,
) -> Result<(Measurement, f64)> {
    let op = bench.op(t);
    let kernel = bench.device.kernel();
    // One untimed product first: the first call of a dtype loads its kernels. Then one to
    // size the batches; the samples after them discard none.
    time_on_queue(queue, &mut || kernel.gemm(queue, &op))?;
    let single = time_on_queue(queue, &mut || kernel.gemm(queue, &op))?;
    let n = batch(opts.gemm_sample.as_secs_f64(), single);
    let result = measure_warm_until_confident(opts, &mut || {
        Ok(time_on_queue(queue, &mut || repeat(n, &mut || kernel.gemm(queue, &op)))? / n as f64)
    });
    // Nothing may still run on the operands when they are used for another size or dropped.
    let sync = queue.synchronize();
    let m = result?;
    sync?;
    Ok((m, single))
}

pub(super) fn link_of(
    links: &[Arc<dyn Link>],
    src: MemorySpace,
    dst: MemorySpace,
) -> Option<&dyn Link> {
    links
        .iter()
        .find(|l| l.src() == src && l.dst() == dst)
        .map(|l| l.as_ref())
}

/// Keeps the device busy with back-to-back products (at the largest calibrated tile up to
/// 4096) for `opts.gemm_warmup`, so its clocks are those of a long call.
pub(super) fn warm_up(
    device: &dyn Device,
    h2d: Option<&dyn Link>,
    opts: &CalibrationOptions,
) -> Result<()> {
    if opts.gemm_warmup.is_zero() || !device.kernel().supports(DType::F64) {
        return Ok(());
    }
    let t = opts
        .gemm_tiles
        .iter()
        .copied()
        .filter(|&t| t <= 4096)
        .max()
        .unwrap_or(1024);
    let Some(mut bench) = GemmBench::largest(device, h2d, DType::F64, &[t], 0)? else {
        return Ok(());
    };
    let Some(queue) = device.compute_queues().first().cloned() else {
        return Ok(());
    };
    let op = bench.op(t);
    let kernel = device.kernel();
    let start = std::time::Instant::now();
    let single = time_on_queue(&queue, &mut || kernel.gemm(&queue, &op))?;
    let n = batch(0.05, single);
    let run = (|| -> Result<()> {
        while start.elapsed() < opts.gemm_warmup {
            repeat(n, &mut || kernel.gemm(&queue, &op))?;
            queue.synchronize()?;
        }
        Ok(())
    })();
    let sync = queue.synchronize();
    run?;
    sync
}

/// Largest GEMM tile measured on a device computing in host memory: a CPU's rate is flat
/// beyond a few thousand (on the H200 hosts 4096 within -1% to +12% of 3072), and slow.
pub(super) const HOST_GEMM_MAX_TILE: usize = 3072;

pub(super) fn gemm_tiles_for(d: &dyn Device, opts: &CalibrationOptions) -> Vec<usize> {
    opts.gemm_tiles
        .iter()
        .copied()
        .filter(|&t| !d.space().is_host() || t <= HOST_GEMM_MAX_TILE)
        .collect()
}

/// The dtypes whose GEMM tables are measured on `d`: those of `opts`, only the real ones in
/// host memory (the models take a complex type from its real one within 4% there,
/// [`DeviceProfile::exec_table`]).
pub(super) fn gemm_dtypes_for(d: &dyn Device, opts: &CalibrationOptions) -> Vec<DType> {
    opts.dtypes
        .iter()
        .copied()
        .filter(|t| !(d.space().is_host() && t.is_complex()))
        .collect()
}

/// How much longer `side^3` tile products take on `device` while its host links copy both
/// ways (up to 64 MiB copies; `copy_bps` sizes their number), and how much longer host->device
/// copies take beside the products: medians of three paired ratios, at least 1.
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
    let queue = gemm_queue(device, dtype)?;
    let mut bench = GemmBench::new(device, Some(h2d), dtype, side, 7)?;
    let op = bench.op(side);
    if !bench.initialised {
        return Err(Error::internal(
            "calibration: cannot initialise the operands of the GEMM under DMA",
        ));
    }
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
    // Copies for twice a batch, so that they outlast it even when it slows down.
    let span = UNDER_DMA_SAMPLES * opts.gemm_sample.as_secs_f64();
    let n = batch(span, single);
    let copy_time = cbytes as f64 / copy_bps.max(1.0);
    let ncopies = ((2.0 * span / copy_time).ceil() as usize).clamp(2, 4000);
    let run = |busy: bool| -> Result<f64> {
        let copies = if busy { ncopies } else { 0 };
        time_beside(
            &mut || {
                repeat(copies, &mut || {
                    h2d.copy(&ct[0], &ct[1])?;
                    d2h.copy(&ct[2], &ct[3])
                })
            },
            &queue,
            &mut || repeat(n, &mut || kernel.gemm(&queue, &op)),
            &[h2d.queue(), d2h.queue()],
        )
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
        let products = if busy { n } else { 0 };
        time_beside(
            &mut || repeat(products, &mut || kernel.gemm(&queue, &op)),
            h2d.queue(),
            &mut || repeat(nhalf, &mut || h2d.copy(&ct[0], &ct[1])),
            &[&queue],
        )
    };
    let copy_ratio = paired(&copies)?;
    queue.synchronize()?;
    drop(bench);
    Ok((gemm_ratio, copy_ratio))
}

/// The batches of the products under DMA last this many GEMM samples: long enough for clocks
/// to follow the load (0.12 s in a full calibration).
const UNDER_DMA_SAMPLES: f64 = 6.0;

/// The GEMM points planned on `d` (for progress).
pub(super) fn points(d: &dyn Device, opts: &CalibrationOptions) -> usize {
    gemm_dtypes_for(d, opts).len() * gemm_tiles_for(d, opts).len()
}

/// Phase 5: every device's profile: its GEMM tables and, on accelerators, its products under
/// copies beside the measured `links`.
pub(super) fn device_profiles(
    m: &Machine<'_>,
    links: &[LinkProfile],
    opts: &CalibrationOptions,
    tr: &mut Tracker<'_>,
    phases: &mut Phases,
) -> Result<Vec<DeviceProfile>> {
    let mut tables = gpu_tables(m, opts);
    if tables.iter().any(Option::is_some) {
        phases.end("GEMM tables of the GPUs at once");
    }
    let mut gemms = Vec::with_capacity(m.devices.len());
    for (i, d) in m.devices.iter().enumerate() {
        let expected_done = tr.done + points(d.as_ref(), opts);
        let label = d.info().label();
        let gemm = match tables[i].take() {
            Some(r) => r?,
            None => {
                let table = gemm_table(m.links, d, opts, &mut |s| tr.tick(s))?;
                // Per device: which table a slow calibration spent its time on.
                phases.end(&format!("GEMM table {label}"));
                table
            }
        };
        tr.skip_to(expected_done, format!("gemm {label}: done"));
        gemms.push(gemm);
    }
    let mut profiles = Vec::with_capacity(m.devices.len());
    for (d, gemm) in m.devices.iter().zip(gemms) {
        let info = d.info();
        let (gemm_under_dma, copy_under_gemm) = under_dma(m, d, &gemm, links, opts)?;
        if !d.space().is_host() {
            tr.tick(format!("gemm {} beside copies", info.label()));
        }
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
    phases.end("products beside copies");
    Ok(profiles)
}

/// One device's GEMM table per dtype it supports, after a warm-up on accelerators.
fn gemm_table(
    links: &[Arc<dyn Link>],
    d: &Arc<dyn Device>,
    opts: &CalibrationOptions,
    tick: &mut dyn FnMut(String),
) -> Result<Vec<GemmTimes>> {
    let h2d = link_of(links, MemorySpace::HOST, d.space());
    if !d.space().is_host() && !opts.gemm_warmup.is_zero() {
        warm_up(d.as_ref(), h2d, opts)?;
    }
    let tiles = gemm_tiles_for(d.as_ref(), opts);
    let mut gemm = Vec::new();
    for dtype in gemm_dtypes_for(d.as_ref(), opts) {
        if d.kernel().supports(dtype) && !d.compute_queues().is_empty() {
            let times = measure_gemm(d.as_ref(), h2d, dtype, &tiles, opts, tick)?;
            if !times.is_empty() {
                gemm.push(GemmTimes { dtype, times });
            }
        }
    }
    Ok(gemm)
}

/// The GPUs' tables, measured at once when there are several ([`at_once`]); `None` for devices
/// left to measure one at a time (one GPU, and devices computing on host cores).
fn gpu_tables(m: &Machine<'_>, opts: &CalibrationOptions) -> Vec<Option<Result<Vec<GemmTimes>>>> {
    let gpu = |d: &Arc<dyn Device>| d.info().kind == DeviceKind::Gpu;
    let several = m.devices.iter().filter(|d| gpu(d)).count() > 1;
    let links = m.links;
    at_once(
        m.devices,
        |d| several && gpu(d),
        |d| gemm_table(links, d, opts, &mut |_| {}),
    )
}

/// `f` of each of `jobs` that `picked` selects, one thread each, all at once (GPUs share
/// nothing: each has its memory, clocks and power limit); `None` for the others.
pub(super) fn at_once<J: Sync, T: Send>(
    jobs: &[J],
    picked: impl Fn(&J) -> bool,
    f: impl Fn(&J) -> Result<T> + Sync,
) -> Vec<Option<Result<T>>> {
    std::thread::scope(|s| {
        let hs: Vec<_> = jobs
            .iter()
            .map(|j| picked(j).then(|| s.spawn(|| f(j))))
            .collect();
        hs.into_iter()
            .map(|h| {
                h.map(|h| {
                    h.join().unwrap_or_else(|p| {
                        Err(Error::internal(crate::host_queue::panic_message(&p)))
                    })
                })
            })
            .collect()
    })
}

/// Products while the host links copy both ways (accelerators only), at the largest measured
/// tile up to 4096: (GEMM slowdown, copy slowdown) per real dtype that fits beside the copies.
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
    let (s, host) = (d.space(), MemorySpace::HOST);
    let (h2d, d2h) = (link_of(m.links, host, s), link_of(m.links, s, host));
    let (false, Some(h2d), Some(d2h)) = (s.is_host(), h2d, d2h) else {
        return Ok((gemm_under_dma, copy_under_gemm));
    };
    let bps = links
        .iter()
        .filter(|l| l.name == h2d.name() || l.name == d2h.name())
        .map(|l| l.bytes_per_sec)
        .fold(f64::INFINITY, f64::min);
    let bps = if bps.is_finite() { bps } else { 10e9 };
    for g in gemm.iter().filter(|g| !g.dtype.is_complex()) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operand_data_is_the_same_on_any_number_of_threads() {
        // More than one chunk of 2^16, not a multiple of it.
        let n = 3 * (1 << 16) + 17;
        let v = random_reals(n, 5, |x| x);
        let w = random_reals(n, 5, |x| x);
        assert_eq!(v, w);
        assert!(v.iter().all(|x| (-1.0..1.0).contains(x)));
        // Each value depends on its index and the seed only: the head of a longer vector is
        // the shorter one, and another seed gives other values.
        assert_eq!(&random_reals(n + 1000, 5, |x| x)[..n], &v[..]);
        assert_ne!(random_reals(16, 6, |x| x), v[..16].to_vec());
        // Full mantissas, not small multiples of a power of two (see `HostData::new`).
        assert!(v.iter().take(100).all(|x| (x * 1024.0).fract() != 0.0));
        let HostData::F32(f) = HostData::new(DType::C32, 10, 5) else {
            panic!("c32 data is f32 pairs");
        };
        assert_eq!(f.len(), 20);
        assert_eq!(f[3], v[3] as f32);
    }
}
