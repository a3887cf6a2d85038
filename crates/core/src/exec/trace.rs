//! Timelines of real runs (device-side timestamps from events around each operation) and of
//! simulated ones, exportable as Chrome trace JSON (Perfetto, chrome://tracing).

use serde::Serialize;
use std::collections::BTreeMap;

/// What an interval was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Activity {
    Fetch,
    Gemm,
    WriteBack,
}

/// One operation on one queue.
#[derive(Debug, Clone, Serialize)]
pub struct Interval {
    pub device: String,
    pub queue: String,
    pub activity: Activity,
    pub label: String,
    /// Seconds from the start of the run.
    pub start: f64,
    pub end: f64,
    pub bytes: u64,
    pub flops: f64,
}

/// A timeline.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Trace {
    pub intervals: Vec<Interval>,
}

/// Busy time of one queue.
#[derive(Debug, Clone, Serialize)]
pub struct QueueUsage {
    pub queue: String,
    pub busy: f64,
    pub fraction: f64,
}

impl Trace {
    /// First start to last end.
    pub fn span(&self) -> (f64, f64) {
        let s = self
            .intervals
            .iter()
            .map(|i| i.start)
            .fold(f64::INFINITY, f64::min);
        let e = self.intervals.iter().map(|i| i.end).fold(0.0, f64::max);
        if s.is_finite() {
            (s, e)
        } else {
            (0.0, 0.0)
        }
    }

    /// Per queue: time covered by its intervals (union) and its fraction of the span.
    pub fn usage(&self) -> Vec<QueueUsage> {
        let (s, e) = self.span();
        let wall = (e - s).max(f64::MIN_POSITIVE);
        let mut per: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
        for i in &self.intervals {
            per.entry(&i.queue).or_default().push((i.start, i.end));
        }
        per.into_iter()
            .map(|(q, iv)| {
                let busy = union_length(iv);
                QueueUsage {
                    queue: q.to_string(),
                    busy,
                    fraction: busy / wall,
                }
            })
            .collect()
    }

    /// Fraction of the span during which at least one queue whose name matches `pred` is busy.
    pub fn busy_fraction(&self, pred: impl Fn(&Interval) -> bool) -> f64 {
        let (s, e) = self.span();
        let iv: Vec<_> = self
            .intervals
            .iter()
            .filter(|i| pred(i))
            .map(|i| (i.start, i.end))
            .collect();
        union_length(iv) / (e - s).max(f64::MIN_POSITIVE)
    }

    /// Chrome trace JSON ("X" complete events, one thread per queue, microseconds).
    pub fn to_chrome_json(&self) -> String {
        let mut events = Vec::new();
        self.push_events(&mut events, 0, 0.0);
        serde_json::json!({ "traceEvents": events, "displayTimeUnit": "ms" }).to_string()
    }

    /// The Chrome trace events of this timeline as process `pid`: one thread per queue, times
    /// from `origin`.
    fn push_events(&self, events: &mut Vec<serde_json::Value>, pid: usize, origin: f64) {
        let mut tids: BTreeMap<&str, usize> = BTreeMap::new();
        for i in &self.intervals {
            let n = tids.len();
            tids.entry(&i.queue).or_insert(n);
        }
        for (q, tid) in &tids {
            events.push(serde_json::json!({
                "ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                "args": {"name": q}
            }));
        }
        for i in &self.intervals {
            events.push(serde_json::json!({
                "ph": "X",
                "name": i.label,
                "cat": format!("{:?}", i.activity),
                "pid": pid,
                "tid": tids[i.queue.as_str()],
                "ts": (i.start - origin) * 1e6,
                "dur": (i.end - i.start).max(0.0) * 1e6,
                "args": {"device": i.device, "bytes": i.bytes, "flops": i.flops},
            }));
        }
    }
}

/// Several timelines in one Chrome trace, each a process row of its own named `name` (the real
/// run and the simulated one, say), their queues as threads. Each row keeps its own time
/// origin: both start at 0.
pub fn chrome_json_rows(rows: &[(&str, &Trace)]) -> String {
    rows_json(rows, false)
}

/// As [`chrome_json_rows`], but every row on one clock: times as they are in the traces (the
/// calls of one round, each its own row, their intervals as offsets from the round's start).
pub fn chrome_json_rows_one_clock(rows: &[(&str, &Trace)]) -> String {
    rows_json(rows, true)
}

fn rows_json(rows: &[(&str, &Trace)], one_clock: bool) -> String {
    let mut events = Vec::new();
    for (pid, (name, trace)) in rows.iter().enumerate() {
        events.push(serde_json::json!({
            "ph": "M", "name": "process_name", "pid": pid, "tid": 0,
            "args": {"name": name}
        }));
        let origin = if one_clock { 0.0 } else { trace.span().0 };
        trace.push_events(&mut events, pid, origin);
    }
    serde_json::json!({ "traceEvents": events, "displayTimeUnit": "ms" }).to_string()
}

fn union_length(mut iv: Vec<(f64, f64)>) -> f64 {
    iv.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut iv = iv.into_iter();
    let Some(mut cur) = iv.next() else {
        return 0.0;
    };
    let mut total = 0.0;
    for (s, e) in iv {
        if s <= cur.1 {
            cur.1 = cur.1.max(e);
        } else {
            total += cur.1 - cur.0;
            cur = (s, e);
        }
    }
    total + (cur.1 - cur.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(q: &str, s: f64, e: f64) -> Interval {
        Interval {
            device: "d".into(),
            queue: q.into(),
            activity: Activity::Gemm,
            label: "x".into(),
            start: s,
            end: e,
            bytes: 0,
            flops: 0.0,
        }
    }

    #[test]
    fn usage_is_union() {
        let t = Trace {
            intervals: vec![iv("a", 0.0, 2.0), iv("a", 1.0, 3.0), iv("b", 3.0, 4.0)],
        };
        let u = t.usage();
        assert!((u[0].busy - 3.0).abs() < 1e-12);
        assert!((u[0].fraction - 0.75).abs() < 1e-12);
        assert!((t.busy_fraction(|i| i.queue == "b") - 0.25).abs() < 1e-12);
        assert!(t.to_chrome_json().contains("traceEvents"));
        let two: serde_json::Value =
            serde_json::from_str(&chrome_json_rows(&[("real", &t), ("simulated", &t)])).unwrap();
        let ev = two["traceEvents"].as_array().unwrap();
        let pids: std::collections::BTreeSet<u64> =
            ev.iter().filter_map(|e| e["pid"].as_u64()).collect();
        assert_eq!(pids.len(), 2);
        assert!(ev
            .iter()
            .any(|e| e["ph"] == "M" && e["args"]["name"] == "simulated"));
        // One clock: a row that starts later keeps its offset.
        let late = Trace {
            intervals: vec![iv("a", 2.5, 3.0)],
        };
        let one: serde_json::Value =
            serde_json::from_str(&chrome_json_rows_one_clock(&[("x", &t), ("y", &late)])).unwrap();
        let ts: Vec<f64> = one["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X" && e["pid"] == 1)
            .map(|e| e["ts"].as_f64().unwrap())
            .collect();
        assert_eq!(ts, vec![2.5e6]);
    }
}
