//! Command-line interface.

mod calibrate;
mod devices;
mod gemm;
mod predict;

use clap::{Parser, Subcommand};
use hetblas::{Result, Runtime};

#[derive(Parser, Debug)]
#[command(
    name = "hetblas",
    version,
    about = "Heterogeneous BLAS: GEMM on every GPU and the CPU of the node"
)]
pub struct Cli {
    /// Add N host-emulated devices (testing the multi-device pipeline without GPUs).
    #[arg(long, global = true, default_value_t = 0)]
    emulated: usize,
    #[command(subcommand)]
    cmd: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the devices found, and each backend that is absent with the reason.
    Devices(devices::DevicesArgs),
    /// Run a GEMM on random host data; print time and GFLOP/s.
    Gemm(gemm::GemmArgs),
    /// Measure links and kernels; write the machine profile the models use.
    Calibrate(calibrate::CalibrateArgs),
    /// Each model's predicted time per candidate tile for a problem, and hetblas's choice.
    Predict(predict::PredictArgs),
}

fn runtime(emulated: usize) -> Result<Runtime> {
    let mut b = Runtime::builder();
    if emulated > 0 {
        b = b.emulated(emulated);
    }
    b.build()
}

pub fn run(cli: Cli) -> Result<()> {
    if let Command::Calibrate(a) = cli.cmd {
        return calibrate::run(cli.emulated, a);
    }
    let rt = runtime(cli.emulated)?;
    match cli.cmd {
        Command::Devices(a) => devices::run(&rt, a),
        Command::Gemm(a) => gemm::run(&rt, a),
        Command::Predict(a) => predict::run(&rt, a),
        Command::Calibrate(_) => unreachable!("handled above"),
    }
}

/// Parses "0,2" or "cuda:0,cpu:0" into pool indices.
pub fn parse_devices(rt: &Runtime, spec: &str) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let idx = match part.parse::<usize>() {
            Ok(i) => i,
            Err(_) => rt
                .devices()
                .iter()
                .position(|d| d.info().label().eq_ignore_ascii_case(part))
                .ok_or_else(|| {
                    hetblas::Error::InvalidInput(format!(
                        "no device {part:?} (see `hetblas devices`)"
                    ))
                })?,
        };
        out.push(idx);
    }
    Ok(out)
}
