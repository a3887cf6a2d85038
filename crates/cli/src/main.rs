//! The `hetblas` command: list devices, run a GEMM, calibrate the node, show the models'
//! predictions.

mod calibrate;
mod check;
mod cli;
mod devices;
mod factor;
mod gemm;
mod power;
mod predict;
mod progress;
mod report;
mod shape;
mod simulate;
mod sym;
mod terms;
mod tri;

use clap::Parser;

fn main() {
    die_quietly_on_a_closed_pipe();
    let args = cli::Cli::parse();
    if let Err(e) = cli::run(args) {
        eprintln!("hetblas: {e}");
        std::process::exit(1);
    }
}

/// `hetblas ... | head` closes the pipe before the output ends: Rust ignores SIGPIPE, so the
/// next `println!` panicked ("failed printing to stdout: Broken pipe", exit 101). The default
/// action ends the process quietly, as `cat` or `grep` end.
fn die_quietly_on_a_closed_pipe() {
    // SAFETY: restores the default disposition of one signal, before any other thread exists
    // and with no handler of ours installed for it.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
