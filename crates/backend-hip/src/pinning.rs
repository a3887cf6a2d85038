//! HIP's side of the host registration cache (`hetblas_core::pin`): hipHostRegister /
//! hipHostUnregister, and the verification of cached registrations: the runtime must still know
//! the registration (hipHostGetDevicePointer), a few words are copied from the registered host
//! addresses into a small device scratch buffer (hipMemcpy2D host->device, exactly as the links
//! copy tiles) and back into a pinned probe buffer, and must equal what the CPU reads at those
//! addresses; for memory the call will write, one word with flipped bits is copied from device
//! scratch to the host address and must appear at the CPU address (then the CPU restores it).

use crate::memory::{HipBuffer, PinnedHostBuffer};
use crate::result::{self, hip_error, Context};
use crate::sys::{err, memcpy};
use hetblas_core::pin::{Registered, Registrar, PAGE};
use hetblas_core::{HostAccess, MemorySpace, Result};
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

pub use hetblas_core::pin::{PinPolicy, PinStats};

/// The registration cache of the HIP backend (shared by all its devices).
pub type PinCache = hetblas_core::pin::PinCache<HipRegistrar>;

/// Words compared per verification.
const PROBES: usize = 16;

/// The runtime calls behind the cache.
pub struct HipRegistrar {
    ctx: Arc<Context>,
    /// Pinned scratch the probes read back into, and device scratch they copy through.
    scratch: Mutex<(Option<PinnedHostBuffer>, Option<HipBuffer>)>,
}

impl HipRegistrar {
    pub fn new(ctx: Arc<Context>) -> HipRegistrar {
        HipRegistrar {
            ctx,
            scratch: Mutex::new((None, None)),
        }
    }

    /// A cache over this registrar with the policy of `HETBLAS_PIN`.
    pub fn cache(ctx: Arc<Context>) -> PinCache {
        hetblas_core::pin::PinCache::new(HipRegistrar::new(ctx), PinPolicy::from_env())
    }
}

impl Registrar for HipRegistrar {
    fn register(&self, start: u64, len: usize) -> Result<Registered> {
        self.ctx.bind()?;
        // SAFETY: [start, start + len) is page-aligned host memory of the caller's operand
        // (whole pages are what the OS locks anyway).
        let r = unsafe { result::host_register(start as *mut c_void, len) }?;
        match r {
            err::SUCCESS => Ok(Registered::Yes),
            err::HOST_MEMORY_ALREADY_REGISTERED => Ok(Registered::Foreign),
            err::OUT_OF_MEMORY | err::INVALID_VALUE => {
                tracing::debug!("{}", hip_error(r, "hipHostRegister"));
                Ok(Registered::Refused)
            }
            other => Err(hip_error(other, "hipHostRegister")),
        }
    }

    fn unregister(&self, start: u64) -> Result<()> {
        self.ctx.bind()?;
        // SAFETY: `start` begins a registration of ours; no copy is in flight (cache contract).
        unsafe { result::host_unregister(start as *mut c_void) }
    }

    /// Whether the registered pages behind `[addr, addr + len)` are the ones the CPU sees there.
    fn verify(&self, addr: u64, len: usize, access: HostAccess) -> Result<bool> {
        self.ctx.bind()?;
        let mut guard = self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        let st = &mut *guard;
        // The runtime must still hold the registration we think we made.
        if result::host_device_pointer(addr / PAGE * PAGE).is_err() {
            return Ok(false);
        }
        if len < 8 {
            return Ok(true); // nothing a word-sized probe can check; too small to matter
        }
        let words = (len / 8).clamp(1, PROBES);
        let stride = if words > 1 {
            (len - 8) / (words - 1)
        } else {
            8
        };
        if st.0.is_none() {
            st.0 = Some(PinnedHostBuffer::new(&self.ctx, PROBES * 8)?);
        }
        if st.1.is_none() {
            st.1 = Some(HipBuffer::new(
                &self.ctx,
                MemorySpace::new_device(),
                PROBES * 8,
            )?);
        }
        let probe =
            st.0.as_ref()
                .map_or(std::ptr::null_mut(), |p| p.as_mut_ptr());
        let scratch = st.1.as_ref().map_or(std::ptr::null_mut(), |s| s.as_ptr());
        // Host (registered) -> device scratch, as the links copy tiles, then scratch -> probe.
        let host_to_scratch = if stride <= 1 << 30 {
            // SAFETY: reads `words` words at `addr + w * stride`, all inside the caller's
            // region, into the device scratch (PROBES * 8 bytes).
            unsafe {
                result::memcpy_2d(
                    scratch,
                    8,
                    addr as *const c_void,
                    stride,
                    8,
                    words,
                    memcpy::HOST_TO_DEVICE,
                )
            }
        } else {
            // Pitches this large exceed what a 2D copy takes: one word at a time.
            (0..words).try_for_each(|w| {
                // SAFETY: as above, one word per copy.
                unsafe {
                    result::memcpy_2d(
                        (scratch as *mut u8).add(w * 8) as *mut c_void,
                        8,
                        (addr as usize + w * stride) as *const c_void,
                        8,
                        8,
                        1,
                        memcpy::HOST_TO_DEVICE,
                    )
                }
            })
        };
        if host_to_scratch.is_err() {
            return Ok(false);
        }
        // SAFETY: device scratch -> pinned probe, both PROBES * 8 bytes, ours.
        let back = unsafe {
            result::memcpy_2d(
                probe as *mut c_void,
                8,
                scratch,
                8,
                8,
                words,
                memcpy::DEVICE_TO_HOST,
            )
        };
        back?;
        for w in 0..words {
            let off = w * stride;
            // SAFETY: [addr + off, addr + off + 8) lies inside the caller's region; the probe
            // buffer holds `words` words.
            let (cpu, dma) = unsafe {
                (
                    std::ptr::read_volatile((addr as usize + off) as *const [u8; 8]),
                    std::ptr::read_volatile(probe.add(w * 8) as *const [u8; 8]),
                )
            };
            if cpu != dma {
                return Ok(false);
            }
        }
        if access == HostAccess::ReadWrite {
            let word = addr as *mut [u8; 8];
            // SAFETY: the caller holds the region exclusively for this call (it is the GEMM
            // output); the first word is read here, written by DMA below, read back on the CPU
            // and restored before anything else can look at it.
            let old = unsafe { std::ptr::read_volatile(word) };
            let mut flipped = old;
            flipped[0] ^= 0x5a;
            // SAFETY: the probe buffer is ours and holds at least one word.
            unsafe { std::ptr::write_volatile(probe as *mut [u8; 8], flipped) };
            // SAFETY: pinned probe -> device scratch, one word, both ours.
            let up = unsafe {
                result::memcpy_2d(
                    scratch,
                    8,
                    probe as *const c_void,
                    8,
                    8,
                    1,
                    memcpy::HOST_TO_DEVICE,
                )
            };
            up?;
            // SAFETY: device scratch -> the caller's registered word (see above), the path a
            // device->host tile copy takes.
            let down = unsafe {
                result::memcpy_2d(
                    word as *mut c_void,
                    8,
                    scratch,
                    8,
                    8,
                    1,
                    memcpy::DEVICE_TO_HOST,
                )
            };
            // SAFETY: as above; restores the caller's word.
            let seen = unsafe {
                let seen = std::ptr::read_volatile(word);
                std::ptr::write_volatile(word, old);
                seen
            };
            if down.is_err() || seen != flipped {
                return Ok(false);
            }
        }
        Ok(true)
    }
}
