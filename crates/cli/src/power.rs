//! Power for the CLI: joules per call around `hetblas gemm`, and each device's busy and idle
//! power for `hetblas calibrate`.

use crate::report::{say, Out};
use hetblas::{GemmOptions, MatRef, Result, Runtime, Trans};
use hetblas_core::energy::meter::{mean_power, DeviceEnergy, PowerMeter};
use hetblas_core::energy::{cpu_estimate, DevicePower};
use hetblas_core::DeviceKind;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The node's meters (the CPU device's label for RAPL); why others are absent goes to
/// `notes` when given (a line each, or the JSON field `energy_notes`).
pub fn meters(rt: &Runtime, notes: Option<&Out>) -> Vec<Arc<dyn PowerMeter>> {
    let cpu = rt
        .devices()
        .iter()
        .find(|d| d.info().kind == DeviceKind::Cpu)
        .map_or("cpu:0".to_string(), |d| d.info().label());
    let (m, absent) = hetblas::energy::power_meters(&cpu, rt.settings().cuda_devices.as_deref());
    if let Some(out) = notes {
        for why in absent {
            say!(out, "energy: {why}");
            out.push("energy_notes", why.to_string().into());
        }
    }
    m
}

/// One line per device: joules, mean watts, and how they were measured.
pub fn print_energy(out: &Out, energy: &[DeviceEnergy], flops: f64) {
    if energy.is_empty() {
        return;
    }
    let total: f64 = energy.iter().map(|e| e.joules).sum();
    let parts: Vec<String> = energy
        .iter()
        .map(|e| {
            format!(
                "{} {:.2} J ({:.0} W, {})",
                e.label, e.joules, e.mean_w, e.method
            )
        })
        .collect();
    out.set("energy_j", total);
    say!(
        out,
        "energy per call: {total:.2} J = {}; {:.2} GFLOP/J",
        parts.join(", "),
        flops / total.max(f64::MIN_POSITIVE) / 1e9
    );
}

/// Every meter's energy counter now: (device, joules).
pub fn counters(meters: &[Arc<dyn PowerMeter>]) -> Vec<(String, f64)> {
    meters
        .iter()
        .flat_map(|m| {
            m.devices()
                .into_iter()
                .filter_map(|d| m.energy_j(&d).map(|j| (d, j)))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Joules per call from the counters' difference over `calls` back-to-back calls, when those
/// lasted long enough for the counters' resolution
/// ([`hetblas_core::energy::meter::COUNTER_MIN_S`]).
pub fn print_batch_energy(
    out: &Out,
    meters: &[Arc<dyn PowerMeter>],
    before: &[(String, f64)],
    secs: f64,
    calls: u64,
    flops: f64,
) {
    if before.is_empty() || secs < hetblas_core::energy::meter::COUNTER_MIN_S {
        return;
    }
    let after = counters(meters);
    let per: Vec<(String, f64)> = before
        .iter()
        .filter_map(|(d, b)| {
            let a = after.iter().find(|x| x.0 == *d)?.1;
            Some((d.clone(), (a - b) / calls.max(1) as f64))
        })
        .collect();
    let total: f64 = per.iter().map(|p| p.1).sum();
    if total <= 0.0 {
        return;
    }
    let parts: Vec<String> = per.iter().map(|(d, j)| format!("{d} {j:.2} J")).collect();
    say!(
        out,
        "energy per call over {calls} calls ({secs:.2} s, energy counter): {total:.2} J = {}; \
         {:.2} GFLOP/J",
        parts.join(", "),
        flops / total / 1e9
    );
}

/// Busy and idle power of every device: measured where a meter covers it (idle: [`IDLE`] with
/// nothing running; busy: DGEMM 8192^3 on device-resident operands, repeated for [`BUSY`] on
/// that device alone), the documented estimate for a CPU without RAPL.
pub fn calibrate_power(rt: &Runtime, report: &Out) -> Result<Vec<DevicePower>> {
    let meters = meters(rt, Some(report));
    let mut out = Vec::new();
    for (i, d) in rt.devices().iter().enumerate() {
        let label = d.info().label();
        let Some(meter) = meters.iter().find(|m| m.devices().contains(&label)) else {
            if d.info().kind == DeviceKind::Cpu {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                out.push(cpu_estimate(&label, cores));
            }
            continue;
        };
        let Some(idle) = mean_power(meter.as_ref(), &label, IDLE) else {
            continue;
        };
        let n = if d.info().kind == DeviceKind::Cpu {
            2048
        } else {
            8192
        };
        let host: Vec<f64> = (0..n * n)
            .map(|x| ((x * 7919) % 1000) as f64 / 1000.0 - 0.5)
            .collect();
        let packed = MatRef::packed(&host, n, n)?;
        let busy = if d.space().is_host() {
            let mut c = host.clone();
            sample_while(meter, &label, || {
                let c = hetblas::MatMut::packed(&mut c, n, n)?;
                rt.gemm_with(
                    Trans::N,
                    Trans::N,
                    1.0,
                    packed,
                    packed,
                    0.0,
                    c,
                    &GemmOptions::default().devices([i]),
                )
                .map(|_| ())
            })?
        } else {
            let a = rt.upload(i, packed)?;
            let mut c = rt.upload(i, packed)?;
            sample_while(meter, &label, || {
                rt.gemm_with(
                    Trans::N,
                    Trans::N,
                    1.0,
                    &a,
                    &a,
                    0.0,
                    &mut c,
                    &GemmOptions::default().devices([i]),
                )
                .map(|_| ())
            })?
        };
        if let Some(busy) = busy {
            out.push(DevicePower {
                label,
                busy_w: busy,
                idle_w: idle,
                source: meter.name().to_string(),
            });
        }
    }
    Ok(out)
}

/// Seconds of the idle power's samples.
const IDLE: Duration = Duration::from_millis(500);
/// Seconds of the busy power's calls (after one warm-up call): a GPU's power settles at its
/// limit within a few hundred milliseconds of DGEMM; two seconds each, with the idle second,
/// were 4 s of a 30 s calibration budget per device.
const BUSY: Duration = Duration::from_secs(1);

/// Mean power of `label` while `call` repeats for [`BUSY`] (after one warm-up call): the
/// energy counter's difference over the time where it has one, else sampled power.
fn sample_while(
    meter: &Arc<dyn PowerMeter>,
    label: &str,
    mut call: impl FnMut() -> Result<()>,
) -> Result<Option<f64>> {
    call()?;
    let (r, energy, _) = hetblas_core::energy::meter::measure(std::slice::from_ref(meter), || {
        let start = Instant::now();
        while start.elapsed() < BUSY {
            call()?;
        }
        Ok::<(), hetblas::Error>(())
    });
    r?;
    Ok(energy.iter().find(|e| e.label == label).map(|e| e.mean_w))
}
