//! # hetblas-cuda
//!
//! NVIDIA GPUs for hetblas, through the CUDA driver API and cuBLAS, both loaded at run time
//! (cudarc with dynamic loading): the crate builds on machines with no CUDA toolkit, and on a
//! machine without the libraries or a GPU, discovery reports why instead of failing.
//!
//! Layout, as in every backend crate: `driver` (library loading, error mapping, contexts),
//! `stream` (Queue/Event), `memory` (buffers), `pinning` (the host registration cache),
//! `blas` (cuBLAS and the Kernel impl), `link` (Link impls), `device` (Device impl), and
//! [`CudaBackend`] here (discovery).
//!
//! Per GPU: two compute streams with a cuBLAS handle each, one host->device and one
//! device->host stream (both DMA engines busy at once), and one stream per peer link.
//! `HETBLAS_CUDA_DEVICES=0,2` restricts the GPUs taken (ordinals).

pub mod blas;
pub mod device;
pub mod driver;
pub mod link;
pub mod memory;
pub mod pinning;
pub mod stream;

pub use device::CudaDevice;
pub use pinning::{PinCache, PinStats};

use cudarc::driver::sys;
use driver::{check, Context};
use hetblas_core::{Backend, Device, Discovery, Error, Link, LinkKind, MemorySpace, Result};
use link::CudaLink;
use std::sync::Arc;
use stream::CudaStream;

/// Discovers CUDA GPUs.
#[derive(Debug, Default)]
pub struct CudaBackend;

/// Parses a device filter such as "0,2" (`HETBLAS_CUDA_DEVICES`).
pub fn parse_filter(v: &str) -> Result<Vec<i32>> {
    hetblas_core::device::parse_device_filter(v)
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn discover(&self) -> Result<Discovery> {
        let libs = driver::init()?;
        let mut count = 0;
        check(
            // SAFETY: writes one int.
            unsafe { sys::cuDeviceGetCount(&mut count) },
            "cuDeviceGetCount",
        )?;
        if count == 0 {
            return Err(Error::Unavailable {
                backend: "cuda",
                reason: "no CUDA device".into(),
            });
        }
        const FILTER: &str = "HETBLAS_CUDA_DEVICES";
        let ordinals = hetblas_core::device::select_ordinals(
            "cuda",
            FILTER,
            std::env::var(FILTER).ok().as_deref(),
            count,
        )?;
        let contexts = ordinals
            .iter()
            .map(|&o| Context::retain(o))
            .collect::<Result<Vec<_>>>()?;
        let pins = Arc::new(pinning::CudaRegistrar::cache(contexts[0].clone()));
        let mut devices = Vec::new();
        let mut links: Vec<Arc<dyn Link>> = Vec::new();
        for (i, ctx) in contexts.iter().enumerate() {
            let dev = CudaDevice::new(i, ctx.clone(), pins.clone(), libs.driver_version)?;
            let space = dev.space();
            let h2d = CudaStream::new(ctx, format!("cuda{i}/h2d"), false)?;
            let d2h = CudaStream::new(ctx, format!("cuda{i}/d2h"), false)?;
            links.push(CudaLink::new(
                MemorySpace::HOST,
                space,
                LinkKind::HostToDevice,
                format!("host->cuda{i}"),
                h2d,
                None,
                Some(ctx.clone()),
                pins.clone(),
            ));
            links.push(CudaLink::new(
                space,
                MemorySpace::HOST,
                LinkKind::DeviceToHost,
                format!("cuda{i}->host"),
                d2h,
                Some(ctx.clone()),
                None,
                pins.clone(),
            ));
            devices.push(dev);
        }
        // Peer links where the hardware allows direct access (NVLink or PCIe P2P).
        for (i, a) in devices.iter().enumerate() {
            for (j, b) in devices.iter().enumerate() {
                if i == j {
                    continue;
                }
                let mut can = 0;
                check(
                    // SAFETY: writes one int.
                    unsafe {
                        sys::cuDeviceCanAccessPeer(&mut can, b.context().device, a.context().device)
                    },
                    "cuDeviceCanAccessPeer",
                )?;
                if can == 0 {
                    continue;
                }
                // The copy a -> b runs on a stream of b, which must be able to read a's memory.
                b.context().bind()?;
                // SAFETY: enables access from b's context to a's; "already enabled" is fine.
                let r = unsafe { sys::cuCtxEnablePeerAccess(a.context().raw(), 0) };
                if r != sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
                    check(r, "cuCtxEnablePeerAccess")?;
                }
                let s = CudaStream::new(b.context(), format!("cuda{j}<-cuda{i}"), false)?;
                links.push(CudaLink::new(
                    a.space(),
                    b.space(),
                    LinkKind::Peer,
                    format!("cuda{i}->cuda{j}"),
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
