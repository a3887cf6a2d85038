//! The Link trait: a directed channel between two memory spaces that copies 2D strided tiles
//! asynchronously on its own queue (a DMA engine). Cross-vendor device pairs have no link; the
//! router sends their tiles through host memory.

use crate::error::{Error, Result};
use crate::memory::{MemorySpace, RawTile};
use crate::queue::{Event, Queue};
use std::fmt;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum LinkKind {
    HostToDevice,
    DeviceToHost,
    /// Device to device of the same backend (NVLink, PCIe peer, emulated peer).
    Peer,
}

/// A directed copy channel `src -> dst`.
pub trait Link: Send + Sync + fmt::Debug {
    fn src(&self) -> MemorySpace;
    fn dst(&self) -> MemorySpace;
    fn kind(&self) -> LinkKind;
    /// "host->cuda0", "cuda0->cuda1".
    fn name(&self) -> &str;
    /// The queue the copies run on, in order.
    fn queue(&self) -> &Arc<dyn Queue>;
    /// Copies the tile `src` to `dst` (same shape and dtype, each with its own leading
    /// dimension), asynchronously on [`Link::queue`].
    ///
    /// # Errors
    /// `InvalidInput` if the tiles do not match or are not in this link's spaces; backend errors.
    fn copy(&self, src: &RawTile, dst: &RawTile) -> Result<()>;
    /// [`Link::copy`] and an event recorded right behind it, saying whether this copy ran (host
    /// queues enqueue the two together, so another thread's failed job cannot come between).
    fn copy_recorded(&self, src: &RawTile, dst: &RawTile) -> Result<Arc<dyn Event>> {
        self.copy(src, dst)?;
        self.queue().record()
    }
    /// Bandwidth (bytes/s) known without calibration (emulated links know theirs).
    fn nominal_bandwidth(&self) -> Option<f64> {
        None
    }
    /// Seconds the link has spent, since it was made, allocating page-locked staging buffers
    /// for copies of unregistered host memory (0 for links that stage nothing).
    fn staging_alloc_seconds(&self) -> f64 {
        0.0
    }
}

/// Checks a copy request against a link; backends call it before touching their FFI.
pub fn check_copy(link: &dyn Link, src: &RawTile, dst: &RawTile) -> Result<()> {
    if src.space != link.src() || dst.space != link.dst() {
        return Err(Error::InvalidInput(format!(
            "link {} copies {:?}->{:?}, asked {:?}->{:?}",
            link.name(),
            link.src(),
            link.dst(),
            src.space,
            dst.space
        )));
    }
    if src.rows != dst.rows || src.cols != dst.cols || src.dtype != dst.dtype {
        return Err(Error::InvalidInput(format!(
            "copy shape mismatch: {}x{} {} -> {}x{} {}",
            src.rows, src.cols, src.dtype, dst.rows, dst.cols, dst.dtype
        )));
    }
    if src.ld < src.rows.max(1) || dst.ld < dst.rows.max(1) {
        return Err(Error::InvalidInput(format!(
            "copy leading dimensions {} / {} below rows {}",
            src.ld, dst.ld, src.rows
        )));
    }
    Ok(())
}
