//! Memory spaces, device buffers and raw tile views. Addresses are plain `u64`s meaningful only
//! inside their space; a [`RawTile`] pairs one with its space, shape, leading dimension and dtype
//! so that links and kernels can check they were handed memory they can reach.

use crate::scalar::DType;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};

/// Identifies one memory space of the node. The host is [`MemorySpace::HOST`]; every device
/// memory gets a fresh id from [`MemorySpace::new_device`].
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct MemorySpace(pub u32);

static NEXT_SPACE: AtomicU32 = AtomicU32::new(1);

impl MemorySpace {
    pub const HOST: MemorySpace = MemorySpace(0);

    /// A new, process-unique device memory space.
    pub fn new_device() -> MemorySpace {
        MemorySpace(NEXT_SPACE.fetch_add(1, Ordering::Relaxed))
    }

    pub fn is_host(self) -> bool {
        self == Self::HOST
    }
}

impl fmt::Debug for MemorySpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_host() {
            f.write_str("host")
        } else {
            write!(f, "mem{}", self.0)
        }
    }
}

impl fmt::Display for MemorySpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Memory owned by a device (or by the host on a device's behalf). Dropping it frees it; the
/// executor guarantees no queued operation still uses it at that point.
pub trait Buffer: Send + Sync + fmt::Debug {
    /// The space the address belongs to.
    fn space(&self) -> MemorySpace;
    /// The address of the first byte.
    fn addr(&self) -> u64;
    /// Size in bytes.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Memory a caller owns, lent to hetblas for one call: it names the region and frees nothing
/// when dropped (see [`crate::pool::DevicePool::borrow_matrix`]).
#[derive(Debug, Clone, Copy)]
pub struct BorrowedBuffer {
    space: MemorySpace,
    addr: u64,
    len: usize,
}

impl BorrowedBuffer {
    /// The `len` bytes at `addr` in `space` (only a description: creating one is safe).
    pub fn new(space: MemorySpace, addr: u64, len: usize) -> BorrowedBuffer {
        BorrowedBuffer { space, addr, len }
    }
}

impl Buffer for BorrowedBuffer {
    fn space(&self) -> MemorySpace {
        self.space
    }
    fn addr(&self) -> u64 {
        self.addr
    }
    fn len(&self) -> usize {
        self.len
    }
}

/// A column-major tile somewhere in some memory space: element (0, 0) at `addr`, `rows x cols`,
/// leading dimension `ld` (in elements). Views, not copies: tiles of an operand point into it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RawTile {
    pub space: MemorySpace,
    pub addr: u64,
    pub rows: usize,
    pub cols: usize,
    pub ld: usize,
    pub dtype: DType,
}

impl RawTile {
    /// The tile starting at element (row, col) of this one, `rows x cols` large.
    pub fn sub(&self, row: usize, col: usize, rows: usize, cols: usize) -> RawTile {
        debug_assert!(row + rows <= self.rows && col + cols <= self.cols);
        RawTile {
            addr: self.addr + ((row + col * self.ld) * self.dtype.size()) as u64,
            rows,
            cols,
            ..*self
        }
    }

    /// Bytes in the tile's elements (not counting the gaps between columns).
    pub fn bytes(&self) -> usize {
        self.rows * self.cols * self.dtype.size()
    }

    /// Bytes from the first element to the last one inclusive (what a host operand spans in
    /// memory: `(cols - 1) * ld + rows` elements).
    pub fn extent_bytes(&self) -> usize {
        if self.is_empty() {
            0
        } else {
            ((self.cols - 1) * self.ld + self.rows) * self.dtype.size()
        }
    }

    /// Bytes of one column.
    pub fn row_bytes(&self) -> usize {
        self.rows * self.dtype.size()
    }

    /// Leading dimension in bytes (the pitch of a 2D copy).
    pub fn pitch(&self) -> usize {
        self.ld * self.dtype.size()
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0 || self.cols == 0
    }

    /// Whether the columns are contiguous (a 2D copy can be one linear copy).
    pub fn is_contiguous(&self) -> bool {
        self.ld == self.rows || self.cols <= 1
    }
}

/// How a call uses a host region it hands to a device (page-locking backends verify memory they
/// will write differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostAccess {
    Read,
    ReadWrite,
}
