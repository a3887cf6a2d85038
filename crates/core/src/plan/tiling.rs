//! Tile decomposition: the m, n, k dimensions cut into tiles of `tm`, `tn`, `tk` (the last tile of
//! each dimension may be shorter: an edge tile). Tiles are named in the operation's coordinates
//! (A: (i, l), B: (l, j), C: (i, j)); [`TileGrid::stored_block`] maps them to stored rows/cols.

use crate::problem::{GemmProblem, Operand};

/// A tile of one operand, in operation coordinates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct TileKey {
    pub op: Operand,
    /// Block row in op(X) (i for A and C, l for B).
    pub r: u32,
    /// Block column in op(X) (l for A, j for B and C).
    pub c: u32,
}

impl TileKey {
    fn of(op: Operand, r: usize, c: usize) -> TileKey {
        let (r, c) = (r as u32, c as u32);
        TileKey { op, r, c }
    }
    pub fn a(i: usize, l: usize) -> TileKey {
        TileKey::of(Operand::A, i, l)
    }
    pub fn b(l: usize, j: usize) -> TileKey {
        TileKey::of(Operand::B, l, j)
    }
    pub fn c(i: usize, j: usize) -> TileKey {
        TileKey::of(Operand::C, i, j)
    }
}

/// A block of a stored matrix: first row, first column, rows, cols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub row: usize,
    pub col: usize,
    pub rows: usize,
    pub cols: usize,
}

impl Block {
    /// Rows `row..row + rows`, columns `col..col + cols`.
    pub fn new(row: usize, rows: usize, col: usize, cols: usize) -> Block {
        Block {
            row,
            col,
            rows,
            cols,
        }
    }
}

/// How many C tiles the planner accumulates together by default: the first group of four
/// (a 2x2 block) needs 4 new A/B tiles per 4 products instead of 2 per product, so transfers
/// keep up with compute from the start.
pub const DEFAULT_GROUP: usize = 4;

/// Tile sizes and how many C tiles accumulate together (the k loop runs outermost within a
/// group, so a group's C tiles finish together). Square tiles in groups of four suit most
/// problems; thin-by-fat ones (K much larger than M and N) stream: narrow C tiles one at a
/// time, so C tiles finish (and go back) while A and B still arrive and only the last narrow
/// tile's write-back is left at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Blocking {
    pub tm: usize,
    pub tn: usize,
    pub tk: usize,
    pub group: usize,
}

impl Blocking {
    /// Square tiles of `t` in groups of [`DEFAULT_GROUP`].
    pub fn square(t: usize) -> Blocking {
        Blocking {
            tm: t,
            tn: t,
            tk: t,
            group: DEFAULT_GROUP,
        }
    }

    /// Square tiles in the default group.
    pub fn is_square(&self) -> bool {
        self.tm == self.tn && self.tn == self.tk && self.group == DEFAULT_GROUP
    }

    /// The decomposition of an `m x n x k` problem (tiles clamped to the dimensions).
    pub fn grid(&self, m: usize, n: usize, k: usize) -> TileGrid {
        TileGrid {
            m,
            n,
            k,
            tm: self.tm.max(1).min(m.max(1)),
            tn: self.tn.max(1).min(n.max(1)),
            tk: self.tk.max(1).min(k.max(1)),
        }
    }
}

impl From<usize> for Blocking {
    fn from(t: usize) -> Blocking {
        Blocking::square(t)
    }
}

impl std::fmt::Display for Blocking {
    /// `4096` for square tiles in the default group, else `TMxTNxTK/gGROUP`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_square() {
            write!(f, "{}", self.tm)
        } else {
            write!(f, "{}x{}x{}/g{}", self.tm, self.tn, self.tk, self.group)
        }
    }
}

impl std::str::FromStr for Blocking {
    type Err = String;
    /// `T` (square, default group) or `TMxTNxTK` with an optional `/gG` (default group).
    fn from_str(s: &str) -> Result<Blocking, String> {
        let (dims, group) = match s.split_once("/g") {
            Some((d, g)) => (
                d,
                g.parse::<usize>()
                    .map_err(|_| format!("bad group in blocking {s:?}"))?,
            ),
            None => (s, DEFAULT_GROUP),
        };
        let v: Vec<usize> = dims
            .split('x')
            .map(|x| x.trim().parse::<usize>())
            .collect::<Result<_, _>>()
            .map_err(|_| format!("bad blocking {s:?}: expected T or TMxTNxTK[/gG]"))?;
        let b = match v[..] {
            [t] => Blocking {
                group,
                ..Blocking::square(t)
            },
            [tm, tn, tk] => Blocking { tm, tn, tk, group },
            _ => return Err(format!("bad blocking {s:?}: expected T or TMxTNxTK[/gG]")),
        };
        if b.tm == 0 || b.tn == 0 || b.tk == 0 || b.group == 0 {
            return Err(format!(
                "bad blocking {s:?}: sizes and group must be positive"
            ));
        }
        Ok(b)
    }
}

/// The tile decomposition of a GEMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct TileGrid {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub tm: usize,
    pub tn: usize,
    pub tk: usize,
}

/// Start and length of tile `idx` of `t` along `len`.
pub(crate) fn span(len: usize, t: usize, idx: usize) -> (usize, usize) {
    let start = idx * t;
    (start, t.min(len.saturating_sub(start)))
}

impl TileGrid {
    /// Square tiles of size `t` (clamped to each dimension so no tile is larger than the matrix).
    pub fn square(m: usize, n: usize, k: usize, t: usize) -> TileGrid {
        Blocking::square(t).grid(m, n, k)
    }

    pub fn mt(&self) -> usize {
        self.m.div_ceil(self.tm.max(1))
    }
    pub fn nt(&self) -> usize {
        self.n.div_ceil(self.tn.max(1))
    }
    pub fn kt(&self) -> usize {
        self.k.div_ceil(self.tk.max(1))
    }

    /// (first row, rows) of block row `i` of C / op(A).
    pub fn m_span(&self, i: usize) -> (usize, usize) {
        span(self.m, self.tm, i)
    }
    pub fn n_span(&self, j: usize) -> (usize, usize) {
        span(self.n, self.tn, j)
    }
    pub fn k_span(&self, l: usize) -> (usize, usize) {
        span(self.k, self.tk, l)
    }

    /// The stored block a tile occupies, given the problem's transposes.
    pub fn stored_block(&self, p: &GemmProblem, key: TileKey) -> Block {
        let (r, c) = (key.r as usize, key.c as usize);
        let (rs, cs, transposed) = match key.op {
            Operand::A => (self.m_span(r), self.k_span(c), p.transa.is_transposed()),
            Operand::B => (self.k_span(r), self.n_span(c), p.transb.is_transposed()),
            Operand::C => (self.m_span(r), self.n_span(c), false),
        };
        let (rs, cs) = if transposed { (cs, rs) } else { (rs, cs) };
        Block::new(rs.0, rs.1, cs.0, cs.1)
    }

    /// Bytes of one cache slot: the largest stored tile with its padded leading dimension,
    /// rounded up to 512 bytes so every slot starts aligned.
    pub fn slot_bytes(&self, elem: usize) -> usize {
        let (tm, tn, tk) = (self.tm, self.tn, self.tk);
        let shapes = [(tm, tk), (tk, tm), (tk, tn), (tn, tk), (tm, tn)];
        let elems = shapes
            .iter()
            .map(|&(r, c)| super::task::slot_ld(r) * c)
            .max()
            .unwrap_or(1);
        super::task::slot_size(elems * elem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemorySpace;
    use crate::operand::Trans;
    use crate::scalar::DType;

    #[test]
    fn edges_and_transposes() {
        let g = TileGrid::square(10, 7, 5, 4);
        assert_eq!((g.mt(), g.nt(), g.kt()), (3, 2, 2));
        assert_eq!(g.m_span(2), (8, 2));
        let p = GemmProblem {
            transa: Trans::T,
            transb: Trans::N,
            m: 10,
            n: 7,
            k: 5,
            dtype: DType::F64,
            beta_zero: false,
            locations: [MemorySpace::HOST; 3],
            sym: None,
        };
        // A is stored k x m = 5 x 10; tile (i=2, l=1) is stored rows 4..5, cols 8..10.
        let b = g.stored_block(&p, TileKey::a(2, 1));
        assert_eq!((b.row, b.col, b.rows, b.cols), (4, 8, 1, 2));
    }

    #[test]
    fn blocking_parses_and_prints() {
        let sq: Blocking = "4096".parse().unwrap();
        assert_eq!(sq, Blocking::square(4096));
        assert_eq!(sq.to_string(), "4096");
        let ks: Blocking = "4096x512x8192/g1".parse().unwrap();
        assert_eq!((ks.tm, ks.tn, ks.tk, ks.group), (4096, 512, 8192, 1));
        assert_eq!(ks.to_string(), "4096x512x8192/g1");
        assert_eq!("64x32x16".parse::<Blocking>().unwrap().group, DEFAULT_GROUP);
        for bad in ["", "0", "4x4", "4x4x4/g0", "ax4x4", "4x4x4/gx"] {
            assert!(bad.parse::<Blocking>().is_err(), "{bad}");
        }
        let g = ks.grid(4096, 4096, 32768);
        assert_eq!((g.mt(), g.nt(), g.kt()), (1, 8, 4));
        // Tiles never exceed the matrix.
        assert_eq!(
            Blocking::square(4096).grid(100, 50, 10),
            TileGrid::square(100, 50, 10, 4096)
        );
    }
}
