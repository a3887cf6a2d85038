//! Concurrent calls: N threads each running one GEMM on its own host operands, against the
//! same N calls one after another, on one runtime. Prints both times and the ratio
//! (throughput of the concurrent calls / throughput of the sequential ones); every result is
//! checked against an f64 reference at sampled entries.
//!
//! On the GPU machine: `concurrent --size 8192 --threads 4 --min-ratio 1.3` (CUDA devices
//! only). Anywhere: `concurrent --emulated 2 --size 512` (host-emulated devices).

use clap::Parser;
use hetblas::{GemmOptions, MatMut, MatRef, Runtime, Trans};
use hetblas_bench::random_data;
use hetblas_core::reference::check_sampled;
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
}

/// One call's operands: A, B, the original C and the C the call writes.
struct Operands {
    a: Vec<f64>,
    b: Vec<f64>,
    c0: Vec<f64>,
    c: Vec<f64>,
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
        None => Runtime::builder().only(&["cuda"]).without_cpu().build(),
    }
    .map_err(|e| e.to_string())?;
    let devices: Vec<String> = rt.devices().iter().map(|d| d.info().label()).collect();
    let n = args.size;
    let calls = args.threads as usize;
    println!(
        "{calls} x dgemm {n}^3 on host operands, beta {}, on [{}]",
        args.beta,
        devices.join(", ")
    );
    let mut ops: Vec<Operands> = (0..calls as u64)
        .map(|i| {
            let c0: Vec<f64> = random_data(3 * i + 3, n * n);
            Operands {
                a: random_data(3 * i + 1, n * n),
                b: random_data(3 * i + 2, n * n),
                c: c0.clone(),
                c0,
            }
        })
        .collect();
    let beta = args.beta;
    let call = |o: &mut Operands| -> Result<(), String> {
        o.c.copy_from_slice(&o.c0);
        rt.gemm_with(
            Trans::N,
            Trans::N,
            1.0,
            view(&o.a, n)?,
            view(&o.b, n)?,
            beta,
            MatMut::packed(&mut o.c, n, n).map_err(|e| e.to_string())?,
            &GemmOptions::default(),
        )
        .map_err(|e| e.to_string())?;
        Ok(())
    };
    let check = |o: &Operands, what: &str| -> Result<(), String> {
        check_sampled(
            Trans::N,
            Trans::N,
            1.0,
            view(&o.a, n)?,
            view(&o.b, n)?,
            beta,
            view(&o.c0, n)?,
            view(&o.c, n)?,
            256,
            7,
        )
        .map(|_| ())
        .map_err(|e| format!("{what}: result check FAILED: {e}"))
    };
    let concurrently = |ops: &mut [Operands]| -> Result<f64, String> {
        let t = Instant::now();
        std::thread::scope(|s| {
            let handles: Vec<_> = ops.iter_mut().map(|o| s.spawn(|| call(o))).collect();
            handles
                .into_iter()
                .map(|h| h.join().map_err(|_| "a call panicked".to_string())?)
                .collect::<Result<Vec<()>, String>>()
        })?;
        Ok(t.elapsed().as_secs_f64())
    };
    // Warm-up, concurrently: host registrations, one workspace per concurrent call, plans.
    concurrently(&mut ops)?;
    for (i, o) in ops.iter().enumerate() {
        check(o, &format!("warm-up call {i}"))?;
    }
    let (mut sequential, mut concurrent) = (f64::INFINITY, f64::INFINITY);
    for round in 0..args.rounds {
        let t = Instant::now();
        for o in ops.iter_mut() {
            call(o)?;
        }
        let s = t.elapsed().as_secs_f64();
        for (i, o) in ops.iter().enumerate() {
            check(o, &format!("round {round}, sequential call {i}"))?;
        }
        let c = concurrently(&mut ops)?;
        for (i, o) in ops.iter().enumerate() {
            check(o, &format!("round {round}, concurrent call {i}"))?;
        }
        println!(
            "round {round}: sequential {s:.3} s, concurrent {c:.3} s, ratio {:.2}",
            s / c
        );
        sequential = sequential.min(s);
        concurrent = concurrent.min(c);
    }
    let flops = calls as f64 * 2.0 * (n as f64).powi(3);
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
