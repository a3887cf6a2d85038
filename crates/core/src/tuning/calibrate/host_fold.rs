//! Phase 4, the host fold (C in host memory, `C = beta*C + P` on the host; see [`crate::fold`]):
//! only accelerators need it. In a pipeline, products land in host memory while earlier ones
//! are folded, so the rate is the lower of the fold alone and the fold while a device->host link
//! copies.

use super::links::f64_tile;
use super::{CalibrationOptions, Machine};
use crate::error::Result;
use crate::link::LinkKind;
use crate::profile::LinkProfile;

/// Bytes of C folded per second, or `None` when no device computes outside host memory.
pub(super) fn rate(
    m: &Machine<'_>,
    links: &[LinkProfile],
    opts: &CalibrationOptions,
) -> Result<Option<f64>> {
    if !m.devices.iter().any(|d| !d.space().is_host()) {
        return Ok(None);
    }
    let mut bench = crate::fold::FoldBench::new(2048)?;
    let alone = bench.rate(5, &mut || Ok(()), &mut || Ok(()))?;
    let mut rate = alone;
    let d2h = m
        .usable
        .iter()
        .find(|l| l.kind() == LinkKind::DeviceToHost && l.dst().is_host());
    if let Some(l) = d2h {
        let bps = links
            .iter()
            .find(|p| p.name == l.name())
            .map_or(10e9, |p| p.bytes_per_sec);
        // Copies for about three folds at the lone rate (a 2048^2 f64 tile each), each copy
        // no longer than a fold: on a slow link one copy of the size cap would outlast it.
        let fold_s = (2048.0 * 2048.0 * 8.0) / alone.max(1.0);
        let cap = (opts.max_buffer_bytes.min(64 << 20) as f64).min(fold_s * bps);
        let side = ((cap / 8.0).sqrt() as usize).max(64);
        let (src, dst) = (
            m.alloc_in(l.src(), side * side * 8)?,
            m.alloc_in(l.dst(), side * side * 8)?,
        );
        let (s, d) = (f64_tile(src.as_ref(), side), f64_tile(dst.as_ref(), side));
        let n = ((3.0 * fold_s * bps / (side * side * 8) as f64).ceil() as usize).clamp(1, 500);
        let busy = bench.rate(
            5,
            &mut || super::stats::repeat(n, &mut || l.copy(&s, &d)),
            &mut || l.queue().synchronize(),
        )?;
        rate = rate.min(busy);
    }
    Ok(Some(rate))
}
