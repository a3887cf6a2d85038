//! ScaLAPACK array descriptors and the 2D block-cyclic index arithmetic behind them.
//!
//! A matrix of `m x n` is cut into `mb x nb` blocks; block row `I` lives on process row
//! `(rsrc + I) mod nprow`, block column `J` on process column `(csrc + J) mod npcol`; each
//! process stores its blocks column-major in a local array with leading dimension `lld`. The
//! descriptor is the 9-integer `DESC` of ScaLAPACK (`DTYPE_ = 1`, dense).

use crate::error::{DistError, Result};

/// `DTYPE_` of a dense matrix, the only kind ScaLAPACK's PBLAS take.
pub const DENSE: i32 = 1;

/// A ScaLAPACK array descriptor (`DESC(1..9)`), in Rust types. Indices are 0-based here; the
/// Fortran entry point converts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    /// BLACS context (ScaLAPACK's `CTXT_`); the Rust API does not read it.
    pub ctxt: i32,
    pub m: usize,
    pub n: usize,
    pub mb: usize,
    pub nb: usize,
    /// Process row holding the first block row.
    pub rsrc: usize,
    /// Process column holding the first block column.
    pub csrc: usize,
    /// Leading dimension of the local array.
    pub lld: usize,
}

impl Descriptor {
    /// The descriptor as ScaLAPACK stores it.
    pub fn to_scalapack(&self) -> [i32; 9] {
        let i = |v: usize| i32::try_from(v).unwrap_or(i32::MAX);
        [
            DENSE,
            self.ctxt,
            i(self.m),
            i(self.n),
            i(self.mb),
            i(self.nb),
            i(self.rsrc),
            i(self.csrc),
            i(self.lld),
        ]
    }

    /// Reads and checks a ScaLAPACK descriptor for a grid of `nprow x npcol`, as PBLAS'
    /// `PB_CHKMAT` does; `arg` is the descriptor's argument position, so an error carries
    /// ScaLAPACK's `INFO = -(arg*100 + entry)`.
    ///
    /// # Errors
    /// [`DistError::InvalidArgument`] naming the first bad entry.
    pub fn from_scalapack(d: &[i32; 9], arg: i32, nprow: usize, npcol: usize) -> Result<Self> {
        let bad = |entry: i32, reason: String| DistError::InvalidArgument {
            info: -(arg * 100 + entry),
            reason,
        };
        if d[0] != DENSE {
            return Err(bad(1, format!("DTYPE_ = {} (only dense, 1)", d[0])));
        }
        let nonneg = |entry: usize, what: &str| -> Result<usize> {
            usize::try_from(d[entry - 1])
                .map_err(|_| bad(entry as i32, format!("{what} = {} < 0", d[entry - 1])))
        };
        let positive = |entry: usize, what: &str| -> Result<usize> {
            match nonneg(entry, what)? {
                0 => Err(bad(entry as i32, format!("{what} = 0"))),
                v => Ok(v),
            }
        };
        let desc = Descriptor {
            ctxt: d[1],
            m: nonneg(3, "M_")?,
            n: nonneg(4, "N_")?,
            mb: positive(5, "MB_")?,
            nb: positive(6, "NB_")?,
            rsrc: nonneg(7, "RSRC_")?,
            csrc: nonneg(8, "CSRC_")?,
            lld: positive(9, "LLD_")?,
        };
        if desc.rsrc >= nprow {
            return Err(bad(7, format!("RSRC_ = {} >= NPROW = {nprow}", desc.rsrc)));
        }
        if desc.csrc >= npcol {
            return Err(bad(8, format!("CSRC_ = {} >= NPCOL = {npcol}", desc.csrc)));
        }
        Ok(desc)
    }

    /// The row axis of this matrix on a grid with `nprow` rows, seen from process row `myrow`.
    pub fn row_axis(&self, nprow: usize, myrow: usize) -> Axis {
        Axis {
            nb: self.mb,
            src: self.rsrc,
            nprocs: nprow,
            me: myrow,
        }
    }

    /// The column axis on a grid with `npcol` columns, seen from process column `mycol`.
    pub fn col_axis(&self, npcol: usize, mycol: usize) -> Axis {
        Axis {
            nb: self.nb,
            src: self.csrc,
            nprocs: npcol,
            me: mycol,
        }
    }
}

/// One dimension of a block-cyclic distribution: blocks of `nb` indices dealt round-robin over
/// `nprocs` processes starting at `src`, seen from process `me`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Axis {
    pub nb: usize,
    pub src: usize,
    pub nprocs: usize,
    pub me: usize,
}

impl Axis {
    /// The process owning global index `g`.
    pub fn owner(&self, g: usize) -> usize {
        (g / self.nb + self.src) % self.nprocs
    }

    /// The index of global `g` in its owner's local array.
    pub fn local_index(&self, g: usize) -> usize {
        (g / self.nb / self.nprocs) * self.nb + g % self.nb
    }

    /// The global index of this process's local index `l`.
    pub fn global_index(&self, l: usize) -> usize {
        let shift = (self.me + self.nprocs - self.src % self.nprocs) % self.nprocs;
        ((l / self.nb) * self.nprocs + shift) * self.nb + l % self.nb
    }

    /// How many of the global indices `0..n` process `p` owns (ScaLAPACK's `NUMROC`).
    pub fn count_of(&self, n: usize, p: usize) -> usize {
        let shift = (p + self.nprocs - self.src % self.nprocs) % self.nprocs;
        let full_blocks = n / self.nb;
        let mut count = (full_blocks / self.nprocs) * self.nb;
        let extra = full_blocks % self.nprocs;
        if shift < extra {
            count += self.nb;
        } else if shift == extra {
            count += n % self.nb;
        }
        count
    }

    /// How many of the global indices `0..n` this process owns.
    pub fn count(&self, n: usize) -> usize {
        self.count_of(n, self.me)
    }

    /// The local indices holding the global indices `start..end`: a contiguous range, since
    /// local order follows global order.
    pub fn local_range(&self, start: usize, end: usize) -> std::ops::Range<usize> {
        self.count(start)..self.count(end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every global index has exactly one owner, and local/global indices invert each other.
    #[test]
    fn axis_maps_invert_and_count() {
        for nprocs in 1..5 {
            for nb in [1, 2, 3, 7] {
                for src in 0..nprocs {
                    for n in [0, 1, 5, 17, 40] {
                        let mut seen = vec![0usize; nprocs];
                        for g in 0..n {
                            let p = (Axis {
                                nb,
                                src,
                                nprocs,
                                me: 0,
                            })
                            .owner(g);
                            let ax = Axis {
                                nb,
                                src,
                                nprocs,
                                me: p,
                            };
                            let l = ax.local_index(g);
                            assert_eq!(l, seen[p], "local order follows global order");
                            assert_eq!(ax.global_index(l), g);
                            seen[p] += 1;
                        }
                        for (p, &s) in seen.iter().enumerate() {
                            let ax = Axis {
                                nb,
                                src,
                                nprocs,
                                me: p,
                            };
                            assert_eq!(ax.count(n), s, "numroc n={n} nb={nb} src={src} p={p}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn local_range_of_a_global_range() {
        let ax = Axis {
            nb: 3,
            src: 1,
            nprocs: 2,
            me: 0,
        };
        // p0 owns blocks 1, 3, ...: globals 3,4,5, 9,10,11, ...
        let r = ax.local_range(4, 10);
        let globals: Vec<usize> = r.map(|l| ax.global_index(l)).collect();
        assert_eq!(globals, vec![4, 5, 9]);
    }

    #[test]
    fn descriptor_checks_carry_scalapack_info() {
        let ok = [1, 0, 10, 8, 2, 2, 0, 1, 5];
        let d = Descriptor::from_scalapack(&ok, 10, 2, 2).unwrap();
        assert_eq!(d.to_scalapack(), ok);
        let mut bad = ok;
        bad[4] = 0;
        assert_eq!(
            Descriptor::from_scalapack(&bad, 10, 2, 2)
                .unwrap_err()
                .info(),
            Some(-1005)
        );
        let mut bad = ok;
        bad[7] = 2;
        assert_eq!(
            Descriptor::from_scalapack(&bad, 14, 2, 2)
                .unwrap_err()
                .info(),
            Some(-1408)
        );
    }
}
