//! The CPU's energy from RAPL through Linux powercap (`/sys/class/powercap/intel-rapl:N`,
//! one per package; AMD's Zen packages appear there too). Reading it usually needs root
//! (`energy_uj` is 0400 since CVE-2020-8694): where it cannot be read, calibration uses the
//! documented estimate ([`hetblas_core::energy::cpu_estimate`]).

use hetblas_core::energy::meter::PowerMeter;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

/// The packages' energy counters, summed, as the device `label` (the CPU device, "cpu:0").
pub struct RaplMeter {
    label: String,
    /// (energy_uj file, counter range in uJ) per package.
    packages: Vec<(PathBuf, f64)>,
    /// Wrap-corrected total and the raw readings it was built from.
    state: Mutex<RaplState>,
}

struct RaplState {
    raw: Vec<f64>,
    total_j: f64,
    last_power: Option<(Instant, f64)>,
}

impl RaplMeter {
    /// The packages under `/sys/class/powercap` whose counters can be read, or why none.
    ///
    /// # Errors
    /// A sentence: no powercap, or its counters not readable.
    pub fn open(label: &str) -> Result<RaplMeter, String> {
        let root = std::path::Path::new("/sys/class/powercap");
        let entries =
            std::fs::read_dir(root).map_err(|e| format!("no RAPL ({}): {e}", root.display()))?;
        let mut packages = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            // Packages are `intel-rapl:N`; their sub-domains `intel-rapl:N:M` are inside them.
            if !name.starts_with("intel-rapl:") || name.matches(':').count() != 1 {
                continue;
            }
            let file = e.path().join("energy_uj");
            let range = std::fs::read_to_string(e.path().join("max_energy_range_uj"))
                .ok()
                .and_then(|s| s.trim().parse::<f64>().ok())
                .unwrap_or(f64::MAX);
            if read_uj(&file).is_some() {
                packages.push((file, range));
            }
        }
        if packages.is_empty() {
            return Err("RAPL counters not readable (root only on most systems)".into());
        }
        let raw = packages
            .iter()
            .map(|p| read_uj(&p.0).unwrap_or(0.0))
            .collect();
        Ok(RaplMeter {
            label: label.to_string(),
            packages,
            state: Mutex::new(RaplState {
                raw,
                total_j: 0.0,
                last_power: None,
            }),
        })
    }

    /// The total since opening, in joules, with counter wrap-arounds corrected.
    fn total(&self) -> Option<f64> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        for (i, (file, range)) in self.packages.iter().enumerate() {
            let now = read_uj(file)?;
            let mut d = now - s.raw[i];
            if d < 0.0 {
                d += range;
            }
            s.raw[i] = now;
            s.total_j += d / 1e6;
        }
        Some(s.total_j)
    }
}

fn read_uj(file: &std::path::Path) -> Option<f64> {
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

impl PowerMeter for RaplMeter {
    fn name(&self) -> &str {
        "rapl"
    }
    fn devices(&self) -> Vec<String> {
        vec![self.label.clone()]
    }
    /// The mean power since the previous call (RAPL has no instantaneous reading).
    fn power_w(&self, label: &str) -> Option<f64> {
        if label != self.label {
            return None;
        }
        let total = self.total()?;
        let now = Instant::now();
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let prev = s.last_power.replace((now, total));
        let (t0, e0) = prev?;
        let dt = now.duration_since(t0).as_secs_f64();
        (dt > 1e-3).then(|| (total - e0) / dt)
    }
    fn energy_j(&self, label: &str) -> Option<f64> {
        (label == self.label).then(|| self.total()).flatten()
    }
}
