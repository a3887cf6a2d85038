//! Hybrid and offload decisions, one GPU + the CPU, host operands: for each size and beta, the
//! configuration hetblas chooses against CPU-only, GPU-only and CPU+GPU (balanced), all measured
//! in the same run with interleaved repetitions, next to the model's predictions.

use clap::Parser;
use hetblas::{GemmOptions, MatMut, MatRef, Runtime, Trans};
use hetblas_bench::{median, random_data};
use hetblas_core::autotune::{choose_devices, PlanHints};
use hetblas_core::energy::Objective;
use hetblas_core::problem::GemmProblem;
use hetblas_core::{DType, Device, DeviceKind, MemorySpace};
use std::sync::Arc;
use std::time::Instant;

#[derive(Parser, Debug)]
struct Args {
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "512,1024,2048,4096,8192,16384,32768"
    )]
    sizes: Vec<usize>,
    /// Interleaved repetitions per configuration (fewer above 8192, see --big-reps).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    #[arg(long, default_value_t = 3)]
    big_reps: usize,
    /// Skip measuring a configuration the model predicts to take longer than this (s).
    #[arg(long, default_value_t = 15.0)]
    skip_over: f64,
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("hybrid: {e}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<(), String> {
    let rt = Runtime::discover().map_err(|e| e.to_string())?;
    println!("{}", rt.profile_status());
    let gpu = rt
        .devices()
        .iter()
        .position(|d| d.info().kind == DeviceKind::Gpu)
        .ok_or("no GPU")?;
    let cpu = rt
        .devices()
        .iter()
        .position(|d| d.info().kind == DeviceKind::Cpu)
        .ok_or("no CPU")?;
    let profile = rt.profile();
    println!("| n | beta | chosen | predicted s (cpu / gpu / both) | measured median s (cpu / gpu / both / chosen) | best | chosen vs best | CPU added: predicted gain, measured gain |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for &n in &args.sizes {
        for beta in [0.0f64, 1.0] {
            let problem = GemmProblem {
                transa: Trans::N,
                transb: Trans::N,
                m: n,
                n,
                k: n,
                dtype: DType::F64,
                beta_zero: beta == 0.0,
                locations: [MemorySpace::HOST; 3],
                sym: None,
            };
            let cands: Vec<&Arc<dyn Device>> = vec![&rt.devices()[gpu], &rt.devices()[cpu]];
            let bw = |s: MemorySpace, d: MemorySpace| rt.link_bandwidth(s, d);
            let choice = choose_devices(
                &problem,
                &cands,
                4096.min(n),
                profile.as_deref(),
                &bw,
                Objective::Time,
                &PlanHints::default(),
            )
            .ok_or("the profile cannot rate these devices")?;
            let pred = |set: &[usize]| {
                choice
                    .evaluated
                    .iter()
                    .find(|s| s.devices == set)
                    .map_or(f64::NAN, |s| s.balance.makespan)
            };
            let (p_gpu, p_cpu, p_both) = (pred(&[0]), pred(&[1]), pred(&[0, 1]));
            let a = random_data::<f64>(1, n * n);
            let b = random_data::<f64>(2, n * n);
            let mut c = random_data::<f64>(3, n * n);
            let configs: Vec<(&str, Option<Vec<usize>>, f64)> = vec![
                ("cpu", Some(vec![cpu]), p_cpu),
                ("gpu", Some(vec![gpu]), p_gpu),
                ("both", Some(vec![gpu, cpu]), p_both),
                ("chosen", None, choice.predicted),
            ];
            let reps = if n > 8192 { args.big_reps } else { args.reps };
            let mut times: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
            let mut chosen_devices = String::new();
            for rep in 0..=reps {
                for (ci, (_, devs, p)) in configs.iter().enumerate() {
                    if *p > args.skip_over {
                        continue;
                    }
                    let opts = GemmOptions::default().device_list(devs.clone());
                    let t = Instant::now();
                    let r = rt
                        .gemm_with(
                            Trans::N,
                            Trans::N,
                            1.0,
                            MatRef::packed(&a, n, n).map_err(|e| e.to_string())?,
                            MatRef::packed(&b, n, n).map_err(|e| e.to_string())?,
                            beta,
                            MatMut::packed(&mut c, n, n).map_err(|e| e.to_string())?,
                            &opts,
                        )
                        .map_err(|e| e.to_string())?;
                    if rep > 0 {
                        times[ci].push(t.elapsed().as_secs_f64());
                    }
                    if devs.is_none() {
                        chosen_devices = r.devices.join("+");
                    }
                }
            }
            // The chosen configuration is one of the three measured ones: the same devices, the
            // same decisions. Its runs and that configuration's runs are samples of one thing,
            // so both report the median of all of them (interleaving alone moved the medians of
            // identical configurations 3-10% apart on H200).
            let label = |devs: &[usize]| -> String {
                devs.iter()
                    .map(|&d| rt.devices()[d].info().label())
                    .collect::<Vec<_>>()
                    .join("+")
            };
            let same = (0..3).find(|&i| {
                configs[i]
                    .1
                    .as_deref()
                    .is_some_and(|devs| label(devs) == chosen_devices)
            });
            if let Some(i) = same {
                let pooled: Vec<f64> = times[i].iter().chain(&times[3]).copied().collect();
                times[i] = pooled.clone();
                times[3] = pooled;
            }
            let med: Vec<f64> = times.iter_mut().map(|t| median(t)).collect();
            let (best_i, best) = med[..3]
                .iter()
                .enumerate()
                .filter(|(_, x)| x.is_finite())
                .min_by(|a, b| a.1.total_cmp(b.1))
                .map(|(i, &x)| (i, x))
                .unwrap_or((0, f64::NAN));
            let added = chosen_devices.contains('+');
            let gain = if added {
                let single = med[0].min(med[1]);
                let psingle = p_cpu.min(p_gpu);
                format!(
                    "{:+.1}% predicted, {:+.1}% measured",
                    (psingle / p_both - 1.0) * 100.0,
                    (single / med[2] - 1.0) * 100.0
                )
            } else {
                "-".into()
            };
            let f = |x: f64| {
                if x.is_finite() {
                    format!("{x:.4}")
                } else {
                    "skipped".into()
                }
            };
            println!(
                "| {n} | {beta} | {chosen_devices} | {} / {} / {} | {} / {} / {} / {} | {} | {:+.1}% | {gain} |",
                f(p_cpu), f(p_gpu), f(p_both),
                f(med[0]), f(med[1]), f(med[2]), f(med[3]),
                configs[best_i].0,
                (med[3] / best - 1.0) * 100.0,
            );
            for buf in [&a, &b, &c] {
                rt.release_host(buf).map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}
