//! Moving an operand into the layout SUMMA needs: one all-to-all over the grid, each element
//! crossing the network once. Used for transposed operands (their rows live on process columns)
//! and for operands whose blocking does not line up with C's.
//!
//! Order of the exchanged elements: a sender walks its local part column by column, which is
//! ascending global order (local order follows global order in a block-cyclic layout). The
//! receiver walks its target part in the same global order: column-major when the operand is
//! not transposed, row-major when it is (the sender's columns are then the receiver's rows).
//! So no indices travel, only values.

use crate::desc::Axis;
use crate::error::{DistError, Result};
use crate::grid::ProcessGrid;
use mpi::datatype::{Equivalence, Partition, PartitionMut};
use mpi::traits::*;

/// A distributed operand as stored: the local array, its axes, and where the view starts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stored<'a, T> {
    pub local: &'a [T],
    pub ld: usize,
    pub rows: Axis,
    pub cols: Axis,
    pub i0: usize,
    pub j0: usize,
}

/// A target layout for the `m x n` operand `op(src)`: element (i, j) goes where global index
/// (`i0 + i`, `j0 + j`) of the axes `rows` x `cols` lives. The result is this process's part,
/// packed (`ld = max(1, local rows)`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target {
    pub rows: Axis,
    pub cols: Axis,
    pub i0: usize,
    pub j0: usize,
}

fn count_i32(n: usize) -> Result<i32> {
    i32::try_from(n).map_err(|_| {
        DistError::Grid(format!(
            "{n} elements to one process exceed MPI's int count; use more processes"
        ))
    })
}

/// Returns this process's part of `op(src)` (`m x n`) in the layout `dst`. Collective over the
/// grid.
pub(crate) fn redistribute<T: Equivalence + Copy + Default>(
    grid: &ProcessGrid,
    src: &Stored<'_, T>,
    transposed: bool,
    m: usize,
    n: usize,
    dst: &Target,
) -> Result<Vec<T>> {
    let size = grid.nprow() * grid.npcol();
    let (sm, sn) = if transposed { (n, m) } else { (m, n) };

    // Send: my stored part of the view, column by column, to each element's target owner.
    let mut outgoing: Vec<Vec<T>> = vec![Vec::new(); size];
    let (sr, sc) = (
        src.rows.local_range(src.i0, src.i0 + sm),
        src.cols.local_range(src.j0, src.j0 + sn),
    );
    for lc in sc {
        let vc = src.cols.global_index(lc) - src.j0;
        for lr in sr.clone() {
            let vr = src.rows.global_index(lr) - src.i0;
            let (i, j) = if transposed { (vc, vr) } else { (vr, vc) };
            let to = grid.rank_of(dst.rows.owner(dst.i0 + i), dst.cols.owner(dst.j0 + j));
            outgoing[to].push(src.local[lr + lc * src.ld]);
        }
    }

    // Receive: my target part, in the senders' order, each element from its stored owner.
    let (tr, tc) = (
        dst.rows.local_range(dst.i0, dst.i0 + m),
        dst.cols.local_range(dst.j0, dst.j0 + n),
    );
    let (lr_n, lc_n) = (tr.len(), tc.len());
    let ld = lr_n.max(1);
    let from_of = |lr: usize, lc: usize| {
        let i = dst.rows.global_index(tr.start + lr) - dst.i0;
        let j = dst.cols.global_index(tc.start + lc) - dst.j0;
        let (vr, vc) = if transposed { (j, i) } else { (i, j) };
        grid.rank_of(src.rows.owner(src.i0 + vr), src.cols.owner(src.j0 + vc))
    };
    // (position in the result, source rank), in the order the senders send.
    let mut order: Vec<(usize, u32)> = Vec::with_capacity(lr_n * lc_n);
    if transposed {
        for lr in 0..lr_n {
            for lc in 0..lc_n {
                order.push((lr + lc * ld, from_of(lr, lc) as u32));
            }
        }
    } else {
        for lc in 0..lc_n {
            for lr in 0..lr_n {
                order.push((lr + lc * ld, from_of(lr, lc) as u32));
            }
        }
    }
    let mut recv_counts = vec![0usize; size];
    for &(_, s) in &order {
        recv_counts[s as usize] += 1;
    }

    let send_counts: Vec<i32> = outgoing
        .iter()
        .map(|v| count_i32(v.len()))
        .collect::<Result<_>>()?;
    let recv_counts_i: Vec<i32> = recv_counts
        .iter()
        .map(|&c| count_i32(c))
        .collect::<Result<_>>()?;
    let displs = |counts: &[i32]| -> Result<Vec<i32>> {
        let mut d = Vec::with_capacity(counts.len());
        let mut acc = 0usize;
        for &c in counts {
            d.push(count_i32(acc)?);
            acc += c as usize;
        }
        Ok(d)
    };
    let (send_displs, recv_displs) = (displs(&send_counts)?, displs(&recv_counts_i)?);
    let send: Vec<T> = outgoing.concat();
    let mut recv = vec![T::default(); order.len()];
    grid.comm().all_to_all_varcount_into(
        &Partition::new(&send[..], &send_counts[..], &send_displs[..]),
        &mut PartitionMut::new(&mut recv[..], &recv_counts_i[..], &recv_displs[..]),
    );

    let mut out = vec![T::default(); ld * lc_n];
    let mut cursor: Vec<usize> = recv_displs.iter().map(|&d| d as usize).collect();
    for (pos, s) in order {
        out[pos] = recv[cursor[s as usize]];
        cursor[s as usize] += 1;
    }
    Ok(out)
}
