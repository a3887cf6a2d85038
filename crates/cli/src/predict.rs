//! `hetblas predict`: every model's predicted time for each candidate tile, and the choice.

use crate::report::{say, Out};
use crate::shape::ShapeArgs;
use clap::Args;
use hetblas::{Error, Result, Runtime};
use hetblas_core::autotune::{choose_devices, model_tile, PlanHints};
use hetblas_core::energy::Objective;
use hetblas_core::model::cocopelia::{ModelKind, Offload, SingleDeviceModel};
use hetblas_core::problem::GemmProblem;
use hetblas_core::profile::HOST_LABEL;
use hetblas_core::{DeviceKind, MemorySpace};

#[derive(Args, Debug)]
pub struct PredictArgs {
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Where A, B and C live: h (host) or d (the device), e.g. "hhh", "ddh".
    #[arg(long, default_value = "hhh")]
    pub placement: String,
    /// beta == 0 (C is not read).
    #[arg(long)]
    pub beta_zero: bool,
    /// Device (label or index); default: the first accelerator.
    #[arg(long)]
    pub device: Option<String>,
    /// The routine: gemm; potrf / getrf (order -n, --uplo for potrf: the devices, where
    /// panels run and the block width, with the alternatives); trsm / trmm (then -m/-n shape B, --transa is op(A), and the model's
    /// choice of devices, tile and solve placement is shown with its alternatives); or syrk,
    /// herk, syr2k, her2k, symm, hemm (C is m x n, k the inner dimension, --transa the rank
    /// updates' trans).
    #[arg(long, default_value = "gemm")]
    pub routine: String,
    /// TRSM/TRMM SIDE: L or R.
    #[arg(long, default_value = "L")]
    pub side: char,
    /// TRSM/TRMM/POTRF UPLO: L or U.
    #[arg(long, default_value = "L")]
    pub uplo: char,
    /// TRSM/TRMM DIAG: N or U.
    #[arg(long, default_value = "N")]
    pub diag: char,
    /// Print the report as one JSON object (for scripts) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `predict`; `emulated` is the command's `--emulated`, for the commands its refusals suggest.
pub fn run(rt: &Runtime, emulated: usize, a: PredictArgs) -> Result<()> {
    let out = Out::new(a.json);
    let spinner = crate::progress::spinner("predicting", a.json);
    let routine = a.routine.to_ascii_lowercase();
    if routine == "potrf" || routine == "getrf" {
        let r = if routine == "potrf" {
            hetblas_core::plan::FactorRoutine::Potrf(crate::factor::uplo_of(a.uplo)?)
        } else {
            hetblas_core::plan::FactorRoutine::Getrf
        };
        let (_, n, _) = a.shape.mnk();
        crate::factor::predict(rt, &out, &spinner, r, n, a.shape.dtype())?;
    } else if !matches!(routine.as_str(), "gemm" | "trsm" | "trmm") {
        let routine = a.routine.parse().map_err(Error::InvalidInput)?;
        let shape = a.shape.mnk();
        let (dtype, transa) = (a.shape.problem.dtype, a.shape.transa);
        let hint = calibrate_hint(emulated);
        crate::sym::predict(rt, &out, &spinner, routine, shape, dtype, transa, &hint)?;
    } else if routine != "gemm" {
        let routine = if routine == "trsm" {
            hetblas::TriRoutine::Trsm
        } else {
            hetblas::TriRoutine::Trmm
        };
        let (m, n, _) = a.shape.mnk();
        let shape = crate::tri::TriShapeArgs {
            m,
            n,
            dtype: a.shape.dtype(),
            side: a.side,
            uplo: a.uplo,
            transa: a.shape.transa,
            diag: a.diag,
        };
        crate::tri::predict(rt, &out, &spinner, routine, &shape)?;
    } else {
        gemm(rt, emulated, &out, &spinner, &a)?;
    }
    out.finish();
    Ok(())
}

/// The command that calibrates the devices this command ran with (`--emulated` kept).
pub fn calibrate_hint(emulated: usize) -> String {
    match emulated {
        0 => "`hetblas calibrate --quick`".into(),
        n => format!("`hetblas --emulated {n} calibrate --quick`"),
    }
}

/// The options of `a` that give its problem, as they would be typed: `-s 1024 --dtype c64`
/// (and `--placement`, which `simulate` does not take, when `placement`).
fn problem_options(a: &PredictArgs, placement: bool) -> String {
    let mut v = a.shape.typed();
    if placement && a.placement != "hhh" {
        v.push(format!("--placement {}", a.placement));
    }
    if a.beta_zero {
        v.push("--beta-zero".into());
    }
    v.join(" ")
}

/// GEMM: each model's time per candidate tile on one accelerator, the choice, the device
/// subsets and the K split.
fn gemm(
    rt: &Runtime,
    emulated: usize,
    out: &Out,
    spinner: &indicatif::ProgressBar,
    a: &PredictArgs,
) -> Result<()> {
    let idx = match &a.device {
        Some(s) => *crate::cli::parse_devices(rt, s)?
            .first()
            .ok_or_else(|| Error::InvalidInput("empty --device".into()))?,
        None => rt
            .devices()
            .iter()
            .position(|d| d.info().kind != DeviceKind::Cpu)
            .unwrap_or(0),
    };
    let dev = rt.devices().get(idx).cloned().ok_or_else(|| {
        Error::InvalidInput(format!(
            "--device {idx}: there are {} devices (see `hetblas devices`)",
            rt.devices().len()
        ))
    })?;
    if dev.space().is_host() {
        let (predict, simulate) = (problem_options(a, true), problem_options(a, false));
        let labels: Vec<String> = rt.devices().iter().map(|d| d.info().label()).collect();
        let n = emulated.max(1);
        let has_accelerator = labels.len() > 1;
        return Err(Error::InvalidInput(format!(
            "predict explains a GEMM offloaded to an accelerator, and {} is the host ({} \
             here): {}try host-emulated devices: `hetblas --emulated {n} calibrate --quick` \
             (about a minute), then `hetblas --emulated {n} predict {predict}`; or \
             replay the problem on a GPU machine's profile (in hetblas's source tree): \
             `hetblas simulate --profile docs/profiles/nvidia-h200-x1.json {simulate}`",
            dev.info().label(),
            labels.join(", "),
            if has_accelerator {
                "give --device with an accelerator, or "
            } else {
                ""
            }
        )));
    }
    let profile = rt.profile().ok_or_else(|| {
        Error::Profile(format!(
            "predict needs a calibrated profile of these devices: run {} (about a minute per \
             device), then this command again (the model now: {})",
            calibrate_hint(emulated),
            rt.profile_status()
        ))
    })?;
    let label = dev.info().label();
    let locations = hetblas_core::problem::placement_locations(&a.placement, dev.space())
        .ok_or_else(|| {
            Error::InvalidInput(format!("--placement {:?}: three of h/d", a.placement))
        })?;
    let (m, n, k) = a.shape.mnk();
    let dtype = a.shape.dtype();
    let problem = GemmProblem {
        transa: a.shape.transa,
        transb: a.shape.transb,
        m,
        n,
        k,
        dtype,
        beta_zero: a.beta_zero,
        locations,
        sym: None,
    };
    problem.check_modelled()?;
    let budget = dev.memory_budget();
    let choice = model_tile(
        &problem,
        &dev,
        budget,
        &profile,
        hetblas_core::autotune::FoldRequest::default(),
    )
    .ok_or_else(|| {
        Error::Profile(format!(
            "the profile has no {} gemm table or host links for {label} (or nothing moves)",
            dtype
        ))
    })?;
    let device_profile = profile.device(&label);
    let exec = device_profile
        .and_then(|d| d.exec_table(dtype))
        .ok_or_else(|| Error::Profile(format!("no {} table for {label}", dtype)))?;
    let sd = SingleDeviceModel::new(
        profile
            .link(HOST_LABEL, &label)
            .map(|l| l.model())
            .ok_or_else(|| Error::Profile("no host link".into()))?,
        profile
            .link(&label, HOST_LABEL)
            .map(|l| l.model())
            .ok_or_else(|| Error::Profile("no device link".into()))?,
    );
    let offload = Offload::from_problem(&problem, dev.space());
    // Device subsets (host operands): which devices take part, and why.
    let hostp = GemmProblem {
        locations: [MemorySpace::HOST; 3],
        ..problem
    };
    let cands: Vec<_> = rt
        .devices()
        .iter()
        .filter(|d| d.kernel().supports(dtype))
        .collect();
    let bw = |s: MemorySpace, d: MemorySpace| rt.link_bandwidth(s, d);
    let subsets = choose_devices(
        &hostp,
        &cands,
        choice.tile.tm,
        Some(&profile),
        &bw,
        Objective::Time,
        &PlanHints::default(),
    );
    let ksplit = subsets
        .as_ref()
        .and_then(|_| k_split(rt, &hostp, &cands, choice.tile.tm, &profile));
    spinner.finish_and_clear();

    if device_profile.is_some_and(|d| d.exec_table_measured(dtype).is_none()) {
        let note = format!(
            "no measured {dtype} gemm table for {label}: modelled from the {} table (4 real \
             multiply-adds per complex one, at the same flop rate)",
            dtype.real()
        );
        say!(out, "note: {note}");
        out.set("note", note);
    }
    let routine = format!("{}gemm", dtype.blas_prefix());
    say!(
        out,
        "{routine} {}x{}x{} {}{} placement {} on {label}{}; predicted seconds per tile size:",
        problem.m,
        problem.n,
        problem.k,
        problem.transa.as_char(),
        problem.transb.as_char(),
        a.placement,
        if a.beta_zero { ", beta = 0" } else { "" }
    );
    out.set("routine", routine);
    out.set("m", m);
    out.set("n", n);
    out.set("k", k);
    out.set("transa", problem.transa.as_char().to_string());
    out.set("transb", problem.transb.as_char().to_string());
    out.set("placement", a.placement.clone());
    out.set("beta_zero", a.beta_zero);
    out.set("device", label.clone());
    let mut header = format!("{:>18}", "T");
    for k in ModelKind::ALL {
        header += &format!(" {:>10}", k.name());
    }
    say!(out, "{header} {:>10}", "hetblas");
    let mut rows = Vec::new();
    for &(t, pred) in &choice.candidates {
        let mut line = format!("{:>18}", t.to_string());
        let mut models = serde_json::Map::new();
        for k in ModelKind::ALL {
            // CoCoPeLia's models are for square tiles.
            if t.is_square() {
                let secs = sd.predict(k, &offload, t.tm, &exec);
                line += &format!(" {secs:>10.4}");
                models.insert(k.name().to_string(), secs.into());
            } else {
                line += &format!(" {:>10}", "-");
                models.insert(k.name().to_string(), serde_json::Value::Null);
            }
        }
        let chosen = t == choice.tile;
        say!(
            out,
            "{line} {:>10.4}{}",
            pred.seconds,
            if chosen { "  <- chosen" } else { "" }
        );
        rows.push(serde_json::json!({
            "tile": blocking_json(t),
            "models_s": models,
            "hetblas_s": pred.seconds,
            "chosen": chosen,
        }));
    }
    out.set("candidates", rows);
    let pr = choice.predicted;
    let tflops = problem.flops() / pr.seconds / 1e12;
    say!(
        out,
        "choice: T = {} ({:.4} s = {tflops:.2} TFLOP/s; compute {:.4} s, h2d {:.4} s, d2h {:.4} \
         s, first fetch {:.4} s, first-group stall {:.4} s)",
        choice.tile,
        pr.seconds,
        pr.compute,
        pr.h2d,
        pr.d2h,
        pr.first_fetch,
        pr.first_group_stall
    );
    let bound = if pr.compute >= pr.h2d.max(pr.d2h) {
        "compute"
    } else {
        "transfer"
    };
    say!(out, "the problem is {bound}-bound on {label}");
    out.set(
        "choice",
        serde_json::json!({
            "tile": blocking_json(choice.tile),
            "predicted_s": pr.seconds,
            "tflops": tflops,
            "compute_s": pr.compute,
            "h2d_s": pr.h2d,
            "d2h_s": pr.d2h,
            "first_fetch_s": pr.first_fetch,
            "first_group_stall_s": pr.first_group_stall,
            "bound": bound,
            "host_fold": choice.host_fold,
            "other_mode": choice.other_mode.map(|(t, o)| serde_json::json!({
                "tile": blocking_json(t),
                "predicted_s": o.seconds,
            })),
            "fold_slow_wake_s": choice.fold_slow_wake_s,
        }),
    );
    match (choice.host_fold, choice.other_mode) {
        (true, Some((t, o))) => say!(
            out,
            "host C is folded on the host: predicted {:.4} s against {:.4} s (T = {t}) sending \
             C to the device",
            pr.seconds,
            o.seconds
        ),
        (false, Some((t, o))) => {
            say!(
                out,
                "C is sent to the device: predicted {:.4} s against {:.4} s (T = {t}) folding on \
                 the host",
                pr.seconds,
                o.seconds
            );
            if let Some(slow) = choice.fold_slow_wake_s {
                say!(
                    out,
                    "  (folding loses at the fold threads' slowest wake: {slow:.4} s)"
                );
            }
        }
        _ => {}
    }
    let Some(c) = subsets else {
        return Ok(());
    };
    say!(
        out,
        "device subsets for host operands (balanced shares; predicted seconds):"
    );
    let mut rows = Vec::new();
    for s in &c.evaluated {
        let shares: Vec<(String, f64)> = s
            .devices
            .iter()
            .zip(&s.balance.weights)
            .map(|(&i, w)| (cands[i].info().label(), *w))
            .collect();
        let chosen = s.devices == c.devices;
        say!(
            out,
            "  {:.4} s  {}{}",
            s.balance.makespan,
            shares
                .iter()
                .map(|(l, w)| format!("{l} {:.0}%", w * 100.0))
                .collect::<Vec<_>>()
                .join(" + "),
            if chosen { "  <- chosen" } else { "" }
        );
        rows.push(serde_json::json!({
            "devices": shares.iter().map(|(l, _)| l.clone()).collect::<Vec<_>>(),
            "shares": shares.iter().map(|(_, w)| *w).collect::<Vec<_>>(),
            "predicted_s": s.balance.makespan,
            "chosen": chosen,
        }));
    }
    out.set("device_subsets", rows);
    say!(
        out,
        "(a larger subset is taken only when it is predicted {:.0}% faster)",
        hetblas_core::balance::MIN_GAIN * 100.0
    );
    out.set("min_gain", hetblas_core::balance::MIN_GAIN);
    if let Some(ks) = ksplit {
        ks.report(out, c.predicted);
    }
    Ok(())
}

/// A blocking in JSON: `{"tm":..,"tn":..,"tk":..,"group":..}`.
fn blocking_json(b: hetblas_core::Blocking) -> serde_json::Value {
    serde_json::json!({ "tm": b.tm, "tn": b.tn, "tk": b.tk, "group": b.group })
}

/// What the K split over the accelerators was predicted to do.
enum KSplit {
    /// (seconds, each accelerator taking part with its k, the device the partials are reduced
    /// on).
    Helps(f64, Vec<(String, usize)>, String),
    /// A device's partial costs more than it saves.
    DoesNot,
}

impl KSplit {
    /// Says it, against the C split's `c_split` seconds.
    fn report(&self, out: &Out, c_split: f64) {
        match self {
            KSplit::Helps(seconds, parts, on) => {
                let taken = *seconds < c_split * (1.0 - hetblas_core::balance::MIN_GAIN);
                let text: Vec<String> = parts.iter().map(|(d, k)| format!("{d} k={k}")).collect();
                say!(
                    out,
                    "K split: {seconds:.4} s  {} (partials reduced on {on}) against {c_split:.4} \
                     s for the C split{}",
                    text.join(" + "),
                    if taken {
                        "  <- K split when C has under two tiles per device"
                    } else {
                        ""
                    }
                );
                out.set(
                    "k_split",
                    serde_json::json!({
                        "predicted_s": seconds,
                        "devices": parts.iter().map(|(d, _)| d.clone()).collect::<Vec<_>>(),
                        "k": parts.iter().map(|(_, k)| *k).collect::<Vec<_>>(),
                        "reduced_on": on,
                        "c_split_s": c_split,
                        "taken_when_c_is_small": taken,
                    }),
                );
            }
            KSplit::DoesNot => {
                say!(
                    out,
                    "K split: not predicted to help (a device's partial costs more than it saves)"
                );
                out.set("k_split", serde_json::Value::Null);
            }
        }
    }
}

/// The K split over the accelerators with a tile add (host operands): what the pool would
/// weigh for this shape against the C split; `None` with fewer than two such accelerators.
fn k_split(
    rt: &Runtime,
    p: &GemmProblem,
    cands: &[&std::sync::Arc<dyn hetblas_core::Device>],
    tile: usize,
    profile: &hetblas_core::profile::MachineProfile,
) -> Option<KSplit> {
    let accel: Vec<_> = cands
        .iter()
        .copied()
        .filter(|d| !d.space().is_host() && d.kernel().supports_add())
        .collect();
    if accel.len() < 2 {
        return None;
    }
    let bw = |s: MemorySpace, d: MemorySpace| rt.link_bandwidth(s, d);
    Some(
        match hetblas_core::tuning::ksplit::choose(p, &accel, tile, Some(profile), &bw) {
            Some(s) => KSplit::Helps(
                s.seconds,
                accel
                    .iter()
                    .zip(&s.k)
                    .filter(|(_, &k)| k > 0)
                    .map(|(d, &k)| (d.info().label(), k))
                    .collect(),
                accel[0].info().label(),
            ),
            None => KSplit::DoesNot,
        },
    )
}
