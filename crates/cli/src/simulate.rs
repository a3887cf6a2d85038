//! `hetblas simulate`: a GEMM, or a TRSM/TRMM tile DAG, planned for a machine profile
//! (measured or synthetic) and replayed by the simulator; no device needed.

use crate::report::{say, Out};
use crate::shape::ShapeArgs;
use clap::Args;
use hetblas::{
    Diag, Error, MachineProfile, Result, Side, TriOptions, TriProblem, TriRoutine, Uplo,
};
use hetblas_core::energy::Objective;
use hetblas_core::problem::GemmProblem;
use hetblas_core::sim::{ProfiledMachine, Synthetic};
use hetblas_core::MemorySpace;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// The machine: a profile JSON (measured by `hetblas calibrate`, or synthetic, e.g.
    /// docs/profiles/nvidia-h200-x1.json in hetblas's source tree); default: this machine's,
    /// where `hetblas calibrate` wrote it.
    #[arg(long)]
    pub profile: Option<std::path::PathBuf>,
    /// Make it a machine of N GPUs (1 to 64) of the profile's first GPU, all joined by peer
    /// links as fast as the profile's fastest (NVLink's 389 GB/s when it has none).
    #[arg(long, value_parser = gpu_count)]
    pub gpus: Option<usize>,
    /// Write the machine simulated (the synthetic one with --gpus) as a profile to this file.
    #[arg(long)]
    pub write_profile: Option<std::path::PathBuf>,
    /// Devices to use (profile labels, "cuda:0,cuda:1"); default: the subset the objective
    /// chooses among the accelerators.
    #[arg(long)]
    pub devices: Option<String>,
    /// Square tile; default: the candidate the simulator finds best.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub tile: Option<u64>,
    /// What the device subset and tile are chosen for: time, energy or edp.
    #[arg(long, default_value = "time")]
    pub objective: Objective,
    /// beta == 0 (C is not read).
    #[arg(long)]
    pub beta_zero: bool,
    /// Write the simulated timeline as a Chrome trace to this file.
    #[arg(long)]
    pub trace: Option<std::path::PathBuf>,
    /// gemm, or trsm / trmm: side L, A lower, op(A) from --transa, non-unit diagonal, B
    /// m x n (k is not used), A and B in host memory, every device (or --devices) taking
    /// panels of B by its GEMM rate.
    #[arg(long, default_value = "gemm", value_parser = ["gemm", "trsm", "trmm"])]
    pub routine: String,
    /// Print the report as one JSON object (for scripts) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Peer bandwidth of a synthetic machine when the profile has no peer link (NVLink between
/// two H200s, measured).
const NVLINK_BYTES_PER_SEC: f64 = 389e9;

/// The most GPUs a synthetic machine has (its links grow as the square of the count).
const MAX_GPUS: usize = 64;

/// The most tile tasks of one candidate's plan that the simulator is asked to replay: planning
/// and replaying grow with them (a 16384^3 DGEMM with tiles of 1024 has 4096).
const MAX_TASKS: u64 = 1 << 18;

fn gpu_count(s: &str) -> std::result::Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_GPUS).contains(&n) => Ok(n),
        Ok(n) => Err(format!(
            "{n}: a synthetic machine has 1 to {MAX_GPUS} GPUs (its links grow as the square \
             of the count)"
        )),
        Err(e) => Err(format!("{s}: {e}")),
    }
}

/// Tile tasks of a plan with square tiles of `t` over blocks (mb, nb, kb) of the dimensions.
fn tasks(dims: [usize; 3], t: u64) -> u64 {
    dims.iter()
        .map(|&d| (d as u64).div_ceil(t))
        .fold(1u64, u64::saturating_mul)
}

/// The candidate tiles whose plans the simulator can replay in reasonable time, refusing the
/// problem when none is left: (dimensions whose blocks multiply to the task count).
fn replayable(dims: [usize; 3], candidates: Vec<usize>, forced: bool) -> Result<Vec<usize>> {
    if dims.contains(&0) {
        return Err(Error::InvalidInput(
            "nothing to simulate: every dimension must be at least 1 (-s/-m/-n/-k)".into(),
        ));
    }
    let kept: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|&t| tasks(dims, t as u64) <= MAX_TASKS)
        .collect();
    if kept.is_empty() {
        let t = candidates.iter().copied().max().unwrap_or(1);
        return Err(Error::InvalidInput(format!(
            "{} {t} makes {} tile tasks; the simulator replays plans of at most {MAX_TASKS}: \
             give {}a smaller size",
            if forced {
                "--tile"
            } else {
                "the largest candidate tile,"
            },
            tasks(dims, t as u64),
            if forced { "a larger --tile or " } else { "" }
        )));
    }
    Ok(kept)
}

/// The options of `a` that give its problem, as they would be typed.
fn problem_options(a: &SimulateArgs) -> String {
    let mut v = a.shape.typed();
    if a.routine != "gemm" {
        v.push(format!("--routine {}", a.routine));
    }
    v.join(" ")
}

/// The profile to simulate: `--profile`, else the one `hetblas calibrate` wrote for this
/// machine, else a refusal that says where one comes from.
fn profile_path(a: &SimulateArgs) -> Result<std::path::PathBuf> {
    if let Some(p) = &a.profile {
        return Ok(p.clone());
    }
    let settings = hetblas::Settings::from_env()?;
    match settings.profile {
        Some(p) if p.exists() => Ok(p),
        found => Err(Error::InvalidInput(format!(
            "simulate needs a machine profile, and this machine has none{}: give --profile \
             FILE (a GPU machine's: `hetblas simulate --profile \
             docs/profiles/nvidia-h200-x1.json` in hetblas's source tree), or measure this one \
             first with `hetblas calibrate --quick` (about a minute per device)",
            found.map_or(String::new(), |p| format!(" at {}", p.display()))
        ))),
    }
}

pub fn run(a: SimulateArgs) -> Result<()> {
    let out = Out::new(a.json);
    let path = profile_path(&a)?;
    let mut profile = MachineProfile::load(&path)?;
    if let Some(n) = a.gpus {
        let kind = profile
            .devices
            .iter()
            .find(|d| d.backend != "cpu")
            .map(|d| d.label.clone())
            .ok_or_else(|| Error::InvalidInput("--gpus: the profile has no GPU".into()))?;
        let peer = profile
            .links
            .iter()
            .filter(|l| l.kind == hetblas_core::LinkKind::Peer)
            .map(|l| l.bytes_per_sec)
            .fold(None, |m: Option<f64>, b| Some(m.map_or(b, |m| m.max(b))))
            .unwrap_or(NVLINK_BYTES_PER_SEC);
        profile = Synthetic::all_to_all(profile, &kind, n, peer).profile()?;
    }
    out.set("profile", path.display().to_string());
    if let Some(path) = &a.write_profile {
        profile.save(path)?;
        say!(out, "profile: {}", path.display());
        out.set("profile_written", path.display().to_string());
    }
    let labels = a.devices.as_deref().map(|s| {
        s.split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect::<Vec<_>>()
    });
    let fixed = labels.is_some();
    if !fixed && profile.devices.iter().all(|d| d.backend == "cpu") {
        let opts = problem_options(&a);
        return Err(Error::InvalidInput(format!(
            "simulate plans for a machine's accelerators, and {} describes none (a CPU-only \
             machine's profile): simulate the CPU alone (`hetblas simulate --profile {} \
             --devices {} {opts}`), a GPU machine (`hetblas simulate --profile \
             docs/profiles/nvidia-h200-x1.json {opts}` in hetblas's source tree), or this \
             machine with emulated devices (`hetblas --emulated 1 calibrate --quick`, then \
             `hetblas simulate {opts}`)",
            path.display(),
            path.display(),
            profile
                .devices
                .first()
                .map_or("cpu:0".to_string(), |d| d.label.clone()),
        )));
    }
    let machine = ProfiledMachine::new(profile, labels)?;
    let (m, n, k) = a.shape.mnk();
    let all: Vec<usize> = (0..machine.labels.len()).collect();
    let only = fixed.then_some(all.as_slice());
    if a.routine != "gemm" {
        triangular(&a, &out, &machine, only)?;
        out.finish();
        return Ok(());
    }
    let problem = GemmProblem {
        transa: a.shape.transa,
        transb: a.shape.transb,
        m,
        n,
        k,
        dtype: a.shape.dtype(),
        beta_zero: a.beta_zero,
        locations: [MemorySpace::HOST; 3],
        sym: None,
    };
    problem.check_modelled()?;
    let maxdim = m.max(n).max(k);
    let candidates: Vec<usize> = match a.tile {
        Some(t) => vec![t as usize],
        None => {
            let c: Vec<usize> = [1024, 2048, 4096, 8192]
                .into_iter()
                .filter(|&t| t <= maxdim)
                .collect();
            if c.is_empty() {
                vec![maxdim]
            } else {
                c
            }
        }
    };
    let candidates = replayable([m, n, k], candidates, a.tile.is_some())?;
    let spinner = crate::progress::spinner(
        &format!(
            "planning and replaying {} candidate tiles",
            candidates.len()
        ),
        a.json,
    );
    let start = Instant::now();
    let (mp, sim) = machine.best_tile(&problem, &candidates, a.objective, only)?;
    let spent = start.elapsed().as_secs_f64();
    spinner.finish_and_clear();
    let flops = problem.flops();
    let routine = format!("{}gemm", a.shape.dtype().blas_prefix());
    say!(
        out,
        "simulated {routine} {m}x{n}x{k} on {} [{}] tile {}: makespan {:.4} s, {:.2} TFLOP/s \
         ({} tasks; {} candidate tiles planned and replayed in {:.3} s)",
        machine.profile.host,
        mp.labels.join(", "),
        mp.blocking.tm,
        sim.makespan,
        flops / sim.makespan / 1e12,
        mp.plan.tasks.len(),
        candidates.len(),
        spent
    );
    out.set("routine", routine);
    out.set("m", m);
    out.set("n", n);
    out.set("k", k);
    out.set("transa", a.shape.transa.as_char().to_string());
    out.set("transb", a.shape.transb.as_char().to_string());
    summary(&out, &machine, &mp.labels, mp.blocking.tm, &sim, flops);
    out.set("tasks", mp.plan.tasks.len());
    out.set("candidate_tiles", candidates.clone());
    out.set("planning_s", spent);
    let mut rows = Vec::new();
    for (d, w) in sim.devices.iter().zip(&mp.weights) {
        say!(
            out,
            "  {:<8} {:>6.2}% of C, compute busy {:.4} s = {:>5.1}% of the makespan, copying \
             {:.4} s",
            d.label,
            100.0 * w,
            d.compute_s,
            100.0 * d.share,
            d.copy_s
        );
        rows.push(device_json(d, *w));
    }
    out.set("per_device", rows);
    let power = |l: &str| machine.profile.power_of(l);
    if mp.labels.iter().all(|l| power(l).is_some()) {
        let joules = sim.energy(power);
        say!(
            out,
            "  predicted energy {:.1} J ({:.2} GFLOP/J) from the profile's device powers",
            joules,
            flops / joules / 1e9
        );
        out.set("energy_j", joules);
    }
    write_trace(&out, a.trace.as_deref(), &sim.trace)?;
    out.finish();
    Ok(())
}

/// The fields every simulation reports: the machine, the devices, the tile, the makespan.
fn summary(
    out: &Out,
    machine: &ProfiledMachine,
    labels: &[String],
    tile: usize,
    sim: &hetblas_core::sim::Simulation,
    flops: f64,
) {
    out.set("host", machine.profile.host.clone());
    out.set("devices", labels.to_vec());
    out.set("tile", tile);
    out.set("makespan_s", sim.makespan);
    out.set("tflops", flops / sim.makespan / 1e12);
}

/// One device's line of a simulation: its `share` of the work and how busy it was.
fn device_json(d: &hetblas_core::sim::DeviceBusy, share: f64) -> serde_json::Value {
    serde_json::json!({
        "device": d.label,
        "share": share,
        "compute_s": d.compute_s,
        "compute_share_of_makespan": d.share,
        "copy_s": d.copy_s,
    })
}

fn write_trace(
    out: &Out,
    path: Option<&std::path::Path>,
    trace: &hetblas_core::trace::Trace,
) -> Result<()> {
    if let Some(path) = path {
        let json = hetblas_core::trace::chrome_json_rows(&[("simulated", trace)]);
        std::fs::write(path, json).map_err(|e| crate::gemm::cannot_write(path, e))?;
        say!(
            out,
            "trace: {} ({} intervals)",
            path.display(),
            trace.intervals.len()
        );
        out.set("trace", path.display().to_string());
    }
    Ok(())
}

/// `--routine trsm|trmm`: the tile DAG on the machine, the tile the simulator finds best.
fn triangular(
    a: &SimulateArgs,
    out: &Out,
    machine: &ProfiledMachine,
    only: Option<&[usize]>,
) -> Result<()> {
    let routine = if a.routine == "trsm" {
        TriRoutine::Trsm
    } else {
        TriRoutine::Trmm
    };
    let (m, n, _) = a.shape.mnk();
    let problem = TriProblem {
        routine,
        opts: TriOptions {
            side: Side::Left,
            uplo: Uplo::Lower,
            transa: a.shape.transa,
            diag: Diag::NonUnit,
        },
        m,
        n,
        dtype: a.shape.dtype(),
    };
    let candidates: Vec<usize> = match a.tile {
        Some(t) => vec![t as usize],
        None => {
            let c: Vec<usize> = [1024, 2048, 4096].into_iter().filter(|&t| t <= m).collect();
            if c.is_empty() {
                vec![m.max(1)]
            } else {
                c
            }
        }
    };
    // A's blocks square (m/t)^2 / 2, each against n/t panels: at most m/t x m/t x n/t.
    let candidates = replayable([m, m, n], candidates, a.tile.is_some())?;
    let spinner = crate::progress::spinner(
        &format!(
            "planning and replaying {} candidate tiles",
            candidates.len()
        ),
        a.json,
    );
    let start = Instant::now();
    let (mp, sim) = machine.best_tri_tile(&problem, &candidates, only)?;
    let spent = start.elapsed().as_secs_f64();
    spinner.finish_and_clear();
    let stats = mp.plan.stats();
    let routine = format!("{}{}", a.shape.dtype().blas_prefix(), a.routine);
    let flops = problem.flops();
    say!(
        out,
        "simulated {routine} L L {} N m={m} n={n} on {} [{}] tile {}: makespan {:.4} s, {:.2} \
         TFLOP/s ({} tasks; {} candidate tiles planned and replayed in {:.3} s)",
        a.shape.transa.as_char(),
        machine.profile.host,
        mp.labels.join(", "),
        mp.blocking.tm,
        sim.makespan,
        flops / sim.makespan / 1e12,
        mp.plan.tasks.len(),
        candidates.len(),
        spent
    );
    out.set("routine", routine.clone());
    out.set(
        "problem",
        format!("{routine} L L {} N", a.shape.transa.as_char()),
    );
    out.set("m", m);
    out.set("n", n);
    summary(out, machine, &mp.labels, mp.blocking.tm, &sim, flops);
    out.set("tasks", mp.plan.tasks.len());
    out.set("candidate_tiles", candidates.clone());
    out.set("planning_s", spent);
    let mut rows = Vec::new();
    for (d, busy) in sim.devices.iter().enumerate() {
        say!(
            out,
            "  {:<8} {:>5.1}% of the panels, compute busy {:.4} s = {:>5.1}% of the makespan, \
             copying {:.4} s",
            busy.label,
            100.0 * mp.weights[d],
            busy.compute_s,
            100.0 * busy.share,
            busy.copy_s
        );
        rows.push(device_json(busy, mp.weights[d]));
    }
    out.set("per_device", rows);
    say!(
        out,
        "  tiles fetched: A {}, B {}; diagonal tiles per device {:?} at {:.0}% of the GEMM rate \
         unless the profile says otherwise",
        stats.fetches[0],
        stats.fetches[1],
        stats.tri_tiles,
        100.0 * hetblas_core::model::TRI_EFFICIENCY
    );
    out.set(
        "tiles_fetched",
        serde_json::json!({ "a": stats.fetches[0], "b": stats.fetches[1] }),
    );
    out.set("diagonal_tiles_per_device", stats.tri_tiles.clone());
    write_trace(out, a.trace.as_deref(), &sim.trace)
}
