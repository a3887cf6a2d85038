//! A call's report as a Python dict (the Python layer makes a `CallReport` dataclass of it):
//! the devices, times, tile, the bytes each link carried, and the Chrome trace when asked for.

use hetblas::{FactorReport, GemmReport, Runtime, TriReport};
use hetblas_core::trace::Trace;
use hetblas_core::{DeviceFault, MemorySpace};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::BTreeMap;

/// `{link name: (copies, bytes)}` of a call's transfers, the bytes that crossed a link to or
/// from host memory, and of those the bytes to it.
fn transfers(rt: &Runtime, r: &GemmReport) -> (BTreeMap<String, (u64, u64)>, u64, u64) {
    let mut by_link: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let (mut host, mut to_host) = (0, 0);
    for t in &r.transfers {
        let e = by_link.entry(t.link.clone()).or_default();
        e.0 += 1;
        e.1 += t.bytes;
        if let Some(l) = rt.links().find(|l| l.name() == t.link) {
            if l.src() == MemorySpace::HOST || l.dst() == MemorySpace::HOST {
                host += t.bytes;
            }
            if l.dst() == MemorySpace::HOST {
                to_host += t.bytes;
            }
        }
    }
    (by_link, host, to_host)
}

/// The fields every report has (the devices, times, recovered devices, trace), with the
/// waits' and execution's start `waited` (zero where a report has none).
#[allow(clippy::too_many_arguments)] // reason: one report's common fields
fn common<'py>(
    py: Python<'py>,
    devices: &[String],
    seconds: f64,
    planning_seconds: f64,
    waited: (f64, f64),
    plan_cached: bool,
    recovered: &[DeviceFault],
    trace: Option<&Trace>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("devices", devices)?;
    d.set_item("seconds", seconds)?;
    d.set_item("planning_seconds", planning_seconds)?;
    d.set_item("waited_seconds", waited.0)?;
    d.set_item("execute_start", waited.1)?;
    d.set_item("plan_cached", plan_cached)?;
    d.set_item(
        "recovered",
        recovered
            .iter()
            .map(|f| format!("{}: {}", f.device, f.error))
            .collect::<Vec<_>>(),
    )?;
    d.set_item("trace", trace.map(|t| t.to_chrome_json()))?;
    Ok(d)
}

/// The dict of a GEMM or symmetric routine's report.
pub fn gemm<'py>(py: Python<'py>, rt: &Runtime, r: &GemmReport) -> PyResult<Bound<'py, PyDict>> {
    let d = common(
        py,
        &r.devices,
        r.seconds,
        r.planning_seconds,
        (r.waited_seconds, r.execute_start),
        r.plan_cached,
        &r.recovered,
        r.trace.as_ref(),
    )?;
    d.set_item("tile", r.tile)?;
    let (links, host, to_host) = transfers(rt, r);
    d.set_item("transfers", links)?;
    d.set_item("host_bytes", host)?;
    d.set_item("to_host_bytes", to_host)?;
    d.set_item("notes", &r.notes)?;
    Ok(d)
}

/// The dict of a TRSM or TRMM report (bytes in and out of the operands' own memory, no per
/// link detail, so no count of the bytes that crossed to or from the host).
pub fn tri<'py>(py: Python<'py>, r: &TriReport) -> PyResult<Bound<'py, PyDict>> {
    let d = common(
        py,
        &r.devices,
        r.seconds,
        r.planning_seconds,
        (0.0, 0.0),
        r.plan_cached,
        &r.recovered,
        r.trace.as_ref(),
    )?;
    d.set_item("tile", r.tile.map(|t| (t, t, t)))?;
    let mut links: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    if r.bytes_in > 0 {
        links.insert(
            "in".into(),
            (r.stats.fetches.iter().sum::<usize>() as u64, r.bytes_in),
        );
    }
    if r.bytes_out > 0 {
        links.insert("out".into(), (r.stats.writebacks as u64, r.bytes_out));
    }
    d.set_item("transfers", links)?;
    // Not known per link for the triangular routines.
    d.set_item("host_bytes", None::<u64>)?;
    d.set_item("to_host_bytes", None::<u64>)?;
    let notes: Vec<String> = r
        .solve
        .map(|s| vec![format!("diagonal solves: {s:?}")])
        .unwrap_or_default();
    d.set_item("notes", notes)?;
    Ok(d)
}

/// The dict of a factorization's report, with its `info` and the pivots `ipiv` (1-based;
/// empty for POTRF); `host`: A was in host memory (then every byte moved crossed the host
/// link).
pub fn factor<'py>(
    py: Python<'py>,
    r: &FactorReport,
    ipiv: Vec<i32>,
    host: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let d = common(
        py,
        &r.devices,
        r.seconds,
        r.planning_seconds,
        (0.0, 0.0),
        r.plan_cached,
        &r.recovered,
        r.trace.as_ref(),
    )?;
    d.set_item("info", r.info)?;
    d.set_item("ipiv", ipiv)?;
    d.set_item("tile", r.nb.map(|nb| (nb, nb, nb)))?;
    let mut links: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    if r.bytes_in > 0 {
        links.insert("in".into(), (0, r.bytes_in));
    }
    if r.bytes_out > 0 {
        links.insert("out".into(), (0, r.bytes_out));
    }
    d.set_item("transfers", links)?;
    d.set_item("host_bytes", host.then_some(r.bytes_in + r.bytes_out))?;
    d.set_item("to_host_bytes", host.then_some(r.bytes_out))?;
    let notes: Vec<String> = r.panels.iter().map(|p| format!("panels on {p}")).collect();
    d.set_item("notes", notes)?;
    Ok(d)
}
