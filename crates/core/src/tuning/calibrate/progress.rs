//! Progress: points planned and done, and the time left at the mean time per point so far.

use std::time::{Duration, Instant};

/// Where calibration is, for a progress bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Points measured (or skipped) so far.
    pub done: usize,
    /// Points planned.
    pub total: usize,
    /// Estimated time left, from the mean time per point so far.
    pub eta: Option<Duration>,
    /// What is being measured now ("link host->cuda0: 8 MiB").
    pub stage: String,
}

/// "8.0 MiB", for stage names.
pub(super) fn human_bytes(b: usize) -> String {
    if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else if b >= 1 << 10 {
        format!("{:.1} KiB", b as f64 / 1024.0)
    } else {
        format!("{b} B")
    }
}

/// Counts points and reports progress.
pub(super) struct Tracker<'a> {
    pub(super) done: usize,
    total: usize,
    start: Instant,
    progress: &'a mut dyn FnMut(Progress),
}

impl<'a> Tracker<'a> {
    pub(super) fn new(total: usize, progress: &'a mut dyn FnMut(Progress)) -> Tracker<'a> {
        Tracker {
            done: 0,
            total,
            start: Instant::now(),
            progress,
        }
    }

    /// One more point done, at `stage`.
    pub(super) fn tick(&mut self, stage: String) {
        self.done = (self.done + 1).min(self.total);
        let eta = (self.done > 0).then(|| {
            self.start
                .elapsed()
                .mul_f64((self.total - self.done) as f64 / self.done as f64)
        });
        (self.progress)(Progress {
            done: self.done,
            total: self.total,
            eta,
            stage,
        });
    }

    /// Points up to `done` done (skipped, or measured without reports), at `stage`.
    pub(super) fn skip_to(&mut self, done: usize, stage: String) {
        if done > self.done {
            self.done = done - 1;
            self.tick(stage);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_eta() {
        let mut seen = Vec::new();
        {
            let mut cb = |p: Progress| seen.push(p);
            let mut tr = Tracker {
                done: 0,
                total: 4,
                start: Instant::now(),
                progress: &mut cb,
            };
            tr.tick("a".into());
            tr.skip_to(3, "b".into());
            tr.skip_to(2, "ignored".into());
            tr.tick("c".into());
            tr.tick("over".into());
        }
        let done: Vec<usize> = seen.iter().map(|p| p.done).collect();
        assert_eq!(done, vec![1, 3, 4, 4]);
        assert!(seen.iter().all(|p| p.total == 4 && p.eta.is_some()));
        assert_eq!(seen[2].eta, Some(Duration::ZERO));
    }
}
