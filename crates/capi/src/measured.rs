//! Routes learned from measured calls: a shape that ran on the devices and on the host BLAS
//! goes where it ran faster, so that after a shape's first call the drop-in is not slower than
//! the BLAS it replaces.
//!
//! The model ([`crate::route::decide`]) chooses a shape's first call. From then on what was
//! measured decides ([`choose`]):
//! - both routes measured: the faster one (the route that lost is not kept; each call updates
//!   its route's time, so a route that becomes slower loses its place);
//! - only the devices measured (the model sent the first call there): they keep the shape
//!   when they took at most [`CLEAR_WIN`] of the host's estimate; otherwise the next call runs
//!   on the host and is measured, and the faster wins from then on. A host call is never
//!   slower than the BLAS it replaces, so measuring the host is always safe; but where only
//!   their first call was measured and the model predicts them at most [`CLEAR_WIN`] of the
//!   host's estimate, the devices first get one more call (a first call's one-time costs are
//!   not all reported apart, below): NumPy's `a @ b` at 4096 on H200 once counted 0.2 s on
//!   its first device call, against 0.22 s estimated for the host, and measured the host at
//!   0.24 s where the devices took 9 ms from the second call on;
//! - only the host measured (the model kept the first call there): the devices are tried once
//!   when the model predicts them at most [`CLEAR_WIN`] of the measured host time;
//! - the devices lost, measured on their first call only: a first call's one-time costs are
//!   not all reported apart (the first touch of a fresh output, a driver's lazy start), so when
//!   the model predicts them at most [`CLEAR_WIN`] of the measured host time they are tried once
//!   more, and that second measurement stands.
//!
//! A shape's first call on the devices pays one-time costs (the Runtime's start, page-locking
//! its host operands, workspaces, planning): they are taken out of its time before it is
//! compared ([`Routes::record_devices`]), so one slow first call does not lock the shape onto
//! the host. The host's estimate for shapes not yet measured on it is the model's, scaled by
//! what the host BLAS measured as the program runs it ([`host_scale`]: a program whose BLAS runs
//! on fewer threads, or another library, than the calibration measured).

use hetblas_core::DType;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The devices' time, as a share of the host's, below which they keep a shape without the host
/// being measured (a margin for the host estimate's error).
pub const CLEAR_WIN: f64 = 0.5;

/// Shapes remembered; a program with more starts over (the next call of each shape is a first
/// call again).
pub const MAX_SHAPES: usize = 4096;

/// A call's shape as the routing remembers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    /// The routine ("dgemm", "zherk").
    pub routine: &'static str,
    pub dtype: DType,
    pub ta: u8,
    pub tb: u8,
    pub m: i64,
    pub n: i64,
    pub k: i64,
}

/// What was measured of one shape: seconds of its last call on each route.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Record {
    /// On the devices (a first call's with its one-time costs taken out).
    pub devices: Option<f64>,
    /// On the host BLAS.
    pub host: Option<f64>,
    /// Calls measured on the devices.
    pub device_calls: u32,
}

/// Where a call goes, and on what grounds (for the verbose log).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Choice {
    /// The shape's first call: the model's (or the rule's) verdict.
    Verdict(bool),
    /// Both routes measured: the faster.
    Faster { devices: f64, host: f64 },
    /// Only the devices measured, clearly below the host's estimate.
    DevicesWin { devices: f64, host_estimate: f64 },
    /// Only the devices measured, not clearly faster: this call measures the host.
    MeasureHost { devices: f64, host_estimate: f64 },
    /// Only the devices' first call measured, not clearly faster than the host's estimate,
    /// but predicted clearly faster: they get one more call before the host is measured.
    ConfirmDevices {
        first: f64,
        predicted: f64,
        host_estimate: f64,
    },
    /// Only the host measured, the devices predicted clearly faster: tried once.
    TryDevices { predicted: f64, host: f64 },
    /// The devices lost on their first call only, and are predicted clearly faster: tried
    /// once more.
    RetryDevices {
        first: f64,
        predicted: f64,
        host: f64,
    },
    /// Only the host measured, the devices not predicted clearly faster.
    StayHost { host: f64 },
}

impl Choice {
    /// Whether the call goes to the devices.
    pub fn offload(&self) -> bool {
        match *self {
            Choice::Verdict(offload) => offload,
            Choice::Faster { devices, host } => devices < host,
            Choice::DevicesWin { .. }
            | Choice::TryDevices { .. }
            | Choice::RetryDevices { .. }
            | Choice::ConfirmDevices { .. } => true,
            Choice::MeasureHost { .. } | Choice::StayHost { .. } => false,
        }
    }

    /// Whether the choice rests on measured calls rather than the model alone.
    pub fn measured(&self) -> bool {
        !matches!(self, Choice::Verdict(_))
    }
}

impl std::fmt::Display for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |s: f64| s * 1e3;
        match *self {
            Choice::Verdict(_) => f.write_str("first call of the shape"),
            Choice::Faster { devices, host } => write!(
                f,
                "measured: devices {:.3} ms, host BLAS {:.3} ms",
                ms(devices),
                ms(host)
            ),
            Choice::DevicesWin {
                devices,
                host_estimate,
            } => write!(
                f,
                "measured devices {:.3} ms, host BLAS estimated {:.3} ms",
                ms(devices),
                ms(host_estimate)
            ),
            Choice::MeasureHost {
                devices,
                host_estimate,
            } => write!(
                f,
                "measuring the host BLAS: devices measured {:.3} ms, host estimated {:.3} ms",
                ms(devices),
                ms(host_estimate)
            ),
            Choice::TryDevices { predicted, host } => write!(
                f,
                "trying the devices: predicted {:.3} ms, host BLAS measured {:.3} ms",
                ms(predicted),
                ms(host)
            ),
            Choice::RetryDevices {
                first,
                predicted,
                host,
            } => write!(
                f,
                "trying the devices again: their first call {:.3} ms, predicted {:.3} ms, host \
                 BLAS measured {:.3} ms",
                ms(first),
                ms(predicted),
                ms(host)
            ),
            Choice::ConfirmDevices {
                first,
                predicted,
                host_estimate,
            } => write!(
                f,
                "confirming the devices: their first call {:.3} ms, predicted {:.3} ms, host \
                 BLAS estimated {:.3} ms",
                ms(first),
                ms(predicted),
                ms(host_estimate)
            ),
            Choice::StayHost { host } => write!(
                f,
                "host BLAS measured {:.3} ms, the devices not predicted clearly faster",
                ms(host)
            ),
        }
    }
}

/// The choice for a call of a shape with record `rec` (none yet: its first call), given the
/// model's verdict, the devices' predicted seconds (when a profile predicts them) and the host
/// BLAS's estimated seconds.
pub fn choose(
    rec: Option<Record>,
    verdict: bool,
    predicted_devices: Option<f64>,
    host_estimate: f64,
) -> Choice {
    let rec = rec.unwrap_or_default();
    // The model's prediction for the devices, where it is a clear win over the host's `secs`.
    let clear_win = |secs: f64| predicted_devices.filter(|&p| p <= CLEAR_WIN * secs);
    match (rec.devices, rec.host) {
        (None, None) => Choice::Verdict(verdict),
        (Some(first), Some(host)) if first >= host && rec.device_calls == 1 => {
            match clear_win(host) {
                Some(predicted) => Choice::RetryDevices {
                    first,
                    predicted,
                    host,
                },
                None => Choice::Faster {
                    devices: first,
                    host,
                },
            }
        }
        (Some(devices), Some(host)) => Choice::Faster { devices, host },
        (Some(devices), None) if devices <= CLEAR_WIN * host_estimate => Choice::DevicesWin {
            devices,
            host_estimate,
        },
        (Some(first), None) if rec.device_calls == 1 => match clear_win(host_estimate) {
            Some(predicted) => Choice::ConfirmDevices {
                first,
                predicted,
                host_estimate,
            },
            None => Choice::MeasureHost {
                devices: first,
                host_estimate,
            },
        },
        (Some(devices), None) => Choice::MeasureHost {
            devices,
            host_estimate,
        },
        (None, Some(host)) => match clear_win(host) {
            Some(predicted) => Choice::TryDevices { predicted, host },
            None => Choice::StayHost { host },
        },
    }
}

/// Whether `rec` decides the route by itself: both routes measured, and not the case where
/// [`choose`] asks the model whether a first slow call on the devices deserves a second try.
pub fn settled(rec: &Record) -> bool {
    match (rec.devices, rec.host) {
        (Some(first), Some(host)) => !(first >= host && rec.device_calls == 1),
        _ => false,
    }
}

/// `key`'s entry of a per-shape table, made when missing; a table of [`MAX_SHAPES`] shapes
/// starts over first (the next call of each shape is a first call again).
pub(crate) fn make_room<'a, V: Default>(t: &'a mut HashMap<Key, V>, key: &Key) -> &'a mut V {
    if t.len() >= MAX_SHAPES && !t.contains_key(key) {
        t.clear();
    }
    t.entry(*key).or_default()
}

/// The measured shapes of this process.
#[derive(Debug, Default)]
pub struct Routes {
    table: Mutex<HashMap<Key, Record>>,
}

impl Routes {
    /// What was measured of `key`.
    pub fn get(&self, key: &Key) -> Option<Record> {
        self.lock().get(key).copied()
    }

    /// A call of `key` on the devices took `seconds`, of which `one_time` were one-time costs
    /// (taken out when it is the shape's first call there: later calls are what the shape
    /// costs). Returns the seconds recorded.
    pub fn record_devices(&self, key: Key, seconds: f64, one_time: f64) -> f64 {
        let mut t = self.lock();
        let first = t.get(&key).is_none_or(|r| r.devices.is_none());
        let recorded = if first {
            // Never below a tenth of the call: a call is never all one-time costs.
            (seconds - one_time).max(0.1 * seconds)
        } else {
            seconds
        };
        let r = make_room(&mut t, &key);
        r.devices = Some(recorded);
        r.device_calls = r.device_calls.saturating_add(1);
        recorded
    }

    /// A call of `key` on the host BLAS took `seconds`.
    pub fn record_host(&self, key: Key, seconds: f64) {
        make_room(&mut self.lock(), &key).host = Some(seconds);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Record>> {
        // A poisoned lock means a panic while inserting a plain value: the table is whole.
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The process's measured shapes.
pub fn routes() -> &'static Routes {
    static R: OnceLock<Routes> = OnceLock::new();
    R.get_or_init(Routes::default)
}

/// Per dtype: the log of the ratio of the host BLAS's measured times to the model's estimates,
/// averaged (exponentially, weight [`SCALE_WEIGHT`] for each new call), as f64 bits.
static HOST_LOG_SCALE: [AtomicU64; 4] = [
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
];

/// The weight of each new host call in [`host_scale`].
pub const SCALE_WEIGHT: f64 = 0.25;

/// [`host_scale`] stays within `[1 / MAX_SCALE, MAX_SCALE]`: the model's rates are measured on
/// this machine, so a larger difference is a measurement's fluke, not the host.
pub const MAX_SCALE: f64 = 4.0;

fn dtype_index(d: DType) -> usize {
    match d {
        DType::F32 => 0,
        DType::F64 => 1,
        DType::C32 => 2,
        DType::C64 => 3,
    }
}

/// By how much the host BLAS, as this program runs it, is slower (> 1) or faster (< 1) than
/// the model's estimate, for `dtype` (1 until a host call of that type was measured).
pub fn host_scale(dtype: DType) -> f64 {
    f64::from_bits(HOST_LOG_SCALE[dtype_index(dtype)].load(Ordering::Relaxed)).exp()
}

/// Updates [`host_scale`] with a host call that took `measured` seconds where the model
/// estimated `estimate`.
pub fn note_host_ratio(dtype: DType, measured: f64, estimate: f64) {
    if !(measured > 0.0 && estimate > 0.0) {
        return;
    }
    let cell = &HOST_LOG_SCALE[dtype_index(dtype)];
    let bound = MAX_SCALE.ln();
    // Concurrent updates may lose one another's step; each is a small correction.
    let old = f64::from_bits(cell.load(Ordering::Relaxed));
    let new = ((1.0 - SCALE_WEIGHT) * old + SCALE_WEIGHT * (measured / estimate).ln())
        .clamp(-bound, bound);
    cell.store(new.to_bits(), Ordering::Relaxed);
}

/// A call the device path left to the host BLAS: its time is recorded for the shape
/// ([`Routes::record_host`]) and the host scale.
#[derive(Debug)]
pub struct Pending {
    pub key: Key,
    /// The model's estimate of its host time (unscaled), when there is a model.
    pub estimate: Option<f64>,
}

impl Pending {
    /// Runs `host`, the call the routing left to the host, and records its time for
    /// `pending` when there is one.
    pub fn timed<R>(pending: Option<Pending>, host: impl FnOnce() -> R) -> R {
        let Some(pending) = pending else {
            return host();
        };
        let started = std::time::Instant::now();
        let r = host();
        pending.record(started.elapsed().as_secs_f64());
        r
    }

    /// The host call took `seconds`.
    pub fn record(self, seconds: f64) {
        routes().record_host(self.key, seconds);
        if let Some(e) = self.estimate {
            note_host_ratio(self.key.dtype, seconds, e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: i64) -> Key {
        Key {
            routine: "dgemm",
            dtype: DType::F64,
            ta: b'N',
            tb: b'N',
            m: n,
            n,
            k: n,
        }
    }

    #[test]
    fn the_first_call_follows_the_model() {
        assert_eq!(choose(None, true, Some(0.1), 1.0), Choice::Verdict(true));
        assert!(!choose(None, false, None, 1.0).offload());
    }

    /// A record settles the route (the model is not asked) only where `choose` would not ask
    /// it either: both routes measured, except a single slow first call on the devices.
    #[test]
    fn settled_records_are_exactly_those_choose_decides_without_the_model() {
        let rec = |devices, host, device_calls| Record {
            devices,
            host,
            device_calls,
        };
        let cases = [
            rec(None, None, 0),
            rec(Some(0.2), None, 1),
            rec(None, Some(0.2), 0),
            rec(Some(0.3), Some(0.2), 1),
            rec(Some(0.3), Some(0.2), 2),
            rec(Some(0.1), Some(0.2), 1),
        ];
        for r in cases {
            // The model's inputs cannot change a settled record's choice.
            let a = choose(Some(r), true, Some(1e-6), 1e6);
            let b = choose(Some(r), false, None, 1e-6);
            assert_eq!(settled(&r), a == b, "{r:?}: {a:?} / {b:?}");
        }
        assert!(settled(&rec(Some(0.3), Some(0.2), 2)));
        assert!(!settled(&rec(Some(0.3), Some(0.2), 1)));
    }

    /// Issue 53's 8192 case: the first call on the devices took 1.85 s, 1.8 s of it one-time
    /// costs; the host BLAS takes 1.35 s. The shape stays on the devices, and were the devices
    /// slower than the measured host, the host would keep it.
    #[test]
    fn one_slow_first_call_does_not_lock_the_shape_on_the_host() {
        let routes = Routes::default();
        let k = key(8192);
        let recorded = routes.record_devices(k, 1.85, 1.80);
        assert!((recorded - 0.185).abs() < 1e-12, "{recorded}");
        let c = choose(routes.get(&k), true, Some(0.03), 1.35);
        assert!(c.offload() && c.measured(), "{c}");
        // A later call on the devices is recorded whole.
        assert_eq!(routes.record_devices(k, 0.2, 0.15), 0.2);
    }

    #[test]
    fn a_route_that_lost_is_not_kept() {
        let routes = Routes::default();
        let k = key(4096);
        // The devices' first call is not clearly below the host's estimate: the host is
        // measured next, and the faster route wins.
        routes.record_devices(k, 0.9, 0.0);
        let c = choose(routes.get(&k), true, Some(0.7), 1.0);
        assert!(
            matches!(c, Choice::MeasureHost { .. }) && !c.offload(),
            "{c}"
        );
        routes.record_host(k, 0.8);
        assert!(!choose(routes.get(&k), true, Some(0.7), 1.0).offload());
        // The host slows down (another program took the cores): the devices win again.
        routes.record_host(k, 1.2);
        assert!(choose(routes.get(&k), true, Some(0.7), 1.0).offload());
    }

    /// A first call whose one-time costs were not all reported apart loses to the host; the
    /// model predicts the devices far faster: they get one more call, whose time stands.
    #[test]
    fn devices_that_lost_only_their_first_call_are_tried_once_more() {
        let routes = Routes::default();
        let k = key(8192);
        routes.record_devices(k, 1.6, 0.1);
        routes.record_host(k, 1.35);
        let c = choose(routes.get(&k), true, Some(0.03), 1.35);
        assert!(
            matches!(c, Choice::RetryDevices { .. }) && c.offload(),
            "{c}"
        );
        // Without a clear predicted gain the host keeps it.
        assert!(!choose(routes.get(&k), true, Some(1.0), 1.35).offload());
        // The second call on the devices stands, whichever way it goes.
        routes.record_devices(k, 1.5, 0.0);
        assert!(!choose(routes.get(&k), true, Some(0.03), 1.35).offload());
        routes.record_devices(k, 0.03, 0.0);
        assert!(choose(routes.get(&k), true, Some(0.03), 1.35).offload());
    }

    /// Issue 53's 4096 case: the devices' first call counted 0.2 s (lazy starts not reported
    /// apart) against the host's 0.22 s estimate, 12 ms predicted: one more device call, not a
    /// 0.24 s host call; the second stands.
    #[test]
    fn a_first_device_call_near_the_hosts_estimate_is_confirmed_before_the_host_is_measured() {
        let routes = Routes::default();
        let k = key(4096);
        routes.record_devices(k, 0.8, 0.6);
        let c = choose(routes.get(&k), true, Some(0.012), 0.22);
        assert!(
            matches!(c, Choice::ConfirmDevices { .. }) && c.offload() && c.measured(),
            "{c}"
        );
        // Without a clear predicted gain the host is measured at once.
        assert!(matches!(
            choose(routes.get(&k), true, Some(0.2), 0.22),
            Choice::MeasureHost { .. }
        ));
        // The second call decides: fast, the devices keep the shape; slow, the host is measured.
        let fast = Routes::default();
        fast.record_devices(k, 0.8, 0.6);
        fast.record_devices(k, 0.009, 0.0);
        assert!(matches!(
            choose(fast.get(&k), true, Some(0.012), 0.22),
            Choice::DevicesWin { .. }
        ));
        routes.record_devices(k, 0.2, 0.0);
        assert!(matches!(
            choose(routes.get(&k), true, Some(0.012), 0.22),
            Choice::MeasureHost { .. }
        ));
    }

    #[test]
    fn a_host_shape_tries_the_devices_only_on_a_clear_predicted_gain() {
        let routes = Routes::default();
        let k = key(2048);
        routes.record_host(k, 0.02);
        let rec = routes.get(&k);
        assert!(!choose(rec, false, Some(0.015), 0.01).offload());
        assert!(!choose(rec, false, None, 0.01).offload());
        let c = choose(rec, false, Some(0.005), 0.01);
        assert!(matches!(c, Choice::TryDevices { .. }) && c.offload(), "{c}");
    }

    #[test]
    fn the_table_starts_over_when_full() {
        let routes = Routes::default();
        for n in 0..MAX_SHAPES as i64 {
            routes.record_host(key(n + 1), 1.0);
        }
        assert!(routes.get(&key(1)).is_some());
        routes.record_host(key(MAX_SHAPES as i64 + 1), 1.0);
        assert!(routes.get(&key(1)).is_none());
        assert!(routes.get(&key(MAX_SHAPES as i64 + 1)).is_some());
    }

    #[test]
    fn the_host_scale_follows_measurements_within_bounds() {
        // C32 is used by no other test of this process.
        assert_eq!(host_scale(DType::C32), 1.0);
        for _ in 0..100 {
            note_host_ratio(DType::C32, 2.0, 1.0);
        }
        assert!((host_scale(DType::C32) - 2.0).abs() < 1e-6);
        for _ in 0..100 {
            note_host_ratio(DType::C32, 1000.0, 1.0);
        }
        assert!((host_scale(DType::C32) - MAX_SCALE).abs() < 1e-9);
        note_host_ratio(DType::C32, f64::NAN, 1.0);
        assert!(host_scale(DType::C32).is_finite());
    }
}
