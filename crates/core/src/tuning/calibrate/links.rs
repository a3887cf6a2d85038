//! Phases 1 and 2, the links: square f64 tiles of growing size are copied over each link and
//! `t = t_i + t_b b` is fitted to the means ([`LinkModel::fit_relative`]: relative residuals, so
//! the small sizes fix the latency); then each link's largest tile is timed while its reverse
//! link (and, with [`CalibrationOptions::cross_links`], every other host link) copies
//! continuously: `sl = t_busy / t_idle`, at least 1.

use super::progress::{human_bytes, Tracker};
use super::stats::{measure_until_confident, repeat, time_beside, time_on_queue};
use super::strided::is_host_link;
use super::{CalibrationOptions, Machine};
use crate::error::{Error, Result};
use crate::link::Link;
use crate::memory::{Buffer, RawTile};
use crate::model::link::LinkModel;
use crate::profile::LinkProfile;
use crate::scalar::DType;
use std::sync::Arc;

/// A packed square f64 tile of `side` at the start of `buf`.
pub(super) fn f64_tile(buf: &dyn Buffer, side: usize) -> RawTile {
    super::gemm::square(buf.space(), buf.addr(), side, DType::F64)
}

/// Mean seconds of a copy of `s` to `d` over `link`, repeated until the mean is confident.
pub(super) fn copy_seconds(
    link: &dyn Link,
    s: &RawTile,
    d: &RawTile,
    opts: &CalibrationOptions,
) -> Result<f64> {
    let m = measure_until_confident(opts, &mut || {
        time_on_queue(link.queue(), &mut || link.copy(s, d))
    })?;
    Ok(m.mean)
}

/// The slowdown of copying tile `fs` to `fd` over `fg` while `bg` copies `bs` to `bd`
/// continuously (`bg_time` a copy): `t_busy / idle_seconds`, at least 1.
pub(super) fn slowdown_of(
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
        time_beside(
            &mut || repeat(nbg, &mut || bg.copy(&bs, &bd)),
            fg.queue(),
            &mut || fg.copy(&fs, &fd),
            &[bg.queue()],
        )
    })?;
    Ok(if idle_seconds > 0.0 {
        (m.mean / idle_seconds).max(1.0)
    } else {
        1.0
    })
}

/// Largest tile of a slowdown measurement (bytes): at 55 GB/s about 1.2 ms a copy.
const SLOWDOWN_BYTES: usize = 64 << 20;

/// What was measured on a link.
pub(super) struct LinkRun {
    link: Arc<dyn Link>,
    side: usize,
    model: LinkModel,
    samples: Vec<(usize, f64)>,
    slowdowns: Vec<(String, f64)>,
    bid: f64,
}

/// The (foreground, background) pairs of usable links whose slowdown is measured: each link
/// under its reverse (`opts.bidirectional`) and each host link under every other host link
/// (`opts.cross_links`).
pub(super) fn slowdown_pairs(
    usable: &[&Arc<dyn Link>],
    opts: &CalibrationOptions,
) -> Vec<(usize, usize)> {
    (0..usable.len())
        .flat_map(|i| (0..usable.len()).map(move |j| (i, j)))
        .filter(|&(i, j)| {
            let (a, b) = (usable[i], usable[j]);
            if i == j {
                return false;
            }
            let reverse = a.src() == b.dst() && a.dst() == b.src();
            (opts.bidirectional && reverse)
                || (opts.cross_links && is_host_link(a.as_ref()) && is_host_link(b.as_ref()))
        })
        .collect()
}

/// Phase 1: the latency and bandwidth of every usable link. A link on which fewer than two
/// tile sizes fit is skipped (with a warning).
pub(super) fn fit_links(
    m: &Machine<'_>,
    opts: &CalibrationOptions,
    tr: &mut Tracker<'_>,
) -> Result<Vec<LinkRun>> {
    let mut runs: Vec<LinkRun> = Vec::new();
    for l in &m.usable {
        let sides = m.link_sides(l, opts);
        let expected_done = tr.done + sides.len();
        let Some(&side) = sides.last().filter(|_| sides.len() >= 2) else {
            let n = if sides.is_empty() { "no" } else { "one" };
            tracing::warn!(
                link = l.name(),
                "calibration: {n} tile size fits; link skipped"
            );
            tr.skip_to(expected_done, format!("link {}: skipped", l.name()));
            continue;
        };
        let bytes = side * side * 8;
        let src = m.alloc_in(l.src(), bytes)?;
        let dst = m.alloc_in(l.dst(), bytes)?;
        let mut samples = Vec::with_capacity(sides.len());
        for &side in &sides {
            let bytes = side * side * 8;
            let (s, d) = (f64_tile(src.as_ref(), side), f64_tile(dst.as_ref(), side));
            samples.push((bytes, copy_seconds(l.as_ref(), &s, &d, opts)?));
            tr.tick(format!("link {}: {}", l.name(), human_bytes(bytes)));
        }
        let model = LinkModel::fit_relative(&samples)
            .map_err(|e| Error::Profile(format!("link {}: {e}", l.name())))?;
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
    Ok(runs)
}

/// Phase 2: the slowdown of each pair's foreground link while its background link copies.
pub(super) fn measure_slowdowns(
    m: &Machine<'_>,
    pairs: &[(usize, usize)],
    runs: &mut [LinkRun],
    opts: &CalibrationOptions,
    tr: &mut Tracker<'_>,
) -> Result<()> {
    for &(i, j) in pairs {
        let (fg_name, bg_name) = (
            m.usable[i].name().to_string(),
            m.usable[j].name().to_string(),
        );
        let fi = runs.iter().position(|r| r.link.name() == fg_name);
        let bi = runs.iter().position(|r| r.link.name() == bg_name);
        let stage = format!("slowdown of {fg_name} under {bg_name}");
        let (Some(fi), Some(bi)) = (fi, bi) else {
            tr.tick(format!("{stage}: skipped"));
            continue;
        };
        // Tiles of up to SLOWDOWN_BYTES: the factor is a bandwidth ratio, the same for any
        // copy well past the latency, and larger buffers cost more to make than to measure.
        let side = runs[fi]
            .samples
            .iter()
            .map(|&(b, _)| ((b / 8) as f64).sqrt().round() as usize)
            .filter(|&s| s <= runs[fi].side.min(runs[bi].side) && s * s * 8 <= SLOWDOWN_BYTES)
            .max()
            .unwrap_or_else(|| runs[fi].side.min(runs[bi].side));
        let bytes = side * side * 8;
        let idle = runs[fi]
            .samples
            .iter()
            .find(|s| s.0 == bytes)
            .map_or(runs[fi].model.time(bytes), |s| s.1);
        let (f, b) = (&runs[fi], &runs[bi]);
        let bufs = [
            m.alloc_in(f.link.src(), bytes)?,
            m.alloc_in(f.link.dst(), bytes)?,
            m.alloc_in(b.link.src(), bytes)?,
            m.alloc_in(b.link.dst(), bytes)?,
        ];
        let t: Vec<RawTile> = bufs.iter().map(|b| f64_tile(b.as_ref(), side)).collect();
        let factor = slowdown_of(
            f.link.as_ref(),
            b.link.as_ref(),
            (t[0], t[1]),
            (t[2], t[3]),
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
    Ok(())
}

/// The profile entries of the measured links (their 2D tables still empty).
pub(super) fn link_profiles(m: &Machine<'_>, runs: Vec<LinkRun>) -> Vec<LinkProfile> {
    runs.into_iter()
        .filter_map(|r| {
            let src_label = m.label_of(r.link.src())?;
            let dst_label = m.label_of(r.link.dst())?;
            Some(LinkProfile {
                name: r.link.name().to_string(),
                src_label,
                dst_label,
                kind: r.link.kind(),
                latency_s: r.model.latency_s,
                bytes_per_sec: r.model.bytes_per_sec(),
                bid_slowdown: r.bid,
                slowdown_under: r.slowdowns,
                samples: r.samples,
                strided: Vec::new(),
                strided_wide: Vec::new(),
                strided_busy: Vec::new(),
                strided_near: Vec::new(),
                strided_near_busy: Vec::new(),
                strided_bid_slowdown: None,
                staged_out: None,
            })
        })
        .collect()
}
