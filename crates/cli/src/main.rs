//! The `hetblas` command: list devices, run a GEMM, calibrate the node, show the models'
//! predictions.

mod calibrate;
mod cli;
mod devices;
mod factor;
mod gemm;
mod power;
mod predict;
mod shape;
mod simulate;
mod sym;
mod terms;
mod tri;

use clap::Parser;

fn main() {
    let args = cli::Cli::parse();
    if let Err(e) = cli::run(args) {
        eprintln!("hetblas: {e}");
        std::process::exit(1);
    }
}
