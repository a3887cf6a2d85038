//! Replays the planner's step order on one device against per-tile copy and product times:
//! the pipeline model's closed form sees only the first group and the totals, while the order
//! decides e.g. when a narrow grid's second tile needs a new A row-panel. The replay follows
//! the plan's rules ([`crate::plan::build_steps`] over C tiles in shell order): the host->device
//! queue fetches each A and B tile at first use (C first, or late from the second-last k step
//! on), one compute engine runs products in order, each C tile goes back after its last product
//! (and add), host folds run one after another. Memory is taken as ample, as in the closed form.

use crate::distribute::shell_order;
use crate::plan::{build_steps, fold_tail_tiles, tail_tiles};

/// Edge class of index `x` in a dimension of `count` tiles whose last tile is an edge.
pub(crate) fn class(x: usize, count: usize, has_edge: bool) -> usize {
    usize::from(has_edge && x + 1 == count)
}

/// Per-tile times by edge class (`[full, edge]` per dimension), already slowed by whatever
/// runs beside them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TileTimes {
    /// A tile (m class, k class); 0 when A is not fetched.
    pub a: [[f64; 2]; 2],
    /// B tile (k class, n class); 0 when B is not fetched.
    pub b: [[f64; 2]; 2],
    /// C tile fetch (m class, n class); 0 when C is not fetched.
    pub c_in: [[f64; 2]; 2],
    /// C tile write-back (m class, n class); 0 when C is not written back.
    pub c_out: [[f64; 2]; 2],
    /// Host fold of a C tile (m class, n class); 0 without a host fold.
    pub fold: [[f64; 2]; 2],
    /// Copy-out of a staged C tile by host threads after its write-back (m class, n class;
    /// [`crate::profile::StagedOut`]); 0 where C is not staged. Like folds, one at a time.
    pub copy_out: [[f64; 2]; 2],
    /// Tile product (m class, n class, k class).
    pub gemm: [[[f64; 2]; 2]; 2],
    /// What the call's first fold costs beyond `fold` (the fold threads' wake).
    pub wake: f64,
    /// Pieces of a late C tile's chain where the plan splits it (m class, n class;
    /// [`crate::plan::tail_pieces`]); 0 or 1: whole.
    pub pieces: [[usize; 2]; 2],
}

/// The grid and the plan's choices that shape the order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReplayGrid {
    pub mt: usize,
    pub nt: usize,
    pub kt: usize,
    /// The last tile of each dimension (m, n, k) is an edge tile.
    pub edge: [bool; 3],
    pub group: usize,
    /// C is read by the device: fetched at the first step, or late (see `late_c`).
    pub fetch_c: bool,
    pub late_c: bool,
    /// With host folds: this many C tiles, the last to finish, are not folded; their C
    /// crosses to the device as a read C does and they go back whole
    /// ([`crate::plan::DeviceSpec::fold_tail`]).
    pub unfolded: usize,
}

/// When each queue finishes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Replay {
    /// Start of the first product.
    pub first_start: f64,
    /// Compute idle time after the first product started.
    pub idle: f64,
    /// When the first C tile to finish is done (its last product, and its add where C
    /// arrives late): when its write-back can start.
    pub first_done: f64,
    /// End of the last product or add.
    pub compute_end: f64,
    pub h2d_end: f64,
    pub d2h_end: f64,
    pub fold_end: f64,
}

impl Replay {
    /// When the last queue finishes.
    pub fn end(&self) -> f64 {
        self.compute_end
            .max(self.h2d_end)
            .max(self.d2h_end)
            .max(self.fold_end)
    }
}

/// The plan's steps over the grid, in the planner's order: C tiles in shell order, in groups
/// of `group` ([`build_steps`]).
pub(crate) fn plan_steps(g: &ReplayGrid, group: usize) -> Vec<crate::plan::Step> {
    let mut tiles: Vec<(usize, usize)> = (0..g.mt)
        .flat_map(|i| (0..g.nt).map(move |j| (i, j)))
        .collect();
    shell_order(&mut tiles);
    build_steps(&tiles, g.kt, group)
}

pub(crate) fn replay(g: &ReplayGrid, t: &TileTimes) -> Replay {
    let (mt, nt, kt) = (g.mt, g.nt, g.kt);
    let steps = plan_steps(g, g.group);
    // The fold tail, as the planner picks it.
    let tail = fold_tail_tiles(&steps, g.unfolded, g.group);
    // Arrival time of each fetched tile (negative: not fetched yet).
    let mut a_at = vec![-1.0f64; mt * kt];
    let mut b_at = vec![-1.0f64; kt * nt];
    let mut c_at = vec![-1.0f64; mt * nt];
    // Where each late C started to cross (its pieces arrive one after another from there).
    let mut c_from = vec![0.0f64; mt * nt];
    // Under late C the plan sends the last group's chains in pieces: each piece's write-back
    // follows its own fetch and add, so the tile's write-back overlaps its C still crossing.
    let split = if g.fetch_c && g.late_c {
        tail_tiles(&steps, g.group.clamp(1, crate::tiling::DEFAULT_GROUP))
    } else {
        Default::default()
    };
    let mut r = Replay::default();
    let (mut h2d, mut compute, mut d2h, mut fold) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let (mut started, mut folded, mut done_one) = (false, false, false);
    for s in &steps {
        let (ci, cj, cl) = (
            class(s.i, mt, g.edge[0]),
            class(s.j, nt, g.edge[1]),
            class(s.l, kt, g.edge[2]),
        );
        let unfolded = tail.contains(&(s.i, s.j));
        let fetch_c = g.fetch_c || unfolded;
        let mut ready = 0.0f64;
        if s.first && fetch_c && !g.late_c {
            h2d += t.c_in[ci][cj];
            ready = ready.max(h2d);
        }
        let a = &mut a_at[s.i * kt + s.l];
        if *a < 0.0 {
            h2d += t.a[ci][cl];
            *a = h2d;
        }
        ready = ready.max(*a);
        let b = &mut b_at[s.l * nt + s.j];
        if *b < 0.0 {
            h2d += t.b[cl][cj];
            *b = h2d;
        }
        ready = ready.max(*b);
        let start = compute.max(ready);
        if started {
            r.idle += start - compute;
        } else {
            r.first_start = start;
            started = true;
        }
        compute = start + t.gemm[ci][cj][cl];
        let late = &mut c_at[s.i * nt + s.j];
        // Late C crosses from the second-last k step on; a fold tail's C at the last step,
        // behind that step's A and B tiles (as the planner sends it).
        let late_from = if unfolded && !g.fetch_c { 1 } else { 2 };
        if fetch_c && g.late_c && s.ll + late_from >= kt && *late < 0.0 {
            c_from[s.i * nt + s.j] = h2d;
            h2d += t.c_in[ci][cj];
            *late = h2d;
        }
        if s.last {
            let product_end = compute;
            if fetch_c && g.late_c {
                // The add waits for the caller's C (its own time is negligible).
                compute = compute.max(*late);
            }
            if !done_one {
                r.first_done = compute;
                done_one = true;
            }
            let pieces = if split.contains(&(s.i, s.j)) {
                t.pieces[ci][cj].max(1)
            } else {
                1
            };
            if t.c_out[ci][cj] > 0.0 {
                if pieces > 1 {
                    let (from, n) = (c_from[s.i * nt + s.j], pieces as f64);
                    for q in 1..=pieces {
                        let added = product_end.max(from + q as f64 * t.c_in[ci][cj] / n);
                        d2h = d2h.max(added) + t.c_out[ci][cj] / n;
                    }
                } else {
                    d2h = d2h.max(compute) + t.c_out[ci][cj];
                    if t.fold[ci][cj] > 0.0 && !unfolded {
                        // The call's first fold also wakes the fold threads.
                        let wake = if folded { 0.0 } else { t.wake };
                        fold = fold.max(d2h) + t.fold[ci][cj] + wake;
                        folded = true;
                    }
                }
                if t.copy_out[ci][cj] > 0.0 {
                    fold = fold.max(d2h) + t.copy_out[ci][cj];
                }
            }
        }
    }
    r.compute_end = compute;
    r.h2d_end = h2d;
    r.d2h_end = d2h;
    r.fold_end = fold;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform(copy: f64, gemm: f64) -> TileTimes {
        TileTimes {
            a: [[copy; 2]; 2],
            b: [[copy; 2]; 2],
            c_in: [[copy; 2]; 2],
            c_out: [[copy; 2]; 2],
            fold: [[0.0; 2]; 2],
            copy_out: [[0.0; 2]; 2],
            gemm: [[[gemm; 2]; 2]; 2],
            wake: crate::fold::FIRST_S,
            pieces: [[1; 2]; 2],
        }
    }

    fn grid(mt: usize, nt: usize, kt: usize, late_c: bool) -> ReplayGrid {
        ReplayGrid {
            mt,
            nt,
            kt,
            edge: [false; 3],
            group: 4,
            fetch_c: true,
            late_c,
            unfolded: 0,
        }
    }

    /// A late C tile the plan splits goes back piece by piece, each piece after its own fetch:
    /// its write-back overlaps its C still crossing. Only the last group's tiles are split.
    #[test]
    fn late_c_pieces_go_back_behind_their_own_fetch() {
        let mut t = uniform(1.0, 0.1);
        t.pieces = [[4; 2]; 2];
        // A and B cross (2), the product (to 2.1), C from 2 to 3 in quarters; each quarter goes
        // back after it arrives: the last at 3, back at 3.25 (whole: 3 + 1).
        let r = replay(&grid(1, 1, 1, true), &t);
        assert!((r.d2h_end - 3.25).abs() < 1e-12, "{r:?}");
        let whole = replay(&grid(1, 1, 1, true), &uniform(1.0, 0.1));
        assert!((whole.d2h_end - 4.0).abs() < 1e-12, "{whole:?}");
        // Five tiles in groups of four: the last group's four are split, and the call ends
        // sooner than whole.
        let g = grid(1, 5, 1, true);
        let (r, w) = (replay(&g, &t), replay(&g, &uniform(1.0, 0.1)));
        assert!(r.end() < w.end(), "{r:?} {w:?}");
        // Without late C nothing is split.
        let (early, whole) = (
            replay(&grid(1, 1, 1, false), &t),
            replay(&grid(1, 1, 1, false), &uniform(1.0, 0.1)),
        );
        assert_eq!(early, whole);
    }

    #[test]
    fn one_tile_by_hand() {
        // C first, then A, then B: 3 copies; the product; the write-back.
        let r = replay(&grid(1, 1, 1, false), &uniform(1.0, 5.0));
        assert_eq!(r.first_start, 3.0);
        assert_eq!(r.compute_end, 8.0);
        assert_eq!(r.first_done, 8.0);
        assert_eq!(r.d2h_end, 9.0);
        assert_eq!(r.end(), 9.0);
        // Late C: A and B first, the product, C crosses under it, the write-back after.
        let r = replay(&grid(1, 1, 1, true), &uniform(1.0, 5.0));
        assert_eq!(r.first_start, 2.0);
        assert_eq!(r.h2d_end, 3.0);
        assert_eq!(r.end(), 8.0);
    }

    /// A fold tail by hand: two C tiles, one k step, copies 1, products 2, folds 3. Folding
    /// both, the second fold ends the call; with the last tile unfolded, its C crosses late
    /// (after its A and B), it goes back whole, and only the first tile is folded.
    #[test]
    fn an_unfolded_tail_sends_c_and_skips_the_fold() {
        let mut t = uniform(1.0, 2.0);
        t.fold = [[3.0; 2]; 2];
        let g = ReplayGrid {
            fetch_c: false,
            ..grid(1, 2, 1, true)
        };
        // h2d: A0 B0 (2) B1 (3); products 2-4 and 4-6; write-backs 4-5 and 6-7; folds 5-8
        // and 8-11, the first also waking the fold threads.
        let wake = crate::fold::FIRST_S;
        let all = replay(&g, &t);
        assert_eq!((all.h2d_end, all.d2h_end), (3.0, 7.0));
        assert_eq!(all.fold_end, 11.0 + wake);
        // The second tile (0,1) finishes last: its C crosses after its B (3-4), its add
        // waits for it (no later than its product's end at 6), it goes back 6-7, unfolded.
        let tail = replay(&ReplayGrid { unfolded: 1, ..g }, &t);
        assert_eq!((tail.h2d_end, tail.d2h_end), (4.0, 7.0));
        assert_eq!(tail.fold_end, 8.0 + wake);
        assert_eq!(tail.end(), 8.0 + wake);
        // Nothing folded: no wake.
        let none = replay(&ReplayGrid { unfolded: 2, ..g }, &t);
        assert_eq!(none.fold_end, 0.0);
    }

    #[test]
    fn late_c_at_the_first_of_two_k_steps_delays_the_second() {
        // 2x2x2 tiles, one group of four, copies 1, products 1.5. Late C is fetched from the
        // second-last k step on, i.e. during the first; the second step's A and B queue
        // behind it. Shell order (0,0) (1,0) (1,1) (0,1); by hand the h2d order is
        // A00 B00 C00 A10 C10 B01 C11 C01 | A01 B10 A11 B11.
        let r = replay(&grid(2, 2, 2, true), &uniform(1.0, 1.5));
        assert_eq!(r.first_start, 2.0);
        assert_eq!(r.h2d_end, 12.0);
        // Products: 2-3.5, A10 at 4 -> 4-5.5, B01 at 6 -> 6-7.5, 7.5-9; second step: A01
        // at 9, B10 at 10 -> 10-11.5, A11 at 11 -> 11.5-13, B11 at 12 -> 13-14.5, 14.5-16.
        assert_eq!(r.compute_end, 16.0);
        assert_eq!(r.idle, 0.5 + 0.5 + 1.0);
        assert_eq!(r.d2h_end, 17.0);
        // The first C tile is done at its second step's product (its C arrived at 3), the
        // group's first step and the second step's A01 and B10 before it.
        assert_eq!(r.first_done, 11.5);
    }

    #[test]
    fn products_wait_for_a_new_row_panel() {
        // A 2x1 grid of C tiles, one at a time: the second tile needs a new A row-panel
        // (kt tiles), and each of its products waits for its A tile.
        let g = ReplayGrid {
            group: 1,
            ..grid(2, 1, 4, false)
        };
        let t = TileTimes {
            b: [[0.0; 2]; 2],
            c_in: [[0.0; 2]; 2],
            c_out: [[0.0; 2]; 2],
            ..uniform(1.0, 0.25)
        };
        let r = replay(&g, &t);
        // A tiles arrive at 1..8; each product starts when its A arrives.
        assert_eq!(r.h2d_end, 8.0);
        assert_eq!(r.compute_end, 8.25);
    }

    /// The serpentine step order: a 2x1 grid of C tiles, one at a time, two k steps, copies
    /// 1, products 1.5, C neither read nor written.
    #[test]
    fn the_second_tile_runs_its_k_steps_backwards() {
        let g = ReplayGrid {
            group: 1,
            fetch_c: false,
            ..grid(2, 1, 2, false)
        };
        let t = TileTimes {
            c_out: [[0.0; 2]; 2],
            ..uniform(1.0, 1.5)
        };
        // (0,0) at k 0 and 1, then (1,0) backwards. h2d: A00 B00 (2) A01 B10 (4)
        // A11 (5) A10 (6); products 2-3.5, 4-5.5, 5.5-7, 7-8.5.
        let r = replay(&g, &t);
        assert_eq!((r.h2d_end, r.compute_end), (6.0, 8.5));
    }

    /// A staged C's copy-outs run one after another, each after its tile's write-back: a 2x1
    /// grid, one k step, copies 1, products 1, copy-outs 3. Write-backs end at 4 and 5; the
    /// copy-outs at 7 and 10, which end the call.
    #[test]
    fn staged_copy_outs_queue_behind_their_write_backs() {
        let g = ReplayGrid {
            group: 1,
            fetch_c: false,
            ..grid(2, 1, 1, false)
        };
        let t = TileTimes {
            c_in: [[0.0; 2]; 2],
            copy_out: [[3.0; 2]; 2],
            ..uniform(1.0, 1.0)
        };
        let r = replay(&g, &t);
        assert_eq!((r.compute_end, r.d2h_end), (4.0, 5.0));
        assert_eq!((r.fold_end, r.end()), (10.0, 10.0));
        let plain = replay(
            &g,
            &TileTimes {
                copy_out: [[0.0; 2]; 2],
                ..t
            },
        );
        assert_eq!(plain.end(), 5.0);
    }
}
