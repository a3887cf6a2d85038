//! The symmetric/Hermitian routines as the tiles of one GEMM plan (`plan::symmetric`): over
//! the referenced triangle of C (SYRK/HERK; SYR2K/HER2K as two, the second without the
//! diagonal), or over all of C with the symmetric operand read from its stored triangle
//! (SYMM/HEMM), the diagonal tiles running the routine's kernel among the GEMM tiles. The tile
//! is the one whose plan the simulator replays fastest against the profile. A device failure
//! re-runs each unfinished C tile as the pieces of its own sum ([`sym_pieces`]).

use super::gemm::{tiles_problem, GemmRun};
use super::options::{GemmOptions, GemmReport};
use super::{op_sub, DevicePool};
use crate::autotune::Decision;
use crate::error::{Error, Result};
use crate::memory::RawTile;
use crate::operand::Trans;
use crate::problem::GemmProblem;
use crate::scalar::Scalar;
use crate::sym::{Side, SymOp, SymProblem, SymTiles, Uplo};
use crate::tiling::{Blocking, TileGrid};

/// Square tiles the simulator chooses among (those that cut the order into 1 to 32 tiles).
const TILES: [usize; 7] = [256, 512, 1024, 2048, 4096, 6144, 8192];

impl DevicePool {
    /// Whether the routine can run as symmetric tiles: every device the call may use that has
    /// the dtype's GEMM also has the routine's kernel for its diagonal tiles.
    pub(super) fn sym_tiles_usable(&self, dtype: crate::scalar::DType, opts: &GemmOptions) -> bool {
        self.working_devices(opts)
            .into_iter()
            .filter(|&i| self.devices[i].kernel().supports(dtype))
            .all(|i| self.devices[i].kernel().supports_sym(dtype))
    }

    /// Runs `shape` (its checks and quick returns done) as symmetric tiles: `[a, b, c]` are the
    /// routine's operands (`b` is `a` for SYRK/HERK), alpha and beta as the routine takes them
    /// (HERK's already real).
    pub(super) fn run_sym_tiles<T: Scalar>(
        &self,
        shape: &SymProblem,
        alpha: T,
        [a, b, c]: [RawTile; 3],
        beta: T,
        opts: &GemmOptions,
        report: &mut GemmReport,
    ) -> Result<()> {
        let op = shape.op;
        let one = T::from_f64(1.0);
        let conj = if op.herm() { alpha.conj() } else { alpha };
        // One undo log over every pass: a rank-2k update whose second plan fails with no
        // device left puts back what the first one wrote too.
        let undo = self
            .keeps_undo_log(opts, T::DTYPE)
            .then(crate::undo::UndoLog::new);
        for (pass, p) in sym_passes(shape, beta == T::default())
            .into_iter()
            .enumerate()
        {
            // The second pass of a rank-2k update adds alpha op(B) op(A)^T (conj(alpha) for
            // HER2K) off the diagonal: B and A swap places. In GEMM terms SYMM's symmetric
            // matrix is A on the left, B on the right.
            let swap = match op {
                SymOp::Rank { .. } => pass > 0,
                SymOp::Multiply { side, .. } => side == Side::Right,
            };
            let ops = if swap { [b, a, c] } else { [a, b, c] };
            let p = GemmProblem {
                locations: [ops[0].space, ops[1].space, ops[2].space],
                ..p
            };
            let (alpha, beta) = if pass == 0 {
                (alpha, beta)
            } else {
                (conj, one)
            };
            let run = GemmRun::new(p, opts, ops, alpha, beta, false);
            let mut sub = GemmReport::default();
            self.run_retrying(&run, &mut sub, None, undo.as_ref())
                .map_err(|e| match &undo {
                    Some(u) => self.put_c_back(e, u),
                    None => e,
                })?;
            report.tile = sub.tile;
            report.planning_seconds += sub.planning_seconds;
            report.host_fold |= sub.host_fold;
            report.stats = std::mem::take(&mut sub.stats);
            report.plan = sub.plan.take();
            report.trace = sub.trace.take().or(report.trace.take());
            super::sym::merge(report, sub);
        }
        Ok(())
    }

    /// The model's square tile for `p` on host operands, its predicted seconds (every pass;
    /// `None` where no profile simulates it) and the devices (pool indices) it uses.
    pub(super) fn sym_tiles_choice(
        &self,
        p: &SymProblem,
        opts: &GemmOptions,
    ) -> Result<(usize, Option<f64>, Vec<usize>)> {
        let mut tile = 0;
        let mut total = Some(0.0);
        let mut devices = Vec::new();
        for (pass, g) in sym_passes(p, false).into_iter().enumerate() {
            let (d, secs) = self.decide_sym(&g, opts)?;
            if pass == 0 {
                tile = d.grid.tm;
                devices = d.devices.clone();
            }
            total = total.zip(secs).map(|(a, b)| a + b);
        }
        Ok((tile, total, devices))
    }

    /// Every candidate square tile of `p` on host operands with its simulated makespan over
    /// every pass (`None` where the profile cannot replay a plan), in the order the model
    /// weighs them: what `hetblas predict --routine syrk` lists beside the choice.
    pub fn sym_tile_predictions(&self, p: &SymProblem) -> Vec<(usize, Option<f64>)> {
        let opts = GemmOptions::default();
        let Some(profile) = self.decision_profile() else {
            return Vec::new();
        };
        let _thread = self.keep_thread_contexts();
        let passes = sym_passes(p, false);
        let order = p.op.order(p.n, p.k);
        let scratch = crate::plan::cache::PlanCache::default();
        sym_candidates(order)
            .into_iter()
            .map(|t| {
                let square = Blocking::square(t.clamp(1, order.max(1)));
                let total = passes.iter().try_fold(0.0, |acc, g| {
                    Some(acc + self.scored(g, &opts, square, &profile, &scratch)?.0)
                });
                (t, total)
            })
            .collect()
    }

    /// The decision for a symmetric plan in square tiles: the caller's, else the candidate the
    /// simulator replays fastest (with that makespan), else the GEMM model's tile.
    pub(super) fn decide_sym(
        &self,
        p: &GemmProblem,
        opts: &GemmOptions,
    ) -> Result<(Decision, Option<f64>)> {
        // The order of the symmetric matrix: C's for a rank update, K (the symmetric
        // operand's) for SYMM/HEMM.
        let order = p.sym.map_or(p.n, |s| s.op.order(p.n, p.k));
        let square = |t: usize, group| Blocking {
            group,
            ..Blocking::square(t.clamp(1, order.max(1)))
        };
        let forced = opts.forced_blocking();
        let group = forced.map_or(crate::tiling::DEFAULT_GROUP, |b| b.group);
        let candidates = match forced {
            Some(b) => vec![b.tm],
            None => sym_candidates(order),
        };
        if let Some(profile) = self.decision_profile() {
            // (tile, makespan, decision) of every replayable candidate, tiles ascending.
            let mut scored: Vec<(usize, f64, Decision)> = Vec::new();
            // The candidates' plans are only weighed: the one chosen is planned again when it
            // runs, into the pool's cache.
            let scratch = crate::plan::cache::PlanCache::default();
            for t in candidates {
                if let Some((secs, d)) = self.scored(p, opts, square(t, group), &profile, &scratch)
                {
                    scored.push((t, secs, d));
                }
            }
            if let Some(pick) = sym_pick(&scored.iter().map(|s| (s.0, s.1)).collect::<Vec<_>>()) {
                let (_, secs, d) = scored.swap_remove(pick);
                return Ok((d, Some(secs)));
            }
        }
        let t = match forced {
            Some(b) => b.tm,
            None => {
                let plain = GemmProblem { sym: None, ..*p };
                self.decide_with(&plain, opts, None, false)?.grid.tm
            }
        };
        Ok((
            self.decide_with(p, opts, Some(square(t, group)), false)?,
            None,
        ))
    }

    /// The decision for `p` in `blocking` and its plan's makespan replayed against
    /// `profile`; `None` where it cannot be decided or planned, or the profile lacks what the
    /// plan uses.
    fn scored(
        &self,
        p: &GemmProblem,
        opts: &GemmOptions,
        blocking: Blocking,
        profile: &crate::profile::MachineProfile,
        scratch: &crate::plan::cache::PlanCache,
    ) -> Option<(f64, Decision)> {
        let d = self.decide_with(p, opts, Some(blocking), false).ok()?;
        let devs = self.devices_of(&d.devices);
        let labels: Vec<String> = devs.iter().map(|d| d.info().label()).collect();
        let (plan, _) = self.plan(scratch, p, &d, &devs, opts).ok()?;
        Some((super::makespan(&plan, &labels, profile).ok()?, d))
    }
}

/// The GEMM plans of symmetric routine `p` on host operands (the caller sets the
/// locations): one, or two for the rank-2k updates (the second adds the other product off the
/// diagonal, with beta 1).
fn sym_passes(p: &SymProblem, beta_zero: bool) -> Vec<GemmProblem> {
    let dt = p.dtype;
    let base = |transa, transb, k, diagonal, beta_zero| GemmProblem {
        transa,
        transb,
        sym: Some(SymTiles { op: p.op, diagonal }),
        ..GemmProblem::host(p.m, p.n, k, dt, beta_zero)
    };
    match p.op {
        SymOp::Rank { two, .. } => {
            let (ta, tb) = p.op.gemm_trans(dt);
            let mut v = vec![base(ta, tb, p.k, true, beta_zero)];
            if two {
                v.push(base(ta, tb, p.k, false, false));
            }
            v
        }
        SymOp::Multiply { side, .. } => {
            let k = if side == Side::Left { p.m } else { p.n };
            vec![base(Trans::N, Trans::N, k, true, beta_zero)]
        }
    }
}

/// Simulated makespans this close to the fastest candidate's are ties: the simulator's error on
/// these plans ran from -4% to +6.5% against measured H200 sweeps.
pub const SYM_TIE: f64 = 0.03;

/// The candidate the model takes among `(tile, simulated seconds)`: the smallest tile within
/// [`SYM_TIE`] of the fastest (of four measured ties, it ran 5-8% faster in three, level in one).
pub fn sym_pick(scored: &[(usize, f64)]) -> Option<usize> {
    let fastest = scored.iter().map(|s| s.1).min_by(f64::total_cmp)?;
    scored
        .iter()
        .enumerate()
        .filter(|(_, s)| s.1 <= fastest * (1.0 + SYM_TIE))
        .min_by_key(|(_, s)| s.0)
        .map(|(i, _)| i)
}

/// The tiles the simulator tries for an order: those that cut it into 2 to 32 tiles, or the
/// whole order when it is small.
fn sym_candidates(order: usize) -> Vec<usize> {
    let c: Vec<usize> = TILES
        .into_iter()
        .filter(|&t| t < order && t * 32 >= order)
        .collect();
    if c.is_empty() {
        vec![order.clamp(1, TILES[TILES.len() - 1])]
    } else {
        c
    }
}

/// C tile `(i, j)` of the symmetric plan `p` as problems whose sum it is, each with its
/// operands and beta: the first applies the caller's `beta`, the rest add to it.
pub(super) fn sym_pieces<T: Scalar>(
    p: &GemmProblem,
    ops: &[RawTile; 3],
    g: &TileGrid,
    (i, j): (usize, usize),
    beta: T,
) -> Result<Vec<(GemmProblem, [RawTile; 3], T)>> {
    let s = p
        .sym
        .ok_or_else(|| Error::internal("symmetric re-run of a plain GEMM"))?;
    let (r0, mr) = g.m_span(i);
    let (c0, nc) = g.n_span(j);
    let [a, b, c] = *ops;
    let cc = c.sub(r0, c0, mr, nc);
    let one = T::from_f64(1.0);
    let plain = |transa, transb, a: RawTile, b: RawTile| {
        let sub = tiles_problem(transa, transb, [a, b, cc], false);
        (sub, [a, b, cc], one)
    };
    let tc = s.op.tconj();
    let mut out = Vec::new();
    match s.op {
        SymOp::Rank { .. } => {
            let k = p.k;
            let ai = op_sub(a, p.transa, r0, 0, mr, k);
            let bj = op_sub(b, p.transb, 0, c0, k, nc);
            let sub = GemmProblem {
                m: mr,
                n: nc,
                sym: if i == j { p.sym } else { None },
                ..*p
            };
            out.push((sub, [ai, bj, cc], beta));
        }
        SymOp::Multiply { side, uplo, .. } => {
            // Row panel i of the symmetric A (left), or column panel j of the symmetric B
            // (right): its diagonal tile, then the lines before and after it, each read from
            // the stored triangle (transposed on the right).
            let left = side == Side::Left;
            let (sm, p0, pl, order) = if left {
                (a, r0, mr, p.m)
            } else {
                (b, c0, nc, p.n)
            };
            // The other operand's block facing lines `x0..x0 + xl` of the symmetric one.
            let other = |x0, xl| {
                if left {
                    b.sub(x0, c0, xl, nc)
                } else {
                    a.sub(r0, x0, mr, xl)
                }
            };
            let diag = GemmProblem {
                m: mr,
                n: nc,
                k: pl,
                ..*p
            };
            let (sd, od) = (sm.sub(p0, p0, pl, pl), other(p0, pl));
            out.push((diag, if left { [sd, od, cc] } else { [od, sd, cc] }, beta));
            let e = p0 + pl;
            let (before, after) = match uplo {
                Uplo::Lower => (
                    (sm.sub(p0, 0, pl, p0), Trans::N),
                    (sm.sub(e, p0, order - e, pl), tc),
                ),
                Uplo::Upper => (
                    (sm.sub(0, p0, p0, pl), tc),
                    (sm.sub(p0, e, pl, order - e), Trans::N),
                ),
            };
            for ((blk, t), x0, xl) in [(before, 0, p0), (after, e, order - e)] {
                if xl > 0 {
                    out.push(if left {
                        plain(t, Trans::N, blk, other(x0, xl))
                    } else {
                        let t = if t == Trans::N { tc } else { Trans::N };
                        plain(Trans::N, t, other(x0, xl), blk)
                    });
                }
            }
        }
    }
    for (sub, _, beta) in &mut out {
        sub.beta_zero = *beta == T::default();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_cut_the_order_into_few_tiles() {
        assert_eq!(sym_candidates(32768), vec![1024, 2048, 4096, 6144, 8192]);
        assert_eq!(sym_candidates(3000), vec![256, 512, 1024, 2048]);
        assert_eq!(sym_candidates(200), vec![200]);
        assert_eq!(sym_candidates(0), vec![1]);
    }

    #[test]
    fn the_smallest_tile_within_the_tie_band_of_the_fastest_wins() {
        assert_eq!(sym_pick(&[]), None);
        // 4096 is 0.2% slower than 6144: a tie, and the smaller tile.
        let s = [
            (1024, 0.1062),
            (4096, 0.0986),
            (6144, 0.0984),
            (8192, 0.1107),
        ];
        assert_eq!(sym_pick(&s), Some(1));
        // 4% apart: no tie.
        let s = [(2048, 0.1040), (4096, 0.1000)];
        assert_eq!(sym_pick(&s), Some(1));
        // Order of the list does not matter, only the tiles.
        let s = [(6144, 0.2123), (4096, 0.2166)];
        assert_eq!(sym_pick(&s), Some(1));
    }
}
