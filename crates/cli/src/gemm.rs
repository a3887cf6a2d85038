//! `hetblas gemm`: a GEMM on random host data, timed, optionally checked.

use crate::shape::ShapeArgs;
use clap::Args;
use hetblas::{DType, GemmOptions, MatMut, MatRef, Result, Runtime, Scalar};
use hetblas_core::reference::check_sampled;
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
    /// Devices to use: indices or labels ("0,1", "cuda:0,cpu:0"); default: hetblas decides.
    #[arg(long)]
    pub devices: Option<String>,
    /// Force a square tile size.
    #[arg(long)]
    pub tile: Option<usize>,
    /// Force tile sizes and group: `T`, or `TMxTNxTK` with an optional `/gG` (C tiles
    /// accumulated together), e.g. `4096x512x8192/g1`.
    #[arg(long)]
    pub blocking: Option<hetblas_core::Blocking>,
    /// Timed repetitions (after one warm-up call); the median is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub reps: u64,
    /// Verify the result against an f64-accumulated reference (sampled entries for big sizes).
    #[arg(long)]
    pub check: bool,
    /// Write a Chrome trace of the last repetition to this file.
    #[arg(long)]
    pub trace: Option<std::path::PathBuf>,
    /// Host C with beta != 0: `on` folds the products into C on the host, `off` sends C to the
    /// devices; default: the model decides.
    #[arg(long, value_parser = ["on", "off"])]
    pub host_fold: Option<String>,
    /// Seed of the random A, B and C.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

pub fn run(rt: &Runtime, a: GemmArgs) -> Result<()> {
    match a.shape.dtype {
        DType::F64 => run_typed::<f64>(rt, a),
        DType::F32 => run_typed::<f32>(rt, a),
    }
}

/// `n` random elements, or an error when the memory cannot be had (instead of the abort of a
/// failed allocation).
fn random<T: Scalar>(rng: &mut StdRng, n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|e| {
        hetblas::Error::InvalidInput(format!(
            "not enough memory for a matrix of {n} elements ({e})"
        ))
    })?;
    v.extend((0..n).map(|_| T::from_f64(rng.random_range(-1.0..1.0))));
    Ok(v)
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

fn run_typed<T: Scalar>(rt: &Runtime, a: GemmArgs) -> Result<()> {
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
    let mut trace_file = a
        .trace
        .as_ref()
        .map(|path| {
            std::fs::File::create(path).map_err(|e| {
                hetblas::Error::InvalidInput(format!("cannot write {}: {e}", path.display()))
            })
        })
        .transpose()?;
    let mut rng = StdRng::seed_from_u64(a.seed);
    let av: Vec<T> = random(&mut rng, ar * ac)?;
    let bv: Vec<T> = random(&mut rng, br * bc)?;
    let c0: Vec<T> = random(&mut rng, m * n)?;
    let mut c: Vec<T> = Vec::new();
    c.try_reserve_exact(c0.len()).map_err(|e| {
        hetblas::Error::InvalidInput(format!("not enough memory for a copy of C ({e})"))
    })?;
    c.extend_from_slice(&c0);
    let devices = a
        .devices
        .as_deref()
        .map(|s| crate::cli::parse_devices(rt, s))
        .transpose()?;
    let (alpha, beta) = (T::from_f64(a.alpha), T::from_f64(a.beta));
    let mut times = Vec::new();
    let mut last = None;
    for rep in 0..=a.reps {
        c.copy_from_slice(&c0);
        let opts = GemmOptions::default()
            .tile(a.tile)
            .blocking(a.blocking)
            .device_list(devices.clone())
            .trace(trace_file.is_some() && rep == a.reps)
            .host_fold(a.host_fold.as_deref().map(|f| f == "on"));
        let t = Instant::now();
        let report = rt.gemm_with(
            transa,
            transb,
            alpha,
            MatRef::new(&av, ar, ac, ar.max(1))?,
            MatRef::new(&bv, br, bc, br.max(1))?,
            beta,
            MatMut::new(&mut c, m, n, m.max(1))?,
            &opts,
        )?;
        let secs = t.elapsed().as_secs_f64();
        if rep > 0 {
            times.push(secs);
        }
        last = Some(report);
    }
    times.sort_by(f64::total_cmp);
    let med = times[times.len() / 2];
    let flops = 2.0 * m as f64 * n as f64 * k as f64;
    let report = last.unwrap_or_default();
    println!(
        "{}gemm {m}x{n}x{k} {}{} on [{}] tile {}{}: median {:.4} s over {} reps, {:.2} GFLOP/s",
        T::DTYPE.blas_prefix(),
        transa.as_char(),
        transb.as_char(),
        report.devices.join(", "),
        report
            .tile
            .map_or("-".into(), |(x, y, z)| if x == y && y == z {
                x.to_string()
            } else {
                format!("{x}x{y}x{z}")
            }),
        if report.host_fold {
            " (C folded on the host)"
        } else {
            ""
        },
        med,
        times.len(),
        flops / med / 1e9
    );
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
        println!("shares: {}", shares.join(", "));
        let gb = |v: &[u64]| {
            v.iter()
                .map(|b| format!("{:.2}", *b as f64 / 1e9))
                .collect::<Vec<_>>()
                .join("/")
        };
        println!(
            "traffic GB per device: from operands {}, from peers {}",
            gb(&report.stats.bytes_in),
            gb(&report.stats.bytes_peer)
        );
    }
    if let (Some(path), Some(file)) = (&a.trace, trace_file.as_mut()) {
        if let Some(tr) = &report.trace {
            use std::io::Write;
            file.write_all(tr.to_chrome_json().as_bytes())
                .map_err(|e| {
                    hetblas::Error::InvalidInput(format!("cannot write {}: {e}", path.display()))
                })?;
            println!(
                "trace: {} ({} intervals)",
                path.display(),
                tr.intervals.len()
            );
        }
    }
    if a.check {
        let (checked, worst) = check_sampled(
            transa,
            transb,
            a.alpha,
            MatRef::new(&av, ar, ac, ar.max(1))?,
            MatRef::new(&bv, br, bc, br.max(1))?,
            a.beta,
            MatRef::new(&c0, m, n, m.max(1))?,
            MatRef::new(&c, m, n, m.max(1))?,
            4096,
            a.seed,
        )
        .map_err(|e| hetblas::Error::Internal(format!("check FAILED: {e}")))?;
        println!("check: {checked} entries within the error bound (worst error/bound {worst:.3})");
    }
    Ok(())
}
