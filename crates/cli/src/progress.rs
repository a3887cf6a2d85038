//! Progress on stderr for the steps that may take more than a second (calibration phases,
//! repetitions, planning and replays): drawn only once the step has run for a second, only
//! where stderr is a terminal (indicatif draws nothing otherwise, so scripts and tests see
//! clean output), never with `--json`, and cleared before the report is printed.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};
use std::time::Duration;

/// How long a step runs before its progress is drawn.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// A bar of `len` steps (`{pos}/{len}`, elapsed time and ETA) saying `msg`; none drawn when
/// `quiet` (`--json`).
pub fn bar(len: u64, msg: &str, quiet: bool) -> ProgressBar {
    let style = ProgressStyle::with_template("{elapsed:>4} [{bar:40}] {pos}/{len} ETA {eta} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    start(ProgressBar::new(len).with_style(style), msg, quiet)
}

/// A spinner with the elapsed time, saying `msg`, for a step with no count to show; none
/// drawn when `quiet`.
pub fn spinner(msg: &str, quiet: bool) -> ProgressBar {
    let style = ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    start(ProgressBar::new_spinner().with_style(style), msg, quiet)
}

/// Hidden at first; drawn on stderr from [`SHOW_AFTER`] on unless finished (or dropped) by
/// then or `quiet`; cleared when dropped, so a command that fails midway leaves only its error.
/// A steady tick keeps the elapsed time moving while one long call runs.
fn start(bar: ProgressBar, msg: &str, quiet: bool) -> ProgressBar {
    let bar = bar.with_finish(ProgressFinish::AndClear);
    bar.set_draw_target(ProgressDrawTarget::hidden());
    bar.set_message(msg.to_string());
    if !quiet {
        bar.enable_steady_tick(Duration::from_millis(200));
        let later = bar.downgrade();
        std::thread::spawn(move || {
            std::thread::sleep(SHOW_AFTER);
            if let Some(bar) = later.upgrade().filter(|b| !b.is_finished()) {
                bar.set_draw_target(ProgressDrawTarget::stderr());
            }
        });
    }
    bar
}
