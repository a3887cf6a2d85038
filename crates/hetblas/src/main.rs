//! The `hetblas` command: list devices, run a GEMM (and, as they arrive, calibrate and predict).

mod cli;

use clap::Parser;

fn main() {
    let args = cli::Cli::parse();
    if let Err(e) = cli::run(args) {
        eprintln!("hetblas: {e}");
        std::process::exit(1);
    }
}
