//! What a traced call's host->device copies reached beside the host-memory traffic of the same
//! call: alone, beside device->host copies, beside host folds, beside both.
//!
//! Why: the host's memory is one budget for the copies in, the copies back and the folds, and
//! for a call that moves its inputs once that budget, not the link's own rate, is the bound
//! (docs/PERFORMANCE.md, DGEMM 8192^3 on H200). Busy shares do not show it; these rates do.
//!
//! Queues are matched by the GPU layer's names (`cuda0/h2d`, `cuda0/d2h`) and the host fold's
//! (`host-fold`); emulated devices' links are named otherwise and are not counted. Each
//! device's copies in are classified apart: another device's copies in are not a class.

use hetblas_core::trace::{Interval, Trace};
use std::collections::BTreeMap;

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

/// One device's host->device copies split by what ran beside them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct H2dBeside {
    /// The host->device queue.
    pub queue: String,
    /// Nothing else touching host memory ran.
    pub alone: Beside,
    /// Some device->host copy (of any device) ran, no host fold.
    pub device_to_host: Beside,
    /// A host fold ran, no device->host copy.
    pub fold: Beside,
    /// Both ran.
    pub both: Beside,
}

fn is_h2d(i: &Interval) -> bool {
    i.queue.ends_with("/h2d")
}

fn is_d2h(i: &Interval) -> bool {
    i.queue.ends_with("/d2h")
}

fn is_fold(i: &Interval) -> bool {
    i.queue == "host-fold"
}

fn covered(at: f64, spans: &[(f64, f64)]) -> bool {
    spans.iter().any(|&(s, e)| s <= at && at < e)
}

/// Per host->device queue of `tr` (sorted by name): each copy split at the edges of the
/// device->host copies and host folds that overlap it, each piece added to its class.
/// Copies of no length are skipped.
pub fn h2d_beside(tr: &Trace) -> Vec<H2dBeside> {
    let spans = |f: fn(&Interval) -> bool| -> Vec<(f64, f64)> {
        tr.intervals
            .iter()
            .filter(|i| f(i))
            .map(|i| (i.start, i.end))
            .collect()
    };
    let (d2h, folds) = (spans(is_d2h), spans(is_fold));
    let mut out: BTreeMap<&str, H2dBeside> = BTreeMap::new();
    for c in tr.intervals.iter().filter(|i| is_h2d(i)) {
        let length = c.end - c.start;
        if length <= 0.0 {
            continue;
        }
        let q = out.entry(&c.queue).or_insert_with(|| H2dBeside {
            queue: c.queue.clone(),
            ..H2dBeside::default()
        });
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
                (false, false) => &mut q.alone,
                (true, false) => &mut q.device_to_host,
                (false, true) => &mut q.fold,
                (true, true) => &mut q.both,
            };
            class.seconds += e - s;
            class.bytes += c.bytes as f64 * (e - s) / length;
        }
    }
    out.into_values().collect()
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

    fn close(b: Beside, seconds: f64, bytes: f64) {
        assert!(
            (b.seconds - seconds).abs() < 1e-9,
            "{b:?} against {seconds} s"
        );
        assert!((b.bytes - bytes).abs() < 1e-9, "{b:?} against {bytes} B");
    }

    #[test]
    fn each_piece_of_a_copy_counts_where_it_ran() {
        // A 10 s copy of 100 bytes. Copies back over [-1, 3) and [2, 6) (overlapping, one
        // starting before the copy), a fold over [4, 9): 1 s beside nothing at the end, 4 s
        // beside copies back alone ([0, 4)), 2 s beside both ([4, 6)), 3 s beside the fold
        // alone ([6, 9)). A second copy beside nothing, 50 bytes in 5 s; one of no length.
        let tr = Trace {
            intervals: vec![
                iv("cuda0/h2d", 0.0, 10.0, 100),
                iv("cuda0/d2h", -1.0, 3.0, 7),
                iv("cuda0/d2h", 2.0, 6.0, 7),
                iv("host-fold", 4.0, 9.0, 9),
                iv("cuda0/compute0", 0.0, 10.0, 0),
                iv("cuda0/h2d", 20.0, 25.0, 50),
                iv("cuda0/h2d", 30.0, 30.0, 40),
            ],
        };
        let r = h2d_beside(&tr);
        assert_eq!(r.len(), 1);
        let q = &r[0];
        assert_eq!(q.queue, "cuda0/h2d");
        close(q.alone, 6.0, 60.0);
        close(q.device_to_host, 4.0, 40.0);
        close(q.both, 2.0, 20.0);
        close(q.fold, 3.0, 30.0);
        assert!((q.fold.gb_per_s().unwrap() - 10.0 / 1e9).abs() < 1e-18);
    }

    #[test]
    fn each_device_is_classified_apart() {
        // Two devices copying in at once: each its own line, neither the other's neighbour;
        // the second device's copy runs beside the first device's copy back.
        let tr = Trace {
            intervals: vec![
                iv("cuda1/h2d", 0.0, 4.0, 40),
                iv("cuda0/h2d", 0.0, 4.0, 80),
                iv("cuda0/d2h", 0.0, 2.0, 8),
            ],
        };
        let r = h2d_beside(&tr);
        assert_eq!(
            r.iter().map(|q| q.queue.as_str()).collect::<Vec<_>>(),
            ["cuda0/h2d", "cuda1/h2d"]
        );
        close(r[0].device_to_host, 2.0, 40.0);
        close(r[0].alone, 2.0, 40.0);
        close(r[1].device_to_host, 2.0, 20.0);
        close(r[1].alone, 2.0, 20.0);
    }

    #[test]
    fn nothing_copied_in_is_no_rate() {
        let tr = Trace {
            intervals: vec![iv("cuda0/d2h", 0.0, 1.0, 8)],
        };
        assert!(h2d_beside(&tr).is_empty());
        assert_eq!(Beside::default().gb_per_s(), None);
    }
}
