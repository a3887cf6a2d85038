//! Where a small call's time goes: for each shape, many calls on host operands, untraced (the
//! call's own time: 10th, 50th and 90th percentiles) and traced (medians of the call's parts:
//! deciding, planning and entering; from the start of execution to the first task on a device;
//! the tasks themselves; and from the last task's end to the call's return).
//!
//! The seeded validation set's sub-millisecond calls are dominated by what each call costs
//! beside its tasks ([`hetblas_core::autotune::GPU_CALL_SETUP_S`]); this is how that is measured.
//!
//! On the GPU machine: `callcost --shapes 103x232x74:f64:b0,2266x679x141:f32 --calls 400`;
//! the model's choice forced: `--shapes 730x5151x148:f32:t1024:fold` (square 1024 tiles, C
//! folded on the host; `:nofold` sends C). Anywhere: `callcost --emulated 1 --shapes
//! 100x200x70:f64`.

use clap::Parser;
use hetblas::{DType, GemmOptions, MatMut, MatRef, Runtime, Scalar, Trans};
use hetblas_bench::{median, random_data};
use std::time::Instant;

#[derive(Parser, Debug)]
struct Args {
    /// Shapes, comma-separated: `MxNxK[:f32|f64][:b0][:tT][:fold|:nofold]` (`b0`: beta = 0,
    /// default beta = 1; `tT`: square tiles of side T; `fold`/`nofold`: host folds forced on
    /// or off, default: the model decides; with `b0` C is not read, so nothing is folded).
    #[arg(long, value_delimiter = ',', default_value = "103x232x74:f64:b0")]
    shapes: Vec<String>,
    /// Timed calls per shape and mode (after 20 warm-up calls).
    #[arg(long, default_value_t = 400)]
    calls: usize,
    /// Use this many host-emulated devices instead of the GPU.
    #[arg(long, default_value_t = 0)]
    emulated: usize,
    /// The device the calls run on (an index into the runtime's devices); default: the first
    /// accelerator, as `validate` does.
    #[arg(long)]
    device: Option<usize>,
}

struct Shape {
    m: usize,
    n: usize,
    k: usize,
    dtype: DType,
    beta_zero: bool,
    tile: Option<usize>,
    host_fold: Option<bool>,
}

fn parse(s: &str) -> Result<Shape, String> {
    let mut parts = s.split(':');
    let dims: Vec<usize> = parts
        .next()
        .unwrap_or_default()
        .split('x')
        .map(|d| d.parse::<usize>().map_err(|e| format!("{s}: {e}")))
        .collect::<Result<_, _>>()?;
    let [m, n, k] = dims[..] else {
        return Err(format!("{s}: want MxNxK"));
    };
    let mut shape = Shape {
        m,
        n,
        k,
        dtype: DType::F64,
        beta_zero: false,
        tile: None,
        host_fold: None,
    };
    for p in parts {
        match p {
            "f64" => shape.dtype = DType::F64,
            "f32" => shape.dtype = DType::F32,
            "b0" => shape.beta_zero = true,
            "fold" => shape.host_fold = Some(true),
            "nofold" => shape.host_fold = Some(false),
            t if t
                .strip_prefix('t')
                .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit())) =>
            {
                match t[1..].parse::<usize>() {
                    Ok(side) if side > 0 => shape.tile = Some(side),
                    _ => return Err(format!("{s}: {t}: want tT with a tile side T > 0")),
                }
            }
            _ => {
                return Err(format!(
                    "{s}: unknown part {p:?} (f32, f64, b0, tT, fold, nofold)"
                ))
            }
        }
    }
    Ok(shape)
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("callcost: {e}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<(), String> {
    let (rt, accelerator) = hetblas_bench::harness_runtime(args.emulated)?;
    let dev = match args.device {
        Some(d) if d < rt.devices().len() => d,
        Some(d) => return Err(format!("--device {d}: there are {}", rt.devices().len())),
        None => accelerator,
    };
    println!(
        "device {}; {} timed calls per shape and mode",
        rt.devices()[dev].info().label(),
        args.calls
    );
    // Every shape parsed before the first runs: a typo fails at once.
    let shapes = args
        .shapes
        .iter()
        .map(|s| parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    for shape in &shapes {
        match shape.dtype {
            DType::F32 => one::<f32>(&rt, dev, shape, args.calls)?,
            _ => one::<f64>(&rt, dev, shape, args.calls)?,
        }
    }
    Ok(())
}

/// Warm-up calls traced to show how folds start in a process.
const WATCH: usize = 4;

/// Kinds of task, by the start of their trace labels.
const KINDS: [&str; 6] = ["fetch", "stage", "writeback", "fold", "gemm", "add"];

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn one<T: Scalar>(rt: &Runtime, dev: usize, s: &Shape, calls: usize) -> Result<(), String> {
    let (m, n, k) = (s.m, s.n, s.k);
    let a = random_data::<T>(1, m * k);
    let b = random_data::<T>(2, k * n);
    let mut c = random_data::<T>(3, m * n);
    let beta = if s.beta_zero {
        T::default()
    } else {
        T::from_f64(1.0)
    };
    let mut call = |trace: bool| -> Result<(f64, hetblas::GemmReport), String> {
        let mut opts = GemmOptions::default().devices([dev]).trace(trace);
        if let Some(t) = s.tile {
            opts = opts.tile(t);
        }
        if let Some(f) = s.host_fold {
            opts = opts.host_fold(f);
        }
        let e = |x: hetblas::Error| x.to_string();
        let t = Instant::now();
        let r = rt
            .gemm_with(
                Trans::N,
                Trans::N,
                T::from_f64(1.0),
                MatRef::packed(&a, m, k).map_err(e)?,
                MatRef::packed(&b, k, n).map_err(e)?,
                beta,
                MatMut::packed(&mut c, m, n).map_err(e)?,
                &opts,
            )
            .map_err(e)?;
        Ok((t.elapsed().as_secs_f64(), r))
    };
    // The first calls, traced: what their folds reached one by one, and the process's fold
    // record after each (a cold start that the record takes for slow folds shows here).
    let mut warm = Vec::new();
    for i in 0..20 {
        let (t, r) = call(i < WATCH)?;
        if let Some(tr) = r.trace.as_ref().filter(|_| r.host_fold) {
            let mut folds: Vec<_> = tr
                .intervals
                .iter()
                .filter(|iv| iv.label.starts_with("fold") && iv.end > iv.start)
                .collect();
            folds.sort_by(|a, b| a.start.total_cmp(&b.start));
            let rates: Vec<String> = folds
                .iter()
                .map(|iv| format!("{:.0}", iv.bytes as f64 / (iv.end - iv.start) / 1e9))
                .collect();
            let seen = rt.fold_speed().observed(Instant::now());
            warm.push(format!(
                "call {i} ({:.0} us): folds {} GB/s; record {}",
                t * 1e6,
                rates.join(" "),
                seen.map_or("none".into(), |r| format!("{:.1} GB/s", r / 1e9))
            ));
        }
    }
    let mut plain = Vec::with_capacity(calls);
    let mut report = None;
    for _ in 0..calls {
        let (t, r) = call(false)?;
        plain.push(t);
        report = Some(r);
    }
    let r = report.ok_or("--calls 0")?;
    let tasks = r.plan.as_ref().map_or(0, |p| p.tasks.len());
    let (mut enter, mut first, mut span, mut after, mut total) =
        (vec![], vec![], vec![], vec![], vec![]);
    // Per kind of task: busy time (the union of its intervals) and bytes, per traced call.
    let mut busy: Vec<(Vec<f64>, Vec<f64>)> = vec![(vec![], vec![]); KINDS.len()];
    for _ in 0..calls {
        let (t, r) = call(true)?;
        let tr = r.trace.as_ref().ok_or("a traced call returned no trace")?;
        let (s0, e0) = tr.span();
        total.push(t);
        enter.push(r.execute_start);
        first.push(s0);
        span.push(e0 - s0);
        after.push(r.seconds - r.execute_start - e0);
        for (kind, (t, bytes)) in KINDS.iter().zip(busy.iter_mut()) {
            let of_kind = |i: &hetblas_core::trace::Interval| i.label.starts_with(kind);
            t.push(tr.busy_fraction(of_kind) * (e0 - s0));
            bytes.push(
                tr.intervals
                    .iter()
                    .filter(|i| of_kind(i))
                    .map(|i| i.bytes as f64)
                    .sum(),
            );
        }
    }
    let us = |x: f64| x * 1e6;
    println!(
        "{m}x{n}x{k} {}{} tile {:?} {} tasks{}: untraced p10 {:.0} us, median {:.0}, p90 {:.0}; \
         traced median {:.0} us = enter {:.0} + to first task {:.0} + tasks {:.0} + after last {:.0}",
        T::DTYPE,
        if s.beta_zero { " beta=0" } else { "" },
        r.tile.unwrap_or_default(),
        tasks,
        if r.host_fold { " (host fold)" } else { "" },
        us(pct(&mut plain, 0.1)),
        us(pct(&mut plain, 0.5)),
        us(pct(&mut plain, 0.9)),
        us(median(&mut total)),
        us(median(&mut enter)),
        us(median(&mut first)),
        us(median(&mut span)),
        us(median(&mut after)),
    );
    for line in &warm {
        println!("  first calls: {line}");
    }
    // Which resource a slow process lost time on: each kind's busy time and, for copies and
    // folds, its rate while busy.
    let parts: Vec<String> = KINDS
        .iter()
        .zip(busy.iter_mut())
        .filter(|(_, (t, _))| t.iter().any(|&x| x > 0.0))
        .map(|(kind, (t, bytes))| {
            // Calls in which this kind did not run have no rate.
            let mut rate: Vec<f64> = t
                .iter()
                .zip(bytes.iter())
                .filter(|(&busy, _)| busy > 0.0)
                .map(|(busy, b)| b / busy)
                .collect();
            let ms = median(t) * 1e3;
            if *kind == "gemm" || *kind == "add" {
                format!("{kind} {ms:.2} ms")
            } else {
                format!("{kind} {ms:.2} ms at {:.1} GB/s", median(&mut rate) / 1e9)
            }
        })
        .collect();
    println!("  traced medians, busy: {}", parts.join(", "));
    for note in &r.notes {
        println!("  note: {note}");
    }
    rt.release_host(&a).map_err(|e| e.to_string())?;
    rt.release_host(&b).map_err(|e| e.to_string())?;
    rt.release_host(&c).map_err(|e| e.to_string())?;
    Ok(())
}
