//! `hetblas calibrate`: measure every link and every device's GEMM, write the profile.

use crate::report::{say, Out};
use clap::Args;
use hetblas::{CalibrationOptions, Progress, Result, Runtime};
use hetblas_core::profile::{MachineProfile, ProfileError};
use indicatif::ProgressBar;
use std::time::Instant;

/// Measures links and kernels and writes the profile. Expect about 25 s on one H200 with its
/// host (23.1 s measured 2026-11-29), about a minute on a CPU-only machine, and a minute or
/// more per emulated device; a previous profile of the same hardware that a quick re-check
/// confirms is reused in seconds.
#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Fewer, smaller points, and no reuse of a previous profile: still about a minute per
    /// device (131 s for a CPU and two emulated devices, where a full CPU-only calibration
    /// took 67 s).
    #[arg(long)]
    quick: bool,
    /// Where to write the profile (default: $HETBLAS_PROFILE, else the user cache directory).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Do not measure the slowdown of each host link under every other one.
    #[arg(long)]
    no_cross_links: bool,
    /// Do not measure each device's busy and idle power (NVML for NVIDIA GPUs, RAPL for the
    /// CPU where readable, else an estimate from its core count).
    #[arg(long)]
    no_power: bool,
    /// A previous profile to reuse when it describes this hardware (device names, memory,
    /// links) and a quick re-check of a few points agrees with it; may be given several times
    /// (the first that holds is taken). `--out`'s file, when it exists, is tried first.
    #[arg(long)]
    reuse: Vec<std::path::PathBuf>,
    /// Always calibrate in full (no reuse of a previous profile).
    #[arg(long)]
    fresh: bool,
    /// Print the report as one JSON object (for scripts) instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(emulated: usize, args: CalibrateArgs) -> Result<()> {
    let mut b = Runtime::builder().without_profile();
    if emulated > 0 {
        b = b.emulated(emulated);
    }
    let rt = b.build()?;
    crate::cli::warn_retired(rt.settings());
    let mut opts = if args.quick {
        CalibrationOptions::quick()
    } else {
        CalibrationOptions::default()
    };
    if args.no_cross_links {
        opts.cross_links = false;
    }
    let out = Out::new(args.json);
    let start = Instant::now();
    let path = match args.out {
        Some(p) => p,
        None => rt
            .settings()
            .profile
            .clone()
            .ok_or(ProfileError::NoLocation)?,
    };
    // Checked now rather than after minutes of measuring.
    check_writable(&path)?;
    // Each phase's points as they are measured.
    let bar = crate::progress::bar(1, "", args.json);
    let mut progress = |p: Progress| {
        bar.set_length(p.total as u64);
        bar.set_position(p.done as u64);
        bar.set_message(p.stage.clone());
    };
    let reused = if args.fresh || args.quick {
        None
    } else {
        let tries = std::iter::once(path.clone()).chain(args.reuse.iter().cloned());
        reuse(&rt, &out, &bar, tries, &mut progress)?
    };
    let (mut profile, how) = match reused {
        Some(p) => p,
        None => (
            rt.calibrate(&opts, &mut progress)?,
            "calibrated".to_string(),
        ),
    };
    bar.finish_and_clear();
    // A reused profile keeps the powers it measured.
    if !args.no_power && profile.power.is_empty() {
        let t = Instant::now();
        let spinner = crate::progress::spinner("device powers", args.json);
        profile.power = crate::power::calibrate_power(&rt, &out)?;
        spinner.finish_and_clear();
        if how == "calibrated" {
            profile
                .calibration_seconds
                .push(("device powers".into(), t.elapsed().as_secs_f64()));
        }
    }
    profile.save(&path)?;
    say!(
        out,
        "{how} {} devices and {} links in {:.1} s; profile written to {}",
        profile.devices.len(),
        profile.links.len(),
        start.elapsed().as_secs_f64(),
        path.display()
    );
    out.set("how", how.clone());
    out.set("profile", path.display().to_string());
    out.set("seconds", start.elapsed().as_secs_f64());
    if how == "calibrated" && !profile.calibration_seconds.is_empty() {
        let phases: Vec<String> = profile
            .calibration_seconds
            .iter()
            .map(|(p, s)| format!("{p} {s:.1} s"))
            .collect();
        say!(out, "  phases: {}", phases.join(", "));
    }
    out.set(
        "phases",
        profile
            .calibration_seconds
            .iter()
            .map(|(p, s)| serde_json::json!({ "phase": p, "seconds": s }))
            .collect::<Vec<_>>(),
    );
    let mut links = Vec::new();
    for l in &profile.links {
        say!(
            out,
            "  link {:<16} latency {:>7.2} us  {:>7.2} GB/s  bidirectional x{:.2}",
            l.name,
            l.latency_s * 1e6,
            l.bytes_per_sec / 1e9,
            l.bid_slowdown
        );
        links.push(serde_json::json!({
            "link": l.name,
            "latency_s": l.latency_s,
            "bytes_per_s": l.bytes_per_sec,
            "bidirectional_slowdown": l.bid_slowdown,
        }));
    }
    out.set("links", links);
    let mut power = Vec::new();
    for w in &profile.power {
        say!(
            out,
            "  power {:<8} busy {:>6.1} W  idle {:>6.1} W  ({})",
            w.label,
            w.busy_w,
            w.idle_w,
            w.source
        );
        power.push(serde_json::json!({
            "device": w.label,
            "busy_w": w.busy_w,
            "idle_w": w.idle_w,
            "source": w.source.to_string(),
        }));
    }
    out.set("power", power);
    if let Some(f) = profile.host_fold_bytes_per_sec {
        say!(out, "  host fold {:.2} GB/s of C", f / 1e9);
    }
    out.set("host_fold_bytes_per_s", profile.host_fold_bytes_per_sec);
    let mut gemm = Vec::new();
    for d in &profile.devices {
        for g in &d.gemm {
            say!(out, "  {}", gemm_table_line(&d.label, g));
            gemm.push(serde_json::json!({
                "device": d.label,
                "dtype": g.dtype.to_string(),
                "tile_sizes": g.times.len(),
                "best_tflops": best_tflops(g),
            }));
        }
    }
    out.set("gemm", gemm);
    out.finish();
    Ok(())
}

/// The best rate of a GEMM table in real TFLOP/s (8 flops per complex multiply-add).
fn best_tflops(g: &hetblas_core::profile::GemmTimes) -> f64 {
    g.times
        .iter()
        .map(|&(t, s)| g.dtype.gemm_flops(t, t, t) / s / 1e12)
        .fold(0.0, f64::max)
}

/// The summary of one GEMM table: its best rate in real flops (8 per complex multiply-add).
fn gemm_table_line(label: &str, g: &hetblas_core::profile::GemmTimes) -> String {
    let best = best_tflops(g);
    format!(
        "{label} {} gemm: {} tile sizes, best {best:.2} TFLOP/s",
        g.dtype,
        g.times.len()
    )
}

/// Refuses a profile path that cannot be written, the way [`MachineProfile::save`] writes it
/// (its directory created, a file made there and renamed over the path).
fn check_writable(path: &std::path::Path) -> Result<()> {
    let refuse = |why: String| {
        hetblas::Error::InvalidInput(format!(
            "cannot write the profile to {}: {why}; give --out with a writable path (or set \
             HETBLAS_PROFILE)",
            path.display()
        ))
    };
    if path.is_dir() {
        return Err(refuse("it is a directory".into()));
    }
    let name = path
        .file_name()
        .ok_or_else(|| refuse("not a file name".into()))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| refuse(format!("{}: {e}", dir.display())))?;
    let probe = dir.join(format!(
        ".{}.probe.{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    std::fs::File::create(&probe).map_err(|e| refuse(format!("{}: {e}", dir.display())))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// The profiles of `paths` that load and describe these devices, newest first: the latest
/// measurement of this hardware is the likeliest to hold, and each re-check that fails costs
/// seconds (on one H200 a day-old profile whose host CPU had moved by 78% took 13 s before
/// the current one was tried).
fn newest_first(
    paths: impl Iterator<Item = std::path::PathBuf>,
    matches: impl Fn(&MachineProfile) -> bool,
) -> Vec<(std::path::PathBuf, MachineProfile)> {
    let mut found: Vec<_> = paths
        .filter_map(|p| MachineProfile::load(&p).ok().map(|m| (p, m)))
        .filter(|(_, m)| matches(m))
        .collect();
    // RFC 3339 UTC times of one format order as their strings do; the sort is stable, so
    // profiles of the same time keep the order they were given in.
    found.sort_by(|a, b| b.1.created.cmp(&a.1.created));
    found
}

/// The newest of `paths` that loads, describes these devices and passes the quick re-check,
/// or whose points all moved within the rescale limit, then rescaled
/// ([`hetblas_core::calibrate::Recheck::rescaled`]); older ones are not re-checked once one
/// is taken. The string says which.
fn reuse(
    rt: &Runtime,
    out: &Out,
    bar: &ProgressBar,
    paths: impl Iterator<Item = std::path::PathBuf>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Option<(MachineProfile, String)>> {
    use hetblas_core::calibrate::{Target, FOLD_TOLERANCE, RECHECK_TOLERANCE, RESCALE_LIMIT};
    for (path, previous) in newest_first(paths, |p| p.matches(rt.devices())) {
        let t = Instant::now();
        let check = rt.recheck(&previous, progress)?;
        let verdict = if check.holds {
            "holds"
        } else if check.only_fold_moved() {
            "the host fold moved"
        } else if check.rescalable() {
            "moved within the rescale limit"
        } else {
            "differs"
        };
        bar.suspend(|| {
            say!(
                out,
                "re-check of {} ({:.1} s): {verdict}, largest difference {:.1}% (GEMM and link \
                 points: tolerance {:.0}%, rescale limit {:.0}%; host fold: tolerance {:.0}%, no \
                 limit)",
                path.display(),
                t.elapsed().as_secs_f64(),
                check.worst * 100.0,
                RECHECK_TOLERANCE * 100.0,
                RESCALE_LIMIT * 100.0,
                FOLD_TOLERANCE * 100.0
            );
            for p in &check.points {
                say!(out, "  {p}");
            }
        });
        out.push(
            "rechecks",
            serde_json::json!({
                "profile": path.display().to_string(),
                "verdict": verdict,
                "largest_difference": check.worst,
                "points": check.points.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            }),
        );
        if check.holds {
            return Ok(Some((
                previous,
                "re-checked (previous profile reused)".into(),
            )));
        }
        // The newest profile that moved within the limit is taken: older ones would cost a
        // re-check each to be, at best, as close.
        if check.rescalable() {
            let what: Vec<String> = check
                .moved
                .iter()
                .map(|(t, r)| match t {
                    Target::Gemm(d) => format!("{d} GEMM times x{r:.3}"),
                    Target::Link(l) => format!("link {l} times x{r:.3}"),
                    Target::HostFold => format!("host fold times x{r:.3}"),
                })
                .collect();
            return Ok(Some((
                check.rescaled(&previous),
                format!(
                    "re-checked (previous profile {} reused, rescaled: {})",
                    path.display(),
                    what.join(", ")
                ),
            )));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetblas::DType;

    /// A ZGEMM of 1000^3 in 0.2 s is 8e9 real flops / 0.2 s = 0.04 TFLOP/s (the summary said
    /// 0.01: 2mnk); a DGEMM of the same time a quarter of that.
    #[test]
    fn the_summary_counts_complex_flops_as_complex() {
        let table = |dtype| hetblas_core::profile::GemmTimes {
            dtype,
            times: vec![(500, 0.1), (1000, 0.2)],
        };
        assert_eq!(
            gemm_table_line("cuda:0", &table(DType::C64)),
            "cuda:0 c64 gemm: 2 tile sizes, best 0.04 TFLOP/s"
        );
        assert_eq!(
            gemm_table_line("cuda:0", &table(DType::F64)),
            "cuda:0 f64 gemm: 2 tile sizes, best 0.01 TFLOP/s"
        );
    }

    #[test]
    fn previous_profiles_are_tried_newest_first() {
        let dir = std::env::temp_dir().join(format!("hetblas-reuse-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, created: &str, host: &str| {
            let p = dir.join(name);
            MachineProfile {
                created: created.into(),
                host: host.into(),
                ..MachineProfile::default()
            }
            .save(&p)
            .unwrap();
            p
        };
        let paths = vec![
            write("a-full.json", "2026-11-23T10:00:00Z", "this"),
            write("b.json", "2026-11-24T06:20:02Z", "this"),
            write("c-other.json", "2026-11-25T00:00:00Z", "other"),
            write("d-same-time.json", "2026-11-24T06:20:02Z", "this"),
            dir.join("missing.json"),
        ];
        let found = newest_first(paths.into_iter(), |m| m.host == "this");
        let names: Vec<_> = found
            .iter()
            .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["b.json", "d-same-time.json", "a-full.json"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
