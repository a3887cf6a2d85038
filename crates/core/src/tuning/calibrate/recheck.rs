//! The fast path of calibration: a previous profile of the same hardware (same devices and
//! links), re-checked on a few points: each link's largest calibrated tile up to 32 MiB, one
//! GEMM tile per device, and the host fold's rate. When every point is within its tolerance
//! the profile is reused as it is; when some moved, but no more than [`RESCALE_LIMIT`], it is
//! reused rescaled ([`Recheck::rescaled`]): a clock, a power cap or a co-tenant moves the level
//! of a device's curve, not its shape. The fold, a level with no shape, is rescaled however
//! far it moved, but never taken faster than calibrated.

use super::gemm::{at_once, link_of, measure_gemm, warm_up};
use super::links::{copy_seconds, f64_tile};
use super::progress::Tracker;
use super::{CalibrationOptions, Machine, Progress};
use crate::device::{Device, DeviceKind};
use crate::error::Result;
use crate::link::Link;
use crate::memory::{Buffer, MemorySpace};
use crate::profile::MachineProfile;
use crate::scalar::DType;
use std::sync::Arc;
use std::time::Duration;

/// Largest relative difference between a re-measured point and the profile for the profile
/// to be reused: above run-to-run noise (2-3% on H200 for both copies and products), below a
/// change that moves the model's choices (a link or clock 10% slower).
pub const RECHECK_TOLERANCE: f64 = 0.08;

/// The host fold's tolerance: its rate is a level with no shape, so a small move is taken too
/// (on H200 hosts it re-measured 4-7% off the profile). A faster fold is taken only up to the
/// rate calibration measured ([`MachineProfile::host_fold_calibrated_bytes_per_sec`]): a fold
/// alone in the re-check is the best a fold does.
pub const FOLD_TOLERANCE: f64 = 0.03;

/// Largest relative difference of a point that is rescaled rather than recalibrated: beyond
/// it the hardware or its setup changed, and the curve's shape may have with it.
pub const RESCALE_LIMIT: f64 = 0.5;

/// Largest link tile re-measured (bytes): at full bandwidth, within a millisecond or so.
const LINK_BYTES: usize = 32 << 20;
/// Largest GEMM tile re-measured.
const GEMM_TILE: usize = 4096;

/// One device's GEMM point to re-measure: the device, dtype, tile and the profile's seconds.
type GemmJob<'a> = (&'a Arc<dyn Device>, DType, usize, f64);

type GemmPoints = Vec<(usize, f64)>;

/// What a re-measured point belongs to.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A device's GEMM (by label).
    Gemm(String),
    /// A link (by name).
    Link(String),
    /// The host fold's rate.
    HostFold,
}

impl Target {
    /// How far the point may move before the profile no longer holds.
    pub fn tolerance(&self) -> f64 {
        match self {
            Target::HostFold => FOLD_TOLERANCE,
            Target::Gemm(_) | Target::Link(_) => RECHECK_TOLERANCE,
        }
    }
}

/// What a re-check found.
#[derive(Debug, Clone, PartialEq)]
pub struct Recheck {
    /// The previous profile describes this hardware and every point is within its tolerance
    /// ([`Target::tolerance`]).
    pub holds: bool,
    /// The largest |measured / profile - 1| over the points.
    pub worst: f64,
    /// One line per point (or why the profile is for other hardware).
    pub points: Vec<String>,
    /// The profile describes this hardware and every point was measured.
    pub complete: bool,
    /// Each point beyond its tolerance: what it measured, and measured / profile.
    pub moved: Vec<(Target, f64)>,
}

impl Recheck {
    /// One point of `target`: `measured` against the profile's `expected` seconds.
    fn judge(&mut self, target: Target, what: String, measured: f64, expected: f64) {
        let rel = relative(measured, expected);
        self.worst = self.worst.max(rel.abs());
        if rel.abs() > target.tolerance() {
            self.holds = false;
            self.moved.push((target, 1.0 + rel));
        }
        self.points.push(format!(
            "{what}: measured {:.4} ms, profile {:.4} ms ({:+.1}%)",
            measured * 1e3,
            expected * 1e3,
            rel * 100.0
        ));
    }

    /// A point that could not be measured: the profile cannot be judged whole.
    fn unmeasured(&mut self, what: &str) {
        self.holds = false;
        self.complete = false;
        self.points.push(format!("{what}: could not be measured"));
    }

    /// Before any point is judged: the profile holds until one says otherwise.
    fn nothing_measured() -> Recheck {
        Recheck {
            holds: true,
            worst: 0.0,
            points: Vec::new(),
            complete: true,
            moved: Vec::new(),
        }
    }

    fn other_hardware(why: String) -> Recheck {
        Recheck {
            holds: false,
            worst: f64::INFINITY,
            points: vec![why],
            complete: false,
            moved: Vec::new(),
        }
    }

    /// Whether the profile can be reused rescaled: it describes this hardware, every point was
    /// measured, and no GEMM or link point moved by more than [`RESCALE_LIMIT`] (the host
    /// fold may have moved any distance; a profile that `holds` needs no rescale).
    pub fn rescalable(&self) -> bool {
        !self.holds
            && self.complete
            && self
                .moved
                .iter()
                .all(|(t, r)| *t == Target::HostFold || (r - 1.0).abs() <= RESCALE_LIMIT)
    }

    /// Whether the profile is reusable with only its host fold rescaled (every other point held).
    pub fn only_fold_moved(&self) -> bool {
        self.rescalable() && self.moved.iter().all(|(t, _)| *t == Target::HostFold)
    }

    /// `previous` with every moved point's device GEMM times, link or fold rate scaled by its
    /// measured ratio (times by the ratio, rates by its inverse).
    pub fn rescaled(&self, previous: &MachineProfile) -> MachineProfile {
        let mut p = previous.clone();
        for (target, r) in &self.moved {
            match target {
                Target::Gemm(label) => {
                    for d in p.devices.iter_mut().filter(|d| &d.label == label) {
                        for g in &mut d.gemm {
                            for (_, s) in &mut g.times {
                                *s *= r;
                            }
                        }
                    }
                }
                Target::HostFold => {
                    // The calibrated rate stays known, so that a later re-check can raise a
                    // lowered rate back to it.
                    p.host_fold_calibrated_bytes_per_sec = p
                        .host_fold_calibrated_bytes_per_sec
                        .or(p.host_fold_bytes_per_sec);
                    p.host_fold_bytes_per_sec = p.host_fold_bytes_per_sec.map(|bps| bps / r);
                }
                Target::Link(name) => {
                    for l in p.links.iter_mut().filter(|l| &l.name == name) {
                        l.latency_s *= r;
                        l.bytes_per_sec /= r;
                        for (_, s) in &mut l.samples {
                            *s *= r;
                        }
                        for table in [
                            &mut l.strided,
                            &mut l.strided_wide,
                            &mut l.strided_busy,
                            &mut l.strided_near,
                            &mut l.strided_near_busy,
                        ] {
                            for (_, bw) in table.iter_mut() {
                                *bw /= r;
                            }
                        }
                    }
                }
            }
        }
        p
    }
}

/// The measurement options of a re-check: the quick calibration's, with buffers large enough
/// for the [`GEMM_TILE`] point in any dtype.
fn recheck_options() -> CalibrationOptions {
    let quick = CalibrationOptions::quick();
    CalibrationOptions {
        min_reps: 5,
        max_reps: 50,
        point_time_cap: Duration::from_millis(300),
        gemm_sample: Duration::from_millis(20),
        gemm_warmup: Duration::from_millis(500),
        max_buffer_bytes: quick
            .max_buffer_bytes
            .max(GEMM_TILE * GEMM_TILE * DType::C64.size()),
        ..quick
    }
}

/// Re-checks `previous` on `devices` and `links` (see the module doc). `host_alloc` as for
/// [`super::calibrate`]; `progress` after every point.
///
/// # Errors
/// Allocation failures and backend errors (a profile for other hardware is not an error:
/// `holds` is false).
pub fn recheck(
    previous: &MachineProfile,
    devices: &[Arc<dyn Device>],
    links: &[Arc<dyn Link>],
    host_alloc: &dyn Fn(usize) -> Result<Box<dyn Buffer>>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Recheck> {
    let m = Machine::new(devices, links, host_alloc);
    if let Err(e) = previous.check_matches(devices) {
        return Ok(Recheck::other_hardware(e.to_string()));
    }
    if previous.devices.len() != devices.len() {
        return Ok(Recheck::other_hardware(format!(
            "the profile has {} devices, this machine {}",
            previous.devices.len(),
            devices.len()
        )));
    }
    // The link topology: the same links, of the same kinds.
    let mut pairs = Vec::new();
    for l in &m.usable {
        let (Some(src), Some(dst)) = (m.label_of(l.src()), m.label_of(l.dst())) else {
            continue;
        };
        match previous.link(&src, &dst) {
            Some(p) if p.kind == l.kind() => pairs.push((*l, p)),
            _ => {
                return Ok(Recheck::other_hardware(format!(
                    "link {} ({:?}) is not in the profile",
                    l.name(),
                    l.kind()
                )))
            }
        }
    }
    if pairs.len() != previous.links.len() {
        return Ok(Recheck::other_hardware(format!(
            "the profile has {} links, this machine {}",
            previous.links.len(),
            pairs.len()
        )));
    }
    let opts = recheck_options();
    let fold = previous.host_fold_bytes_per_sec.filter(|&bps| bps > 0.0);
    let mut tr = Tracker::new(pairs.len() + 1 + usize::from(fold.is_some()), progress);
    let mut out = Recheck::nothing_measured();
    for (l, p) in &pairs {
        // The profile's own largest sample within the size cap (what was measured, not the
        // fit's extrapolation), else the fit at the cap.
        let cap = LINK_BYTES.min(m.limit_of(l.src()).min(m.limit_of(l.dst())) as usize);
        let (side, expected) = match p
            .samples
            .iter()
            .filter(|(b, _)| *b <= cap)
            .max_by_key(|(b, _)| *b)
        {
            Some(&(b, t)) => (((b / 8) as f64).sqrt().round() as usize, t),
            None => {
                let side = ((cap / 8) as f64).sqrt() as usize;
                let b = side * side * 8;
                (side, p.latency_s + b as f64 / p.bytes_per_sec)
            }
        };
        if side < 16 {
            tr.tick(format!("link {}: no room", l.name()));
            continue;
        }
        let bytes = side * side * 8;
        let (src, dst) = (m.alloc_in(l.src(), bytes)?, m.alloc_in(l.dst(), bytes)?);
        let (s, d) = (f64_tile(src.as_ref(), side), f64_tile(dst.as_ref(), side));
        let got = copy_seconds(l.as_ref(), &s, &d, &opts)?;
        out.judge(
            Target::Link(l.name().to_string()),
            format!("link {} {bytes} B", l.name()),
            got,
            expected,
        );
        tr.tick(format!("re-check link {}", l.name()));
    }
    // One GEMM point per device, every device at once.
    let jobs: Vec<GemmJob<'_>> = devices
        .iter()
        .filter_map(|d| {
            let dp = previous.device(&d.info().label())?;
            let g = dp
                .gemm
                .iter()
                .find(|g| g.dtype == DType::F64)
                .or_else(|| dp.gemm.first())?;
            let &(t, s) = g
                .times
                .iter()
                .filter(|(t, _)| *t <= GEMM_TILE)
                .max_by_key(|(t, _)| *t)?;
            Some((d, g.dtype, t, s))
        })
        .collect();
    // GPUs at once, then the others one at a time; each warmed up first, as calibration
    // measures warm. A point outside the tolerance is measured once more and the faster kept
    // (a transient only slows a point).
    let measure = |&(d, dtype, t, expected): &GemmJob<'_>| -> Result<GemmPoints> {
        let h2d = link_of(links, MemorySpace::HOST, d.space());
        // At the point's own tile: a slow device's largest one could take minutes.
        let warm = CalibrationOptions {
            gemm_tiles: vec![t],
            ..opts.clone()
        };
        warm_up(d.as_ref(), h2d, &warm)?;
        let first = measure_gemm(d.as_ref(), h2d, dtype, &[t], &opts, &mut |_| {})?;
        match first.first() {
            Some(&(_, s)) if relative(s, expected).abs() > RECHECK_TOLERANCE => {
                let again = measure_gemm(d.as_ref(), h2d, dtype, &[t], &opts, &mut |_| {})?;
                Ok(faster_points(first, again))
            }
            _ => Ok(first),
        }
    };
    let gpu = |j: &GemmJob<'_>| j.0.info().kind == DeviceKind::Gpu;
    for (job, got) in jobs.iter().zip(at_once(&jobs, gpu, measure)) {
        let (d, dtype, t, expected) = job;
        let what = format!("gemm {} {dtype} T={t}", d.info().label());
        match got.unwrap_or_else(|| measure(job))?.first() {
            Some(&(_, s)) => out.judge(Target::Gemm(d.info().label()), what, s, *expected),
            None => out.unmeasured(&what),
        }
    }
    tr.tick("re-check gemm".into());
    if let Some(bps) = fold {
        // Seconds of a 2048^2 f64 tile's fold, as the rate is measured; a fold too slow is
        // measured once more and the faster kept.
        let tile = (2048 * 2048 * 8) as f64;
        let measure = || -> Result<Option<f64>> {
            Ok(super::host_fold::rate(&m, &previous.links, &opts)?.map(|r| tile / r.max(1.0)))
        };
        let expected = tile / bps;
        let got = match measure()? {
            Some(s) if relative(s, expected) > Target::HostFold.tolerance() => {
                Some(measure()?.map_or(s, |again| again.min(s)))
            }
            got => got,
        };
        match got {
            Some(s) => {
                let fastest = fastest_fold_seconds(tile, previous);
                let what = if s < fastest {
                    format!(
                        "host fold 2048^2 f64 ({:.4} ms, faster than calibrated: taken at the \
                         calibrated rate)",
                        s * 1e3
                    )
                } else {
                    "host fold 2048^2 f64".into()
                };
                out.judge(Target::HostFold, what, s.max(fastest), expected)
            }
            None => out.unmeasured("host fold"),
        }
        tr.tick("re-check host fold".into());
    }
    Ok(out)
}

/// `measured / expected - 1`: how far a re-measured point moved from the profile's.
fn relative(measured: f64, expected: f64) -> f64 {
    measured / expected.max(1e-12) - 1.0
}

/// Per tile, the faster of two measurements of the same points.
fn faster_points(a: GemmPoints, b: GemmPoints) -> GemmPoints {
    a.into_iter()
        .map(|(t, s)| {
            let other = b.iter().find(|(u, _)| *u == t).map_or(s, |&(_, o)| o);
            (t, s.min(other))
        })
        .collect()
}

/// The shortest time a re-check takes for the fold of `tile` bytes of C: that of the rate
/// calibration measured ([`FOLD_TOLERANCE`]).
fn fastest_fold_seconds(tile: f64, previous: &MachineProfile) -> f64 {
    let rate = previous.host_fold_bytes_per_sec.unwrap_or(0.0);
    let calibrated = previous
        .host_fold_calibrated_bytes_per_sec
        .unwrap_or(rate)
        .max(rate);
    if calibrated > 0.0 {
        tile / calibrated
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moved(points: &[(Target, f64)]) -> Recheck {
        Recheck {
            holds: false,
            worst: points
                .iter()
                .map(|(_, r)| (r - 1.0).abs())
                .fold(0.0, f64::max),
            points: Vec::new(),
            complete: true,
            moved: points.to_vec(),
        }
    }

    #[test]
    fn a_host_fold_that_moved_rescales_however_far() {
        let previous = MachineProfile {
            host_fold_bytes_per_sec: Some(21.8e9),
            ..MachineProfile::default()
        };
        // Folds 2.5x slower (a host whose memory is shared with a busy neighbour).
        let check = moved(&[(Target::HostFold, 2.5)]);
        assert!(check.rescalable());
        let p = check.rescaled(&previous);
        let got = p.host_fold_bytes_per_sec.unwrap();
        assert!((got - 21.8e9 / 2.5).abs() < 1.0, "{got}");
        // A GEMM point that far off is other hardware (or setup): a full calibration.
        let check = moved(&[
            (Target::HostFold, 2.5),
            (Target::Gemm("cuda:0".into()), 1.6),
        ]);
        assert!(!check.rescalable());
        // A profile without a fold rate stays without one.
        let p = moved(&[(Target::HostFold, 2.0)]).rescaled(&MachineProfile::default());
        assert_eq!(p.host_fold_bytes_per_sec, None);
    }

    #[test]
    fn a_host_fold_moves_beyond_its_own_tolerance() {
        let judged = |target: Target, rel: f64| {
            let mut r = Recheck::nothing_measured();
            r.judge(target, "point".into(), 1.0 + rel, 1.0);
            r
        };
        // 5.6% slower: within a GEMM point's tolerance, beyond the fold's.
        let gemm = judged(Target::Gemm("cuda:0".into()), 0.056);
        assert!(gemm.holds && gemm.moved.is_empty());
        let fold = judged(Target::HostFold, 0.056);
        assert!(!fold.holds && fold.rescalable(), "{fold:?}");
        assert_eq!(fold.moved.len(), 1);
        assert!((fold.moved[0].1 - 1.056).abs() < 1e-12);
        // Within the measurement's noise it holds.
        assert!(judged(Target::HostFold, -0.02).holds);
    }

    #[test]
    fn a_faster_fold_is_taken_up_to_the_calibrated_rate() {
        let tile = (2048 * 2048 * 8) as f64;
        // As calibrated (21.8 GB/s): a fold measured at 24.7 is judged at 21.8, and holds.
        let calibrated = MachineProfile {
            host_fold_bytes_per_sec: Some(21.8e9),
            ..MachineProfile::default()
        };
        let fastest = fastest_fold_seconds(tile, &calibrated);
        assert!((fastest - tile / 21.8e9).abs() < 1e-15);
        assert_eq!((tile / 24.7e9).max(fastest), fastest);
        // A slower fold is taken, and the calibrated rate is kept beside it.
        let slower = moved(&[(Target::HostFold, 21.8 / 15.0)]).rescaled(&calibrated);
        assert!((slower.host_fold_bytes_per_sec.unwrap() - 15.0e9).abs() < 1e3);
        assert_eq!(slower.host_fold_calibrated_bytes_per_sec, Some(21.8e9));
        // Measured at 24.7 again, it is judged at 21.8: the rate comes back that far.
        let back_at = (tile / 24.7e9).max(fastest_fold_seconds(tile, &slower));
        let r = back_at / (tile / 15.0e9);
        let back = moved(&[(Target::HostFold, r)]).rescaled(&slower);
        assert!((back.host_fold_bytes_per_sec.unwrap() - 21.8e9).abs() < 1e3);
        assert_eq!(back.host_fold_calibrated_bytes_per_sec, Some(21.8e9));
        // Without a fold rate there is no floor.
        assert_eq!(fastest_fold_seconds(tile, &MachineProfile::default()), 0.0);
    }

    #[test]
    fn a_second_measurement_keeps_the_faster_point_per_tile() {
        let a = vec![(1024, 0.004), (2048, 0.039)];
        let b = vec![(2048, 0.0178)];
        assert_eq!(faster_points(a, b), vec![(1024, 0.004), (2048, 0.0178)]);
        assert_eq!(
            faster_points(vec![(2048, 0.01)], vec![(2048, 0.02)]),
            vec![(2048, 0.01)]
        );
    }

    #[test]
    fn the_recheck_gemm_point_fits_its_buffers_in_every_dtype() {
        let opts = recheck_options();
        for dt in [DType::F32, DType::F64, DType::C32, DType::C64] {
            assert!(
                GEMM_TILE * GEMM_TILE * dt.size() <= opts.max_buffer_bytes,
                "{dt}: the re-check's GEMM point would be skipped"
            );
        }
    }
}
