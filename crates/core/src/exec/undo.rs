//! The undo log of C: the values a call overwrites, kept so that a call that fails on every
//! device leaves C bit-identical to what it was before (the old C cannot be derived from the
//! new: beta may be 0). The executor saves each C region into host memory just before its
//! first write; the call restores them all, newest first, when it gives up. Per tile, because
//! copying all of C up front is a pass nothing overlaps, and holding final tiles on the device
//! until the end defeats out-of-core runs.

use crate::error::{lock, Error, Result};
use crate::link::Link;
use crate::memory::{MemorySpace, RawTile};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Which first writes into an operand a run saves the regions of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UndoScope {
    /// Every one: a call that fails on every device can put the operand back.
    Every,
    /// Only kernels' writes in the operand itself (not copies of final tiles into it): what a
    /// device computing in the operand's own memory changed can be put back, and the final
    /// tiles others wrote kept.
    InPlace,
}

/// One saved region: where it was, and its old contents, packed (ld = rows).
struct Saved {
    tile: RawTile,
    /// u64 words so that every dtype (up to 16-byte complex, 8-byte aligned) is aligned.
    data: Vec<u64>,
}

/// The saved originals of the C regions one call overwrote, in the order they were saved.
#[derive(Default)]
pub struct UndoLog {
    saved: Mutex<Vec<Saved>>,
}

/// Bytes per thread above which a host save or restore is split over threads.
const PARALLEL_CHUNK_BYTES: usize = 8 << 20;

type Links = HashMap<(MemorySpace, MemorySpace), Arc<dyn Link>>;

impl UndoLog {
    pub fn new() -> UndoLog {
        UndoLog::default()
    }

    /// Whether no region is saved.
    pub fn is_empty(&self) -> bool {
        lock(&self.saved).is_empty()
    }

    /// Saves the current contents of `tile` (a region of C). Blocks until they are copied:
    /// the caller issues the write into `tile` after this returns.
    ///
    /// # Errors
    /// A device-resident tile is read over its device's link to the host: that copy's errors
    /// (the device's fault, the write must not happen).
    pub fn save(&self, tile: &RawTile, links: &Links) -> Result<()> {
        if tile.is_empty() {
            return Ok(());
        }
        let mut data = vec![0u64; tile.bytes().div_ceil(8)];
        copy(tile, &packed(tile, data.as_mut_ptr() as u64), links)?;
        lock(&self.saved).push(Saved { tile: *tile, data });
        Ok(())
    }

    /// Writes every saved region back, newest first (a region saved twice ends with its
    /// oldest contents), and empties the log.
    ///
    /// # Errors
    /// The first copy that failed (a device-resident C on a device that is lost); the other
    /// regions are restored regardless.
    pub fn restore(&self, links: &Links) -> Result<()> {
        let saved = std::mem::take(&mut *lock(&self.saved));
        saved
            .iter()
            .rev()
            .map(|s| copy(&packed(&s.tile, s.data.as_ptr() as u64), &s.tile, links))
            .fold(Ok(()), Result::and)
    }
}

/// `tile`'s shape packed (ld = rows) in host memory at `addr`.
fn packed(tile: &RawTile, addr: u64) -> RawTile {
    RawTile {
        space: MemorySpace::HOST,
        addr,
        ld: tile.rows,
        ..*tile
    }
}

/// A blocking copy between two tiles of the same shape, one of them in host memory.
fn copy(src: &RawTile, dst: &RawTile, links: &Links) -> Result<()> {
    if src.space.is_host() && dst.space.is_host() {
        // Large tiles are copied by several threads: one thread copies ~6 GB/s (measured on
        // this CI machine), less than the GPUs' compute consumes C at, and the issuing thread
        // waits for the save.
        let threads = (src.bytes() / PARALLEL_CHUNK_BYTES)
            .min(std::thread::available_parallelism().map_or(1, |n| n.get()))
            .min(src.cols)
            .max(1);
        let per = src.cols.div_ceil(threads);
        let (src, dst) = (*src, *dst);
        let columns = move |from: usize, to: usize| {
            let col = src.row_bytes();
            for j in from..to {
                let at = |t: &RawTile| t.addr + (j * t.pitch()) as u64;
                // SAFETY: one tile is a region of the caller's C, borrowed for the whole call
                // (the executor synchronises every queue before the log is restored, and saves
                // before it issues any write into the region); the other is a log buffer of
                // `rows x cols` elements owned here. Each column is `col` bytes inside its
                // tile, the two do not overlap (the log's buffers are its own allocations), and
                // each thread copies its own columns.
                unsafe {
                    std::ptr::copy_nonoverlapping(at(&src) as *const u8, at(&dst) as *mut u8, col);
                }
            }
        };
        if threads == 1 {
            columns(0, src.cols);
        } else {
            std::thread::scope(|s| {
                for t in 0..threads {
                    let (from, to) = (t * per, ((t + 1) * per).min(src.cols));
                    s.spawn(move || columns(from, to));
                }
            });
        }
        return Ok(());
    }
    let link = links.get(&(src.space, dst.space)).ok_or_else(|| {
        Error::internal(format!(
            "undo log: no link {:?}->{:?} to save or restore C",
            src.space, dst.space
        ))
    })?;
    // This copy's own event, recorded with it: another thread's synchronize of the same link
    // may take (and clear) the queue's error, but the event still says whether this copy ran.
    // (Recorded apart, a synchronize between the two let a save that never ran pass, and the
    // restore wrote zeros into C.)
    let done = link.copy_recorded(src, dst)?;
    match done.synchronize() {
        Ok(()) => Ok(()),
        Err(e) => {
            // Clears the failure from the queue so that later copies run; the error it
            // reports is this one, or an earlier one of the same device, returned above.
            let _cleared = link.queue().synchronize();
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalar::DType;

    fn view(data: &mut [f64], rows: usize, cols: usize, ld: usize) -> RawTile {
        RawTile {
            space: MemorySpace::HOST,
            addr: data.as_mut_ptr() as u64,
            rows,
            cols,
            ld,
            dtype: DType::F64,
        }
    }

    #[test]
    fn restores_overlapping_saves_to_the_oldest_contents() {
        let (m, n) = (7, 5);
        let orig: Vec<f64> = (0..m * n).map(|x| x as f64 * 0.5 - 3.0).collect();
        let mut c = orig.clone();
        let links = Links::new();
        let log = UndoLog::new();
        let whole = view(&mut c, m, n, m);
        log.save(&whole.sub(1, 1, 3, 2), &links).unwrap();
        c[1 + m] = f64::NAN;
        // Saved again after a write: the restore must still end with the first contents.
        log.save(&whole.sub(0, 1, 4, 3), &links).unwrap();
        for x in &mut c {
            *x = -1.0;
        }
        assert_eq!(lock(&log.saved).len(), 2);
        log.restore(&links).unwrap();
        assert!(log.is_empty());
        for (x, (&got, &want)) in c.iter().zip(&orig).enumerate() {
            let (i, j) = (x % m, x / m);
            let saved = i < 4 && (1..4).contains(&j);
            let expect = if saved { want } else { -1.0 };
            assert_eq!(got.to_bits(), expect.to_bits(), "C({i}, {j})");
        }
    }

    #[test]
    fn a_large_tile_is_saved_by_several_threads_exactly() {
        // 24 MiB with a padded leading dimension: three chunks of columns.
        let (m, n, ld) = (1000, 3146, 1001);
        let orig: Vec<f64> = (0..ld * n).map(|x| (x as f64).sin()).collect();
        let mut c = orig.clone();
        let links = Links::new();
        let log = UndoLog::new();
        log.save(&view(&mut c, m, n, ld), &links).unwrap();
        for j in 0..n {
            c[j * ld..j * ld + m].fill(0.0);
        }
        log.restore(&links).unwrap();
        assert!(c.iter().zip(&orig).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}
