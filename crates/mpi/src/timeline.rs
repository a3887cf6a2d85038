//! What a rank did during one distributed call, in time: its local products, its waits for
//! panels, its packing and posting of panels, the broadcasts in flight, and what it spent
//! outside them (page-locking, allocating, moving local C), with counters of the things that
//! should happen once and not per call (registrations, allocations).
//!
//! Events are host-clock intervals, in seconds from the call's start, recorded by the thread
//! that drives MPI and by the thread that runs the products. They are for telling where a
//! rank's time goes (the distributed GEMM's question: how much of it is outside the local
//! products, and why); the device-side timeline of each product is the runtime's own trace.
//! [`chrome_trace`] writes every rank's events as one Chrome trace (Perfetto,
//! chrome://tracing), one process per rank.

use serde_json::{json, Value};
use std::sync::Mutex;
use std::time::Instant;

/// What an interval of a rank's timeline was spent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Activity {
    /// A local product: one call to the node runtime (on the product thread).
    Product,
    /// Blocked until a panel's broadcasts arrived (nothing else to multiply meanwhile), or
    /// until the broadcasts out of a panel buffer completed before the buffer is reused.
    Wait,
    /// Posting a panel's broadcasts; for the owner of a k-block, packing it (chunk by chunk,
    /// moving the other broadcasts along between chunks).
    Post,
    /// A panel's broadcasts in flight on this rank, from their post to their completion here.
    Broadcast,
    /// Joining a B panel of several k-blocks into one matrix.
    Join,
    /// The all-to-all moving a transposed or misaligned operand into SUMMA's layout.
    Redistribute,
    /// Making host arrays ready for the accelerators' DMA (a first page-locking, or the
    /// runtime's check of a registration it holds).
    Prepare,
    /// Allocating buffers: panel buffers, shared windows, local C on a device.
    Allocate,
    /// Local C moved to a device before the products, or back after them.
    Upload,
    Download,
}

impl Activity {
    pub fn name(self) -> &'static str {
        match self {
            Activity::Product => "product",
            Activity::Wait => "wait",
            Activity::Post => "post",
            Activity::Broadcast => "broadcast",
            Activity::Join => "join",
            Activity::Redistribute => "redistribute",
            Activity::Prepare => "prepare",
            Activity::Allocate => "allocate",
            Activity::Upload => "upload C",
            Activity::Download => "download C",
        }
    }

    /// The trace row: 0 the thread driving MPI, 1 the device work (products and C's moves),
    /// 2 + slot the broadcasts in flight in each panel buffer (they overlap each other).
    fn row(self, slot: usize) -> usize {
        match self {
            Activity::Product | Activity::Upload | Activity::Download => 1,
            Activity::Broadcast => 2 + slot,
            _ => 0,
        }
    }
}

/// One interval of a rank's timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub activity: Activity,
    /// Seconds from the start of the call.
    pub start: f64,
    pub end: f64,
    /// The panel it belongs to (in k order), when it belongs to one.
    pub panel: Option<usize>,
    /// The panel buffer (ring slot) it used, for broadcasts.
    pub slot: usize,
    /// Bytes it moved or packed, where that means something.
    pub bytes: u64,
}

impl Event {
    pub fn seconds(&self) -> f64 {
        (self.end - self.start).max(0.0)
    }
}

/// Counts of what a call did beside its products. Registrations and allocations are what
/// repeated calls with a kept [`crate::Workspace`] should not repeat: after the first call
/// they stay at zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Counters {
    /// Host buffers of this crate page-locked for the first time (panel buffers when they
    /// grow, shared windows when new), and their bytes.
    pub registrations: usize,
    pub registered_bytes: u64,
    /// The caller's local arrays handed to [`hetblas::Runtime::prepare_host`] (a page-locking
    /// the first time, afterwards the runtime's check of the registration it keeps).
    pub registration_checks: usize,
    /// Buffers allocated (host panel buffers, shared windows, local C on a device,
    /// redistributed operands), and their bytes.
    pub allocations: usize,
    pub allocated_bytes: u64,
    /// Bytes this rank packed as the owner of k-blocks.
    pub packed_bytes: u64,
    /// Bytes of panels this rank received (into its buffers, or readable in another rank's
    /// window segment).
    pub received_bytes: u64,
    /// Bytes of local C moved to a device before the products and back after them.
    pub c_uploaded_bytes: u64,
    pub c_downloaded_bytes: u64,
    /// Products whose operands were all this rank's own, read in place: they started
    /// without waiting for any broadcast.
    pub in_place_products: usize,
}

impl Counters {
    /// The sum of two calls' counters.
    pub fn add(&mut self, o: &Counters) {
        self.registrations += o.registrations;
        self.registered_bytes += o.registered_bytes;
        self.registration_checks += o.registration_checks;
        self.allocations += o.allocations;
        self.allocated_bytes += o.allocated_bytes;
        self.packed_bytes += o.packed_bytes;
        self.received_bytes += o.received_bytes;
        self.c_uploaded_bytes += o.c_uploaded_bytes;
        self.c_downloaded_bytes += o.c_downloaded_bytes;
        self.in_place_products += o.in_place_products;
    }
}

/// Collects events from the threads of one call.
#[derive(Debug)]
pub(crate) struct Recorder {
    origin: Instant,
    events: Mutex<Vec<Event>>,
}

impl Recorder {
    pub(crate) fn new(origin: Instant) -> Self {
        Recorder {
            origin,
            events: Mutex::new(Vec::new()),
        }
    }

    /// Records `activity` from `start` until now.
    pub(crate) fn record(
        &self,
        activity: Activity,
        start: Instant,
        panel: Option<usize>,
        slot: usize,
        bytes: u64,
    ) {
        let at = |t: Instant| t.saturating_duration_since(self.origin).as_secs_f64();
        let e = Event {
            activity,
            start: at(start),
            end: at(Instant::now()),
            panel,
            slot,
            bytes,
        };
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(e);
    }

    /// The events, in start order.
    pub(crate) fn into_events(self) -> Vec<Event> {
        let mut v = self.events.into_inner().unwrap_or_else(|p| p.into_inner());
        v.sort_by(|a, b| a.start.total_cmp(&b.start));
        v
    }
}

/// Where a rank's time went in one span of its timeline (a call, or a repetition): seconds
/// per activity (the products' share is their union: they run one after the other), and the
/// time outside the products.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Breakdown {
    pub span: f64,
    pub products: f64,
    /// Of the time outside the products: blocked on panels, posting (packing), preparing,
    /// allocating, moving C, redistributing, joining.
    pub waits: f64,
    pub posts: f64,
    pub prepare: f64,
    pub allocate: f64,
    pub c_moves: f64,
    pub other: f64,
}

impl Breakdown {
    /// The breakdown of `events` over a span of `span` seconds. Activities of the thread
    /// driving MPI that ran while a product ran are not outside the products: they count
    /// only for the part of them outside every product.
    pub fn of(events: &[Event], span: f64) -> Self {
        let products: Vec<(f64, f64)> = events
            .iter()
            .filter(|e| e.activity == Activity::Product)
            .map(|e| (e.start, e.end))
            .collect();
        let inside: f64 = products.iter().map(|(s, e)| (e - s).max(0.0)).sum();
        // The part of [s, e) covered by no product.
        let outside = |s: f64, e: f64| {
            let mut left = (e - s).max(0.0);
            for &(ps, pe) in &products {
                left -= (e.min(pe) - s.max(ps)).max(0.0);
            }
            left.max(0.0)
        };
        let mut b = Breakdown {
            span,
            products: inside,
            ..Default::default()
        };
        for e in events {
            let t = outside(e.start, e.end);
            match e.activity {
                Activity::Product | Activity::Broadcast => {}
                Activity::Wait => b.waits += t,
                Activity::Post => b.posts += t,
                Activity::Prepare => b.prepare += t,
                Activity::Allocate => b.allocate += t,
                Activity::Upload | Activity::Download => b.c_moves += t,
                Activity::Join | Activity::Redistribute => b.other += t,
            }
        }
        b
    }

    /// The products' share of the span.
    pub fn product_share(&self) -> f64 {
        if self.span > 0.0 {
            (self.products / self.span).min(1.0)
        } else {
            0.0
        }
    }

    /// One line: the span, the products' share, and each cause outside them in percent.
    pub fn line(&self) -> String {
        let pct = |x: f64| 100.0 * x / self.span.max(1e-12);
        format!(
            "{:.3} s: products {:.1}%, outside {:.1}% (waits {:.1}%, posting/packing {:.1}%, \
             preparing {:.1}%, allocating {:.1}%, moving C {:.1}%, other {:.1}%, unattributed {:.1}%)",
            self.span,
            pct(self.products),
            pct(self.span - self.products),
            pct(self.waits),
            pct(self.posts),
            pct(self.prepare),
            pct(self.allocate),
            pct(self.c_moves),
            pct(self.other),
            pct((self.span
                - self.products
                - self.waits
                - self.posts
                - self.prepare
                - self.allocate
                - self.c_moves
                - self.other)
                .max(0.0)),
        )
    }
}

/// Events as JSON (to gather them from every rank): `[[activity, start, end, panel, slot,
/// bytes], ...]`, `panel` -1 for none.
pub fn to_json(events: &[Event]) -> Value {
    Value::Array(
        events
            .iter()
            .map(|e| {
                json!([
                    e.activity.name(),
                    e.start,
                    e.end,
                    e.panel.map_or(-1, |p| p as i64),
                    e.slot,
                    e.bytes
                ])
            })
            .collect(),
    )
}

/// The inverse of [`to_json`]; `None` for anything else.
pub fn from_json(v: &Value) -> Option<Vec<Event>> {
    const ALL: [Activity; 10] = [
        Activity::Product,
        Activity::Wait,
        Activity::Post,
        Activity::Broadcast,
        Activity::Join,
        Activity::Redistribute,
        Activity::Prepare,
        Activity::Allocate,
        Activity::Upload,
        Activity::Download,
    ];
    v.as_array()?
        .iter()
        .map(|e| {
            let name = e.get(0)?.as_str()?;
            let panel = e.get(3)?.as_i64()?;
            Some(Event {
                activity: *ALL.iter().find(|a| a.name() == name)?,
                start: e.get(1)?.as_f64()?,
                end: e.get(2)?.as_f64()?,
                panel: usize::try_from(panel).ok(),
                slot: e.get(4)?.as_u64()? as usize,
                bytes: e.get(5)?.as_u64()?,
            })
        })
        .collect()
}

/// Every rank's events (rank, events, a label for its process row) as one Chrome trace:
/// a process per rank, its rows the thread driving MPI, the device work, and one per panel
/// buffer for the broadcasts in flight. Times in microseconds.
pub fn chrome_trace(ranks: &[(usize, String, Vec<Event>)]) -> Value {
    let mut out = Vec::new();
    for (rank, label, events) in ranks {
        let pid = *rank;
        out.push(json!({"ph": "M", "name": "process_name", "pid": pid,
            "args": {"name": format!("rank {rank}{label}")}}));
        out.push(json!({"ph": "M", "name": "process_sort_index", "pid": pid,
            "args": {"sort_index": rank}}));
        let mut rows: Vec<usize> = events.iter().map(|e| e.activity.row(e.slot)).collect();
        rows.extend([0, 1]);
        rows.sort_unstable();
        rows.dedup();
        for row in rows {
            let name = match row {
                0 => "MPI thread".to_string(),
                1 => "products and C".to_string(),
                r => format!("broadcasts, buffer {}", r - 2),
            };
            out.push(
                json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": row,
                "args": {"name": name}}),
            );
        }
        for e in events {
            let name = match e.panel {
                Some(p) => format!("{} {p}", e.activity.name()),
                None => e.activity.name().to_string(),
            };
            out.push(json!({
                "name": name,
                "cat": e.activity.name(),
                "ph": "X",
                "ts": e.start * 1e6,
                "dur": e.seconds() * 1e6,
                "pid": pid,
                "tid": e.activity.row(e.slot),
                "args": {"bytes": e.bytes, "panel": e.panel},
            }));
        }
    }
    json!({ "traceEvents": out, "displayTimeUnit": "ms" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(activity: Activity, start: f64, end: f64) -> Event {
        Event {
            activity,
            start,
            end,
            panel: Some(1),
            slot: 0,
            bytes: 8,
        }
    }

    #[test]
    fn work_beside_a_product_is_not_outside_it() {
        let events = [
            ev(Activity::Prepare, 0.0, 1.0),
            ev(Activity::Product, 1.0, 5.0),
            // Packing while the product runs, one second of it after the product ended.
            ev(Activity::Post, 4.0, 6.0),
            ev(Activity::Wait, 6.0, 7.0),
            ev(Activity::Product, 7.0, 9.0),
            ev(Activity::Broadcast, 0.0, 9.0),
            ev(Activity::Download, 9.0, 10.0),
        ];
        let b = Breakdown::of(&events, 10.0);
        assert_eq!(b.products, 6.0);
        assert_eq!(
            (b.prepare, b.posts, b.waits, b.c_moves),
            (1.0, 1.0, 1.0, 1.0)
        );
        assert!((b.product_share() - 0.6).abs() < 1e-12);
        assert!(b.line().contains("products 60.0%"), "{}", b.line());
        assert!(b.line().contains("unattributed 0.0%"), "{}", b.line());
    }

    #[test]
    fn events_survive_json_and_land_on_their_rows() {
        let events = vec![
            ev(Activity::Product, 0.5, 1.0),
            Event {
                panel: None,
                slot: 3,
                ..ev(Activity::Broadcast, 0.0, 0.75)
            },
        ];
        let back = from_json(&to_json(&events)).expect("parses");
        assert_eq!(back, events);
        let trace = chrome_trace(&[(2, String::new(), back)]);
        let items = trace["traceEvents"].as_array().unwrap();
        let x: Vec<&Value> = items.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(x.len(), 2);
        assert_eq!(x[0]["pid"], 2);
        assert_eq!(x[0]["tid"], 1);
        assert_eq!(x[0]["name"], "product 1");
        assert_eq!(x[0]["ts"], 0.5e6);
        assert_eq!(x[1]["tid"], 5);
        assert!(items
            .iter()
            .any(|e| e["name"] == "thread_name" && e["args"]["name"] == "broadcasts, buffer 3"));
        assert!(from_json(&json!([["nothing", 0.0, 1.0, -1, 0, 0]])).is_none());
    }
}
