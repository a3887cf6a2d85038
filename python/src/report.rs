//! A call's report as a Python dict (the Python layer makes a `CallReport` dataclass of it):
//! the devices, times, tile, the bytes each link carried, and the Chrome trace when asked for.

use hetblas::{GemmReport, Runtime, TriReport};
use hetblas_core::MemorySpace;
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

/// The dict of a GEMM or symmetric routine's report.
pub fn gemm<'py>(py: Python<'py>, rt: &Runtime, r: &GemmReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("devices", &r.devices)?;
    d.set_item("seconds", r.seconds)?;
    d.set_item("planning_seconds", r.planning_seconds)?;
    d.set_item("waited_seconds", r.waited_seconds)?;
    d.set_item("execute_start", r.execute_start)?;
    d.set_item("plan_cached", r.plan_cached)?;
    d.set_item("tile", r.tile)?;
    let (links, host, to_host) = transfers(rt, r);
    d.set_item("transfers", links)?;
    d.set_item("host_bytes", host)?;
    d.set_item("to_host_bytes", to_host)?;
    d.set_item(
        "recovered",
        r.recovered
            .iter()
            .map(|f| format!("{}: {}", f.device, f.error))
            .collect::<Vec<_>>(),
    )?;
    d.set_item("notes", &r.notes)?;
    d.set_item("trace", r.trace.as_ref().map(|t| t.to_chrome_json()))?;
    Ok(d)
}

/// The dict of a TRSM or TRMM report (bytes in and out of the operands' own memory, no per
/// link detail, so no count of the bytes that crossed to or from the host).
pub fn tri<'py>(py: Python<'py>, r: &TriReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("devices", &r.devices)?;
    d.set_item("seconds", r.seconds)?;
    d.set_item("planning_seconds", r.planning_seconds)?;
    d.set_item("waited_seconds", 0.0)?;
    d.set_item("execute_start", 0.0)?;
    d.set_item("plan_cached", r.plan_cached)?;
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
    d.set_item(
        "recovered",
        r.recovered
            .iter()
            .map(|f| format!("{}: {}", f.device, f.error))
            .collect::<Vec<_>>(),
    )?;
    let notes: Vec<String> = r
        .solve
        .map(|s| vec![format!("diagonal solves: {s:?}")])
        .unwrap_or_default();
    d.set_item("notes", notes)?;
    d.set_item("trace", r.trace.as_ref().map(|t| t.to_chrome_json()))?;
    Ok(d)
}
