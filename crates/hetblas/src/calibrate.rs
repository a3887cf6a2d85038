//! Calibration from the library: core's calibration over the runtime's devices and links, with
//! host buffers page-locked by every device that copies them, as user buffers are during a call.

use hetblas_core::calibrate::{CalibrationOptions, Progress};
use hetblas_core::profile::MachineProfile;
use hetblas_core::{Buffer, Device, HostAccess, Link, MemorySpace, Result};
use hetblas_cpu::buffer::HostBuffer;
use std::sync::Arc;

/// Calibrates `devices` and `links` (see [`crate::Runtime::calibrate`]).
pub(crate) fn calibrate(
    devices: &[Arc<dyn Device>],
    links: &[Arc<dyn Link>],
    opts: &CalibrationOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<MachineProfile> {
    let dma: Vec<Arc<dyn Device>> = devices
        .iter()
        .filter(|d| !d.space().is_host())
        .cloned()
        .collect();
    let host_alloc = |bytes: usize| -> Result<Box<dyn Buffer>> {
        let mut registered = Registered {
            inner: HostBuffer::new(bytes, MemorySpace::HOST, None)?,
            devices: Vec::with_capacity(dma.len()),
        };
        for d in &dma {
            d.prepare_host(registered.addr(), registered.len(), HostAccess::ReadWrite)?;
            // Pushed once registered, so that a failure releases exactly what was prepared.
            registered.devices.push(d.clone());
        }
        Ok(Box::new(registered))
    };
    hetblas_core::calibrate::calibrate(devices, links, &host_alloc, opts, progress)
}

/// A host buffer registered with the devices that DMA it, for the time it lives.
#[derive(Debug)]
struct Registered {
    inner: HostBuffer,
    devices: Vec<Arc<dyn Device>>,
}

impl Buffer for Registered {
    fn space(&self) -> MemorySpace {
        self.inner.space()
    }
    fn addr(&self) -> u64 {
        self.inner.addr()
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        // The registration must go before the memory: one left on freed memory collides with
        // later driver mappings. A failure here leaves nothing to undo.
        for d in &self.devices {
            let _ = d.release_host(self.inner.addr(), self.inner.len());
        }
    }
}
