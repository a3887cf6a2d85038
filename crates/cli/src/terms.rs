//! A traced call beside its simulation, term by term: per queue and kind of task (fetch,
//! write-back, fold, product, add), how many tasks, their summed seconds and the rate they
//! reached (bytes or flops per second), measured and simulated. A bias that the call's total
//! shows is named here by the term that differs: copies slower than the link tables, products
//! slower than the GEMM table, folds slower than the fold rate, or time outside every task.

use hetblas_core::trace::Trace;
use std::collections::BTreeMap;

/// One term's totals in one timeline.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Term {
    pub tasks: usize,
    /// Summed seconds of the term's tasks.
    pub seconds: f64,
    pub bytes: f64,
    pub flops: f64,
}

impl Term {
    /// Bytes per second for copies and folds, flops per second for products and adds.
    fn rate(&self) -> Option<f64> {
        let work = if self.flops > 0.0 {
            self.flops
        } else {
            self.bytes
        };
        (self.seconds > 0.0 && work > 0.0).then(|| work / self.seconds)
    }

    fn rate_text(&self) -> String {
        match self.rate() {
            Some(r) if self.flops > 0.0 => format!("{:.2} TFLOP/s", r / 1e12),
            Some(r) => format!("{:.2} GB/s", r / 1e9),
            None => "-".into(),
        }
    }
}

/// The terms of a timeline by (queue, kind of task): the kind is the first word of a task's
/// label ("fetch", "writeback", "fold", "gemm", "add", "stage").
pub fn terms(trace: &Trace) -> BTreeMap<(String, String), Term> {
    let mut out: BTreeMap<(String, String), Term> = BTreeMap::new();
    for i in &trace.intervals {
        let kind = i.label.split_whitespace().next().unwrap_or("").to_string();
        let t = out.entry((i.queue.clone(), kind)).or_default();
        t.tasks += 1;
        t.seconds += (i.end - i.start).max(0.0);
        t.bytes += i.bytes as f64;
        t.flops += i.flops;
    }
    out
}

/// Per device, its products and adds over all its compute streams at once: the time any of
/// them runs (the union, not the sum: two streams' overlapping products each run slower, and
/// their per-queue rates alone read as a slow device) and the flops they did.
pub fn products_by_device(trace: &Trace) -> BTreeMap<String, Term> {
    let (s, e) = trace.span();
    let mut out: BTreeMap<String, Term> = BTreeMap::new();
    for i in trace.intervals.iter().filter(|i| i.flops > 0.0) {
        let t = out.entry(i.device.clone()).or_default();
        t.tasks += 1;
        t.flops += i.flops;
    }
    for (device, t) in out.iter_mut() {
        t.seconds = (e - s) * trace.busy_fraction(|i| i.flops > 0.0 && &i.device == device);
    }
    out
}

/// Seconds of the span during which no queue of the timeline runs a task.
fn idle(trace: &Trace) -> f64 {
    let (s, e) = trace.span();
    (e - s) * (1.0 - trace.busy_fraction(|_| true))
}

/// One table row per key of either timeline: its measured term beside its simulated one and
/// their ratio of seconds.
fn rows<K: Ord>(
    real: &BTreeMap<K, Term>,
    sim: &BTreeMap<K, Term>,
    name: impl Fn(&K) -> String,
) -> Vec<String> {
    let mut keys: Vec<&K> = real.keys().chain(sim.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|k| {
            let (a, b) = (
                real.get(k).copied().unwrap_or_default(),
                sim.get(k).copied().unwrap_or_default(),
            );
            let ratio = if b.seconds > 0.0 {
                format!("{:.3}", a.seconds / b.seconds)
            } else {
                "-".into()
            };
            format!(
                "{:<26} {:>6} {:>10.3} {:>15} | {:>6} {:>10.3} {:>15} | {:>9}",
                name(k),
                a.tasks,
                a.seconds * 1e3,
                a.rate_text(),
                b.tasks,
                b.seconds * 1e3,
                b.rate_text(),
                ratio
            )
        })
        .collect()
}

/// The table of [`terms`], measured beside simulated, with the spans and the idle time, as
/// lines for the CLI.
pub fn compare(real: &Trace, sim: &Trace) -> Vec<String> {
    let (r, s) = (terms(real), terms(sim));
    let mut lines = vec![format!(
        "{:<26} {:>6} {:>10} {:>15} | {:>6} {:>10} {:>15} | {:>9}",
        "term (queue, task)",
        "tasks",
        "real ms",
        "real rate",
        "tasks",
        "sim ms",
        "sim rate",
        "real/sim"
    )];
    lines.extend(rows(&r, &s, |k| format!("{} {}", k.0, k.1)));
    let (rp, sp) = (products_by_device(real), products_by_device(sim));
    lines.extend(rows(&rp, &sp, |d| format!("{d} products, any stream")));
    let span = |t: &Trace| {
        let (s, e) = t.span();
        (s, e - s)
    };
    let ((rs, rw), (ss, sw)) = (span(real), span(sim));
    lines.push(format!(
        "span: real {:.3} ms from {:.3} ms, simulated {:.3} ms from {:.3} ms ({:+.1}%); no task running: real {:.3} ms, simulated {:.3} ms",
        rw * 1e3,
        rs * 1e3,
        sw * 1e3,
        ss * 1e3,
        100.0 * (sw - rw) / rw.max(f64::MIN_POSITIVE),
        idle(real) * 1e3,
        idle(sim) * 1e3
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetblas_core::trace::{Activity, Interval};

    fn iv(queue: &str, label: &str, start: f64, end: f64, bytes: u64, flops: f64) -> Interval {
        Interval {
            device: "d".into(),
            queue: queue.into(),
            activity: Activity::Fetch,
            label: label.into(),
            start,
            end,
            bytes,
            flops,
        }
    }

    #[test]
    fn terms_sum_per_queue_and_kind() {
        let real = Trace {
            intervals: vec![
                iv("h2d", "fetch A(0,0)", 0.0, 1.0, 100, 0.0),
                iv("h2d", "fetch B(0,0)", 1.0, 3.0, 100, 0.0),
                iv("c0", "gemm C(0,0) l=0", 3.0, 4.0, 0, 50.0),
            ],
        };
        let t = terms(&real);
        let fetch = t[&("h2d".to_string(), "fetch".to_string())];
        assert_eq!(fetch.tasks, 2);
        assert!((fetch.seconds - 3.0).abs() < 1e-12);
        assert!((fetch.rate().unwrap() - 200.0 / 3.0).abs() < 1e-9);
        let gemm = t[&("c0".to_string(), "gemm".to_string())];
        assert!((gemm.rate().unwrap() - 50.0).abs() < 1e-9);
        // Simulated twice as fast on the link: the ratio column says 2.
        let sim = Trace {
            intervals: vec![
                iv("h2d", "fetch A(0,0)", 0.0, 0.5, 100, 0.0),
                iv("h2d", "fetch B(0,0)", 0.5, 1.5, 100, 0.0),
                iv("c0", "gemm C(0,0) l=0", 1.5, 2.5, 0, 50.0),
            ],
        };
        let lines = compare(&real, &sim);
        let h2d = lines.iter().find(|l| l.starts_with("h2d fetch")).unwrap();
        assert!(h2d.trim_end().ends_with("2.000"), "{h2d}");
        let c0 = lines.iter().find(|l| l.starts_with("c0 gemm")).unwrap();
        assert!(c0.trim_end().ends_with("1.000"), "{c0}");
        let d = lines.iter().find(|l| l.starts_with("d products")).unwrap();
        // One product of 1 s in each timeline: the union is 1 s in both.
        assert!(
            d.trim_end().ends_with("1.000") && d.contains(" 1000.000 "),
            "{d}"
        );
        // Spans of 4 s and 2.5 s (printed in ms), no idle time in either (back to back).
        let last = lines.last().unwrap();
        assert!(
            last.starts_with("span:")
                && last.contains("real 4000.000 ms")
                && last.contains("simulated 2500.000 ms")
                && last.contains("(-37.5%)")
                && last.contains("no task running: real 0.000 ms, simulated 0.000 ms"),
            "{last}"
        );
    }

    /// Two streams' products overlapping in time: per device, the union of their time, so
    /// the device's rate is its flops over the time any product ran.
    #[test]
    fn products_by_device_count_overlapping_streams_once() {
        let t = Trace {
            intervals: vec![
                iv("c0", "gemm C(0,0) l=0", 0.0, 2.0, 0, 100.0),
                iv("c1", "gemm C(1,0) l=0", 1.0, 3.0, 0, 100.0),
                iv("c0", "gemm C(0,1) l=0", 5.0, 6.0, 0, 50.0),
                iv("h2d", "fetch A(0,0)", 0.0, 6.0, 100, 0.0),
            ],
        };
        let p = products_by_device(&t);
        let d = p["d"];
        assert_eq!(d.tasks, 3);
        // Busy 0-3 and 5-6: 4 s, not the 5 s the per-stream sums add to.
        assert!((d.seconds - 4.0).abs() < 1e-9, "{}", d.seconds);
        assert!((d.rate().unwrap() - 250.0 / 4.0).abs() < 1e-9);
    }
}
