//! How a symmetric, Hermitian or triangular matrix is stored (full, band or packed), so that one
//! routine per operation serves all three storages: it visits only column j's stored entries.

use std::ops::Range;

use crate::strided::mat_len;

/// The storage of an n x n matrix of which one triangle (`upper` or not) is stored.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Storage {
    /// Column-major with leading dimension `lda`.
    Full { lda: usize },
    /// Band storage with `k` off-diagonals: entry (i, j) at row `k + i - j` (upper) or `i - j`
    /// (lower) of column j.
    Band { k: usize, lda: usize },
    /// Packed columns of the triangle, one after the other.
    Packed,
}

impl Storage {
    /// Number of elements the storage of an n x n matrix spans.
    pub(crate) fn len(self, n: usize) -> usize {
        match self {
            Storage::Full { lda } => mat_len(n, n, lda),
            Storage::Band { k, lda } => mat_len(k + 1, n, lda),
            Storage::Packed => n * (n + 1) / 2,
        }
    }

    /// Index of the stored entry (i, j), `i <= j` for upper, `i >= j` for lower, within the band.
    #[inline(always)]
    pub(crate) fn idx(self, upper: bool, n: usize, i: usize, j: usize) -> usize {
        match self {
            Storage::Full { lda } => i + j * lda,
            Storage::Band { k, lda } => {
                if upper {
                    k + i - j + j * lda
                } else {
                    i - j + j * lda
                }
            }
            Storage::Packed => {
                if upper {
                    i + j * (j + 1) / 2
                } else {
                    j * (2 * n - j + 1) / 2 + i - j
                }
            }
        }
    }

    /// The rows i != j of column j's stored entries.
    #[inline(always)]
    pub(crate) fn off_diag(self, upper: bool, n: usize, j: usize) -> Range<usize> {
        match (self, upper) {
            (Storage::Band { k, .. }, true) => j.saturating_sub(k)..j,
            (Storage::Band { k, .. }, false) => j + 1..n.min(j + k + 1),
            (_, true) => 0..j,
            (_, false) => j + 1..n,
        }
    }
}
