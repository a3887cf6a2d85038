//! `hetblas gemm`: a GEMM on random host data, timed, optionally checked; `hetblas gemmt`: the
//! same for one triangle of C (GEMMT), on the same options and code path.

use crate::report::{say, Out};
use crate::shape::{RunArgs, ShapeArgs};
use clap::{Args, Subcommand};
use hetblas::{DType, GemmOptions, MatMut, MatRef, Result, Runtime, Scalar, Trans, Uplo};
use hetblas_core::reference::check_sampled;
use hetblas_core::scalar::{c32, c64};
use hetblas_core::sym_reference::same_bits;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::time::Instant;

#[derive(Args, Debug)]
pub struct GemmArgs {
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// The scalar alpha (negative values welcome: --alpha -1.5).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub alpha: f64,
    /// The scalar beta; 0 never reads C (negative values welcome: --beta -0.5).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub beta: f64,
    /// Imaginary part of alpha (complex dtypes c32/c64 only).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub alpha_im: f64,
    /// Imaginary part of beta (complex dtypes c32/c64 only).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub beta_im: f64,
    #[command(flatten)]
    pub run: RunArgs,
    /// Force a square tile size.
    #[arg(long)]
    pub tile: Option<usize>,
    /// Force tile sizes and group: `T`, or `TMxTNxTK` with an optional `/gG` (C tiles
    /// accumulated together), e.g. `4096x512x8192/g1`.
    #[arg(long)]
    pub blocking: Option<hetblas_core::Blocking>,
    /// After the warm-up call, untimed calls for at least this many seconds more before the
    /// timed ones (the validation's steady state: `validate --warm-seconds`); 0: none.
    #[arg(long, default_value_t = 0.0, value_parser = seconds)]
    pub warm_seconds: f64,
    /// Calls back to back: C is not written again from its copy before each call (it
    /// accumulates; no `--check`), so nothing runs between calls, as in the validation's
    /// steady state. By default each call starts from the same C, written again on the host
    /// first, as a program that computes between its calls leaves the devices idle.
    #[arg(long, conflicts_with = "check")]
    pub back_to_back: bool,
    /// Host C with beta != 0: `on` folds the products into C on the host, `off` sends C to the
    /// devices; default: the model decides.
    #[arg(long, value_parser = ["on", "off"])]
    pub host_fold: Option<String>,
    /// With host folds: send the C of this many C tiles of each device instead of folding
    /// them (the last it finishes, and half of them spread earlier); default: the model
    /// decides.
    #[arg(long)]
    pub fold_tail: Option<usize>,
    /// Use at most this many bytes of each device's memory for tiles (out-of-core below the
    /// problem's footprint: tiles are evicted and fetched again).
    #[arg(long)]
    pub memory_limit: Option<u64>,
    /// Inject a device fault before the first timed repetition (after the warm-up), in
    /// `HETBLAS_FAULT`'s syntax: `dev=1,at=kernel:4,kind=lost` (`dev` is an index into
    /// `hetblas devices`; kinds error, lost, oom, panic). The recovered repetition is timed
    /// against the fault-free ones and checked with `--check`; later ones run without the
    /// failed device.
    #[arg(long)]
    pub fault: Option<String>,
    /// What the device subset is chosen for: time (default), energy or edp (energy x time);
    /// energy and edp need device powers in the profile (`hetblas calibrate` records them).
    #[arg(long, default_value = "time")]
    pub objective: hetblas_core::energy::Objective,
    /// With --trace: replay the last repetition's plan in the simulator against the profile
    /// and write the simulated timeline beside the real one (two process rows).
    #[arg(long, requires = "trace")]
    pub simulate: bool,
}

/// `hetblas gemmt`: GEMM's options, and the triangle of C.
#[derive(Args, Debug)]
pub struct GemmtArgs {
    #[command(flatten)]
    pub gemm: GemmArgs,
    /// The triangle of C computed (the other is neither read nor written): L (lower) or U
    /// (upper). C is n x n (-m defaults to n; given, it must equal n).
    #[arg(long, default_value = "L")]
    pub uplo: Uplo,
}

/// GEMM's command and those of the routines run as its plan, on its options and code path:
/// the command line takes them all from here, so that such a routine adds its command in this
/// file alone.
#[derive(Subcommand, Debug)]
pub enum GemmCommand {
    /// Run a GEMM on random host data; print time and GFLOP/s.
    Gemm(GemmArgs),
    /// GEMMT (C's L or U triangle of alpha op(A) op(B) + beta C, C n x n) on random host data,
    /// with GEMM's options; print time and GFLOP/s.
    Gemmt(GemmtArgs),
}

pub fn run(rt: &Runtime, command: GemmCommand) -> Result<()> {
    match command {
        GemmCommand::Gemm(a) => run_triangle(rt, a, None),
        GemmCommand::Gemmt(a) => run_gemmt(rt, a),
    }
}

fn run_gemmt(rt: &Runtime, mut a: GemmtArgs) -> Result<()> {
    let (_, n, _) = a.gemm.shape.mnk();
    let m = *a.gemm.shape.problem.m.get_or_insert(n);
    if m != n {
        return Err(hetblas::Error::InvalidInput(format!(
            "gemmt: C is n x n, but -m {m} differs from n = {n} (give -n or --size)"
        )));
    }
    run_triangle(rt, a.gemm, Some(a.uplo))
}

/// GEMM (`triangle` None) or GEMMT.
fn run_triangle(rt: &Runtime, a: GemmArgs, triangle: Option<Uplo>) -> Result<()> {
    if !a.shape.dtype().is_complex() && (a.alpha_im != 0.0 || a.beta_im != 0.0) {
        return Err(hetblas::Error::InvalidInput(format!(
            "--alpha-im/--beta-im need a complex --dtype (c32 or c64), not {}",
            a.shape.dtype()
        )));
    }
    match a.shape.dtype() {
        DType::F64 => run_typed::<f64>(rt, a, triangle),
        DType::F32 => run_typed::<f32>(rt, a, triangle),
        DType::C64 => run_typed::<c64>(rt, a, triangle),
        DType::C32 => run_typed::<c32>(rt, a, triangle),
    }
}

/// `n` random elements (uniform in [-1, 1), both parts of a complex value), or an error when the memory cannot be had (instead of the abort of a
/// failed allocation).
fn random<T: Scalar>(rng: &mut StdRng, n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|e| {
        hetblas::Error::InvalidInput(format!(
            "not enough memory for a matrix of {n} elements ({e})"
        ))
    })?;
    v.extend((0..n).map(|_| {
        let re = rng.random_range(-1.0..1.0);
        let im = if T::DTYPE.is_complex() {
            rng.random_range(-1.0..1.0)
        } else {
            0.0
        };
        T::from_c64(c64::new(re, im))
    }));
    Ok(v)
}

/// The `--trace` file, created before the computation so that a bad path fails early.
pub(crate) fn create_trace(path: Option<&std::path::Path>) -> Result<Option<std::fs::File>> {
    path.map(|path| std::fs::File::create(path).map_err(|e| cannot_write(path, e)))
        .transpose()
}

/// The error of a trace file that cannot be written.
pub(crate) fn cannot_write(path: &std::path::Path, e: std::io::Error) -> hetblas::Error {
    hetblas::Error::InvalidInput(format!("cannot write {}: {e}", path.display()))
}

/// Writes a Chrome trace (`json`, of `intervals` intervals) into the file [`create_trace`]
/// made, and says where it went.
pub(crate) fn write_trace(
    out: &Out,
    path: &std::path::Path,
    file: &mut std::fs::File,
    json: &str,
    intervals: usize,
) -> Result<()> {
    use std::io::Write;
    file.write_all(json.as_bytes())
        .map_err(|e| cannot_write(path, e))?;
    out.set("trace", path.display().to_string());
    say!(out, "trace: {} ({intervals} intervals)", path.display());
    Ok(())
}

/// Refuses a problem whose host matrices (A, B, C and the copy of C each repetition starts
/// from) do not fit in the memory the system says is available, before allocating any.
fn check_host_memory(elements: [Option<usize>; 4], size: usize) -> Result<()> {
    let bytes = elements.iter().try_fold(0usize, |acc, e| {
        acc.checked_add(e.as_ref()?.checked_mul(size)?)
    });
    let Some(bytes) = bytes else {
        return Err(hetblas::Error::InvalidInput(
            "the matrices would need more memory than can be addressed".into(),
        ));
    };
    if let Some(available) = mem_available() {
        if bytes as u64 > available {
            return Err(hetblas::Error::InvalidInput(format!(
                "A, B and C (and a copy of C) need {:.1} GB of host memory; {:.1} GB is available",
                bytes as f64 / 1e9,
                available as f64 / 1e9
            )));
        }
    }
    Ok(())
}

/// `MemAvailable` of /proc/meminfo, in bytes (`None` where there is no such file).
fn mem_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

fn run_typed<T: Scalar>(rt: &Runtime, a: GemmArgs, triangle: Option<Uplo>) -> Result<()> {
    let out = Out::new(a.run.json);
    let (m, n, k) = a.shape.mnk();
    let (transa, transb) = (a.shape.transa, a.shape.transb);
    let (ar, ac) = transa.stored_shape(m, k);
    let (br, bc) = transb.stored_shape(k, n);
    let c_len = m.checked_mul(n);
    check_host_memory(
        [ar.checked_mul(ac), br.checked_mul(bc), c_len, c_len],
        T::DTYPE.size(),
    )?;
    // Refused now rather than after the computation.
    if a.simulate && rt.profile().is_none() {
        return Err(hetblas::Error::Profile(format!(
            "--simulate needs a machine profile: {}",
            rt.profile_status()
        )));
    }
    let mut trace_file = create_trace(a.run.trace.as_deref())?;
    let mut rng = StdRng::seed_from_u64(a.run.seed);
    let av: Vec<T> = random(&mut rng, ar * ac)?;
    let bv: Vec<T> = random(&mut rng, br * bc)?;
    let c0: Vec<T> = random(&mut rng, m * n)?;
    let mut c: Vec<T> = Vec::new();
    c.try_reserve_exact(c0.len()).map_err(|e| {
        hetblas::Error::InvalidInput(format!("not enough memory for a copy of C ({e})"))
    })?;
    c.extend_from_slice(&c0);
    let devices = a
        .run
        .devices
        .as_deref()
        .map(|s| crate::cli::parse_devices(rt, s))
        .transpose()?;
    let alpha = T::from_c64(c64::new(a.alpha, a.alpha_im));
    let beta = T::from_c64(c64::new(a.beta, a.beta_im));
    let mut times = Vec::new();
    // Joules of each timed fault-free repetition, with its time.
    let meters = crate::power::meters(rt, None);
    let mut energies: Vec<(f64, Vec<hetblas_core::energy::meter::DeviceEnergy>)> = Vec::new();
    let mut recovered: Vec<(u64, f64)> = Vec::new();
    let mut last = None;
    let fault = a
        .fault
        .as_deref()
        .map(|f| -> Result<_> {
            let spec = hetblas_core::fault::FaultSpec::parse(f)?;
            let (label, index) = match &spec.device {
                hetblas_core::fault::FaultDevice::Index(i) => (None, *i),
                hetblas_core::fault::FaultDevice::Label(l) => (Some(l.clone()), usize::MAX),
                hetblas_core::fault::FaultDevice::Any => {
                    return Err(hetblas::Error::InvalidInput(format!(
                        "--fault {f}: name one device (an index or a label); \
                         HETBLAS_FAULT takes dev=any"
                    )))
                }
            };
            let dev = rt
                .devices()
                .iter()
                .enumerate()
                .find(|(i, d)| {
                    label
                        .as_deref()
                        .map_or(*i == index, |l| d.info().label() == l)
                })
                .map(|(_, d)| d.clone())
                .ok_or_else(|| hetblas::Error::InvalidInput(format!("--fault: no device {f}")))?;
            let injector = dev.fault_injector().cloned().ok_or_else(|| {
                hetblas::Error::InvalidInput(format!(
                    "--fault: {} has no fault injection (emulated devices and GPUs do)",
                    dev.info().label()
                ))
            })?;
            Ok((injector, spec))
        })
        .transpose()?;
    let check = |c: &[T]| -> Result<()> {
        if let Some(uplo) = triangle {
            let (checked, worst, other) = check_triangle(
                uplo,
                (transa, transb),
                (alpha, beta),
                (&av, ar),
                (&bv, br),
                (&c0, c),
                (n, k),
                a.run.seed,
            )?;
            let what = format!("{checked} entries of the {} triangle", uplo.as_char());
            let also =
                format!("the other triangle's {other} entries bit-identical to C before the call");
            crate::check::passed(&out, &what, Some(checked), worst, c, &also);
            return Ok(());
        }
        let (checked, worst) = check_sampled(
            transa,
            transb,
            alpha.to_c64(),
            MatRef::new(&av, ar, ac, ar.max(1))?,
            MatRef::new(&bv, br, bc, br.max(1))?,
            beta.to_c64(),
            MatRef::new(&c0, m, n, m.max(1))?,
            MatRef::new(c, m, n, m.max(1))?,
            4096,
            a.run.seed,
        )
        .map_err(crate::check::failed)?;
        crate::check::passed(
            &out,
            &format!("{checked} entries"),
            Some(checked),
            worst,
            c,
            "",
        );
        Ok(())
    };
    // Energy counters at the first timed repetition: over all of them, calls too short for
    // the counter's resolution add up to enough.
    let mut batch: Option<(Instant, Vec<(String, f64)>)> = None;
    // Host ranges the last call page-locked, and the seconds it took.
    let mut pinned_last = (0u64, 0.0f64);
    let mut warm_until: Option<Instant> = None;
    let mut warm_calls = 0u64;
    let mut rep = 0;
    // Progress over the calls: the warm-up call, then the timed ones.
    let bar = crate::progress::bar(a.run.reps + 1, "calls", a.run.json);
    while rep <= a.run.reps {
        if rep == 1 && a.warm_seconds > 0.0 {
            // Untimed calls (each like a timed one) until the warm time has passed.
            let until = *warm_until.get_or_insert_with(|| {
                Instant::now() + std::time::Duration::from_secs_f64(a.warm_seconds)
            });
            if Instant::now() < until {
                bar.set_message("warm-up calls (untimed)");
                if !a.back_to_back {
                    c.copy_from_slice(&c0);
                }
                rt.gemm_with(
                    transa,
                    transb,
                    alpha,
                    MatRef::new(&av, ar, ac, ar.max(1))?,
                    MatRef::new(&bv, br, bc, br.max(1))?,
                    beta,
                    MatMut::new(&mut c, m, n, m.max(1))?,
                    &GemmOptions::default()
                        .tile(a.tile)
                        .blocking(a.blocking)
                        .device_list(devices.clone())
                        .memory_limit(a.memory_limit)
                        .host_fold(a.host_fold.as_deref().map(|f| f == "on"))
                        .fold_tail(a.fold_tail)
                        .objective(a.objective),
                )?;
                warm_calls += 1;
                continue;
            }
        }
        if rep == 1 {
            bar.set_message("timed calls");
            batch = Some((Instant::now(), crate::power::counters(&meters)));
        }
        if rep == 0 || !a.back_to_back {
            c.copy_from_slice(&c0);
        }
        if rep == 1 {
            if let Some((injector, spec)) = &fault {
                bar.suspend(|| {
                    say!(
                        out,
                        "injecting a fault ({}) before rep 1",
                        a.fault.as_deref().unwrap_or_default()
                    )
                });
                injector.arm([spec.clone()]);
            }
        }
        let opts = GemmOptions::default()
            .tile(a.tile)
            .blocking(a.blocking)
            .device_list(devices.clone())
            .memory_limit(a.memory_limit)
            .trace(trace_file.is_some() && rep == a.run.reps)
            .host_fold(a.host_fold.as_deref().map(|f| f == "on"))
            .fold_tail(a.fold_tail)
            .objective(a.objective)
            .c_region(triangle);
        // The call's own time, as `measure` takes it: without the meters' reads before and
        // after (NVML's took 5-13 ms around an 8192^3 DGEMM on H200).
        let pinned_before = pin_totals(rt);
        let (report, energy, secs) = hetblas_core::energy::meter::measure(&meters, || {
            rt.gemm_with(
                transa,
                transb,
                alpha,
                MatRef::new(&av, ar, ac, ar.max(1))?,
                MatRef::new(&bv, br, bc, br.max(1))?,
                beta,
                MatMut::new(&mut c, m, n, m.max(1))?,
                &opts,
            )
        });
        let report = report?;
        let (regs, reg_s) = pin_totals(rt);
        pinned_last = (regs - pinned_before.0, reg_s - pinned_before.1);
        // A call that recovered from a device failure is timed on its own, against the others.
        for f in &report.recovered {
            bar.suspend(|| say!(out, "rep {rep}: recovered in {secs:.4} s: {f}"));
        }
        if !report.recovered.is_empty() {
            recovered.push((rep, secs));
            if a.run.check {
                bar.suspend(|| check(&c))?;
            }
        } else if rep > 0 {
            times.push(secs);
            energies.push((secs, energy));
        }
        last = Some(report);
        rep += 1;
        bar.inc(1);
    }
    bar.finish_and_clear();
    if warm_calls > 0 {
        say!(
            out,
            "warm-up: {warm_calls} untimed calls in {:.2} s after the first",
            a.warm_seconds
        );
    }
    // The timed calls in order: a first call slower than the others shows a state the
    // warm-up call did not reach (clocks, host memory, the fold's rate).
    say!(
        out,
        "timed calls in order (s): {}",
        times
            .iter()
            .map(|t| format!("{t:.5}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    if times.is_empty() {
        times = recovered.iter().map(|r| r.1).collect();
    }
    times.sort_by(f64::total_cmp);
    let med = times[times.len() / 2];
    for (rep, secs) in &recovered {
        say!(
            out,
            "rep {rep} (recovered): {secs:.4} s, {:.2}x the median of the fault-free reps, \
             {med:.4} s (those after it ran without the failed device)",
            secs / med
        );
    }
    let failed: Vec<String> = rt
        .failed_devices()
        .iter()
        .filter_map(|&i| rt.devices().get(i).map(|d| d.info().label()))
        .collect();
    if !failed.is_empty() {
        say!(out, "left out until re-probed: {}", failed.join(", "));
    }
    out.set("failed_devices", failed);
    // Real flops: 8 per complex multiply-add; GEMMT's are the triangle's, diagonal included.
    let flops = match triangle {
        None => T::DTYPE.gemm_flops(m, n, k),
        Some(_) => T::DTYPE.gemm_flops(m, n, k) * (n + 1) as f64 / (2 * n.max(1)) as f64,
    };
    let report = last.unwrap_or_default();
    // The BLAS name and options: `dgemm 64x64x64 NT`, `dgemmtr L N T 64x64x64`.
    let routine = match triangle {
        None => format!(
            "{}gemm {m}x{n}x{k} {}{}",
            T::DTYPE.blas_prefix(),
            transa.as_char(),
            transb.as_char()
        ),
        Some(u) => format!(
            "{}gemmtr {} {} {} {m}x{n}x{k}",
            T::DTYPE.blas_prefix(),
            u.as_char(),
            transa.as_char(),
            transb.as_char()
        ),
    };
    say!(
        out,
        "{routine} on [{}] tile {}{}: median {:.4} s over {} reps, {:.2} GFLOP/s",
        report.devices.join(", "),
        report
            .tile
            .map_or("-".into(), |(x, y, z)| if x == y && y == z {
                x.to_string()
            } else {
                format!("{x}x{y}x{z}")
            }),
        match (report.host_fold, report.fold_tail) {
            (false, _) => String::new(),
            (true, 0) => " (C folded on the host)".into(),
            (true, t) => format!(" (C folded on the host, {t} tiles' C sent)"),
        },
        med,
        times.len(),
        flops / med / 1e9
    );
    out.set("routine", routine.split(' ').next().unwrap_or_default());
    out.set("uplo", triangle.map(|u| u.as_char().to_string()));
    out.set("transa", transa.as_char().to_string());
    out.set("transb", transb.as_char().to_string());
    out.set("m", m);
    out.set("n", n);
    out.set("k", k);
    out.set("devices", report.devices.clone());
    out.set("tile", report.tile.map(|(x, y, z)| vec![x, y, z]));
    out.set("host_fold", report.host_fold);
    out.set("median_s", med);
    out.set("times_s", times.clone());
    out.set("gflops", flops / med / 1e9);
    if let Some(line) = model_line(rt, &a, &report, med) {
        say!(out, "{line}");
    }
    if report.devices.len() > 1 {
        let shares: Vec<String> = report
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| {
                format!(
                    "{d} {} C tiles = {:.2}% of C (balancer {:.2}%)",
                    report.stats.c_tiles[i],
                    100.0 * report.stats.c_share[i],
                    100.0 * report.balancer_weights.get(i).copied().unwrap_or(f64::NAN)
                )
            })
            .collect();
        say!(out, "shares: {}", shares.join(", "));
        let gb = |v: &[u64]| {
            v.iter()
                .map(|b| format!("{:.2}", *b as f64 / 1e9))
                .collect::<Vec<_>>()
                .join("/")
        };
        say!(
            out,
            "traffic GB per device: from operands {}, from peers {}",
            gb(&report.stats.bytes_in),
            gb(&report.stats.bytes_peer)
        );
    }
    // What the last call's decision noted (devices left idle, folds priced below the
    // calibrated rate).
    for note in &report.notes {
        say!(out, "note: {note}");
    }
    // The energy of the repetition that took the median time.
    energies.sort_by(|x, y| x.0.total_cmp(&y.0));
    if let Some((_, e)) = energies.get(energies.len() / 2) {
        crate::power::print_energy(&out, e, flops);
    }
    if let Some((t0, before)) = batch {
        let secs = t0.elapsed().as_secs_f64();
        crate::power::print_batch_energy(&out, &meters, &before, secs, a.run.reps, flops);
    }
    if let (Some(path), Some(file)) = (&a.run.trace, trace_file.as_mut()) {
        if let Some(tr) = &report.trace {
            let json = if a.simulate {
                let sim = rt.simulate_report(&report, None)?;
                let (s, e) = tr.span();
                say!(
                    out,
                    "simulated: {:.4} s against {:.4} s measured ({:+.1}%)",
                    sim.makespan,
                    e - s,
                    100.0 * (sim.makespan - (e - s)) / (e - s)
                );
                for line in crate::terms::compare(tr, &sim.trace) {
                    say!(out, "  {line}");
                }
                hetblas_core::trace::chrome_json_rows(&[("real", tr), ("simulated", &sim.trace)])
            } else {
                tr.to_chrome_json()
            };
            write_trace(&out, path, file, &json, tr.intervals.len())?;
            // Where the traced call's time went outside its tasks (the trace's origin is the
            // start of execution; a K-split call's trace starts with the call, so its deciding
            // counts in the wait for the first task).
            let (s, e) = tr.span();
            say!(
                out,
                "traced call {:.2} ms: {:.2} ms to decide, plan and enter, {:.2} ms to the first \
                 task, {:.2} ms of tasks, {:.2} ms after the last",
                report.seconds * 1e3,
                report.execute_start * 1e3,
                s * 1e3,
                (e - s) * 1e3,
                (report.seconds - report.execute_start - e) * 1e3
            );
            // Of the time before execution: what a first call pays (deciding, planning,
            // allocating, page-locking) and a later one finds cached.
            say!(
                out,
                "  before its tasks: {:.2} ms to decide and plan (plan {}), {:.2} ms taking \
                 workspaces, {:.2} ms checking or page-locking host operands ({} ranges \
                 page-locked in {:.2} ms), {:.2} ms waiting for other calls",
                report.planning_seconds * 1e3,
                if report.plan_cached { "cached" } else { "made" },
                report.workspace_seconds * 1e3,
                report.host_check_seconds * 1e3,
                pinned_last.0,
                pinned_last.1 * 1e3,
                report.waited_seconds * 1e3
            );
        }
    }
    if a.run.check {
        check(&c)?;
    }
    out.finish();
    Ok(())
}

/// Host ranges page-locked so far by the runtime's backends, and the seconds spent on them.
fn pin_totals(rt: &hetblas::Runtime) -> (u64, f64) {
    rt.host_pin_stats()
        .map_or((0, 0.0), |p| (p.registrations, p.seconds_registering))
}

/// GEMMT's `--check`: entries of the `uplo` triangle of `c` (all of them up to 4096, else 4096
/// drawn from `seed`) against the f64-accumulated reference, each checked as the 1x1 GEMM of
/// its row of op(A) and column of op(B), and every entry of the other triangle bit for bit
/// against `c0` (C before the call). A is stored `ar x ac` with leading dimension `ar`, B
/// `br x bc` with `br`, C `n x n` packed. Returns (entries checked, worst error / bound,
/// entries of the other triangle).
#[allow(clippy::too_many_arguments)] // the routine's operands, as BLAS orders them
fn check_triangle<T: Scalar>(
    uplo: Uplo,
    (transa, transb): (Trans, Trans),
    (alpha, beta): (T, T),
    (a, ar): (&[T], usize),
    (b, br): (&[T], usize),
    (c0, c): (&[T], &[T]),
    (n, k): (usize, usize),
    seed: u64,
) -> Result<(usize, f64, usize)> {
    const SAMPLES: usize = 4096;
    let fail = crate::check::failed;
    let mut other = 0;
    for j in 0..n {
        for i in (0..n).filter(|&i| !uplo.contains(i, j)) {
            if !same_bits(&c[i + j * n], &c0[i + j * n]) {
                return Err(fail(format!(
                    "C({i},{j}) outside the {} triangle was written",
                    uplo.as_char()
                )));
            }
            other += 1;
        }
    }
    let entries: Vec<(usize, usize)> = if n * (n + 1) / 2 <= SAMPLES {
        (0..n)
            .flat_map(|j| (0..n).map(move |i| (i, j)))
            .filter(|&(i, j)| uplo.contains(i, j))
            .collect()
    } else {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..SAMPLES)
            .map(|_| {
                let (i, j) = (rng.random_range(0..n), rng.random_range(0..n));
                if uplo.contains(i, j) {
                    (i, j)
                } else {
                    (j, i)
                }
            })
            .collect()
    };
    // The `rows x cols` view at offset `at` of a matrix stored with leading dimension `ld`
    // (an empty one past the end, where k = 0).
    fn view<T: Scalar>(
        data: &[T],
        at: usize,
        rows: usize,
        cols: usize,
        ld: usize,
    ) -> Result<MatRef<'_, T>> {
        MatRef::new(data.get(at..).unwrap_or(&[]), rows, cols, ld.max(1))
    }
    let mut worst = 0.0f64;
    for &(i, j) in &entries {
        // Row i of op(A) and column j of op(B), as stored.
        let a_row = if transa.is_transposed() {
            view(a, i * ar, k, 1, ar)?
        } else {
            view(a, i, 1, k, ar)?
        };
        let b_col = if transb.is_transposed() {
            view(b, j, 1, k, br)?
        } else {
            view(b, j * br, k, 1, br)?
        };
        let (_, w) = check_sampled(
            transa,
            transb,
            alpha.to_c64(),
            a_row,
            b_col,
            beta.to_c64(),
            view(c0, i + j * n, 1, 1, n)?,
            view(c, i + j * n, 1, 1, n)?,
            1,
            seed,
        )
        .map_err(|e| fail(format!("C({i},{j}): {e}")))?;
        worst = worst.max(w);
    }
    Ok((entries.len(), worst, other))
}

/// A duration in seconds: finite and not negative.
fn seconds(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        Ok(x) => Err(format!("{x}: need a finite number of seconds, at least 0")),
        Err(e) => Err(format!("{s}: {e}")),
    }
}

/// What the model predicts for the call as it ran on one accelerator (the pipeline model of
/// the profile decisions are made with, `hetblas predict`'s number) against the measured
/// median; `None` without a profile, or where C was computed by several devices or on the host.
fn model_line(
    rt: &Runtime,
    a: &GemmArgs,
    report: &hetblas::GemmReport,
    measured: f64,
) -> Option<String> {
    // The devices that computed part of C (a device of the plan may have got no tile).
    let computed: Vec<&String> = report
        .devices
        .iter()
        .enumerate()
        .filter(|&(i, _)| report.stats.c_tiles.get(i).is_none_or(|&t| t > 0))
        .map(|(_, d)| d)
        .collect();
    let [label] = computed.as_slice() else {
        return None;
    };
    let dev = rt.devices().iter().find(|d| d.info().label() == **label)?;
    if dev.space().is_host() {
        return None;
    }
    let profile = rt.decision_profile()?;
    let (m, n, k) = a.shape.mnk();
    let problem = hetblas_core::problem::GemmProblem {
        transa: a.shape.transa,
        transb: a.shape.transb,
        m,
        n,
        k,
        dtype: a.shape.dtype(),
        beta_zero: a.beta == 0.0 && a.beta_im == 0.0,
        locations: [hetblas_core::MemorySpace::HOST; 3],
        sym: None,
    };
    let fold = hetblas_core::autotune::FoldRequest {
        on: a.host_fold.as_deref().map(|f| f == "on"),
        tail: a.fold_tail,
        ..Default::default()
    };
    let forced = a.blocking.or(a.tile.map(hetblas_core::Blocking::square));
    let choice = match forced {
        Some(b) => hetblas_core::autotune::evaluate(&problem, dev, &profile, &[b], fold),
        None => {
            hetblas_core::autotune::model_tile(&problem, dev, dev.memory_budget(), &profile, fold)
        }
    }?;
    let p = choice.predicted.seconds;
    Some(format!(
        "model: {} {}, predicted {:.4} s (compute {:.4}, h2d {:.4}, d2h {:.4}); measured median {:.4} s: error {:+.1}% (predicted / measured - 1){}",
        choice.tile,
        if choice.host_fold {
            format!("C folded on the host, {} tiles' C sent", choice.fold_tail)
        } else {
            "C sent".to_string()
        },
        p,
        choice.predicted.compute,
        choice.predicted.h2d,
        choice.predicted.d2h,
        measured,
        100.0 * (p / measured - 1.0),
        if report.host_fold != choice.host_fold {
            " (the call ran in the other fold mode)"
        } else {
            ""
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The GEMMT check passes the right triangle and fails a wrong entry in it, or any write
    /// to the other triangle.
    #[test]
    fn the_triangle_check_fails_wrong_entries_and_writes_outside() {
        let (n, k) = (7, 5);
        let mut rng = StdRng::seed_from_u64(3);
        let a: Vec<c64> = random(&mut rng, k * n).unwrap(); // stored k x n: op(A) = A^H
        let b: Vec<c64> = random(&mut rng, k * n).unwrap(); // stored k x n: op(B) = B
        let c0: Vec<c64> = random(&mut rng, n * n).unwrap();
        let (alpha, beta) = (c64::new(0.5, -1.0), c64::new(-0.25, 0.5));
        let mut c = c0.clone();
        for j in 0..n {
            for i in j..n {
                let mut s = c64::new(0.0, 0.0);
                for l in 0..k {
                    s += a[l + i * k].conj() * b[l + j * k];
                }
                c[i + j * n] = alpha * s + beta * c0[i + j * n];
            }
        }
        let check = |c: &[c64]| {
            check_triangle(
                Uplo::Lower,
                (Trans::C, Trans::N),
                (alpha, beta),
                (&a, k),
                (&b, k),
                (&c0, c),
                (n, k),
                1,
            )
        };
        let (checked, _, other) = check(&c).expect("the right triangle passes");
        assert_eq!((checked, other), (n * (n + 1) / 2, n * (n - 1) / 2));
        let mut wrong = c.clone();
        wrong[4 + 2 * n] += c64::new(1e-9, 0.0);
        assert!(
            check(&wrong).is_err(),
            "a wrong entry in the triangle passed"
        );
        let mut written = c.clone();
        written[2 + 4 * n] = c64::new(0.0, 0.0);
        assert!(
            check(&written).is_err(),
            "a write above the diagonal passed"
        );
    }
}
