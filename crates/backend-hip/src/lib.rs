//! # hetblas-hip
//!
//! AMD GPUs for hetblas, through the HIP runtime (`libamdhip64`) and hipBLAS (`libhipblas`),
//! both loaded at run time with libloading: the crate builds on machines with no ROCm, and on a
//! machine without the libraries or a GPU, discovery reports why instead of failing.
//!
//! Layout, as in every backend crate, cudarc-style in three layers:
//! - `sys`: the raw FFI, exactly the functions used, with the header values they rely on;
//! - `result`: every call checked ([`result::check`], the one error-mapping helper), library
//!   presence and initialisation, the per-thread current device ([`result::Context`]);
//! - safe types and trait impls: `stream` (Queue/Event), `memory` (buffers), `pinning` (the
//!   host registration cache), `blas` (hipBLAS and the Kernel impl), `link` (Link impls),
//!   `device` (Device impl), and [`HipBackend`] here (discovery).
//!
//! It mirrors the CUDA backend piece for piece. The differences are HIP's: no explicit
//! contexts (a per-thread current device set with hipSetDevice, cached per thread), peer copies
//! by device ordinal (hipMemcpyPeerAsync; strided ones as 2D copies with peer access enabled),
//! and cached host registrations verified through the copy path itself (see `pinning`).
//!
//! Per GPU: two compute streams with a hipBLAS handle each, one host->device and one
//! device->host stream (both DMA engines busy at once), and one stream per peer link.
//! `HETBLAS_HIP_DEVICES=0,2` restricts the GPUs taken (ordinals); `HETBLAS_HIP_LIB_DIR=DIR`
//! loads `DIR/libamdhip64.so*` and `DIR/libhipblas.so*` before the system's (the HIP-on-CUDA
//! test shim in `shim/` is used that way).

pub mod blas;
pub mod device;
pub mod link;
pub mod memory;
pub mod pinning;
pub mod result;
pub mod stream;
pub mod sys;

pub use device::HipDevice;
pub use pinning::{PinCache, PinStats};

use hetblas_core::{Backend, Device, Discovery, Link, LinkKind, MemorySpace, Result};
use link::HipLink;
use result::Context;
use std::sync::Arc;
use stream::HipStream;

/// Discovers GPUs driven through HIP.
#[derive(Debug, Default)]
pub struct HipBackend;

/// Parses a device filter such as "0,2" (`HETBLAS_HIP_DEVICES`).
pub fn parse_filter(v: &str) -> Result<Vec<i32>> {
    hetblas_core::device::parse_device_filter(v)
}

impl Backend for HipBackend {
    fn name(&self) -> &'static str {
        "hip"
    }

    fn discover(&self) -> Result<Discovery> {
        let libs = result::init()?;
        let count = libs.device_count;
        const FILTER: &str = "HETBLAS_HIP_DEVICES";
        let ordinals = hetblas_core::device::select_ordinals(
            "hip",
            FILTER,
            std::env::var(FILTER).ok().as_deref(),
            count,
        )?;
        let contexts: Vec<Arc<Context>> = ordinals.iter().map(|&o| Context::new(o)).collect();
        let pins = Arc::new(pinning::HipRegistrar::cache(contexts[0].clone()));
        let mut devices = Vec::new();
        let mut links: Vec<Arc<dyn Link>> = Vec::new();
        for (i, ctx) in contexts.iter().enumerate() {
            let dev = HipDevice::new(i, ctx.clone(), pins.clone(), &libs)?;
            let space = dev.space();
            let h2d = HipStream::new(ctx, format!("hip{i}/h2d"), false)?;
            let d2h = HipStream::new(ctx, format!("hip{i}/d2h"), false)?;
            links.push(HipLink::new(
                MemorySpace::HOST,
                space,
                LinkKind::HostToDevice,
                format!("host->hip{i}"),
                h2d,
                None,
                Some(ctx.clone()),
                pins.clone(),
            ));
            links.push(HipLink::new(
                space,
                MemorySpace::HOST,
                LinkKind::DeviceToHost,
                format!("hip{i}->host"),
                d2h,
                Some(ctx.clone()),
                None,
                pins.clone(),
            ));
            devices.push(dev);
        }
        // Peer links where the hardware allows direct access (xGMI/Infinity Fabric, PCIe P2P).
        for (i, a) in devices.iter().enumerate() {
            for (j, b) in devices.iter().enumerate() {
                if i == j || !b.context().can_access_peer(a.context())? {
                    continue;
                }
                // The copy a -> b runs on a stream of b, which must be able to reach a's memory.
                b.context().enable_peer_access(a.context())?;
                let s = HipStream::new(b.context(), format!("hip{j}<-hip{i}"), false)?;
                links.push(HipLink::new(
                    a.space(),
                    b.space(),
                    LinkKind::Peer,
                    format!("hip{i}->hip{j}"),
                    s,
                    Some(a.context().clone()),
                    Some(b.context().clone()),
                    pins.clone(),
                ));
            }
        }
        Ok(Discovery {
            devices: devices.into_iter().map(|d| d as Arc<dyn Device>).collect(),
            links,
        })
    }
}
