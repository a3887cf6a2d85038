//! `DistMatrix`: a 2D block-cyclic matrix whose local part this process owns, described by a
//! ScaLAPACK descriptor; and `DistRef` / `DistMut`, borrowed views of a submatrix (what
//! `pdgemm_` receives: a local array, a descriptor, and the submatrix's first row and column).

use crate::desc::{Axis, Descriptor};
use crate::error::{DistError, Result};
use crate::grid::ProcessGrid;
use hetblas::Scalar;

/// A distributed `m x n` matrix: this process's blocks, column-major, `lld = max(1, local rows)`.
#[derive(Debug, Clone)]
pub struct DistMatrix<T> {
    desc: Descriptor,
    myrow: usize,
    mycol: usize,
    nprow: usize,
    npcol: usize,
    local: Vec<T>,
}

impl<T: Scalar> DistMatrix<T> {
    /// A matrix of `m x n` in `mb x nb` blocks, first block on process (0, 0), every local
    /// entry `f(i, j)` of its global indices.
    ///
    /// # Errors
    /// `InvalidArgument` for a zero block size.
    pub fn from_fn(
        grid: &ProcessGrid,
        m: usize,
        n: usize,
        mb: usize,
        nb: usize,
        f: impl FnMut(usize, usize) -> T,
    ) -> Result<Self> {
        Self::from_fn_at(grid, m, n, mb, nb, (0, 0), f)
    }

    /// As [`DistMatrix::from_fn`], with the first block on process (`src.0`, `src.1`).
    ///
    /// # Errors
    /// `InvalidArgument` for a zero block size or a source outside the grid.
    pub fn from_fn_at(
        grid: &ProcessGrid,
        m: usize,
        n: usize,
        mb: usize,
        nb: usize,
        src: (usize, usize),
        mut f: impl FnMut(usize, usize) -> T,
    ) -> Result<Self> {
        if mb == 0 || nb == 0 {
            return Err(DistError::arg(-5, format!("block size {mb}x{nb}")));
        }
        if src.0 >= grid.nprow() || src.1 >= grid.npcol() {
            return Err(DistError::arg(
                -7,
                format!("source process {src:?} off the grid"),
            ));
        }
        let mut desc = Descriptor {
            ctxt: 0,
            m,
            n,
            mb,
            nb,
            rsrc: src.0,
            csrc: src.1,
            lld: 1,
        };
        let (ra, ca) = (
            desc.row_axis(grid.nprow(), grid.myrow()),
            desc.col_axis(grid.npcol(), grid.mycol()),
        );
        let (lr, lc) = (ra.count(m), ca.count(n));
        desc.lld = lr.max(1);
        let mut local = Vec::with_capacity(desc.lld * lc);
        for jl in 0..lc {
            let j = ca.global_index(jl);
            local.extend((0..lr).map(|il| f(ra.global_index(il), j)));
            local.resize(desc.lld * (jl + 1), T::from_f64(0.0));
        }
        Ok(DistMatrix {
            desc,
            myrow: grid.myrow(),
            mycol: grid.mycol(),
            nprow: grid.nprow(),
            npcol: grid.npcol(),
            local,
        })
    }

    pub fn desc(&self) -> &Descriptor {
        &self.desc
    }
    pub fn rows(&self) -> usize {
        self.desc.m
    }
    pub fn cols(&self) -> usize {
        self.desc.n
    }
    /// This process's blocks, column-major with leading dimension `desc().lld`.
    pub fn local(&self) -> &[T] {
        &self.local
    }
    pub fn local_mut(&mut self) -> &mut [T] {
        &mut self.local
    }
    /// Local rows and columns.
    pub fn local_shape(&self) -> (usize, usize) {
        (
            self.row_axis().count(self.desc.m),
            self.col_axis().count(self.desc.n),
        )
    }
    pub fn row_axis(&self) -> Axis {
        self.desc.row_axis(self.nprow, self.myrow)
    }
    pub fn col_axis(&self) -> Axis {
        self.desc.col_axis(self.npcol, self.mycol)
    }

    /// Calls `f(i, j, value)` for every local entry, with its global indices.
    pub fn for_each_local(&self, mut f: impl FnMut(usize, usize, T)) {
        let (ra, ca) = (self.row_axis(), self.col_axis());
        let (lr, lc) = self.local_shape();
        for jl in 0..lc {
            for il in 0..lr {
                f(
                    ra.global_index(il),
                    ca.global_index(jl),
                    self.local[il + jl * self.desc.lld],
                );
            }
        }
    }

    /// The whole matrix as a view (submatrix at (0, 0)).
    pub fn as_dist_ref(&self) -> DistRef<'_, T> {
        DistRef {
            desc: self.desc,
            local: &self.local,
            i0: 0,
            j0: 0,
        }
    }

    pub fn as_dist_mut(&mut self) -> DistMut<'_, T> {
        DistMut {
            desc: self.desc,
            local: &mut self.local,
            i0: 0,
            j0: 0,
        }
    }
}

/// A borrowed distributed matrix: the local array, its descriptor, and the submatrix's first
/// global row `i0` and column `j0` (ScaLAPACK's `IA - 1`, `JA - 1`).
#[derive(Debug, Clone, Copy)]
pub struct DistRef<'a, T> {
    pub desc: Descriptor,
    pub local: &'a [T],
    pub i0: usize,
    pub j0: usize,
}

/// A mutably borrowed distributed matrix (see [`DistRef`]).
#[derive(Debug)]
pub struct DistMut<'a, T> {
    pub desc: Descriptor,
    pub local: &'a mut [T],
    pub i0: usize,
    pub j0: usize,
}

/// Checks that a submatrix `rows x cols` at (`i0`, `j0`) lies inside the descriptor's matrix and
/// that the local array holds this process's part (`lld * local columns` elements).
#[allow(clippy::too_many_arguments)] // a view's parts, the grid and the argument position
pub(crate) fn check_view(
    desc: &Descriptor,
    local_len: usize,
    i0: usize,
    j0: usize,
    rows: usize,
    cols: usize,
    grid: &ProcessGrid,
    arg: i32,
) -> Result<()> {
    if rows > 0 && cols > 0 && (i0 + rows > desc.m || j0 + cols > desc.n) {
        return Err(DistError::arg(
            -(arg * 100 + 3),
            format!(
                "submatrix {rows}x{cols} at ({i0}, {j0}) exceeds the {}x{} matrix",
                desc.m, desc.n
            ),
        ));
    }
    let lr = desc.row_axis(grid.nprow(), grid.myrow()).count(desc.m);
    let lc = desc.col_axis(grid.npcol(), grid.mycol()).count(desc.n);
    if desc.lld < lr.max(1) {
        return Err(DistError::arg(
            -(arg * 100 + 9),
            format!("LLD_ = {} < local rows {lr}", desc.lld),
        ));
    }
    let need = if lc == 0 { 0 } else { desc.lld * (lc - 1) + lr };
    if local_len < need {
        return Err(DistError::arg(
            -(arg * 100 + 9),
            format!("local array of {local_len} elements, the local part needs {need}"),
        ));
    }
    Ok(())
}
