//! Concurrent calls: N threads each running one GEMM on host operands, against the same N
//! calls one after another, on one runtime. Prints both times and the ratio (throughput of the
//! concurrent calls / throughput of the sequential ones); every result is checked against an
//! f64 reference at sampled entries. Only the GEMM calls are timed: C is reset to its original
//! before the timer starts (a reset inside the timed loop, a memcpy of C per call, was what held
//! the sequential calls of an earlier run to 13 TFLOP/s at 8192^3 on one H200: four 512 MB
//! copies on one thread, which the concurrent threads did side by side).
//!
//! On the GPU machine: `concurrent --size 8192 --threads 4 --min-ratio 1.3` (CUDA devices
//! only). GPU over-subscription: `concurrent --size 32768 --threads 6 --beta 0 --shared-ab
//! --concurrent-only` (six calls whose footprints together exceed the GPU's memory; none may
//! fail for memory). Anywhere: `concurrent --emulated 2 --size 512` (host-emulated devices).
//!
//! Diagnosis: the calls of the best concurrent round are printed one per line (devices, tile,
//! host fold, start and end as offsets from the round's start, seconds waited for other calls,
//! and when execution began); `--trace FILE` traces every call (the sequential ones too, so
//! both sides pay the same) and writes the best concurrent round as one Chrome trace, a process
//! row per call on the round's clock, with each queue's busy share printed. `--devices cuda:0`
//! restricts the calls to those devices (labels, as `hetblas devices` prints them).

use clap::Parser;
use hetblas::{GemmOptions, MatMut, MatRef, Runtime, Trans};
use hetblas_bench::random_data;
use hetblas_core::reference::check_sampled;
use hetblas_core::trace::{chrome_json_rows_one_clock, Activity, Interval, Trace};
use hetblas_core::GemmReport;
use std::sync::Arc;
use std::time::Instant;

#[derive(Parser, Debug)]
struct Args {
    /// m = n = k of every call.
    #[arg(long, default_value_t = 8192)]
    size: usize,
    /// Calls run at once (one thread each), and run one after another.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=64))]
    threads: u64,
    /// Rounds of (sequential, concurrent); the best of each is reported.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    rounds: u64,
    /// Use this many host-emulated devices instead of the CUDA GPUs.
    #[arg(long)]
    emulated: Option<usize>,
    /// beta of every call (0: C is not read).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    beta: f64,
    /// Exit with an error when the ratio is below this.
    #[arg(long)]
    min_ratio: Option<f64>,
    /// Every call reads the same A and B (each writes its own C): what lets many large calls
    /// fit in host memory.
    #[arg(long)]
    shared_ab: bool,
    /// Only the concurrent rounds (over-subscription: the point is that none fails).
    #[arg(long)]
    concurrent_only: bool,
    /// Device memory each call may use (bytes), as `GemmOptions::memory_limit`.
    #[arg(long)]
    memory_limit: Option<u64>,
    /// The devices the calls may use, by label (e.g. `cuda:0`, or `cuda:0,cpu:0`); default:
    /// the library's choice among all.
    #[arg(long, value_delimiter = ',')]
    devices: Option<Vec<String>>,
    /// Trace every call and write the best concurrent round here as a Chrome trace (a process
    /// row per call, times from the round's start).
    #[arg(long)]
    trace: Option<std::path::PathBuf>,
}

/// One call of a round: when it ran (seconds from the round's start) and what it reported.
struct CallRecord {
    start: f64,
    end: f64,
    report: GemmReport,
}

impl CallRecord {
    /// The call's intervals on the round's clock, and one spanning the whole call.
    fn trace_on_round_clock(&self, i: usize) -> Trace {
        let shift = self.start + self.report.execute_start;
        let mut intervals: Vec<Interval> = self
            .report
            .trace
            .iter()
            .flat_map(|t| t.intervals.iter())
            .map(|iv| Interval {
                start: iv.start + shift,
                end: iv.end + shift,
                ..iv.clone()
            })
            .collect();
        intervals.push(Interval {
            device: self.report.devices.join("+"),
            queue: "call".into(),
            activity: Activity::Gemm,
            label: format!(
                "call {i} (waited {:.4} s, executing from {:+.4} s)",
                self.report.waited_seconds, shift
            ),
            start: self.start,
            end: self.end,
            bytes: 0,
            flops: 0.0,
        });
        Trace { intervals }
    }

    /// One line: devices, tile, fold, start and end offsets, waits, and what came before
    /// execution (planning, workspaces, host checks).
    fn describe(&self, i: usize) -> String {
        let r = &self.report;
        format!(
            "call {i}: devices [{}], tile {}, host fold {}, start {:+.4} s, end {:+.4} s \
             ({:.4} s), waited {:.4} s, executing from {:+.4} s (planned {:.4} s, workspaces \
             {:.4} s, host checks {:.4} s)",
            r.devices.join(", "),
            tile_label(r),
            if r.host_fold { "yes" } else { "no" },
            self.start,
            self.end,
            self.end - self.start,
            r.waited_seconds,
            self.start + r.execute_start,
            r.planning_seconds,
            r.workspace_seconds,
            r.host_check_seconds
        )
    }
}

/// One call's operands: A and B (its own, or shared by every call), the original C (none
/// with beta 0: C is not read) and the C the call writes.
struct Operands {
    a: Arc<Vec<f64>>,
    b: Arc<Vec<f64>>,
    c0: Option<Vec<f64>>,
    c: Vec<f64>,
}

impl Operands {
    /// C back to its original values (outside the timed region).
    fn reset(&mut self) {
        match &self.c0 {
            Some(c0) => self.c.copy_from_slice(c0),
            // beta 0 does not read C: NaN proves it.
            None => self.c.fill(f64::NAN),
        }
    }
}

/// The call's tile, `m x n x k`, or `-` without one.
fn tile_label(r: &GemmReport) -> String {
    r.tile
        .map_or("-".to_string(), |(m, n, k)| format!("{m}x{n}x{k}"))
}

/// `x` as an n x n matrix view.
fn view(x: &[f64], n: usize) -> Result<MatRef<'_, f64>, String> {
    MatRef::packed(x, n, n).map_err(|e| e.to_string())
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("concurrent: {e}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<(), String> {
    let rt = match args.emulated {
        Some(n) => Runtime::builder().only(&[]).emulated(n).build(),
        // The CPU as by default: left out of the calls, it finishes one whose GPU failed.
        None => Runtime::builder().only(&["cuda", "cpu"]).build(),
    }
    .map_err(|e| e.to_string())?;
    let devices: Vec<String> = rt.devices().iter().map(|d| d.info().label()).collect();
    let n = args.size;
    let calls = args.threads as usize;
    println!(
        "{calls} x dgemm {n}^3 on host operands, beta {}{}{}, on [{}]",
        args.beta,
        if args.shared_ab {
            ", A and B shared"
        } else {
            ""
        },
        args.memory_limit
            .map(|b| format!(", memory limit {b} B per call"))
            .unwrap_or_default(),
        devices.join(", ")
    );
    println!("profile: {}", rt.profile_status());
    let shared = args.shared_ab.then(|| {
        (
            Arc::new(random_data(1, n * n)),
            Arc::new(random_data(2, n * n)),
        )
    });
    let mut ops: Vec<Operands> = (0..calls as u64)
        .map(|i| {
            let (a, b) = match &shared {
                Some((a, b)) => (a.clone(), b.clone()),
                None => (
                    Arc::new(random_data(3 * i + 1, n * n)),
                    Arc::new(random_data(3 * i + 2, n * n)),
                ),
            };
            let c0 = (args.beta != 0.0).then(|| random_data(3 * i + 3, n * n));
            Operands {
                a,
                b,
                c: vec![f64::NAN; n * n],
                c0,
            }
        })
        .collect();
    let beta = args.beta;
    let mut opts = GemmOptions::default()
        .memory_limit(args.memory_limit)
        .trace(args.trace.is_some());
    if let Some(list) = &args.devices {
        let ids = list
            .iter()
            .map(|l| {
                devices
                    .iter()
                    .position(|d| d == l.trim())
                    .ok_or_else(|| format!("--devices: no device {l} (found: {devices:?})"))
            })
            .collect::<Result<Vec<usize>, String>>()?;
        println!("calls restricted to [{}]", list.join(", "));
        opts = opts.devices(ids);
    }
    // The path is checked before the calls, not after them.
    if let Some(path) = &args.trace {
        std::fs::write(path, "").map_err(|e| format!("--trace {}: {e}", path.display()))?;
    }
    let call = |o: &mut Operands| -> Result<GemmReport, String> {
        rt.gemm_with(
            Trans::N,
            Trans::N,
            1.0,
            view(&o.a, n)?,
            view(&o.b, n)?,
            beta,
            MatMut::packed(&mut o.c, n, n).map_err(|e| e.to_string())?,
            &opts,
        )
        .map_err(|e| e.to_string())
    };
    let check = |o: &Operands, what: &str| -> Result<(), String> {
        check_sampled(
            Trans::N,
            Trans::N,
            1.0,
            view(&o.a, n)?,
            view(&o.b, n)?,
            beta,
            // beta 0: C0 is not read; any finite matrix of the shape will do.
            view(o.c0.as_deref().unwrap_or(&o.a), n)?,
            view(&o.c, n)?,
            256,
            7,
        )
        .map(|_| ())
        .map_err(|e| format!("{what}: result check FAILED: {e}"))
    };
    // Resets every C, then times the calls only; each call's record on the round's clock.
    let concurrently = |ops: &mut [Operands]| -> Result<(f64, Vec<CallRecord>), String> {
        ops.iter_mut().for_each(Operands::reset);
        let t = Instant::now();
        let records = std::thread::scope(|s| {
            let handles: Vec<_> = ops
                .iter_mut()
                .map(|o| {
                    s.spawn(move || {
                        let start = t.elapsed().as_secs_f64();
                        let report = call(o)?;
                        Ok(CallRecord {
                            start,
                            end: t.elapsed().as_secs_f64(),
                            report,
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().map_err(|_| "a call panicked".to_string())?)
                .collect::<Result<Vec<CallRecord>, String>>()
        })?;
        Ok((t.elapsed().as_secs_f64(), records))
    };
    // Also says how each call ran (tile, C folded or sent, seconds): the plans of calls
    // alone must not follow what the concurrent calls before them saw.
    let sequentially = |ops: &mut [Operands]| -> Result<(f64, String), String> {
        let mut spent = 0.0;
        let mut plans = Vec::new();
        for o in ops.iter_mut() {
            o.reset();
            let t = Instant::now();
            let report = call(o)?;
            let took = t.elapsed().as_secs_f64();
            spent += took;
            let c = if report.host_fold { "folded" } else { "sent" };
            plans.push(format!("{} C {c} {took:.4} s", tile_label(&report)));
        }
        Ok((spent, plans.join(", ")))
    };
    // Warm-up, concurrently: host registrations, one workspace per concurrent call, plans.
    let (warm, _) = concurrently(&mut ops)?;
    for (i, o) in ops.iter().enumerate() {
        check(o, &format!("warm-up call {i}"))?;
    }
    println!("warm-up (concurrent): {warm:.3} s; every result checked");
    let (mut sequential, mut concurrent) = (f64::INFINITY, f64::INFINITY);
    let mut best_round: Vec<CallRecord> = Vec::new();
    for round in 0..args.rounds {
        let s = if args.concurrent_only {
            f64::NAN
        } else {
            let (s, plans) = sequentially(&mut ops)?;
            for (i, o) in ops.iter().enumerate() {
                check(o, &format!("round {round}, sequential call {i}"))?;
            }
            println!("round {round}: sequential calls: {plans}");
            s
        };
        let (c, records) = concurrently(&mut ops)?;
        for (i, o) in ops.iter().enumerate() {
            check(o, &format!("round {round}, concurrent call {i}"))?;
        }
        if args.concurrent_only {
            println!("round {round}: concurrent {c:.3} s");
        } else {
            println!(
                "round {round}: sequential {s:.3} s, concurrent {c:.3} s, ratio {:.2}",
                s / c
            );
        }
        sequential = sequential.min(s);
        if c < concurrent {
            concurrent = c;
            best_round = records;
        }
    }
    println!("best concurrent round, per call (offsets from the round's start):");
    for (i, r) in best_round.iter().enumerate() {
        println!("  {}", r.describe(i));
    }
    if let Some(path) = &args.trace {
        write_trace(path, &best_round)?;
    }
    let flops = calls as f64 * 2.0 * (n as f64).powi(3);
    if args.concurrent_only {
        println!(
            "best: concurrent {concurrent:.3} s ({:.3} TFLOP/s); no call failed, every result checked",
            flops / concurrent / 1e12
        );
        return Ok(());
    }
    let ratio = sequential / concurrent;
    println!(
        "best: sequential {sequential:.3} s ({:.3} TFLOP/s), concurrent {concurrent:.3} s ({:.3} TFLOP/s), ratio {ratio:.2}; every result checked",
        flops / sequential / 1e12,
        flops / concurrent / 1e12
    );
    if let Some(min) = args.min_ratio {
        if ratio < min {
            return Err(format!("ratio {ratio:.2} is below {min}"));
        }
    }
    Ok(())
}

/// The round as one Chrome trace (a process row per call), and each queue's busy share of the
/// round over all calls.
fn write_trace(path: &std::path::Path, round: &[CallRecord]) -> Result<(), String> {
    let traces: Vec<Trace> = round
        .iter()
        .enumerate()
        .map(|(i, r)| r.trace_on_round_clock(i))
        .collect();
    let names: Vec<String> = (0..traces.len()).map(|i| format!("call {i}")).collect();
    let rows: Vec<(&str, &Trace)> = names.iter().map(|n| n.as_str()).zip(&traces).collect();
    std::fs::write(path, chrome_json_rows_one_clock(&rows))
        .map_err(|e| format!("--trace {}: {e}", path.display()))?;
    let all = Trace {
        intervals: traces
            .iter()
            .flat_map(|t| t.intervals.iter().filter(|iv| iv.queue != "call").cloned())
            .collect(),
    };
    let (s, e) = all.span();
    println!(
        "trace: {} ({} intervals, {:.4} s from the first operation to the last); busy share per queue:",
        path.display(),
        all.intervals.len(),
        e - s
    );
    for u in all.usage() {
        println!(
            "  {:<24} {:.4} s  {:5.1}%",
            u.queue,
            u.busy,
            100.0 * u.fraction
        );
    }
    Ok(())
}
