//! Measured joules per call: from a device's total-energy counter for calls of at least
//! [`COUNTER_MIN_S`], else the mean of power samples taken every [`SAMPLE_PERIOD`] times the
//! call's duration.

use crate::error::lock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A call shorter than this is not charged from the energy counter: it ticks every 20-100 ms
/// (NVML's on H100/H200), more than 10% of a call under 1 s.
pub const COUNTER_MIN_S: f64 = 1.0;
/// How often power is sampled during a call.
pub const SAMPLE_PERIOD: Duration = Duration::from_millis(5);

/// Reads power and energy of the devices a vendor library knows.
pub trait PowerMeter: Send + Sync {
    /// What it reads ("nvml", "amd-smi", "rapl").
    fn name(&self) -> &str;
    /// The device labels it measures ("cuda:0").
    fn devices(&self) -> Vec<String>;
    /// Watts the device draws now.
    fn power_w(&self, label: &str) -> Option<f64>;
    /// The device's total-energy counter in joules (monotonic), when it has one.
    fn energy_j(&self, label: &str) -> Option<f64>;
}

/// How a device's joules were obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum EnergyMethod {
    /// The difference of the total-energy counter.
    Counter,
    /// Mean sampled power times the call's duration.
    PowerTimesTime,
}

impl std::fmt::Display for EnergyMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EnergyMethod::Counter => "energy counter",
            EnergyMethod::PowerTimesTime => "power x time",
        })
    }
}

/// One device's energy over one call.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DeviceEnergy {
    pub label: String,
    pub joules: f64,
    /// Mean watts over the call.
    pub mean_w: f64,
    pub method: EnergyMethod,
    /// Power samples taken.
    pub samples: usize,
}

/// Runs `f` and measures every device of `meters` while it runs.
pub fn measure<R>(
    meters: &[Arc<dyn PowerMeter>],
    f: impl FnOnce() -> R,
) -> (R, Vec<DeviceEnergy>, f64) {
    let devices: Vec<(Arc<dyn PowerMeter>, String)> = meters
        .iter()
        .flat_map(|m| m.devices().into_iter().map(move |d| (m.clone(), d)))
        .collect();
    let before: Vec<Option<f64>> = devices.iter().map(|(m, d)| m.energy_j(d)).collect();
    let samples: Arc<Mutex<Vec<Vec<f64>>>> = Arc::new(Mutex::new(vec![Vec::new(); devices.len()]));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = if devices.is_empty() {
        None
    } else {
        let (devices, samples, stop) = (devices.clone(), samples.clone(), stop.clone());
        std::thread::Builder::new()
            .name("hetblas-power".into())
            .spawn(move || loop {
                for (i, (m, d)) in devices.iter().enumerate() {
                    if let Some(w) = m.power_w(d) {
                        lock(&samples)[i].push(w);
                    }
                }
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                // Parked, not asleep: the end of the call wakes it at once, so the caller
                // does not wait out a period after its call.
                std::thread::park_timeout(SAMPLE_PERIOD);
            })
            .ok()
    };
    let start = Instant::now();
    let r = f();
    let seconds = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::SeqCst);
    if let Some(h) = sampler {
        h.thread().unpark();
        // A sampler that panicked only loses its samples.
        let _ = h.join();
    }
    let after: Vec<Option<f64>> = devices.iter().map(|(m, d)| m.energy_j(d)).collect();
    let samples = lock(&samples).clone();
    let out = devices
        .iter()
        .enumerate()
        .filter_map(|(i, (_, d))| {
            let s = &samples[i];
            let mean = (!s.is_empty()).then(|| s.iter().sum::<f64>() / s.len() as f64);
            let counter = match (before[i], after[i]) {
                (Some(b), Some(a)) if a > b && seconds >= COUNTER_MIN_S => Some(a - b),
                _ => None,
            };
            let (joules, method) = match (counter, mean) {
                (Some(j), _) => (j, EnergyMethod::Counter),
                (None, Some(w)) => (w * seconds, EnergyMethod::PowerTimesTime),
                (None, None) => return None,
            };
            Some(DeviceEnergy {
                label: d.clone(),
                joules,
                mean_w: joules / seconds.max(f64::MIN_POSITIVE),
                method,
                samples: s.len(),
            })
        })
        .collect();
    (r, out, seconds)
}

/// Mean power of `label` over `duration` (sampled), for calibration's idle and busy power.
pub fn mean_power(meter: &dyn PowerMeter, label: &str, duration: Duration) -> Option<f64> {
    let start = Instant::now();
    let mut s = Vec::new();
    while start.elapsed() < duration {
        if let Some(w) = meter.power_w(label) {
            s.push(w);
        }
        std::thread::sleep(SAMPLE_PERIOD);
    }
    (!s.is_empty()).then(|| s.iter().sum::<f64>() / s.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A meter that reports fixed powers and integrates them into a counter with a coarse tick,
    /// like the hardware's: for tests of the measuring logic.
    struct FixedMeter {
        pub watts: Vec<(String, f64)>,
        /// Counter resolution (s): the counter advances only at multiples of it.
        pub tick_s: f64,
        pub epoch: Instant,
    }

    impl PowerMeter for FixedMeter {
        fn name(&self) -> &str {
            "fixed"
        }
        fn devices(&self) -> Vec<String> {
            self.watts.iter().map(|w| w.0.clone()).collect()
        }
        fn power_w(&self, label: &str) -> Option<f64> {
            self.watts.iter().find(|w| w.0 == label).map(|w| w.1)
        }
        fn energy_j(&self, label: &str) -> Option<f64> {
            let t = self.epoch.elapsed().as_secs_f64();
            let ticked = (t / self.tick_s).floor() * self.tick_s;
            self.power_w(label).map(|w| w * ticked)
        }
    }

    #[test]
    fn short_calls_use_power_long_calls_the_counter() {
        let m: Arc<dyn PowerMeter> = Arc::new(FixedMeter {
            watts: vec![("gpu:0".into(), 300.0), ("gpu:1".into(), 80.0)],
            tick_s: 0.1,
            epoch: Instant::now(),
        });
        let (_, e, secs) = measure(std::slice::from_ref(&m), || {
            std::thread::sleep(Duration::from_millis(30))
        });
        assert_eq!(e.len(), 2);
        assert!(e.iter().all(|d| d.method == EnergyMethod::PowerTimesTime));
        assert!((e[0].joules - 300.0 * secs).abs() < 1e-6 * 300.0);
        assert!((e[1].mean_w - 80.0).abs() < 1e-9);
        let (_, e, secs) = measure(&[m], || std::thread::sleep(Duration::from_millis(1050)));
        assert!(e.iter().all(|d| d.method == EnergyMethod::Counter));
        // Counter resolution 0.1 s: within one tick's worth of energy.
        assert!(
            (e[0].joules - 300.0 * secs).abs() <= 300.0 * 0.1 + 1e-9,
            "{e:?}"
        );
    }
}
