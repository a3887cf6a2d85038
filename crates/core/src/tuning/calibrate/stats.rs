//! Repeated measurements: each point repeats until the 95% confidence interval of its mean is
//! within `rel_ci` of the mean (CoCoPeLia's rule) or a time cap, timed with events on the
//! queue around the operation ([`crate::Event::elapsed_since`]), or the host clock around a
//! synchronised run when the backend's events carry no timestamps.

use super::CalibrationOptions;
use crate::error::{Error, Result};
use crate::queue::Queue;
use std::sync::Arc;
use std::time::Instant;

/// A repeated measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// Mean seconds.
    pub mean: f64,
    /// Half-width of the 95% confidence interval of the mean (s).
    pub half_width: f64,
    pub reps: usize,
}

/// Running mean and variance (Welford).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Stats {
    n: usize,
    mean: f64,
    m2: f64,
}

impl Stats {
    fn push(&mut self, x: f64) {
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }

    fn half_width95(&self) -> f64 {
        if self.n < 2 {
            return f64::INFINITY;
        }
        let var = self.m2 / (self.n - 1) as f64;
        student_t975(self.n - 1) * (var / self.n as f64).sqrt()
    }
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom (two-sided 95%).
pub(super) fn student_t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        // Within 0.2% of the exact quantile for df > 30.
        _ => 1.96 + 2.4 / df as f64,
    }
}

/// Runs `once` (which returns the seconds of one repetition) after one discarded warm-up run,
/// until the 95% confidence interval of the mean is within `opts.rel_ci` of it, or
/// `opts.max_reps` repetitions, or `opts.point_time_cap` spent (never fewer than
/// `opts.min_reps`, at least 2). A negative or non-finite time is an `Internal` error.
pub fn measure_until_confident(
    opts: &CalibrationOptions,
    once: &mut dyn FnMut() -> Result<f64>,
) -> Result<Measurement> {
    once()?;
    measure_warm_until_confident(opts, once)
}

/// [`measure_until_confident`] for work already run just before (a GEMM point's sizing run):
/// no repetition is discarded.
pub fn measure_warm_until_confident(
    opts: &CalibrationOptions,
    once: &mut dyn FnMut() -> Result<f64>,
) -> Result<Measurement> {
    let start = Instant::now();
    let min_reps = opts.min_reps.max(2);
    let mut s = Stats::default();
    loop {
        let t = once()?;
        if !(t.is_finite() && t >= 0.0) {
            return Err(Error::internal(format!("calibration measured {t} s")));
        }
        s.push(t);
        if s.n >= min_reps {
            let hw = s.half_width95();
            if hw <= opts.rel_ci * s.mean
                || s.n >= opts.max_reps.max(min_reps)
                || start.elapsed() >= opts.point_time_cap
            {
                return Ok(Measurement {
                    mean: s.mean,
                    half_width: hw,
                    reps: s.n,
                });
            }
        }
    }
}

/// Seconds of the work `issue` puts on `queue`: events recorded before and after it, their
/// device-side difference, or the host clock around it when the events carry no timestamps.
/// The queue is synchronised afterwards so errors of the work surface here.
pub fn time_on_queue(queue: &Arc<dyn Queue>, issue: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
    queue.synchronize()?;
    let host_start = Instant::now();
    let e0 = queue.record_timed()?;
    issue()?;
    let e1 = queue.record_timed()?;
    e1.synchronize()?;
    let host = host_start.elapsed().as_secs_f64();
    queue.synchronize()?;
    Ok(e1.elapsed_since(e0.as_ref()).unwrap_or(host))
}

/// [`time_on_queue`] of `timed` on `queue` after `busy` has issued work on `busy_queues`, which
/// are synchronised afterwards (all of them, whatever failed: nothing may outlive its buffers).
pub(super) fn time_beside(
    busy: &mut dyn FnMut() -> Result<()>,
    queue: &Arc<dyn Queue>,
    timed: &mut dyn FnMut() -> Result<()>,
    busy_queues: &[&Arc<dyn Queue>],
) -> Result<f64> {
    busy()?;
    let t = time_on_queue(queue, timed);
    let synced: Vec<Result<()>> = busy_queues.iter().map(|q| q.synchronize()).collect();
    let t = t?;
    synced.into_iter().collect::<Result<()>>()?;
    Ok(t)
}

/// Runs `f` `n` times, stopping at its first error.
pub(super) fn repeat(n: usize, f: &mut dyn FnMut() -> Result<()>) -> Result<()> {
    (0..n).try_for_each(|_| f())
}

/// Operations of `single` seconds that fill `span` seconds (1 to 10,000).
pub(super) fn batch(span: f64, single: f64) -> usize {
    ((span / single.max(1e-9)).ceil() as usize).clamp(1, 10_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn t_quantiles() {
        assert_eq!(student_t975(0), f64::INFINITY);
        assert_eq!(student_t975(1), 12.706);
        assert_eq!(student_t975(30), 2.042);
        // Exact: df 60 -> 2.000, df 120 -> 1.980.
        assert!((student_t975(60) - 2.000).abs() < 0.005);
        assert!((student_t975(120) - 1.980).abs() < 0.005);
    }

    #[test]
    fn stops_when_confident() {
        let opts = CalibrationOptions {
            min_reps: 3,
            max_reps: 1000,
            point_time_cap: Duration::from_secs(60),
            ..CalibrationOptions::quick()
        };
        // Constant samples: confident at min_reps.
        let mut calls = 0;
        let m = measure_until_confident(&opts, &mut || {
            calls += 1;
            Ok(1e-3)
        })
        .unwrap();
        assert_eq!(m.reps, 3);
        assert_eq!(calls, 4, "one warm-up run");
        assert!((m.mean - 1e-3).abs() < 1e-15);
        // Work run just before: nothing discarded.
        let mut calls = 0;
        let warm = measure_warm_until_confident(&opts, &mut || {
            calls += 1;
            Ok(1e-3)
        })
        .unwrap();
        assert_eq!((warm.reps, calls), (3, 3));
        // +-20% alternating noise: needs about (2 * 0.2 / 0.05)^2 = 64 reps.
        let mut i = 0;
        let m = measure_until_confident(&opts, &mut || {
            i += 1;
            Ok(if i % 2 == 0 { 1.2 } else { 0.8 })
        })
        .unwrap();
        assert!(m.reps > 20 && m.reps < 100, "{m:?}");
        assert!(m.half_width <= 0.05 * m.mean);
        // max_reps bounds it.
        let capped = CalibrationOptions {
            max_reps: 10,
            ..opts.clone()
        };
        let mut i = 0;
        let m = measure_until_confident(&capped, &mut || {
            i += 1;
            Ok((i % 2) as f64 * 10.0)
        })
        .unwrap();
        assert_eq!(m.reps, 10);
        // Errors propagate.
        assert!(measure_until_confident(&opts, &mut || Err(Error::internal("x"))).is_err());
        assert!(measure_until_confident(&opts, &mut || Ok(f64::NAN)).is_err());
    }
}
