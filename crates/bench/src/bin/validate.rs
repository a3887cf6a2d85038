//! Model validation on a GPU: for each problem of the validation set, the time predicted by the
//! model hetblas uses, the time measured with the tile it chose, and a measured sweep of tile
//! sizes (is the chosen tile the best one?). Writes CSV; `plot-validation` draws it.
//!
//! Needs a calibrated profile (`hetblas calibrate`).

use clap::Parser;
use hetblas::{DType, GemmOptions, MatIn, MatMut, MatOut, MatRef, Runtime, Scalar, Trans};
use hetblas_bench::{median, random_data};
use hetblas_core::autotune::model_tile;
use hetblas_core::problem::GemmProblem;
use hetblas_core::Blocking;
use std::io::Write;
use std::time::Instant;

#[derive(Parser, Debug)]
struct Args {
    /// Where to write the results (with `--rescore`: the validation CSV to read).
    #[arg(long)]
    csv: std::path::PathBuf,
    /// No GPU: predict every measured point of `--csv` again with this profile (the model as
    /// built now) and report the errors and the choices; the chosen point also replayed by the
    /// simulator, in the fold mode it ran (or, where the CSV does not record it, the mode the
    /// model picks at that tile). For model work between GPU runs.
    #[arg(long)]
    rescore: Option<std::path::PathBuf>,
    /// Timed repetitions of the chosen tile and of every sweep point (after a warm-up), at
    /// least; short problems get more, up to `--max-reps`, so that each point is about
    /// `--point-seconds` of timed calls (medians of single calls of a 10 ms problem vary by
    /// 10-20% on H200; with 9 calls, sub-millisecond problems still moved by up to 0.3 ms
    /// between two tiles that plan the same grid).
    #[arg(long, default_value_t = 2)]
    reps: usize,
    #[arg(long, default_value_t = 2000)]
    max_reps: usize,
    #[arg(long, default_value_t = 0.25)]
    point_seconds: f64,
    /// The chosen point's and the sweep's timed calls, in this many interleaved rounds (each
    /// point's calls split among them), so that a drift of the machine within the process
    /// falls on every point alike. Timed one block after another, six link-bound 3-13 ms
    /// calls ran their chosen tile 9-16% slower than the sweep's best on one H200, and within
    /// 1-4% of it, either way, traced on another the next day (`docs/PERFORMANCE.md`).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Untimed calls of the chosen tile, for at least this long, before any point is timed.
    #[arg(long, default_value_t = 0.2)]
    warm_seconds: f64,
    /// Only the first N problems (quick checks).
    #[arg(long)]
    limit: Option<usize>,
    /// Divide every dimension and tile by this (smoke tests on small machines).
    #[arg(long, default_value_t = 1)]
    scale: usize,
    /// Use N host-emulated devices instead of the GPU (smoke tests without a GPU).
    #[arg(long, default_value_t = 0)]
    emulated: usize,
    /// The seeded random set ([`hetblas_bench::validation_set`]) instead of the fixed grid:
    /// one seed for tuning the model, another for reporting on it.
    #[arg(long)]
    seed: Option<u64>,
    /// Problems in the seeded set.
    #[arg(long, default_value_t = 40)]
    count: usize,
    /// Only problem I (from 0) of the set: one process per problem (validate.sh loops).
    #[arg(long)]
    case: Option<usize>,
    /// Append to `--csv` (the header only when the file is new or empty).
    #[arg(long)]
    append: bool,
    /// With `--seed`: the set whose problems take LO..HI seconds on a nominal H200
    /// (`validation_set::generate_window`), e.g. `0.002,1`; without it the seeded set of
    /// `validation_set::generate` (sub-millisecond to 0.4 s).
    #[arg(long, value_parser = parse_window)]
    window: Option<(f64, f64)>,
    /// Timed calls right after the first (planning) call, before the warm-up, each after C is
    /// written again from a copy (as `hetblas gemm --reps 3` does, and as a program that
    /// computes between its calls leaves the host memory and the devices idle for a while):
    /// recorded as `cold_s` beside the steady state's `measured_s` (calls back to back).
    #[arg(long, default_value_t = 3)]
    cold_reps: usize,
    /// No GPU: the summary of `--csv` (one or more sets, comma-separated files) as markdown:
    /// the prediction errors (|error| median, p90, max; how many optimistic), the choices
    /// against the best of each sweep, for the steady state and the first calls.
    #[arg(long)]
    summary: bool,
    /// With `--summary`: a file of seeds used for tuning the model (one per line, `#`
    /// comments); a set of one of them is reported as tuned-on, not as a judgement. With
    /// `--rescore`: the seeds of `--csv` are added to it (rescoring is tuning).
    #[arg(long)]
    tuned: Option<std::path::PathBuf>,
}

/// `LO,HI` seconds.
fn parse_window(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = s.split_once(',').ok_or("the window is LO,HI in seconds")?;
    let lo: f64 = a.trim().parse().map_err(|e| format!("{a}: {e}"))?;
    let hi: f64 = b.trim().parse().map_err(|e| format!("{b}: {e}"))?;
    if !(lo >= 0.0 && hi > lo) {
        return Err(format!("window {lo}..{hi}: need 0 <= LO < HI"));
    }
    Ok((lo, hi))
}

#[derive(Clone, Copy)]
struct Case {
    m: usize,
    n: usize,
    k: usize,
    dtype: DType,
    placement: &'static str,
    beta_zero: bool,
}

fn set() -> Vec<Case> {
    let c = |m, n, k, dtype, placement, beta_zero| Case {
        m,
        n,
        k,
        dtype,
        placement,
        beta_zero,
    };
    let mut v = Vec::new();
    for s in [4096, 6144, 8192, 12288, 16384, 20480, 24576, 32768] {
        v.push(c(s, s, s, DType::F64, "hhh", false));
    }
    for s in [8192, 16384, 24576] {
        v.push(c(s, s, s, DType::F32, "hhh", false));
    }
    // Fat-by-thin (large M = N, small K) and thin-by-fat (small M = N, large K).
    for (m, k) in [(32768, 2048), (32768, 4096), (24576, 4096), (16384, 2048)] {
        v.push(c(m, m, k, DType::F64, "hhh", false));
    }
    for (m, k) in [(4096, 32768), (2048, 32768), (4096, 16384), (8192, 32768)] {
        v.push(c(m, m, k, DType::F64, "hhh", false));
    }
    v.push(c(32768, 4096, 4096, DType::F64, "hhh", false));
    v.push(c(4096, 32768, 8192, DType::F64, "hhh", false));
    // Placements and beta = 0.
    v.push(c(16384, 16384, 16384, DType::F64, "ddh", false));
    v.push(c(8192, 8192, 8192, DType::F64, "ddh", false));
    v.push(c(16384, 16384, 16384, DType::F64, "hdh", false));
    v.push(c(16384, 16384, 16384, DType::F64, "dhd", false));
    v.push(c(16384, 16384, 16384, DType::F64, "hhd", false));
    v.push(c(16384, 16384, 16384, DType::F64, "hhh", true));
    v.push(c(8192, 8192, 8192, DType::F64, "hhh", true));
    v.push(c(24576, 24576, 24576, DType::F64, "ddh", false));
    v.push(c(12288, 12288, 12288, DType::F32, "hdh", false));
    v
}

/// The seeded set's problems, host operands.
fn seeded(seed: u64, count: usize, window: Option<(f64, f64)>) -> Vec<Case> {
    let set = match window {
        Some((lo, hi)) => hetblas_bench::validation_set::generate_window(seed, count, lo, hi),
        None => hetblas_bench::validation_set::generate(seed, count),
    };
    set.into_iter()
        .map(|p| Case {
            m: p.m,
            n: p.n,
            k: p.k,
            dtype: p.dtype,
            placement: "hhh",
            beta_zero: p.beta_zero,
        })
        .collect()
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(args) {
        eprintln!("validate: {e}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<(), String> {
    if args.summary {
        let csvs: Vec<std::path::PathBuf> = args
            .csv
            .to_string_lossy()
            .split(',')
            .map(std::path::PathBuf::from)
            .collect();
        print!(
            "{}",
            hetblas_bench::validation_summary::markdown(&csvs, args.tuned.as_deref())?
        );
        return Ok(());
    }
    if let Some(profile) = &args.rescore {
        if let Some(ledger) = &args.tuned {
            hetblas_bench::validation_summary::record_tuned(&args.csv, ledger)?;
        }
        return hetblas_bench::rescore::run(&args.csv, profile);
    }
    let (rt, gpu) = hetblas_bench::harness_runtime(args.emulated)?;
    let profile = rt
        .profile()
        .ok_or("no calibrated profile: run `hetblas calibrate` first")?;
    let fresh = !args.append
        || std::fs::metadata(&args.csv)
            .map(|m| m.len() == 0)
            .unwrap_or(true);
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(args.append)
        .truncate(!args.append)
        .open(&args.csv)
        .map_err(|e| e.to_string())?;
    if fresh {
        writeln!(
            f,
            "m,n,k,dtype,placement,beta_zero,chosen_tile,predicted_s,measured_s,error,best_tile,best_s,chosen_over_best,plan_new_us,plan_repeat_us,sweep,model,host_fold,fold_tail,seed,case,cold_s,cold_error"
        )
        .map_err(|e| e.to_string())?;
    }
    let mut cases: Vec<(usize, Case)> = match args.seed {
        Some(seed) => seeded(seed, args.count, args.window),
        None => set(),
    }
    .into_iter()
    .enumerate()
    .collect();
    if let Some(i) = args.case {
        if i >= cases.len() {
            return Err(format!("--case {i}: the set has {} problems", cases.len()));
        }
        cases = vec![cases[i]];
    }
    if let Some(l) = args.limit {
        cases.truncate(l);
    }
    let sc = args.scale.max(1);
    for (_, c) in &mut cases {
        (c.m, c.n, c.k) = (c.m / sc, c.n / sc, c.k / sc);
    }
    let total = cases.len();
    for (i, (index, c)) in cases.iter().enumerate() {
        // The set's seed and the problem's place in it: a summary says which set it judges.
        let seed = args.seed.map_or(String::new(), |s| s.to_string());
        let tag = format!("{seed},{index}");
        let line = match c.dtype {
            DType::F64 => case::<f64>(&rt, gpu, c, &profile, &args, &tag)?,
            DType::F32 => case::<f32>(&rt, gpu, c, &profile, &args, &tag)?,
            DType::C64 => case::<hetblas_core::scalar::c64>(&rt, gpu, c, &profile, &args, &tag)?,
            DType::C32 => case::<hetblas_core::scalar::c32>(&rt, gpu, c, &profile, &args, &tag)?,
        };
        println!("[{:>2}/{}] {line}", i + 1, total);
        writeln!(f, "{line}").map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn case<T: Scalar>(
    rt: &Runtime,
    gpu: usize,
    c: &Case,
    profile: &hetblas_core::profile::MachineProfile,
    args: &Args,
    tag: &str,
) -> Result<String, String> {
    let scale = args.scale.max(1);
    let (m, n, k) = (c.m, c.n, c.k);
    let dev = rt.devices()[gpu].clone();
    let p: Vec<char> = c.placement.chars().collect();
    let a = random_data::<T>(1, m * k);
    let b = random_data::<T>(2, k * n);
    let mut ch = random_data::<T>(3, m * n);
    let e = |x: hetblas::Error| x.to_string();
    let da = if p[0] == 'd' {
        Some(
            rt.upload(gpu, MatRef::packed(&a, m, k).map_err(e)?)
                .map_err(e)?,
        )
    } else {
        None
    };
    let db = if p[1] == 'd' {
        Some(
            rt.upload(gpu, MatRef::packed(&b, k, n).map_err(e)?)
                .map_err(e)?,
        )
    } else {
        None
    };
    let mut dc = if p[2] == 'd' {
        Some(
            rt.upload(gpu, MatRef::packed(&ch, m, n).map_err(e)?)
                .map_err(e)?,
        )
    } else {
        None
    };
    let beta = if c.beta_zero {
        T::default()
    } else {
        T::from_f64(1.0)
    };
    let locations = hetblas_core::problem::placement_locations(c.placement, dev.space())
        .ok_or_else(|| format!("bad placement {:?}", c.placement))?;
    let problem = GemmProblem {
        transa: Trans::N,
        transb: Trans::N,
        m,
        n,
        k,
        dtype: T::DTYPE,
        beta_zero: c.beta_zero,
        locations,
        sym: None,
    };
    let choice = model_tile(
        &problem,
        &dev,
        dev.memory_budget(),
        profile,
        hetblas_core::autotune::FoldRequest::default(),
    )
    .ok_or("the profile cannot model this problem")?;
    // Each case starts from the calibrated fold price, not from the previous case's folds.
    rt.fold_speed().reset();
    // C as it was, to write it again before each first call (host C only).
    let c0 = (p[2] != 'd' && args.cold_reps > 0).then(|| ch.clone());
    // `reset`: C is written again from `c0` first (untimed).
    let mut call =
        |tile: Option<usize>, reset: bool| -> Result<(f64, hetblas::GemmReport), String> {
            if let (true, Some(c0)) = (reset, &c0) {
                ch.copy_from_slice(c0);
            }
            let ai: MatIn<'_, T> = da.as_ref().map_or(
                MatIn::Host(MatRef::packed(&a, m, k).unwrap()),
                MatIn::Device,
            );
            let bi: MatIn<'_, T> = db.as_ref().map_or(
                MatIn::Host(MatRef::packed(&b, k, n).unwrap()),
                MatIn::Device,
            );
            let co: MatOut<'_, T> = match dc.as_mut() {
                Some(d) => MatOut::Device(d),
                None => MatOut::Host(MatMut::packed(&mut ch, m, n).unwrap()),
            };
            let opts = GemmOptions::default().devices([gpu]).tile(tile);
            let t = Instant::now();
            let r = rt
                .gemm_with(
                    Trans::N,
                    Trans::N,
                    T::from_f64(1.0),
                    ai,
                    bi,
                    beta,
                    co,
                    &opts,
                )
                .map_err(|e| e.to_string())?;
            Ok((t.elapsed().as_secs_f64(), r))
        };
    // The chosen tile: the first call plans (new problem). Then calls for at least
    // `--warm-seconds` untimed: a fresh process's first sub-millisecond calls ran 10-30% slower
    // than the same calls later (H200: 187 us where 146 us held after 0.2 s of calls).
    let (_, first) = call(None, false)?;
    let warm = Instant::now();
    // The first calls after the planning one, as a process that calls a few times sees them.
    let mut cold: Vec<f64> = Vec::with_capacity(args.cold_reps);
    for _ in 0..args.cold_reps {
        cold.push(call(None, true)?.0);
    }
    let cold_s = if cold.is_empty() {
        f64::NAN
    } else {
        median(&mut cold)
    };
    while warm.elapsed().as_secs_f64() < args.warm_seconds {
        call(None, false)?;
    }
    let (once, r) = call(None, false)?;
    // Timed calls per point: about `--point-seconds` of them.
    let reps = ((args.point_seconds / once.max(1e-6)).ceil() as usize)
        .clamp(args.reps.max(1), args.max_reps.max(args.reps.max(1)));
    let chosen = choice.tile;
    // The sweep's tiles: problems under 4096 per side (the seeded set's small ones) also try
    // small tiles. A tile the model chose is the chosen point.
    let maxdim = m.max(n).max(k);
    let tiles: &[usize] = if maxdim * scale < 4096 {
        &[256, 512, 1024, 2048]
    } else {
        &[1024, 2048, 4096, 8192]
    };
    let sweep_tiles: Vec<usize> = tiles
        .iter()
        .filter(|&&t| t <= maxdim * scale && !(t == 1024 && maxdim * scale > 8192))
        .map(|&t| t / scale)
        .collect();
    let others: Vec<usize> = sweep_tiles
        .iter()
        .copied()
        .filter(|&t| Blocking::square(t) != chosen)
        .collect();
    // Every point (chosen and sweep) is the median of the same number of timed calls, taken
    // in interleaved rounds. Each block after a switch of tile starts from the calibrated fold
    // price, as the case's first block did (what other tiles' folds reached would otherwise
    // decide this tile's calls), and its first call is untimed (the other plan's workspaces;
    // in round 0 it plans the tile). The chosen tile's round 0 goes on from `once`.
    let rounds = args.rounds.max(1);
    let per_round = reps.div_ceil(rounds);
    let mut times = vec![once];
    let mut other_times: Vec<Vec<f64>> = vec![Vec::with_capacity(reps); others.len()];
    // What the chosen tile's last timed call ran, and the fold price it was decided at (the
    // other tiles' blocks reset and move that price after it).
    let mut ran = r;
    let mut decided_at = rt.decision_profile();
    for round in 0..rounds {
        if round > 0 {
            rt.fold_speed().reset();
            call(None, false)?;
        }
        let own = if round == 0 { per_round - 1 } else { per_round };
        for _ in 0..own {
            decided_at = rt.decision_profile();
            let (s, r) = call(None, false)?;
            times.push(s);
            ran = r;
        }
        for (&t, v) in others.iter().zip(&mut other_times) {
            rt.fold_speed().reset();
            call(Some(t), false)?;
            for _ in 0..per_round {
                v.push(call(Some(t), false)?.0);
            }
        }
    }
    let measured = median(&mut times);
    debug_assert_eq!(first.tile.map(|t| t.0), Some(choice.tile.tm.min(m)));
    // Folds slower here than calibrated are priced at what they reached
    // (`hetblas_core::tuning::fold_speed`): the prediction is then the model's at that rate,
    // as the timed calls were decided.
    let choice = match decided_at {
        Some(p) if p.host_fold_bytes_per_sec != profile.host_fold_bytes_per_sec => {
            let priced = model_tile(
                &problem,
                &dev,
                dev.memory_budget(),
                &p,
                hetblas_core::autotune::FoldRequest::default(),
            )
            .ok_or("the profile cannot model this problem")?;
            eprintln!(
                "{m}x{n}x{k}: host folds priced at {:.1} GB/s, not the calibrated {:.1}; \
                 predicted at that price: {}, the last timed call ran {:?}",
                hetblas_core::autotune::fold_rate(Some(&p)) / 1e9,
                hetblas_core::autotune::fold_rate(Some(profile)) / 1e9,
                priced.tile,
                ran.tile
            );
            priced
        }
        _ => choice,
    };
    let chosen = choice.tile;
    let sweep: Vec<(usize, f64)> = sweep_tiles
        .iter()
        .map(|&t| match others.iter().position(|&o| o == t) {
            Some(i) => (t, median(&mut other_times[i])),
            None => (t, measured),
        })
        .collect();
    let (best_t, best_s) = sweep
        .iter()
        .copied()
        .min_by(|x, y| x.1.total_cmp(&y.1))
        .map(|(t, s)| (Blocking::square(t), s))
        .unwrap_or((chosen, measured));
    for buf in [&a, &b, &ch] {
        rt.release_host(buf).map_err(|e| e.to_string())?;
    }
    let predicted = choice.predicted.seconds;
    let model = choice
        .candidates
        .iter()
        .map(|(t, p)| format!("{t}:{:.5}", p.seconds))
        .collect::<Vec<_>>()
        .join(" ");
    Ok(format!(
        "{m},{n},{k},{},{},{},{chosen},{predicted:.6},{measured:.6},{:.4},{best_t},{best_s:.6},{:.4},{:.1},{:.1},\"{}\",\"{model}\",{},{},{tag},{cold_s:.6},{:.4}",
        T::DTYPE,
        c.placement,
        c.beta_zero,
        (predicted - measured) / measured,
        measured / best_s,
        first.planning_seconds * 1e6,
        ran.planning_seconds * 1e6,
        sweep
            .iter()
            .map(|(t, s)| format!("{t}:{s:.5}"))
            .collect::<Vec<_>>()
            .join(" "),
        // What the chosen calls ran: whether C was folded on the host, and how many C tiles
        // were sent whole (the rescore predicts the chosen point in this mode).
        ran.host_fold,
        ran.fold_tail,
        (predicted - cold_s) / cold_s
    ))
}
