//! Calibration of the pool's own devices and links: the library form of `hetblas calibrate`.

use super::DevicePool;
use crate::calibrate::{calibrate, recheck, CalibrationOptions, Progress, Recheck};
use crate::device::Device;
use crate::error::Result;
use crate::link::Link;
use crate::memory::{BorrowedBuffer, Buffer, HostAccess, MemorySpace};
use crate::profile::MachineProfile;
use std::sync::Arc;

impl DevicePool {
    /// Measures every link and every device of the pool ([`crate::calibrate`]) and returns the
    /// profile: `CalibrationOptions::quick()` takes seconds, `CalibrationOptions::default()` (the
    /// full one) minutes. `progress` is called after every point. No GEMM of this pool runs
    /// meanwhile. The profile is not put in use: pass it to [`DevicePool::set_profile`], or
    /// save it ([`MachineProfile::save`]).
    ///
    /// Host buffers for the link measurements are page-locked by every accelerator, as the
    /// operands of a call are.
    ///
    /// # Errors
    /// Allocation failures, backend errors, failed fits.
    pub fn calibrate(
        &self,
        opts: &CalibrationOptions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<MachineProfile> {
        let _thread = self.keep_thread_contexts();
        let _alone = self.alone();
        let links: Vec<Arc<dyn Link>> = self.links.values().cloned().collect();
        let host_alloc = self.calibration_host_alloc();
        calibrate(&self.devices, &links, &host_alloc, opts, progress)
    }

    /// Re-checks a previous profile of this hardware ([`crate::calibrate::recheck`]): a few
    /// points measured again, in seconds. When the result `holds`, the previous profile
    /// describes this machine as it is now and can be used instead of a new calibration. No
    /// GEMM of this pool runs meanwhile.
    ///
    /// # Errors
    /// Allocation failures and backend errors.
    pub fn recheck(
        &self,
        previous: &MachineProfile,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Recheck> {
        let _thread = self.keep_thread_contexts();
        let _alone = self.alone();
        let links: Vec<Arc<dyn Link>> = self.links.values().cloned().collect();
        let host_alloc = self.calibration_host_alloc();
        recheck(previous, &self.devices, &links, &host_alloc, progress)
    }

    /// Host buffers for calibration copies: the host device's allocation when there is one
    /// (aligned as its kernels like it), else plain host memory; page-locked by every
    /// accelerator.
    fn calibration_host_alloc(&self) -> impl Fn(usize) -> Result<Box<dyn Buffer>> + '_ {
        let host = self.devices.iter().find(|d| d.space().is_host()).cloned();
        let dma: Vec<Arc<dyn Device>> = self
            .devices
            .iter()
            .filter(|d| !d.space().is_host())
            .cloned()
            .collect();
        move |bytes: usize| -> Result<Box<dyn Buffer>> {
            // Without a host device: a vector of u64, for 8-byte alignment.
            let mut words = Vec::new();
            let inner: Box<dyn Buffer> = match &host {
                Some(h) => h.allocate(bytes)?,
                None => {
                    words = vec![0u64; bytes.div_ceil(8).max(1)];
                    let addr = words.as_ptr() as u64;
                    Box::new(BorrowedBuffer::new(
                        MemorySpace::HOST,
                        addr,
                        words.len() * 8,
                    ))
                }
            };
            let mut registered = Registered {
                inner,
                _words: words,
                devices: Vec::with_capacity(dma.len()),
            };
            // On failure, those done are released (drop).
            for d in &dma {
                let (addr, len) = (registered.inner.addr(), registered.inner.len());
                d.prepare_host(addr, len, HostAccess::ReadWrite)
                    .map_err(|e| e.on_device(&d.info().label()))?;
                registered.devices.push(d.clone());
            }
            Ok(Box::new(registered))
        }
    }
}

/// A host buffer page-locked by the devices that copy it, released when dropped.
#[derive(Debug)]
struct Registered {
    inner: Box<dyn Buffer>,
    /// The memory `inner` borrows, if any.
    _words: Vec<u64>,
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
        for d in &self.devices {
            let _ = d.release_host(self.inner.addr(), self.inner.len());
        }
    }
}
