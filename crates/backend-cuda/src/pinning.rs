//! CUDA's side of the host registration cache (`hetblas_core::pin`): cuMemHostRegister /
//! cuMemHostUnregister, and the verification of cached registrations.

use crate::driver::{check, driver_error, Context};
use crate::memory::{CudaBuffer, PinnedHostBuffer};
use cudarc::driver::sys;
use hetblas_core::pin::{Registered, Registrar};
use hetblas_core::{HostAccess, Result};
use std::sync::{Arc, Mutex};

pub use hetblas_core::pin::{PinPolicy, PinStats};

/// The registration cache of the CUDA backend (shared by all its devices).
pub type PinCache = hetblas_core::pin::PinCache<CudaRegistrar>;

/// Words compared per verification.
const PROBES: usize = 32;

/// The driver calls behind the cache.
pub struct CudaRegistrar {
    ctx: Arc<Context>,
    /// Pinned scratch the probes read into, and device scratch they pass through.
    scratch: Mutex<(Option<PinnedHostBuffer>, Option<CudaBuffer>)>,
}

impl CudaRegistrar {
    pub fn new(ctx: Arc<Context>) -> CudaRegistrar {
        CudaRegistrar {
            ctx,
            scratch: Mutex::new((None, None)),
        }
    }

    /// A cache over this registrar with the policy of `HETBLAS_PIN`.
    pub fn cache(ctx: Arc<Context>) -> PinCache {
        hetblas_core::pin::PinCache::new(CudaRegistrar::new(ctx), PinPolicy::from_env())
    }
}

impl Registrar for CudaRegistrar {
    fn register(&self, start: u64, len: usize) -> Result<Registered> {
        self.ctx.bind()?;
        // SAFETY: [start, start + len) is page-aligned host memory of the caller's operand
        // (whole pages are what the OS locks anyway).
        let r = unsafe {
            sys::cuMemHostRegister_v2(
                start as *mut std::ffi::c_void,
                len,
                sys::CU_MEMHOSTREGISTER_PORTABLE,
            )
        };
        match r {
            sys::CUresult::CUDA_SUCCESS => Ok(Registered::Yes),
            sys::CUresult::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => Ok(Registered::Foreign),
            sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY | sys::CUresult::CUDA_ERROR_INVALID_VALUE => {
                tracing::debug!("{}", driver_error(r, "cuMemHostRegister"));
                Ok(Registered::Refused)
            }
            other => Err(driver_error(other, "cuMemHostRegister")),
        }
    }

    fn unregister(&self, start: u64) -> Result<()> {
        self.ctx.bind()?;
        check(
            // SAFETY: `start` begins a registration of ours; no copy is in flight (cache contract).
            unsafe { sys::cuMemHostUnregister(start as *mut std::ffi::c_void) },
            "cuMemHostUnregister",
        )
    }

    /// Whether the registered pages behind `[addr, addr + len)` are the ones the CPU sees there.
    ///
    /// The probes take the same path as the data: copies from (and to) the registered host
    /// pointer with host memory type, which the driver serves from the pages it pinned at
    /// registration. (Reading through the mapped device pointer is NOT equivalent: on H200 /
    /// driver 580 it saw the new pages while host-pointer copies still used the stale ones.)
    fn verify(&self, addr: u64, len: usize, access: HostAccess) -> Result<bool> {
        self.ctx.bind()?;
        let mut st = self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        if len < 8 {
            return Ok(true); // nothing a word-sized probe can check; too small to matter
        }
        let words = (len / 8).clamp(1, PROBES);
        let stride = if words > 1 {
            ((len - 8) / (words - 1)) as u64
        } else {
            0
        };
        if st.0.is_none() {
            st.0 = Some(PinnedHostBuffer::new(&self.ctx, PROBES * 8)?);
        }
        if st.1.is_none() {
            st.1 = Some(CudaBuffer::new(
                &self.ctx,
                hetblas_core::MemorySpace::HOST,
                PROBES * 8,
            )?);
        }
        let probe = st.0.as_ref().expect("allocated above").as_mut_ptr();
        let scratch = hetblas_core::Buffer::addr(st.1.as_ref().expect("allocated above"));
        // Host words -> device scratch, through the registration, with the same kind of call
        // the data takes (a 2D copy from a host-typed pointer).
        let rows_per_copy = if stride <= 1 << 30 { words } else { 1 };
        for first in (0..words).step_by(rows_per_copy) {
            let p = sys::CUDA_MEMCPY2D {
                srcXInBytes: 0,
                srcY: 0,
                srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_HOST,
                srcHost: (addr + first as u64 * stride) as *const std::ffi::c_void,
                srcDevice: 0,
                srcArray: std::ptr::null_mut(),
                srcPitch: stride.max(8) as usize,
                dstXInBytes: 0,
                dstY: 0,
                dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                dstHost: std::ptr::null_mut(),
                dstDevice: scratch + (first * 8) as u64,
                dstArray: std::ptr::null_mut(),
                dstPitch: 8,
                WidthInBytes: 8,
                Height: rows_per_copy,
            };
            // SAFETY: the probed words lie in the caller's registered region; the scratch holds
            // PROBES words. A failing copy means the range is not (or no longer) usable.
            if unsafe { sys::cuMemcpy2D_v2(&p) } != sys::CUresult::CUDA_SUCCESS {
                return Ok(false);
            }
        }
        // Device scratch -> our own pinned probe buffer (always valid).
        // SAFETY: both buffers hold PROBES * 8 bytes.
        let r = unsafe { sys::cuMemcpyDtoH_v2(probe as *mut std::ffi::c_void, scratch, words * 8) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Ok(false);
        }
        for w in 0..words {
            let off = w as u64 * stride;
            // SAFETY: [addr + off, addr + off + 8) lies inside the caller's region; the probe
            // buffer holds `words` words.
            let (cpu, dma) = unsafe {
                (
                    std::ptr::read_volatile((addr + off) as *const [u8; 8]),
                    std::ptr::read_volatile(probe.add(w * 8) as *const [u8; 8]),
                )
            };
            if cpu != dma {
                return Ok(false);
            }
        }
        if access == HostAccess::ReadWrite {
            // SAFETY: the caller holds the region exclusively for this call (it is the GEMM
            // output); a flipped copy of its first word goes device -> registered host pointer
            // (the write-back path), is read back on the CPU, and the original is restored
            // before anything else can look at it. The scratch holds the flipped word.
            unsafe {
                let word = addr as *mut [u8; 8];
                let old = std::ptr::read_volatile(word);
                let mut flipped = old;
                flipped[0] ^= 0x5a;
                let ok =
                    sys::cuMemcpyHtoD_v2(scratch, flipped.as_ptr() as *const std::ffi::c_void, 8)
                        == sys::CUresult::CUDA_SUCCESS
                        && sys::cuMemcpyDtoH_v2(addr as *mut std::ffi::c_void, scratch, 8)
                            == sys::CUresult::CUDA_SUCCESS;
                let seen = std::ptr::read_volatile(word);
                std::ptr::write_volatile(word, old);
                if !ok || seen != flipped {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }
}
