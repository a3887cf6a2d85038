//! Discovery of a runtime's GPUs: devices (those the backend is told to take), one host->device
//! and one device->host link per GPU, each on its own stream, and a peer link (on a stream of
//! the destination) for every ordered pair of GPUs with direct access.

use crate::current::CurrentGuard;
use crate::device::GpuDevice;
use crate::link::{End, GpuLink};
use crate::registration::{GpuRegistrar, PinPolicy};
use crate::runtime::GpuRuntime;
use crate::stream::GpuStream;
use hetblas_core::fault::FaultSpec;
use hetblas_core::{Backend, Device, Discovery, Link, Result};
use std::marker::PhantomData;
use std::sync::Arc;

/// What discovery found, typed (tests and tools reach the runtime's own services through it).
pub struct GpuDiscovery<A: GpuRuntime> {
    pub devices: Vec<Arc<GpuDevice<A>>>,
    pub links: Vec<Arc<GpuLink<A>>>,
}

impl<A: GpuRuntime> GpuDiscovery<A> {
    /// Loads the runtime and finds the devices and links `backend` says to take.
    ///
    /// # Errors
    /// `Unavailable` with the reason (library not found, no device, a filter selecting none).
    pub fn find(backend: &GpuBackend<A>) -> Result<Self> {
        let lib = A::init()?;
        // Discovery binds every device on this thread (the drop-in library discovers inside
        // the caller's first BLAS call): what the caller had current stays current.
        let _caller = CurrentGuard::<A>::save();
        let count = A::device_count(&lib)?;
        let ordinals = hetblas_core::device::select_ordinals(
            A::NAME,
            A::DEVICES_VAR,
            backend.devices.as_deref(),
            count,
        )?;
        let contexts = ordinals
            .iter()
            .map(|&o| A::open(o).map(Arc::new))
            .collect::<Result<Vec<_>>>()?;
        let pins = Arc::new(GpuRegistrar::<A>::cache(contexts[0].clone(), backend.pin));
        let name = A::NAME;
        let mut devices = Vec::new();
        let mut links = Vec::new();
        for (i, ctx) in contexts.iter().enumerate() {
            let dev = GpuDevice::<A>::new(&lib, i, ctx.clone(), pins.clone())?;
            dev.faults().arm_matching(i, &backend.faults);
            let end = || End::Device(dev.space(), ctx.clone());
            let h2d = GpuStream::new(ctx, format!("{name}{i}/h2d"), false)?;
            let d2h = GpuStream::new(ctx, format!("{name}{i}/d2h"), false)?;
            let h2d = GpuLink::new(
                format!("host->{name}{i}"),
                End::Host,
                end(),
                h2d,
                pins.clone(),
            );
            h2d.set_faults(vec![dev.faults().clone()]);
            links.push(h2d);
            let d2h = GpuLink::new(
                format!("{name}{i}->host"),
                end(),
                End::Host,
                d2h,
                pins.clone(),
            );
            d2h.set_faults(vec![dev.faults().clone()]);
            links.push(d2h);
            devices.push(dev);
        }
        for (i, a) in devices.iter().enumerate() {
            for (j, b) in devices.iter().enumerate() {
                if i == j || !A::can_access_peer(b.context(), a.context())? {
                    continue;
                }
                // The copy a -> b runs on a stream of b, which must be able to reach a's memory.
                A::bind(b.context())?;
                A::enable_peer_access(b.context(), a.context())?;
                let s = GpuStream::new(b.context(), format!("{name}{j}<-{name}{i}"), false)?;
                let (src, dst) = (
                    End::Device(a.space(), a.context().clone()),
                    End::Device(b.space(), b.context().clone()),
                );
                let peer = GpuLink::new(format!("{name}{i}->{name}{j}"), src, dst, s, pins.clone());
                // A peer copy is issued by the destination device and counts as its copy.
                peer.set_faults(vec![b.faults().clone(), a.faults().clone()]);
                links.push(peer);
            }
        }
        Ok(GpuDiscovery { devices, links })
    }

    /// The untyped form the device pool takes.
    pub fn into_discovery(self) -> Discovery {
        Discovery {
            devices: self
                .devices
                .into_iter()
                .map(|d| d as Arc<dyn Device>)
                .collect(),
            links: self.links.into_iter().map(|l| l as Arc<dyn Link>).collect(),
        }
    }
}

/// The hetblas [`Backend`] of runtime `A` (adapters name it: `hetblas_cuda::CudaBackend`), with
/// what discovery is told (the `hetblas` crate fills it from the settings it reads).
pub struct GpuBackend<A> {
    /// The device ordinals to take, in this order (`A::DEVICES_VAR`); `None`: all of them.
    pub devices: Option<Vec<i32>>,
    /// Faults to arm on the devices they are for ([`hetblas_core::fault`]).
    pub faults: Vec<FaultSpec>,
    /// How host memory is prepared for the devices' copies.
    pub pin: PinPolicy,
    runtime: PhantomData<fn() -> A>,
}

impl<A> GpuBackend<A> {
    /// Every device, no fault, the default pin policy.
    pub const fn new() -> Self {
        GpuBackend {
            devices: None,
            faults: Vec::new(),
            pin: PinPolicy::Cache,
            runtime: PhantomData,
        }
    }
}

impl<A> Clone for GpuBackend<A> {
    fn clone(&self) -> Self {
        GpuBackend {
            devices: self.devices.clone(),
            faults: self.faults.clone(),
            pin: self.pin,
            runtime: PhantomData,
        }
    }
}

impl<A> Default for GpuBackend<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: GpuRuntime> std::fmt::Debug for GpuBackend<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuBackend<{}>", A::NAME)
    }
}

impl<A: GpuRuntime> GpuBackend<A> {
    /// Discovery with the devices and links typed (tests and tools reach the registration
    /// cache through it).
    pub fn discover_gpus(&self) -> Result<GpuDiscovery<A>> {
        GpuDiscovery::find(self)
    }
}

impl<A: GpuRuntime> Backend for GpuBackend<A> {
    fn name(&self) -> &'static str {
        A::NAME
    }
    fn discover(&self) -> Result<Discovery> {
        Ok(self.discover_gpus()?.into_discovery())
    }
}
