//! The symmetric/Hermitian routines as the tiles of one GEMM plan ([`SymTiles`]): which C
//! tiles the plan computes, which stored tile of an operand a product reads (and with which
//! transpose), and which products run the routine's own kernel. The planner and the executor
//! both ask here, so a tile is cached under the name it is read by.
//!
//! The grid's tiles are square where the structure needs it (C's rows and columns for a rank
//! update; the symmetric operand's two dimensions for SYMM/HEMM), so a tile of the symmetric
//! matrix across the diagonal is exactly a stored tile transposed.

use crate::operand::Trans;
use crate::problem::GemmProblem;
use crate::sym::{Side, SymOp, SymTiles};
use crate::tiling::TileKey;

/// Whether the plan computes C tile `(i, j)`.
pub fn has_c_tile(p: &GemmProblem, i: usize, j: usize) -> bool {
    match p.sym {
        Some(SymTiles {
            op: SymOp::Rank { uplo, .. },
            diagonal,
        }) => uplo.contains(i, j) && (diagonal || i != j),
        _ => true,
    }
}

/// A rank update's diagonal C tile: computed by the routine's kernel, which writes only the
/// triangle, so the tile always travels whole (fetched even with beta = 0, never folded on the
/// host or added late) and its other triangle goes back as it came, bit for bit.
pub fn triangle_tile(p: &GemmProblem, i: usize, j: usize) -> bool {
    i == j && p.sym.is_some_and(|s| s.triangle())
}

/// Whether product `(i, j, l)` runs the routine's kernel instead of GEMM: a rank update's
/// diagonal tile, or SYMM/HEMM's diagonal tile of the symmetric operand.
pub fn routine_product(p: &GemmProblem, i: usize, j: usize, l: usize) -> bool {
    match p.sym.map(|s| s.op) {
        Some(SymOp::Rank { .. }) => i == j,
        Some(SymOp::Multiply {
            side: Side::Left, ..
        }) => i == l,
        Some(SymOp::Multiply {
            side: Side::Right, ..
        }) => l == j,
        None => false,
    }
}

/// The stored tile of op(A) tile `(i, l)` and the transpose it is read with.
pub fn a_tile(p: &GemmProblem, i: usize, l: usize) -> (TileKey, Trans) {
    match p.sym.map(|s| s.op) {
        Some(
            op @ SymOp::Multiply {
                side: Side::Left,
                uplo,
                ..
            },
        ) if !uplo.contains(i, l) => (TileKey::a(l, i), op.tconj()),
        _ => (TileKey::a(i, l), p.transa),
    }
}

/// The stored tile of op(B) tile `(l, j)` and the transpose it is read with. SYRK/HERK's B is
/// A itself: its tile is A's tile `(j, l)`, cached once for both uses.
pub fn b_tile(p: &GemmProblem, l: usize, j: usize) -> (TileKey, Trans) {
    match p.sym.map(|s| s.op) {
        Some(
            op @ SymOp::Multiply {
                side: Side::Right,
                uplo,
                ..
            },
        ) if !uplo.contains(l, j) => (TileKey::b(j, l), op.tconj()),
        Some(SymOp::Rank { two: false, .. }) => (TileKey::a(j, l), p.transb),
        _ => (TileKey::b(l, j), p.transb),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemorySpace;
    use crate::scalar::DType;
    use crate::sym::Uplo;

    fn problem(op: SymOp, diagonal: bool) -> GemmProblem {
        GemmProblem {
            transa: Trans::N,
            transb: Trans::T,
            m: 10,
            n: 10,
            k: 10,
            dtype: DType::F64,
            beta_zero: false,
            locations: [MemorySpace::HOST; 3],
            sym: Some(SymTiles { op, diagonal }),
        }
    }

    #[test]
    fn rank_updates_cover_their_triangle() {
        let op = |uplo| SymOp::Rank {
            uplo,
            trans: Trans::N,
            two: false,
            herm: false,
        };
        let p = problem(op(Uplo::Lower), true);
        assert!(has_c_tile(&p, 2, 1) && has_c_tile(&p, 1, 1) && !has_c_tile(&p, 1, 2));
        assert!(triangle_tile(&p, 1, 1) && !triangle_tile(&p, 2, 1));
        let p = problem(op(Uplo::Upper), false);
        assert!(has_c_tile(&p, 1, 2) && !has_c_tile(&p, 1, 1) && !has_c_tile(&p, 2, 1));
        // B is A: one cached tile for both.
        assert_eq!(b_tile(&p, 3, 1), (TileKey::a(1, 3), Trans::T));
    }

    #[test]
    fn symmetric_operand_reads_its_stored_triangle() {
        let op = |side, uplo| SymOp::Multiply {
            side,
            uplo,
            herm: true,
        };
        let p = problem(op(Side::Left, Uplo::Lower), true);
        assert_eq!(a_tile(&p, 2, 1), (TileKey::a(2, 1), Trans::N));
        assert_eq!(a_tile(&p, 1, 2), (TileKey::a(2, 1), Trans::C));
        assert!(routine_product(&p, 1, 0, 1) && !routine_product(&p, 1, 1, 0));
        let p = problem(op(Side::Right, Uplo::Upper), true);
        assert_eq!(b_tile(&p, 1, 2), (TileKey::b(1, 2), Trans::T));
        assert_eq!(b_tile(&p, 2, 1), (TileKey::b(1, 2), Trans::C));
        assert!(routine_product(&p, 0, 2, 2));
    }
}
