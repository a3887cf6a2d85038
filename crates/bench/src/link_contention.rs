//! What a traced call's host->device copies reached beside the host-memory traffic of the same
//! call: alone, beside device->host copies, beside host folds, beside both.
//!
//! Why: on one H200 (2026-11-25, DGEMM 8192^3 folding C on the host) the host->device link
//! copied 54.7 GB/s alone, about 50 beside the products' copies back, 42-45 beside a fold, and
//! 30-34 beside both: the host's memory is one budget for the three, and that, not the link's
//! own rate, is what bounds a call that moves its inputs once. The busy shares of
//! `compare --trace-out` do not show it; these rates do.

use hetblas_core::trace::{Interval, Trace};

/// Host->device time and bytes beside one kind of neighbour traffic.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Beside {
    /// Seconds of host->device copying.
    pub seconds: f64,
    /// Bytes copied in that time (each copy's bytes spread evenly over its interval).
    pub bytes: f64,
}

impl Beside {
    /// GB/s, or `None` for no time.
    pub fn gb_per_s(&self) -> Option<f64> {
        (self.seconds > 0.0).then(|| self.bytes / self.seconds / 1e9)
    }
}

/// Host->device copies split by what ran beside them, every device's copies together (they
/// share the host's memory).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct H2dBeside {
    pub alone: Beside,
    pub device_to_host: Beside,
    pub fold: Beside,
    pub both: Beside,
}

fn is_h2d(i: &Interval) -> bool {
    i.queue.ends_with("h2d")
}

fn is_d2h(i: &Interval) -> bool {
    i.queue.ends_with("d2h")
}

fn is_fold(i: &Interval) -> bool {
    i.queue == "host-fold"
}

fn covered(at: f64, spans: &[(f64, f64)]) -> bool {
    spans.iter().any(|&(s, e)| s <= at && at < e)
}

/// Splits each host->device copy of `tr` at the edges of the device->host copies and host
/// folds that overlap it, and adds each piece to its class.
pub fn h2d_beside(tr: &Trace) -> H2dBeside {
    let spans = |f: fn(&Interval) -> bool| -> Vec<(f64, f64)> {
        tr.intervals
            .iter()
            .filter(|i| f(i))
            .map(|i| (i.start, i.end))
            .collect()
    };
    let (d2h, folds) = (spans(is_d2h), spans(is_fold));
    let mut out = H2dBeside::default();
    for c in tr.intervals.iter().filter(|i| is_h2d(i)) {
        let length = c.end - c.start;
        if length <= 0.0 {
            continue;
        }
        let mut cuts = vec![c.start, c.end];
        for &(s, e) in d2h.iter().chain(&folds) {
            for t in [s, e] {
                if t > c.start && t < c.end {
                    cuts.push(t);
                }
            }
        }
        cuts.sort_by(f64::total_cmp);
        for w in cuts.windows(2) {
            let (s, e) = (w[0], w[1]);
            if e <= s {
                continue;
            }
            let mid = 0.5 * (s + e);
            let class = match (covered(mid, &d2h), covered(mid, &folds)) {
                (false, false) => &mut out.alone,
                (true, false) => &mut out.device_to_host,
                (false, true) => &mut out.fold,
                (true, true) => &mut out.both,
            };
            class.seconds += e - s;
            class.bytes += c.bytes as f64 * (e - s) / length;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetblas_core::trace::Activity;

    fn iv(queue: &str, start: f64, end: f64, bytes: u64) -> Interval {
        Interval {
            device: "cuda:0".into(),
            queue: queue.into(),
            activity: Activity::Fetch,
            label: String::new(),
            start,
            end,
            bytes,
            flops: 0.0,
        }
    }

    #[test]
    fn each_piece_of_a_copy_counts_where_it_ran() {
        // One 10 s copy of 100 bytes; a write-back over [2, 6), a fold over [4, 8): pieces of
        // 2 s alone, 2 s beside the write-back, 2 s beside both, 2 s beside the fold, 2 s
        // alone. A second copy, beside nothing, 50 bytes in 5 s.
        let tr = Trace {
            intervals: vec![
                iv("cuda0/h2d", 0.0, 10.0, 100),
                iv("cuda0/d2h", 2.0, 6.0, 7),
                iv("host-fold", 4.0, 8.0, 9),
                iv("cuda0/compute0", 0.0, 10.0, 0),
                iv("cuda0/h2d", 20.0, 25.0, 50),
            ],
        };
        let r = h2d_beside(&tr);
        assert_eq!(r.alone.seconds, 9.0);
        assert!((r.alone.bytes - 90.0).abs() < 1e-9);
        assert_eq!(r.device_to_host.seconds, 2.0);
        assert!((r.device_to_host.bytes - 20.0).abs() < 1e-9);
        assert_eq!(r.both.seconds, 2.0);
        assert_eq!(r.fold.seconds, 2.0);
        assert!((r.fold.gb_per_s().unwrap() - 10.0 / 1e9).abs() < 1e-18);
    }

    #[test]
    fn nothing_copied_in_is_no_rate() {
        let tr = Trace {
            intervals: vec![iv("cuda0/d2h", 0.0, 1.0, 8)],
        };
        let r = h2d_beside(&tr);
        assert_eq!(r, H2dBeside::default());
        assert_eq!(r.alone.gb_per_s(), None);
    }
}
