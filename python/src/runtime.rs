//! The process's one Runtime: discovered on the first call that needs it (or by [`init`] with
//! explicit choices), then shared by every call from every thread.
//!
//! A child forked after the Runtime started cannot use it: the devices' contexts and the
//! worker threads stayed in the parent. Its calls raise a clear error instead of hanging.

use crate::errors::{to_py, HetblasError};
use hetblas::Runtime;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

static RUNTIME: OnceLock<Runtime> = OnceLock::new();
/// Held while a Runtime is being discovered: one discovery per process.
static STARTING: Mutex<()> = Mutex::new(());
/// The process that started the Runtime.
static OWNER: AtomicU32 = AtomicU32::new(0);

/// The Runtime, discovered now if no call did yet (with the GIL released: discovery loads the
/// GPU libraries and opens the devices).
pub fn get(py: Python<'_>) -> PyResult<&'static Runtime> {
    if let Some(rt) = RUNTIME.get() {
        check_owner()?;
        return Ok(rt);
    }
    start(py, Runtime::builder())
}

fn check_owner() -> PyResult<()> {
    if OWNER.load(Ordering::Relaxed) != std::process::id() {
        return Err(HetblasError::new_err(
            "this process was forked after hetblas started in its parent: the parent's devices \
             cannot be used here (start the children with multiprocessing's 'spawn' or \
             'forkserver' method, or use hetblas only in the children)",
        ));
    }
    Ok(())
}

fn start(py: Python<'_>, builder: hetblas::RuntimeBuilder) -> PyResult<&'static Runtime> {
    py.detach(|| {
        let _one = STARTING.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(rt) = RUNTIME.get() {
            return Ok(rt);
        }
        let rt = builder.build()?;
        OWNER.store(std::process::id(), Ordering::Relaxed);
        Ok(RUNTIME.get_or_init(|| rt))
    })
    .map_err(to_py)
    .and_then(|rt| check_owner().map(|()| rt))
}

/// Starts the runtime with explicit choices (before any other call): `emulated` host-emulated
/// devices, only the `backends` named ("cuda", "hip", "cpu"), without the CPU device, without
/// loading the calibrated profile.
#[pyfunction]
#[pyo3(signature = (*, emulated=None, backends=None, cpu=true, profile=true))]
pub fn init(
    py: Python<'_>,
    emulated: Option<usize>,
    backends: Option<Vec<String>>,
    cpu: bool,
    profile: bool,
) -> PyResult<()> {
    if RUNTIME.get().is_some() {
        return Err(HetblasError::new_err(
            "hetblas already started (a call or hetblas.init came first): call hetblas.init \
             before any other hetblas call",
        ));
    }
    let mut b = Runtime::builder();
    if let Some(n) = emulated {
        b = b.emulated(n);
    }
    if let Some(list) = &backends {
        let names: Vec<&str> = list.iter().map(String::as_str).collect();
        b = b.only(&names);
    }
    if !cpu {
        b = b.without_cpu();
    }
    if !profile {
        b = b.without_profile();
    }
    start(py, b).map(|_| ())
}

/// Whether the runtime has started in this process.
#[pyfunction]
pub fn started() -> bool {
    RUNTIME.get().is_some() && OWNER.load(Ordering::Relaxed) == std::process::id()
}
