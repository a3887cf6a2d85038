//! Phase 5, staged write-backs ([`StagedOut`]) into a fresh host output, on devices that stage
//! them ([`crate::Device::stages_host_output`]). A call populates its pages from its start
//! ([`crate::Device::begin_host_call`]), so here they are touched first, then the tiles copied.

use super::Machine;
use crate::device::Device;
use crate::error::Result;
use crate::link::{Link, LinkKind};
use crate::memory::{Buffer, HostAccess};
use crate::model::link::LinkModel;
use crate::profile::{LinkProfile, StagedOut};
use crate::scalar::DType;
use std::time::Instant;

/// Order of the fresh f64 output: 128 MiB, above the size from which the GPU layer stages
/// fresh outputs (4 MiB, `hetblas_gpu::registration::FRESH_STAGED_BYTES`).
const ORDER: usize = 4096;
/// Tile sides written back: 16 copy-outs of 8 MiB and 4 of 32 MiB, whose difference gives the
/// cost of a copy-out beyond its bytes.
const SIDES: [usize; 2] = [1024, 2048];
/// Fresh outputs written back per side; the median is kept.
const REPEATS: usize = 3;

/// Measures [`LinkProfile::staged_out`] of every device->host link whose device stages fresh
/// outputs.
pub(super) fn measure(m: &Machine<'_>, links: &mut [LinkProfile]) -> Result<()> {
    for l in &m.usable {
        if l.kind() != LinkKind::DeviceToHost || !l.dst().is_host() {
            continue;
        }
        let (Some(dev), Some(profile)) = (
            m.device_in(l.src()),
            links.iter_mut().find(|p| p.name == l.name()),
        ) else {
            continue;
        };
        let bytes = ORDER * ORDER * 8;
        if bytes as u64 > m.limit_of(l.src()) {
            continue;
        }
        // A fresh output: untouched pages of a new mapping.
        let fresh_output = || vec![0.0f64; ORDER * ORDER];
        let staged = |fresh: &mut [f64]| dev.stages_host_output(fresh.as_mut_ptr() as u64, bytes);
        if !staged(&mut fresh_output()) {
            continue;
        }
        let src = m.alloc_in(l.src(), bytes)?;
        let mut seconds = [0.0; 2];
        for (slot, &side) in SIDES.iter().enumerate() {
            let mut runs = Vec::with_capacity(REPEATS);
            for _ in 0..REPEATS {
                let mut fresh = fresh_output();
                if !staged(&mut fresh) {
                    break;
                }
                let s = write_back(l.as_ref(), dev.as_ref(), src.as_ref(), &mut fresh, side)?;
                runs.push(s);
            }
            if runs.len() < REPEATS {
                break;
            }
            runs.sort_by(f64::total_cmp);
            seconds[slot] = runs[REPEATS / 2];
        }
        if seconds.iter().all(|&s| s > 0.0) {
            profile.staged_out = fit(seconds, &profile.model());
        }
    }
    Ok(())
}

/// Seconds to write `fresh` (never touched) back from `src` over `link` in `side` tiles, as a
/// call does: prepared (staged), populated, every tile copied, the link synchronised.
fn write_back(
    link: &dyn Link,
    dev: &dyn Device,
    src: &dyn Buffer,
    fresh: &mut [f64],
    side: usize,
) -> Result<f64> {
    let whole = |space, addr| super::gemm::square(space, addr, ORDER, DType::F64);
    let (from, to) = (
        whole(src.space(), src.addr()),
        whole(crate::MemorySpace::HOST, fresh.as_mut_ptr() as u64),
    );
    dev.prepare_host(to.addr, to.extent_bytes(), HostAccess::ReadWrite)?;
    // Populated as a call's background population does, on every core.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = fresh.len().div_ceil(threads);
    std::thread::scope(|s| {
        for part in fresh.chunks_mut(per) {
            s.spawn(move || part.fill(1.0));
        }
    });
    let start = Instant::now();
    let issued = (|| {
        for j in (0..ORDER).step_by(side) {
            for i in (0..ORDER).step_by(side) {
                link.copy(&from.sub(i, j, side, side), &to.sub(i, j, side, side))?;
            }
        }
        Ok(())
    })();
    // Synchronised whatever was issued: no copy may outlive `fresh`.
    let synced = link.queue().synchronize();
    let seconds = start.elapsed().as_secs_f64();
    issued.and(synced)?;
    dev.release_host(to.addr, to.extent_bytes())?;
    Ok(seconds)
}

/// The copy-outs' speed and per-copy cost from the two write-backs (`seconds` of [`SIDES`]):
/// each took its first tile's DMA (`dma`), then its copy-outs one after another.
fn fit(seconds: [f64; 2], dma: &LinkModel) -> Option<StagedOut> {
    let tiles = SIDES.map(|s| (ORDER / s) * (ORDER / s));
    let after = [0, 1].map(|i| seconds[i] - dma.time(SIDES[i] * SIDES[i] * 8));
    let per_copy_s = ((after[0] - after[1]) / (tiles[0] - tiles[1]) as f64).max(0.0);
    let bytes_s = after[1] - tiles[1] as f64 * per_copy_s;
    if bytes_s <= 0.0 {
        return None;
    }
    StagedOut {
        bytes_per_sec: (ORDER * ORDER * 8) as f64 / bytes_s,
        per_copy_s,
    }
    .usable()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Copy-outs at 30 GB/s costing 0.2 ms each beyond their bytes, behind a DMA at 50 GB/s:
    /// the fit finds both.
    #[test]
    fn the_fit_separates_the_per_copy_cost_from_the_speed() {
        let dma = LinkModel::new(5e-6, 50e9, 1.0);
        let (bytes, bps, per) = ((ORDER * ORDER * 8) as f64, 30e9, 0.2e-3);
        let seconds = [0, 1].map(|i| {
            let tiles = (ORDER / SIDES[i]).pow(2) as f64;
            dma.time(SIDES[i] * SIDES[i] * 8) + tiles * per + bytes / bps
        });
        let s = fit(seconds, &dma).expect("a fit");
        assert!((s.bytes_per_sec / bps - 1.0).abs() < 1e-9, "{s:?}");
        assert!((s.per_copy_s / per - 1.0).abs() < 1e-9, "{s:?}");
        // Faster than the DMA alone can explain: no fit.
        assert_eq!(fit([1e-4, 1e-4], &dma), None);
    }
}
