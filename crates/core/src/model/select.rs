//! Tile-size selection (CoCoPeLia_select): evaluate a model over candidate tile sizes and keep
//! the fastest. Every candidate's prediction is returned too, for `hetblas predict`.
//!
//! Candidates are the powers of two and 1.5x powers of two from [`MIN_TILE`] to [`MAX_TILE`]
//! (256, 384, 512, 768, ..., 16384), no larger than the problem's largest dimension (a larger
//! tile is the same single sub-kernel), and small enough that the device's memory budget holds
//! 6 tiles (A, B and C double-buffered, the rule of `autotune::default_tile`). When the budget
//! holds none of them, smaller tiles are tried by halving down to 16; problems smaller than
//! 256 get their largest dimension as the only candidate.
//!
//! A selection evaluates at most 19 candidates with closed-form models: a few microseconds.

use crate::error::{Error, Result};
use crate::memory::MemorySpace;
use crate::model::cocopelia::{ModelKind, Offload, SingleDeviceModel};
use crate::model::exec::ExecTable;
use crate::problem::GemmProblem;
use serde::Serialize;

/// Smallest regular candidate tile.
pub const MIN_TILE: usize = 256;
/// Largest candidate tile.
pub const MAX_TILE: usize = 16384;
/// Tiles a device must hold at once for a candidate to be allowed.
pub const TILES_RESIDENT: u64 = 6;

/// One candidate tile size and its predicted time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TileCandidate {
    /// Tile size T.
    pub tile: usize,
    /// Predicted seconds of the whole problem with this tile.
    pub seconds: f64,
}

/// The result of a selection: the best tile and every candidate's prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TileSelection {
    /// The model used.
    pub model: ModelKind,
    /// The chosen tile size.
    pub tile: usize,
    /// Its predicted seconds.
    pub seconds: f64,
    /// Every candidate evaluated, by ascending tile size.
    pub candidates: Vec<TileCandidate>,
}

/// The regular candidates `256 * 2^i` and `384 * 2^i` up to `min(max_dim, MAX_TILE)`,
/// ascending; `[max_dim]` when `max_dim < MIN_TILE` (and `[1]` for an empty problem).
pub fn candidate_tiles(max_dim: usize) -> Vec<usize> {
    if max_dim < MIN_TILE {
        return vec![max_dim.max(1)];
    }
    let mut out = Vec::with_capacity(20);
    let mut p = MIN_TILE;
    while p <= MAX_TILE {
        for t in [p, p + p / 2] {
            if t <= MAX_TILE && t <= max_dim {
                out.push(t);
            }
        }
        p *= 2;
    }
    out
}

fn fits(t: usize, elem_bytes: usize, budget: Option<u64>) -> bool {
    budget.is_none_or(|b| TILES_RESIDENT * (t as u64) * (t as u64) * elem_bytes as u64 <= b)
}

/// Evaluates `kind` for `offload` at each of `tiles`, in order.
pub fn evaluate(
    links: &SingleDeviceModel,
    exec: &ExecTable,
    kind: ModelKind,
    offload: &Offload,
    tiles: &[usize],
) -> Vec<TileCandidate> {
    tiles
        .iter()
        .map(|&tile| TileCandidate {
            tile,
            seconds: links.predict(kind, offload, tile, exec),
        })
        .collect()
}

/// Chooses the tile size of `problem` on the device computing in `device` (reached through
/// `links`, with kernel times `exec`) under model `kind`. `memory_budget` is the bytes of
/// device memory available for tiles (`None`: unlimited).
///
/// Ties go to the larger tile (fewer tasks to schedule).
///
/// # Errors
/// `InvalidInput` when `exec` was measured for another dtype; `OutOfMemory` when the budget
/// cannot hold six 16 x 16 tiles.
pub fn select_tile(
    problem: &GemmProblem,
    device: MemorySpace,
    links: &SingleDeviceModel,
    exec: &ExecTable,
    kind: ModelKind,
    memory_budget: Option<u64>,
) -> Result<TileSelection> {
    if exec.dtype() != problem.dtype {
        return Err(Error::InvalidInput(format!(
            "tile selection: exec table is for {}, problem is {}",
            exec.dtype(),
            problem.dtype
        )));
    }
    let offload = Offload::from_problem(problem, device);
    let elem = problem.dtype.size();
    let max_dim = problem.m.max(problem.n).max(problem.k);
    let mut tiles: Vec<usize> = candidate_tiles(max_dim)
        .into_iter()
        .filter(|&t| fits(t, elem, memory_budget))
        .collect();
    if tiles.is_empty() {
        let mut t = candidate_tiles(max_dim)[0];
        while t > 16 && !fits(t, elem, memory_budget) {
            t /= 2;
        }
        if !fits(t, elem, memory_budget) {
            return Err(Error::OutOfMemory {
                device: format!("{device}"),
                detail: format!(
                    "a budget of {} B holds no {TILES_RESIDENT} tiles of {elem}-byte elements",
                    memory_budget.unwrap_or(0)
                ),
            });
        }
        tiles.push(t);
    }
    let candidates = evaluate(links, exec, kind, &offload, &tiles);
    let mut best = candidates[0];
    for c in &candidates[1..] {
        if c.seconds <= best.seconds {
            best = *c;
        }
    }
    Ok(TileSelection {
        model: kind,
        tile: best.tile,
        seconds: best.seconds,
        candidates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::link::LinkModel;
    use crate::operand::Trans;
    use crate::scalar::DType;
    use std::time::Instant;

    fn problem(m: usize, n: usize, k: usize) -> GemmProblem {
        GemmProblem {
            transa: Trans::N,
            transb: Trans::N,
            m,
            n,
            k,
            dtype: DType::F64,
            beta_zero: false,
            locations: [MemorySpace::HOST; 3],
        }
    }

    fn links() -> SingleDeviceModel {
        SingleDeviceModel::new(
            LinkModel::new(2.5e-6, 12.18e9, 1.27),
            LinkModel::new(2.5e-6, 12.98e9, 1.41),
        )
    }

    /// A GPU-like table: low rate for small tiles, saturating at 7 TF/s from 4096.
    fn exec() -> ExecTable {
        let pts = [
            (256usize, 0.8e12),
            (512, 2.5e12),
            (1024, 5e12),
            (2048, 6.5e12),
            (4096, 7e12),
            (8192, 7e12),
        ]
        .map(|(t, r)| (t, 2.0 * (t as f64).powi(3) / r));
        ExecTable::new(DType::F64, pts).unwrap()
    }

    #[test]
    fn candidates() {
        assert_eq!(
            candidate_tiles(100_000),
            vec![256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384]
        );
        assert_eq!(candidate_tiles(1000), vec![256, 384, 512, 768]);
        assert_eq!(candidate_tiles(100), vec![100]);
        assert_eq!(candidate_tiles(0), vec![1]);
    }

    #[test]
    fn selects_argmin_and_reports_all() {
        let p = problem(16384, 16384, 16384);
        for kind in ModelKind::ALL {
            let s = select_tile(&p, MemorySpace(9), &links(), &exec(), kind, None).unwrap();
            assert_eq!(s.candidates.len(), 13);
            let min = s
                .candidates
                .iter()
                .map(|c| c.seconds)
                .fold(f64::INFINITY, f64::min);
            assert_eq!(s.seconds, min, "{kind}");
            assert!(s.candidates.iter().any(|c| c.tile == s.tile));
            if kind == ModelKind::Werkhoven {
                // It divides the full problem's kernel time linearly, so ever smaller tiles look
                // better: the failure CoCoPeLia reports for the CSO model.
                assert_eq!(s.tile, 256);
            } else {
                // Neither the tiniest nor one giant tile wins on a big problem with slow links.
                assert!(s.tile > 256 && s.tile < 16384, "{kind}: {}", s.tile);
            }
        }
    }

    #[test]
    fn memory_budget_limits_tiles() {
        let p = problem(16384, 16384, 16384);
        // 6 tiles of 2048^2 doubles = 201 MB; 2560^2 would not fit 250 MB.
        let s = select_tile(
            &p,
            MemorySpace(9),
            &links(),
            &exec(),
            ModelKind::DataReuse,
            Some(250_000_000),
        )
        .unwrap();
        assert!(s.candidates.iter().all(|c| c.tile <= 2048));
        // A tiny budget falls back to small tiles; none at all is an error.
        let s = select_tile(
            &p,
            MemorySpace(9),
            &links(),
            &exec(),
            ModelKind::Bts,
            Some(6 * 64 * 64 * 8),
        )
        .unwrap();
        assert_eq!(s.tile, 64);
        assert!(matches!(
            select_tile(
                &p,
                MemorySpace(9),
                &links(),
                &exec(),
                ModelKind::Bts,
                Some(10)
            ),
            Err(Error::OutOfMemory { .. })
        ));
    }

    #[test]
    fn dtype_mismatch_and_empty() {
        let mut p = problem(1000, 1000, 1000);
        p.dtype = DType::F32;
        assert!(select_tile(&p, MemorySpace(9), &links(), &exec(), ModelKind::Bts, None).is_err());
        let p = problem(0, 1000, 1000);
        let s = select_tile(&p, MemorySpace(9), &links(), &exec(), ModelKind::Bts, None).unwrap();
        assert_eq!(s.seconds, 0.0);
    }

    #[test]
    fn selection_is_fast() {
        let (l, e) = (links(), exec());
        let n = 1000;
        let start = Instant::now();
        let mut acc = 0usize;
        for i in 0..n {
            let d = 1000 + 37 * i;
            let p = problem(d, 2 * d, d / 2 + 1);
            let s = select_tile(&p, MemorySpace(9), &l, &e, ModelKind::ALL[i % 5], None).unwrap();
            acc += s.tile;
        }
        let mean = start.elapsed().as_secs_f64() / n as f64;
        assert!(acc > 0);
        let limit = if cfg!(debug_assertions) { 20e-3 } else { 1e-3 };
        assert!(mean < limit, "mean selection time {mean:e} s");
    }
}
