//! The process grid: `nprow x npcol` processes of a communicator, in row-major order (rank
//! `r` is at row `r / npcol`, column `r % npcol`, BLACS' default order), with one communicator
//! per process row and one per process column for the panel broadcasts.

use crate::error::{DistError, Result};
use mpi::topology::{Color, Communicator, SimpleCommunicator};

/// A 2D grid of MPI processes.
pub struct ProcessGrid {
    comm: SimpleCommunicator,
    row: SimpleCommunicator,
    col: SimpleCommunicator,
    nprow: usize,
    npcol: usize,
    myrow: usize,
    mycol: usize,
}

impl std::fmt::Debug for ProcessGrid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ProcessGrid {{ {}x{}, me ({}, {}) }}",
            self.nprow, self.npcol, self.myrow, self.mycol
        )
    }
}

impl ProcessGrid {
    /// The grid `nprow x npcol` over the first `nprow * npcol` ranks of `comm`, row-major.
    /// Collective over `comm`; ranks beyond the grid get `Ok(None)`.
    ///
    /// # Errors
    /// [`DistError::Grid`] when the grid is empty or larger than the communicator.
    pub fn new(
        comm: &SimpleCommunicator,
        nprow: usize,
        npcol: usize,
    ) -> Result<Option<ProcessGrid>> {
        let size = comm.size() as usize;
        if nprow == 0 || npcol == 0 || nprow * npcol > size {
            return Err(DistError::Grid(format!(
                "a {nprow}x{npcol} grid does not fit {size} processes"
            )));
        }
        let rank = comm.rank() as usize;
        let inside = rank < nprow * npcol;
        let color = if inside {
            Color::with_value(0)
        } else {
            Color::undefined()
        };
        match comm.split_by_color_with_key(color, rank as i32) {
            Some(grid) if inside => Self::from_grid_comm(grid, nprow, npcol).map(Some),
            _ => Ok(None),
        }
    }

    /// `comm` is exactly the grid, rank `r` at (`r / npcol`, `r % npcol`). Collective.
    pub(crate) fn from_grid_comm(
        comm: SimpleCommunicator,
        nprow: usize,
        npcol: usize,
    ) -> Result<Self> {
        let rank = comm.rank() as usize;
        let (myrow, mycol) = (rank / npcol, rank % npcol);
        // Keys order the new ranks: rank in a row communicator = process column, and in a
        // column communicator = process row, so a block's owner coordinate is its root rank.
        let missing = || DistError::Grid("MPI_Comm_split returned no communicator".into());
        let row = comm
            .split_by_color_with_key(Color::with_value(myrow as i32), mycol as i32)
            .ok_or_else(missing)?;
        let col = comm
            .split_by_color_with_key(Color::with_value(mycol as i32), myrow as i32)
            .ok_or_else(missing)?;
        Ok(ProcessGrid {
            comm,
            row,
            col,
            nprow,
            npcol,
            myrow,
            mycol,
        })
    }

    pub fn nprow(&self) -> usize {
        self.nprow
    }
    pub fn npcol(&self) -> usize {
        self.npcol
    }
    pub fn myrow(&self) -> usize {
        self.myrow
    }
    pub fn mycol(&self) -> usize {
        self.mycol
    }
    /// The communicator of the whole grid (rank = `row * npcol + col`).
    pub fn comm(&self) -> &SimpleCommunicator {
        &self.comm
    }
    /// The processes of my grid row (rank = process column).
    pub fn row_comm(&self) -> &SimpleCommunicator {
        &self.row
    }
    /// The processes of my grid column (rank = process row).
    pub fn col_comm(&self) -> &SimpleCommunicator {
        &self.col
    }
    /// The grid rank of the process at (`row`, `col`).
    pub fn rank_of(&self, row: usize, col: usize) -> usize {
        row * self.npcol + col
    }
}
