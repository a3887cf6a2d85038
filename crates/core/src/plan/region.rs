//! Which of C's entries a GEMM plan computes ([`CRegion`]: all, or GEMMT's triangle), carried by
//! the plan's request, its cache key and the plan itself: which C tiles exist and, for each,
//! which entries are written ([`TileMask`]). A tile written in part is computed whole into a
//! slot and folded on the host through its mask ([`crate::fold`]), so the entries outside the
//! region are neither read nor written.

use crate::error::{Error, Result};
use crate::problem::Uplo;
use std::ops::Range;

/// The part of C a GEMM plan computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CRegion {
    /// Every entry of C.
    #[default]
    All,
    /// One triangle of a square C, its diagonal included (GEMMT), on a tile grid square in C:
    /// the tiles on that side of the diagonal whole, the diagonal tiles in part.
    Triangle(Uplo),
}

/// A triangle of C (GEMMT's `uplo`).
impl From<Uplo> for CRegion {
    fn from(uplo: Uplo) -> Self {
        CRegion::Triangle(uplo)
    }
}

/// A triangle of C, or all of C (`None`): the `uplo` of a caller that computes either.
impl From<Option<Uplo>> for CRegion {
    fn from(uplo: Option<Uplo>) -> Self {
        uplo.map_or(CRegion::All, CRegion::Triangle)
    }
}

impl CRegion {
    /// Whether the region fits C of `m x n` (a triangle needs C square); the error is a BLAS
    /// argument error of the routine that computes the region, as its reference numbers it.
    pub fn check_shape(self, m: usize, n: usize) -> Result<()> {
        match self {
            CRegion::Triangle(_) if m != n => Err(Error::InvalidArgument {
                routine: "GEMMTR",
                param: 4,
                name: "n",
                reason: format!("C is {m}x{n}: a triangle needs it square"),
            }),
            _ => Ok(()),
        }
    }

    /// Whether C's tiles must be square (`tm == tn`): a region cut along C's diagonal has its
    /// tiles in part on the diagonal, and a tile there must hold the diagonal's corner.
    pub fn square_tiles(self) -> bool {
        matches!(self, CRegion::Triangle(_))
    }

    /// Whether C tile `(i, j)` holds entries of the region.
    pub fn has_tile(self, i: usize, j: usize) -> bool {
        match self {
            CRegion::All => true,
            CRegion::Triangle(uplo) => uplo.contains(i, j),
        }
    }

    /// The entries of C tile `(i, j)` (one of [`CRegion::has_tile`]'s) in the region.
    pub fn mask(self, i: usize, j: usize) -> TileMask {
        match self {
            CRegion::Triangle(uplo) if i == j => TileMask::Triangle(uplo),
            _ => TileMask::Whole,
        }
    }

    /// The region of C tile `(i, j)` taken as a C of its own: what a tile that did not finish
    /// runs again as, alone.
    pub fn tile_region(self, i: usize, j: usize) -> CRegion {
        match self.mask(i, j) {
            TileMask::Whole => CRegion::All,
            TileMask::Triangle(uplo) => CRegion::Triangle(uplo),
        }
    }

    /// The region as the mask of C taken as one tile (the quick return's scaling of C).
    pub fn whole_mask(self) -> TileMask {
        match self {
            CRegion::All => TileMask::Whole,
            CRegion::Triangle(uplo) => TileMask::Triangle(uplo),
        }
    }

    /// Whether the region is all of C.
    pub fn is_all(self) -> bool {
        self == CRegion::All
    }
}

/// The entries of one C tile a plan writes, column by column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TileMask {
    /// Every entry.
    #[default]
    Whole,
    /// The tile's triangle, its diagonal included.
    Triangle(Uplo),
}

impl TileMask {
    /// Whether every entry of the tile is written.
    pub fn is_whole(self) -> bool {
        self == TileMask::Whole
    }

    /// The rows of column `j` inside the mask, in a tile of `rows` rows.
    pub fn rows(self, j: usize, rows: usize) -> Range<usize> {
        match self {
            TileMask::Whole => 0..rows,
            TileMask::Triangle(Uplo::Lower) => j.min(rows)..rows,
            TileMask::Triangle(Uplo::Upper) => 0..(j + 1).min(rows),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A triangle region: its side's tiles, the diagonal ones in part, each column's rows
    /// from (lower) or up to (upper) the diagonal.
    #[test]
    fn a_triangle_region_holds_its_sides_tiles_and_masks_the_diagonal() {
        let lower = CRegion::Triangle(Uplo::Lower);
        assert!(lower.has_tile(2, 1) && lower.has_tile(1, 1) && !lower.has_tile(1, 2));
        assert_eq!(lower.mask(2, 1), TileMask::Whole);
        assert_eq!(lower.mask(1, 1), TileMask::Triangle(Uplo::Lower));
        assert_eq!(TileMask::Triangle(Uplo::Lower).rows(1, 3), 1..3);
        assert_eq!(TileMask::Triangle(Uplo::Upper).rows(1, 3), 0..2);
        assert_eq!(TileMask::Triangle(Uplo::Upper).rows(5, 3), 0..3);
        assert!(CRegion::All.has_tile(1, 2) && CRegion::All.mask(1, 1).is_whole());
        assert_eq!(TileMask::Whole.rows(7, 3), 0..3);
    }

    /// A triangle needs C square, its tiles square, and its diagonal tiles run again alone as
    /// triangles of their own; all of C takes any shape.
    #[test]
    fn a_triangle_region_asks_for_square_c_and_square_tiles() {
        let upper = CRegion::from(Uplo::Upper);
        assert_eq!(upper, CRegion::Triangle(Uplo::Upper));
        assert_eq!(CRegion::from(None), CRegion::All);
        assert!(upper.check_shape(5, 5).is_ok() && CRegion::All.check_shape(5, 4).is_ok());
        assert_eq!(upper.check_shape(5, 4).unwrap_err().blas_param(), Some(4));
        assert!(upper.square_tiles() && !CRegion::All.square_tiles());
        assert_eq!(upper.tile_region(2, 2), upper);
        assert_eq!(upper.tile_region(1, 2), CRegion::All);
        assert_eq!(CRegion::All.tile_region(2, 2), CRegion::All);
    }
}
