//! `hetblas-mpi`: the distributed GEMM's checks, benchmark and network probes (run under
//! `mpirun`), and its simulated projection to more nodes (run alone). `hetblas-mpi --help`
//! and `hetblas-mpi COMMAND --help` say what each takes.

mod bench;
mod check;
mod probe;
mod project;

use clap::{Parser, Subcommand};
use hetblas::{DType, EmulatedConfig, Runtime};
use hetblas_core::sim::nominal_profile;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "hetblas-mpi",
    version,
    about = "Distributed GEMM (SUMMA over MPI, each rank's products on its node's GPUs and CPU)",
    long_about = "Distributed GEMM (SUMMA over MPI, each rank's products on its node's GPUs \
        and CPU).\n\nRun check, bench, pingpong and bcast under mpirun (`mpirun -np 4 \
        hetblas-mpi bench --size 8192`); project runs alone. Each rank's runtime takes the \
        devices its environment gives it (HETBLAS_CUDA_DEVICES, HETBLAS_EMULATED, ...)."
)]
pub struct Cli {
    /// Add N host-emulated devices to each rank's runtime (testing the multi-device path
    /// without GPUs; HETBLAS_EMULATED=N does the same).
    #[arg(long, global = true, default_value_t = 0)]
    emulated: usize,
    /// With --emulated: each emulated device computes at this many GFLOP/s (default: as fast
    /// as the host BLAS), so that products take a known time.
    #[arg(long, global = true, requires = "emulated")]
    emulated_gflops: Option<f64>,
    /// With --emulated-gflops: give each rank's runtime the profile its devices' own rates
    /// make (emulated devices at their GFLOP/s, links at memcpy speed), so that the model
    /// chooses panel width and C's place without a calibration.
    #[arg(long, global = true, requires = "emulated_gflops")]
    nominal_profile: bool,
    #[command(subcommand)]
    cmd: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Every case (transposes, blockings, submatrices, transports, look-ahead, both places
    /// of C, f64 and f32) against an f64 reference, on every grid of the ranks.
    Check(check::CheckArgs),
    /// Time a distributed GEMM on random data: rates, each rank's local products, its
    /// timeline (--trace) and what it spent outside its products.
    #[command(long_about = bench::LONG_ABOUT)]
    Bench(bench::BenchArgs),
    /// Latency and bandwidth between ranks 0 and 1 (ping-pong, 8 B to 64 MiB).
    Pingpong,
    /// Panel broadcast bandwidth from rank 0 to the others, per size and transport.
    Bcast(probe::BcastArgs),
    /// Simulated strong and weak scaling to more nodes than we have (no MPI): the core
    /// simulator's local products on synthetic nodes, the broadcasts modelled on top.
    Project(project::ProjectArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The projection is a computation on models: no MPI.
    if let Command::Project(a) = cli.cmd {
        return match project::run(&a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("hetblas-mpi project: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let Some((universe, _)) = mpi::initialize_with_threading(mpi::Threading::Funneled) else {
        eprintln!("MPI was already initialised");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    let runtime = || runtime(cli.emulated, cli.emulated_gflops, cli.nominal_profile);
    let result = match cli.cmd {
        Command::Check(a) => runtime().and_then(|rt| check::run(&world, &rt, &a)),
        Command::Bench(a) => runtime().and_then(|rt| bench::run(&world, &rt, &a)),
        Command::Pingpong => probe::pingpong(&world),
        Command::Bcast(a) => probe::bcast(&world, &a),
        Command::Project(_) => Ok(()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rank {}: {e}", world.rank());
            world.abort(1)
        }
    }
}

type Res = std::result::Result<(), String>;

/// Each rank's runtime: its devices, plus `emulated` emulated ones (at `gflops` each when
/// given), with the profile of their nominal rates when `nominal`.
fn runtime(emulated: usize, gflops: Option<f64>, nominal: bool) -> Result<Runtime, String> {
    let mut b = Runtime::builder();
    if emulated > 0 {
        b = match gflops {
            Some(g) => b.emulated_with(vec![
                EmulatedConfig {
                    flops_per_sec: Some(g * 1e9),
                    ..EmulatedConfig::default()
                };
                emulated
            ]),
            None => b.emulated(emulated),
        };
    }
    let rt = b.build().map_err(|e| e.to_string())?;
    if nominal {
        let links: Vec<_> = rt.links().cloned().collect();
        let profile = nominal_profile(rt.devices(), &links, &[DType::F64, DType::F32], 10e-6);
        rt.set_profile(Some(std::sync::Arc::new(profile)));
    }
    Ok(rt)
}

/// A deterministic pseudo-random value in [-1, 1) for entry (i, j) of matrix `seed`.
fn rnd(seed: u64, i: usize, j: usize) -> f64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add((i as u64) << 32 ^ j as u64);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

/// A process grid `PxQ`.
fn parse_grid(s: &str) -> Result<(usize, usize), String> {
    let (p, q) = s
        .split_once('x')
        .ok_or(format!("grid {s:?}: expected PxQ"))?;
    let num = |v: &str| match v.parse::<usize>() {
        Ok(x) if x > 0 => Ok(x),
        _ => Err(format!("grid {s:?}: expected PxQ with positive P and Q")),
    };
    Ok((num(p)?, num(q)?))
}

/// Every rank's `text`, gathered on rank 0 in rank order (`None` on the others).
/// Collective over `comm`.
fn gather_texts(comm: &SimpleCommunicator, text: &str) -> Option<Vec<String>> {
    let root = comm.process_at_rank(0);
    // One byte more than the text: MPI refuses empty buffers here.
    let owned = format!("{text}\n");
    let bytes = owned.as_bytes();
    let len = bytes.len() as i32;
    if comm.rank() != 0 {
        root.gather_into(&len);
        root.gather_varcount_into(bytes);
        return None;
    }
    let mut lens = vec![0i32; comm.size() as usize];
    root.gather_into_root(&len, &mut lens[..]);
    let displs: Vec<i32> = lens
        .iter()
        .scan(0, |at, &l| {
            let d = *at;
            *at += l;
            Some(d)
        })
        .collect();
    let mut all = vec![0u8; lens.iter().sum::<i32>() as usize];
    let mut part = mpi::datatype::PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
    root.gather_varcount_into_root(bytes, &mut part);
    Some(
        displs
            .iter()
            .zip(&lens)
            .map(|(&d, &l)| {
                let t = &all[d as usize..(d + l) as usize];
                String::from_utf8_lossy(&t[..t.len().saturating_sub(1)]).into_owned()
            })
            .collect(),
    )
}

/// Prints every rank's `text` on rank 0, in rank order (gathered, so that the lines of
/// different ranks do not interleave). Collective over `comm`.
fn print_ranks(comm: &SimpleCommunicator, text: &str) {
    for t in gather_texts(comm, text).unwrap_or_default() {
        println!("{t}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// Every argument of every (sub)command, with the path of commands that holds it.
    fn all_args(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Arg)>) {
        let path = format!("{path} {}", cmd.get_name());
        for a in cmd.get_arguments() {
            out.push((path.clone(), a.clone()));
        }
        for sub in cmd.get_subcommands() {
            all_args(sub, &path, out);
        }
    }

    #[test]
    fn every_option_has_help() {
        let mut cmd = Cli::command();
        cmd.build();
        let mut args = Vec::new();
        all_args(&cmd, "", &mut args);
        assert!(args.len() > 30, "only {} arguments found", args.len());
        let missing: Vec<String> = args
            .iter()
            .filter(|(_, a)| a.get_help().is_none_or(|h| h.to_string().trim().is_empty()))
            .map(|(p, a)| format!("{p}: {}", a.get_id()))
            .collect();
        assert!(missing.is_empty(), "options without help: {missing:?}");
    }

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("hetblas-mpi").chain(args.iter().copied()))
    }

    #[test]
    fn bench_takes_the_main_commands_shape_options() {
        let cli = parse(&[
            "bench", "-s", "512", "-m", "100", "-k", "300", "--dtype", "f32", "--reps", "2",
            "--check", "--trace", "t.json",
        ])
        .expect("parses");
        let Command::Bench(b) = cli.cmd else {
            panic!("not bench: {:?}", cli.cmd)
        };
        assert_eq!(b.shape.mnk(), (100, 512, 300));
        assert_eq!(b.shape.dtype, bench::Dtype::F32);
        assert_eq!(b.reps, 2);
        assert!(b.check);
        assert_eq!(b.trace.as_deref(), Some(std::path::Path::new("t.json")));
        // The grid and the panel are the model's unless given.
        assert_eq!(b.grid, bench::GridArg::Auto);
        assert_eq!(b.panel, None);
        let cli = parse(&["bench", "--grid", "2x3", "--panel", "1024", "--c", "host"]).unwrap();
        let Command::Bench(b) = cli.cmd else { panic!() };
        assert_eq!(b.grid, bench::GridArg::Fixed(2, 3));
        assert_eq!(b.panel, Some(1024));
        // Bad values are refused by the parser, with the option named.
        for bad in [
            &["bench", "--grid", "2y3"][..],
            &["bench", "--grid", "0x2"],
            &["bench", "--reps", "0"],
            &["bench", "--dtype", "c64"],
            &["bench", "--transport", "smoke"],
            &["bench", "-s", "-4"],
            &["bench", "--emulated-gflops", "2"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn help_says_what_the_bench_measures() {
        let mut cmd = Cli::command();
        let help = cmd
            .find_subcommand_mut("bench")
            .expect("bench")
            .render_long_help()
            .to_string();
        for word in ["--trace", "--check", "outside", "mpirun", "--grid", "model"] {
            assert!(help.contains(word), "bench --help lacks {word:?}:\n{help}");
        }
    }

    #[test]
    fn grids_parse() {
        assert_eq!(parse_grid("2x3"), Ok((2, 3)));
        assert!(parse_grid("2x0").is_err());
        assert!(parse_grid("x3").is_err());
        assert!(parse_grid("23").is_err());
    }
}
