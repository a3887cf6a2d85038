//! `hetblas predict`: every model's predicted time for each candidate tile, and the choice.

use crate::shape::ShapeArgs;
use clap::Args;
use hetblas::{Error, Result, Runtime};
use hetblas_core::autotune::{choose_devices, model_tile};
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
}

pub fn run(rt: &Runtime, a: PredictArgs) -> Result<()> {
    let routine = a.routine.to_ascii_lowercase();
    if routine == "potrf" || routine == "getrf" {
        let r = if routine == "potrf" {
            hetblas_core::plan::FactorRoutine::Potrf(crate::factor::uplo_of(a.uplo)?)
        } else {
            hetblas_core::plan::FactorRoutine::Getrf
        };
        let (_, n, _) = a.shape.mnk();
        return crate::factor::predict(rt, r, n, a.shape.dtype());
    }
    let sym_routine = !matches!(routine.as_str(), "gemm" | "trsm" | "trmm");
    if sym_routine {
        let routine = a.routine.parse().map_err(Error::InvalidInput)?;
        let shape = a.shape.mnk();
        return crate::sym::predict(rt, routine, shape, a.shape.problem.dtype, a.shape.transa);
    }
    if !a.routine.eq_ignore_ascii_case("gemm") {
        let routine = if a.routine.eq_ignore_ascii_case("trsm") {
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
        return crate::tri::predict(rt, routine, &shape);
    }
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
        let labels: Vec<String> = rt.devices().iter().map(|d| d.info().label()).collect();
        return Err(Error::InvalidInput(format!(
            "predict explains a GEMM offloaded to an accelerator, and {} is the host ({} \
             here): give --device with an accelerator, or try host-emulated ones \
             (`hetblas --emulated 1 calibrate`, then `hetblas --emulated 1 predict`), or a \
             GPU machine's profile (`hetblas simulate --profile \
             docs/profiles/nvidia-h200-x1.json`)",
            dev.info().label(),
            labels.join(", ")
        )));
    }
    let profile = rt.profile().ok_or_else(|| {
        Error::Profile(format!("{} — nothing to predict with", rt.profile_status()))
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
    if device_profile.is_some_and(|d| d.exec_table_measured(dtype).is_none()) {
        println!(
            "note: no measured {dtype} gemm table for {label}: modelled from the {} table \
             (4 real multiply-adds per complex one, at the same flop rate)",
            dtype.real()
        );
    }
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
    println!(
        "{}gemm {}x{}x{} {}{} placement {} on {label}{}; predicted seconds per tile size:",
        dtype.blas_prefix(),
        problem.m,
        problem.n,
        problem.k,
        problem.transa.as_char(),
        problem.transb.as_char(),
        a.placement,
        if a.beta_zero { ", beta = 0" } else { "" }
    );
    print!("{:>18}", "T");
    for k in ModelKind::ALL {
        print!(" {:>10}", k.name());
    }
    println!(" {:>10}", "hetblas");
    for &(t, pred) in &choice.candidates {
        print!("{:>18}", t.to_string());
        for k in ModelKind::ALL {
            // CoCoPeLia's models are for square tiles.
            if t.is_square() {
                print!(" {:>10.4}", sd.predict(k, &offload, t.tm, &exec));
            } else {
                print!(" {:>10}", "-");
            }
        }
        println!(
            " {:>10.4}{}",
            pred.seconds,
            if t == choice.tile { "  <- chosen" } else { "" }
        );
    }
    let pr = choice.predicted;
    println!(
        "choice: T = {} ({:.4} s = {:.2} TFLOP/s; compute {:.4} s, h2d {:.4} s, d2h {:.4} s, first fetch {:.4} s, first-group stall {:.4} s)",
        choice.tile,
        pr.seconds,
        problem.flops() / pr.seconds / 1e12,
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
    println!("the problem is {bound}-bound on {label}");
    match (choice.host_fold, choice.other_mode) {
        (true, Some((t, o))) => println!(
            "host C is folded on the host: predicted {:.4} s against {:.4} s (T = {t}) sending C to the device",
            pr.seconds, o.seconds
        ),
        (false, Some((t, o))) => {
            println!(
                "C is sent to the device: predicted {:.4} s against {:.4} s (T = {t}) folding on the host",
                pr.seconds, o.seconds
            );
            if let Some(slow) = choice.fold_slow_wake_s {
                println!("  (folding loses at the fold threads' slowest wake: {slow:.4} s)");
            }
        }
        _ => {}
    }

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
    if let Some(c) = choose_devices(&hostp, &cands, choice.tile.tm, Some(&profile), &bw) {
        println!("device subsets for host operands (balanced shares; predicted seconds):");
        for s in &c.evaluated {
            let names: Vec<String> = s
                .devices
                .iter()
                .zip(&s.balance.weights)
                .map(|(&i, w)| format!("{} {:.0}%", cands[i].info().label(), w * 100.0))
                .collect();
            println!(
                "  {:.4} s  {}{}",
                s.balance.makespan,
                names.join(" + "),
                if s.devices == c.devices {
                    "  <- chosen"
                } else {
                    ""
                }
            );
        }
        println!(
            "(a larger subset is taken only when it is predicted {:.0}% faster)",
            hetblas_core::balance::MIN_GAIN * 100.0
        );
        print_k_split(rt, &hostp, &cands, choice.tile.tm, &profile, c.predicted);
    }
    Ok(())
}

/// The K-split over the accelerators with a tile add (host operands), against the C split's
/// `c_split` seconds: what the pool would weigh for this shape.
fn print_k_split(
    rt: &Runtime,
    p: &GemmProblem,
    cands: &[&std::sync::Arc<dyn hetblas_core::Device>],
    tile: usize,
    profile: &hetblas_core::profile::MachineProfile,
    c_split: f64,
) {
    let accel: Vec<_> = cands
        .iter()
        .copied()
        .filter(|d| !d.space().is_host() && d.kernel().supports_add())
        .collect();
    if accel.len() < 2 {
        return;
    }
    let bw = |s: MemorySpace, d: MemorySpace| rt.link_bandwidth(s, d);
    match hetblas_core::tuning::ksplit::choose(p, &accel, tile, Some(profile), &bw) {
        Some(s) => {
            let parts: Vec<String> = accel
                .iter()
                .zip(&s.k)
                .filter(|(_, &k)| k > 0)
                .map(|(d, k)| format!("{} k={k}", d.info().label()))
                .collect();
            println!(
                "K split: {:.4} s  {} (partials reduced on {}) against {c_split:.4} s for the \
                 C split{}",
                s.seconds,
                parts.join(" + "),
                accel[0].info().label(),
                if s.seconds < c_split * (1.0 - hetblas_core::balance::MIN_GAIN) {
                    "  <- K split when C has under two tiles per device"
                } else {
                    ""
                }
            );
        }
        None => {
            println!("K split: not predicted to help (a device's partial costs more than it saves)")
        }
    }
}
