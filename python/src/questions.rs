//! What a caller can ask the Runtime: its devices and backends, the profile in use, a
//! prediction for a product, a calibration (with progress), failed devices.

use crate::device_array::parse_dtype;
use crate::errors::{to_py, value};
use hetblas::{CalibrationOptions, MachineProfile, Progress, Trans};
use hetblas_core::problem::GemmProblem;
use hetblas_core::{DeviceKind, MemorySpace};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::sync::Arc;

fn kind_name(k: DeviceKind) -> &'static str {
    match k {
        DeviceKind::Cpu => "cpu",
        DeviceKind::Gpu => "gpu",
        DeviceKind::Emulated => "emulated",
    }
}

/// The devices, in the order of the indices every call takes, as dicts.
#[pyfunction]
pub fn devices<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
    let rt = crate::runtime::get(py)?;
    let list = PyList::empty(py);
    for (i, d) in rt.devices().iter().enumerate() {
        let info = d.info();
        let e = PyDict::new(py);
        e.set_item("index", i)?;
        e.set_item("label", info.label())?;
        e.set_item("backend", &info.backend)?;
        e.set_item("vendor", &info.vendor)?;
        e.set_item("name", &info.name)?;
        e.set_item("kind", kind_name(info.kind))?;
        e.set_item("memory_bytes", info.memory_bytes)?;
        e.set_item("detail", &info.detail)?;
        list.append(e)?;
    }
    Ok(list)
}

/// Each backend's contribution or the reason it has none, as dicts.
#[pyfunction]
pub fn backends<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
    let rt = crate::runtime::get(py)?;
    let list = PyList::empty(py);
    for s in rt.backends() {
        let e = PyDict::new(py);
        e.set_item("backend", &s.backend)?;
        e.set_item("devices", s.devices)?;
        e.set_item("reason", &s.reason)?;
        list.append(e)?;
    }
    Ok(list)
}

/// Whether a calibrated profile is in use, and from where (or why not).
#[pyfunction]
pub fn profile_status(py: Python<'_>) -> PyResult<String> {
    Ok(crate::runtime::get(py)?.profile_status())
}

/// Where the Runtime looks for the calibrated profile (and `calibrate` saves it).
#[pyfunction]
pub fn profile_path() -> PyResult<String> {
    default_profile().map(|p| p.display().to_string())
}

/// The profile's location from the settings (`HETBLAS_PROFILE`, else the user cache).
fn default_profile() -> PyResult<std::path::PathBuf> {
    hetblas::Settings::read_env()
        .0
        .profile
        .ok_or_else(|| to_py(hetblas_core::profile::ProfileError::NoLocation.into()))
}

/// The calibrated model's prediction for `C (m x n) = A (m x k) B (k x n)` with each operand
/// on the host (`None`) or a device (its index): `{"devices": [...], "seconds": s}`, or
/// `None` without a profile.
#[pyfunction]
#[pyo3(signature = (m, n, k, dtype, locations, beta_zero=true))]
pub fn predict<'py>(
    py: Python<'py>,
    m: usize,
    n: usize,
    k: usize,
    dtype: &str,
    locations: [Option<usize>; 3],
    beta_zero: bool,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let rt = crate::runtime::get(py)?;
    let dtype = parse_dtype(dtype)?;
    let mut spaces = [MemorySpace::HOST; 3];
    for (s, l) in spaces.iter_mut().zip(locations) {
        if let Some(i) = l {
            *s = rt
                .devices()
                .get(i)
                .ok_or_else(|| value(format!("device {i}: not a device index")))?
                .space();
        }
    }
    let problem = GemmProblem {
        transa: Trans::N,
        transb: Trans::N,
        m,
        n,
        k,
        dtype,
        beta_zero,
        locations: spaces,
        sym: None,
    };
    let p = py.detach(|| rt.predict_gemm(&problem));
    let Some(p) = p else { return Ok(None) };
    let d = PyDict::new(py);
    let labels: Vec<String> = p
        .devices
        .iter()
        .map(|&i| rt.devices()[i].info().label())
        .collect();
    d.set_item("devices", labels)?;
    d.set_item("seconds", p.seconds)?;
    Ok(Some(d))
}

/// Measures the node (links, every device's GEMM), puts the profile in use, saves it to
/// `path` (the default location when `None`; not saved when `save` is false) and returns a
/// summary. `progress(done, total, stage, eta_seconds)` is called after every point, with the
/// GIL taken for it; an exception it raises is raised once calibration has finished.
#[pyfunction]
#[pyo3(signature = (quick=false, progress=None, path=None, save=true))]
pub fn calibrate<'py>(
    py: Python<'py>,
    quick: bool,
    progress: Option<Py<PyAny>>,
    path: Option<String>,
    save: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let rt = crate::runtime::get(py)?;
    let opts = if quick {
        CalibrationOptions::quick()
    } else {
        CalibrationOptions::default()
    };
    let path = match path {
        Some(p) => std::path::PathBuf::from(p),
        None => default_profile()?,
    };
    let started = std::time::Instant::now();
    let mut failed: Option<PyErr> = None;
    let profile: hetblas::Result<MachineProfile> = py.detach(|| {
        let mut report = |p: Progress| {
            let Some(cb) = &progress else { return };
            Python::attach(|py| {
                let eta = p.eta.map(|d| d.as_secs_f64());
                if let Err(e) = cb.call1(py, (p.done, p.total, p.stage.as_str(), eta)) {
                    failed.get_or_insert(e);
                }
            });
        };
        rt.calibrate(&opts, &mut report)
    });
    let profile = profile.map_err(to_py)?;
    if let Some(e) = failed {
        return Err(e);
    }
    let seconds = started.elapsed().as_secs_f64();
    if save {
        profile.save(&path).map_err(|e| to_py(e.into()))?;
    }
    let d = PyDict::new(py);
    d.set_item("seconds", seconds)?;
    d.set_item("path", save.then(|| path.display().to_string()))?;
    d.set_item("created", &profile.created)?;
    let links = PyList::empty(py);
    for l in &profile.links {
        let e = PyDict::new(py);
        e.set_item("name", &l.name)?;
        e.set_item("latency_s", l.latency_s)?;
        e.set_item("bytes_per_sec", l.bytes_per_sec)?;
        e.set_item("bid_slowdown", l.bid_slowdown)?;
        links.append(e)?;
    }
    d.set_item("links", links)?;
    let gemm = PyList::empty(py);
    for dev in &profile.devices {
        for g in &dev.gemm {
            let best = g
                .times
                .iter()
                .map(|&(t, s)| 2.0 * (t as f64).powi(3) / s)
                .fold(0.0, f64::max);
            let e = PyDict::new(py);
            e.set_item("device", &dev.label)?;
            e.set_item("dtype", g.dtype.to_string())?;
            e.set_item("tiles", g.times.len())?;
            e.set_item("best_flops", best)?;
            gemm.append(e)?;
        }
    }
    d.set_item("gemm", gemm)?;
    rt.set_profile(Some(Arc::new(profile)));
    Ok(d)
}

/// Devices that failed during a call and are left out until `reprobe`.
#[pyfunction]
pub fn failed_devices(py: Python<'_>) -> PyResult<Vec<usize>> {
    Ok(crate::runtime::get(py)?.failed_devices())
}

/// Probes the failed devices again; returns those still failed.
#[pyfunction]
pub fn reprobe(py: Python<'_>) -> PyResult<Vec<usize>> {
    let rt = crate::runtime::get(py)?;
    Ok(py.detach(|| rt.reprobe()))
}
