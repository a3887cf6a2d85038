//! Phase 3, host links on 2D tiles: copies of square f64 tiles whose host side is a column
//! block of a larger matrix, as the executor issues them; the same while the device computes;
//! and both directions at once.

use super::gemm::{link_of, GemmBench};
use super::links::{copy_seconds, slowdown_of};
use super::stats::{measure_until_confident, repeat, time_beside, time_on_queue};
use super::{CalibrationOptions, Machine};
use crate::error::Result;
use crate::link::{Link, LinkKind};
use crate::memory::{Buffer, MemorySpace, RawTile};
use crate::model::link::{NEAR_PITCH, STRIDED_PITCH};
use crate::profile::LinkProfile;
use crate::scalar::DType;

/// The sides of `opts.strided_sides` measured at host pitch `pitch` (bytes): columns shorter
/// than `below` bytes, while the host side (a column block of a matrix with `pitch / 8` rows,
/// at most 1 GiB or the buffer cap) and the device side fit.
fn strided_sides(
    opts: &CalibrationOptions,
    device_limit: u64,
    pitch: usize,
    below: usize,
) -> Vec<usize> {
    let host_cap = opts.max_buffer_bytes.max(1 << 30);
    opts.strided_sides
        .iter()
        .copied()
        .filter(|&s| s * 8 < below)
        .take_while(|&side| {
            side.max(pitch / 8) * side * 8 <= host_cap && (side * side * 8) as u64 <= device_limit
        })
        .collect()
}

/// Where, within 2 MiB, the host side of every measured tile starts: 4 KiB before a boundary,
/// where large `malloc` blocks mostly start, so that every column longer than 4 KiB crosses a
/// 128 KiB boundary, which slows short columns (issue 57 in `docs/PERFORMANCE.md`).
const HOST_TILE_OFFSET_IN_2MIB: usize = TWO_MIB - 4096;

/// The span [`HOST_TILE_OFFSET_IN_2MIB`] is taken within; host buffers hold this much more than
/// their tile spans, room to move its start there.
const TWO_MIB: usize = 2 << 20;

/// The buffers of one link's 2D copies at one host pitch, for every side up to `side`: the
/// host one a column block of a matrix with `ld` rows ([`pitched_tile`]), the device one packed.
struct PitchedBuffers {
    src: Box<dyn Buffer>,
    dst: Box<dyn Buffer>,
    ld: usize,
}

impl PitchedBuffers {
    fn new(
        link: &dyn Link,
        alloc_in: &dyn Fn(MemorySpace, usize) -> Result<Box<dyn Buffer>>,
        side: usize,
        pitch: usize,
    ) -> Result<PitchedBuffers> {
        let ld = side.max(pitch / 8);
        let bytes = |s: MemorySpace| {
            if s.is_host() {
                ld * side * 8 + TWO_MIB
            } else {
                side * side * 8
            }
        };
        Ok(PitchedBuffers {
            src: alloc_in(link.src(), bytes(link.src()))?,
            dst: alloc_in(link.dst(), bytes(link.dst()))?,
            ld,
        })
    }

    /// The copy's tiles for `side`: the host side keeps the pitch of the largest side (for
    /// every side at least the pitch the table is measured at).
    fn tiles(&self, side: usize) -> (RawTile, RawTile) {
        (
            pitched_tile(self.src.as_ref(), side, self.ld),
            pitched_tile(self.dst.as_ref(), side, self.ld),
        )
    }
}

/// A strided table (the columns of `alone`) measured while the link's device runs f64 products
/// of the copy's tile size (at most 4096) back to back: what a pipeline's copies see.
fn measure_strided_busy(
    link: &dyn Link,
    bench: &mut GemmBench<'_>,
    bufs: &PitchedBuffers,
    opts: &CalibrationOptions,
    alone: &[(usize, f64)],
) -> Result<Vec<(usize, f64)>> {
    let Some(queue) = bench.device.compute_queues().first().cloned() else {
        return Ok(Vec::new());
    };
    let kernel = bench.device.kernel();
    let mut out = Vec::new();
    for &(col_bytes, alone_bps) in alone {
        let side = col_bytes / 8;
        let op = bench.op(side.min(4096));
        if !bench.initialised {
            break;
        }
        let single = time_on_queue(&queue, &mut || kernel.gemm(&queue, &op))?;
        let (st, dt) = bufs.tiles(side);
        // Products for twice the copy's time alone, so the copy runs under them throughout.
        let copy_s = (side * side * 8) as f64 / alone_bps.max(1.0);
        let n = ((2.0 * copy_s / single.max(1e-9)).ceil() as usize + 1).clamp(2, 10_000);
        let m = measure_until_confident(opts, &mut || {
            time_beside(
                &mut || repeat(n, &mut || kernel.gemm(&queue, &op)),
                link.queue(),
                &mut || link.copy(&st, &dt),
                &[&queue],
            )
        })?;
        out.push((col_bytes, (side * side * 8) as f64 / m.mean));
    }
    Ok(out)
}

/// A square f64 tile of `side` in `b`: in host memory a column block of a matrix with `ld`
/// rows, starting at [`HOST_TILE_OFFSET_IN_2MIB`] within 2 MiB (`b` holds [`TWO_MIB`] more than
/// the tile spans); on a device packed, at the start.
pub(super) fn pitched_tile(b: &dyn Buffer, side: usize, ld: usize) -> RawTile {
    let addr = if b.space().is_host() {
        let (span, want) = (TWO_MIB as u64, HOST_TILE_OFFSET_IN_2MIB as u64);
        b.addr() + (want + span - b.addr() % span) % span
    } else {
        b.addr()
    };
    RawTile {
        space: b.space(),
        addr,
        rows: side,
        cols: side,
        ld: if b.space().is_host() { ld } else { side },
        dtype: DType::F64,
    }
}

/// The device end of a host link.
fn device_end(l: &dyn Link) -> MemorySpace {
    if l.src().is_host() {
        l.dst()
    } else {
        l.src()
    }
}

pub(super) fn is_host_link(l: &dyn Link) -> bool {
    matches!(l.kind(), LinkKind::HostToDevice | LinkKind::DeviceToHost)
}

/// Phase 3a: every host link's 2D tile copies, alone and, for accelerators, while the device
/// computes; at the strided pitch and, for shorter columns, at the near pitch. Calls `tick`
/// after each table.
pub(super) fn host_link_tiles(
    m: &Machine<'_>,
    links: &mut [LinkProfile],
    opts: &CalibrationOptions,
    tick: &mut dyn FnMut(String),
) -> Result<()> {
    for lp in links.iter_mut() {
        let Some(l) = m.usable_named(&lp.name) else {
            continue;
        };
        if !is_host_link(l.as_ref()) {
            continue;
        }
        let dev_space = device_end(l.as_ref());
        let limit = m.limit_of(dev_space);
        let alloc = |s, b| m.alloc_in(s, b);
        let h2d = link_of(m.links, MemorySpace::HOST, dev_space);
        // Products beside the copies: f64 operands of up to 4096 on the device, made once.
        let mut bench = match (m.device_in(dev_space), h2d) {
            (Some(dev), Some(h2d)) if !dev.space().is_host() => {
                let sides: Vec<usize> = opts
                    .strided_sides
                    .iter()
                    .copied()
                    .filter(|&s| s <= 4096 && (s * s * 8) as u64 <= limit)
                    .collect();
                GemmBench::largest(dev.as_ref(), Some(h2d), DType::F64, &sides, 13)?
            }
            _ => None,
        };
        // Columns shorter than the near pitch again at that pitch: on H200 they move at up to
        // the contiguous rate there, and the far tables would price them at half of it.
        for (pitch, below) in [(STRIDED_PITCH, usize::MAX), (NEAR_PITCH, NEAR_PITCH)] {
            let sides = strided_sides(opts, limit, pitch, below);
            let Some(&largest) = sides.last() else {
                continue;
            };
            let bufs = PitchedBuffers::new(l.as_ref(), &alloc, largest, pitch)?;
            let alone = sides
                .iter()
                .map(|&side| {
                    let (s, d) = bufs.tiles(side);
                    let seconds = copy_seconds(l.as_ref(), &s, &d, opts)?;
                    Ok((side * 8, (side * side * 8) as f64 / seconds))
                })
                .collect::<Result<Vec<_>>>()?;
            let what = format!("2D copies {} at {} KiB pitch", lp.name, pitch >> 10);
            tick(what.clone());
            let busy = match bench.as_mut() {
                Some(b) => {
                    let busy = measure_strided_busy(l.as_ref(), b, &bufs, opts, &alone)?;
                    tick(format!("{what} beside products"));
                    busy
                }
                None => Vec::new(),
            };
            if pitch == STRIDED_PITCH {
                lp.strided = alone;
                lp.strided_busy = busy;
            } else {
                lp.strided_near = alone;
                lp.strided_near_busy = busy;
            }
        }
    }
    Ok(())
}

/// The 2D-copy tables of [`host_link_tiles`] planned over the usable links (for progress).
pub(super) fn tables(m: &Machine<'_>) -> usize {
    m.usable
        .iter()
        .filter(|l| is_host_link(l.as_ref()))
        .map(|l| {
            let dev = m.device_in(device_end(l.as_ref()));
            2 + 2 * usize::from(dev.is_some_and(|d| !d.space().is_host()))
        })
        .sum()
}

/// Phase 3b: host links in both directions at once, on 2D tile copies (the largest strided side
/// measured, up to 4096, with one device tile each way).
pub(super) fn host_link_duplex(
    m: &Machine<'_>,
    links: &mut [LinkProfile],
    opts: &CalibrationOptions,
    tick: &mut dyn FnMut(String),
) -> Result<()> {
    for lp in links.iter_mut() {
        let Some(fg) = m.usable_named(&lp.name) else {
            continue;
        };
        if !is_host_link(fg.as_ref()) {
            continue;
        }
        let Some(bg) = m
            .usable
            .iter()
            .find(|l| l.src() == fg.dst() && l.dst() == fg.src())
        else {
            continue;
        };
        let dev = device_end(fg.as_ref());
        let Some(side) = lp
            .strided
            .iter()
            .rev()
            .map(|&(col, _)| col / 8)
            .find(|&s| s <= 4096 && ((s * s * 8) as u64) * 2 <= m.limit_of(dev))
        else {
            continue;
        };
        // What a pipeline that fetches and writes back tiles at once sees.
        let alloc = |s, b| m.alloc_in(s, b);
        let fg_bufs = PitchedBuffers::new(fg.as_ref(), &alloc, side, STRIDED_PITCH)?;
        let bg_bufs = PitchedBuffers::new(bg.as_ref(), &alloc, side, STRIDED_PITCH)?;
        let (f, b) = (fg_bufs.tiles(side), bg_bufs.tiles(side));
        let idle = copy_seconds(fg.as_ref(), &f.0, &f.1, opts)?;
        let bg_time = copy_seconds(bg.as_ref(), &b.0, &b.1, opts)?;
        let slowdown = slowdown_of(fg.as_ref(), bg.as_ref(), f, b, idle, bg_time, opts)?;
        lp.strided_bid_slowdown = Some(slowdown);
        tick(format!("2D copies {} both ways", lp.name));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host memory at a given address (nothing is read or written through it here).
    #[derive(Debug)]
    struct At(u64, usize);

    impl Buffer for At {
        fn space(&self) -> MemorySpace {
            MemorySpace::HOST
        }
        fn addr(&self) -> u64 {
            self.0
        }
        fn len(&self) -> usize {
            self.1
        }
    }

    #[test]
    fn the_host_tile_starts_at_its_offset_in_2mib_wherever_the_buffer_does() {
        let (side, ld) = (1024, STRIDED_PITCH / 8);
        let span = ld * side * 8 + TWO_MIB;
        for start in [
            0u64,
            4096,
            TWO_MIB as u64 - 4096,
            TWO_MIB as u64 - 8192,
            12345 << 12,
            7 << 21,
        ] {
            let b = At(start, span);
            let t = pitched_tile(&b, side, ld);
            assert_eq!(
                t.addr % TWO_MIB as u64,
                HOST_TILE_OFFSET_IN_2MIB as u64,
                "{start}"
            );
            assert!(t.addr >= start && t.addr + t.extent_bytes() as u64 <= start + span as u64);
            assert_eq!((t.rows, t.cols, t.ld), (side, side, ld));
        }
    }
}
