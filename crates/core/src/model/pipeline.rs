//! The model of hetblas's own single-device pipeline, the one the autotuner uses.
//!
//! Every tile is fetched once and kept, C tiles are accumulated in groups in shell order, and
//! the copy queues run ahead of compute limited only by data. The time is the longest path:
//! compute (the first tiles' fetch, every product, the first group's stalls, the tail),
//! host->device (every fetched byte, then the products still waiting for their tiles),
//! device->host (from the first C tile done, every write-back) and the host folds. Edge tiles
//! count at their real size (full or edge in m, n, k). Blockings of one C tile at a time, and
//! one k step with late C, are replayed in the plan's order instead ([`replay`]).

use crate::model::cocopelia::Offload;
use crate::model::exec::ExecTime;
use crate::model::link::TileLink;
use crate::model::replay::{class, plan_steps, replay, ReplayGrid, TileTimes};
use crate::tiling::Blocking;

/// Blockings of one C tile at a time with at most this many tile products are replayed step by
/// step: the closed form sees only the first C tile, while shell order puts a new A row-panel
/// at the second (8192x8192x32768 in 4096x512 C tiles on H200: closed form 10% fast, replay 7%
/// slow). Square blockings keep the closed form (replayed, 4096^3..8192^3 came out 10-25% slow).
const REPLAY_MAX_STEPS: usize = 4096;

/// Rows and columns of C tiles in a group of `group` (the planner's groups are 2x2 blocks in
/// shell order; a single row or column of tiles holds the group in a line).
fn group_shape(group: usize, mt: usize, nt: usize) -> (usize, usize) {
    let group = group.max(1);
    if group >= 4 && mt >= 2 && nt >= 2 {
        (2, 2)
    } else if nt == 1 {
        (group.min(mt), 1)
    } else {
        (1, group.min(nt))
    }
}

/// Host<->device link models of one device.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineModel {
    pub h2d: TileLink,
    pub d2h: TileLink,
    /// C arrives late (the device can add tiles): the first products do not wait for C.
    pub late_c: bool,
    /// C in host memory is not sent: products come back and are folded on the host at this
    /// many bytes of C per second ([`crate::fold`]). Applies when the offload reads C.
    pub host_fold: Option<f64>,
    /// With `host_fold`: this many C tiles are not folded (`plan::fold_tail_tiles`);
    /// their C crosses to the device (late, with `late_c`) and they go back whole
    /// ([`crate::plan::DeviceSpec::fold_tail`]).
    pub fold_tail: usize,
    /// How much longer a tile product takes while the host links copy (calibrated, >= 1):
    /// applied in proportion to the time the busier link is busy during compute.
    pub dma_slowdown: f64,
    /// How much longer host<->device copies take while products run (calibrated, >= 1):
    /// applied in proportion to the time compute overlaps the link.
    pub copy_slowdown: f64,
    /// Fixed cost of a call on the device (issue threads, events, final synchronisation).
    pub setup_s: f64,
    /// Host time to issue one task (copy, product, add, fold: events, waits, library call).
    pub task_issue_s: f64,
    /// What a call's first host fold costs beyond its bytes and [`crate::fold::TASK_S`]: the
    /// fold threads' wake ([`crate::fold::FIRST_S`]; the chooser also prices the slowest
    /// wake, [`crate::fold::WAKE_SPREAD_S`] more).
    pub fold_wake_s: f64,
    /// C is a fresh host output the backend stages ([`crate::profile::StagedOut`]): each
    /// write-back is then copied out by host threads, one after another. `None`: C's
    /// write-backs end with their DMA.
    pub staged_out: Option<crate::profile::StagedOut>,
}

/// The parts of a prediction, for `hetblas predict` and the validation report.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct PipelinePrediction {
    pub seconds: f64,
    pub compute: f64,
    pub h2d: f64,
    pub d2h: f64,
    pub first_fetch: f64,
    pub first_group_stall: f64,
}

/// (full tiles, edge size) of a dimension: `d = full * t + edge`.
fn split(d: usize, t: usize) -> [(usize, usize); 2] {
    let t = t.max(1);
    [(d / t, t), (usize::from(!d.is_multiple_of(t)), d % t)]
}

/// [full, edge] tile sizes of a dimension, as [`split`] counts them (edge 0: none).
fn sizes(d: usize, t: usize) -> [usize; 2] {
    split(d, t).map(|(_, size)| size)
}

/// The C tile at position `pos` of an `mt x nt` grid in shell order
/// ([`crate::distribute::shell_order`]: shell s is row s left to right, then column s bottom
/// to top), without sorting the grid.
fn shell_at(mt: usize, nt: usize, mut pos: usize) -> (usize, usize) {
    debug_assert!(pos < mt * nt, "tile {pos} of {mt}x{nt}");
    for s in 0..mt.max(nt) {
        let row = if s < mt { s.min(nt - 1) + 1 } else { 0 };
        let col = if s < nt { s.min(mt) } else { 0 };
        if pos < row {
            return (s, pos);
        }
        if pos < row + col {
            return (s.min(mt) - 1 - (pos - row), s);
        }
        pos -= row + col;
    }
    (mt - 1, nt - 1)
}

/// How many C tiles of a fold tail of `n` (as [`crate::plan::fold_tail_tiles`] picks it) are of
/// each edge class (`[m class][n class]`), so that a tail of edge tiles is priced at its size.
fn tail_classes(
    mt: usize,
    nt: usize,
    edge: [bool; 2],
    n: usize,
    group: usize,
    spread: f64,
) -> [[usize; 2]; 2] {
    let mut count = [[0usize; 2]; 2];
    for p in crate::plan::tail_positions(mt * nt, n, group, spread) {
        let (i, j) = shell_at(mt, nt, p);
        count[class(i, mt, edge[0])][class(j, nt, edge[1])] += 1;
    }
    count
}

impl PipelineModel {
    /// Predicted seconds of the offload with blocking `b` (a number: square tiles).
    pub fn predict(
        &self,
        o: &Offload,
        b: impl Into<Blocking>,
        exec: &dyn ExecTime,
    ) -> PipelinePrediction {
        let b: Blocking = b.into();
        if !crate::problem::gemm::modelled_size(o.m, o.n, o.k) {
            // Beyond what the counts below hold: no blocking can be predicted, none is chosen.
            return PipelinePrediction {
                seconds: f64::INFINITY,
                ..PipelinePrediction::default()
            };
        }
        // A host fold applies where C is read and written; then C is not fetched.
        let fold = self.host_fold.filter(|_| o.get[2] && o.set[2]);
        // A staged C's copy-outs follow its write-backs (C folded is not staged).
        let staged = self
            .staged_out
            .and_then(|s| s.usable())
            .filter(|_| o.set[2] && fold.is_none());
        let mut o = *o;
        o.get[2] &= fold.is_none();
        let o = &o;
        let e = o.elem_bytes;
        let g = b.grid(o.m, o.n, o.k);
        let (tm, tn, tk) = (g.tm, g.tn, g.tk);
        let (mt, nt, kt) = (o.m.div_ceil(tm), o.n.div_ceil(tn), o.k.div_ceil(tk));
        if mt * nt * kt == 0 {
            return PipelinePrediction::default();
        }
        // Folded C tiles leave the last `unfolded` ones to cross whole.
        let unfolded = fold.map_or(0, |_| self.fold_tail.min(mt * nt));
        let mut tc = compute_time(o, (tm, tn, tk), exec);
        let mut t_gemm = exec.gemm_time(tm, tn, tk);
        // Link times with the share of each direction's copies under products: first as if
        // all were, then with the share compute covers.
        let tiles = (tm, tn, tk);
        let (_, all_in, all_out) = self.link_times(o, tiles, 1.0, 1.0);
        let share = |t: f64| if t > 0.0 { (tc / t).min(1.0) } else { 0.0 };
        let (lin, lout) = (share(all_in), share(all_out));
        let (mut t_wb, mut tin, mut tout) = self.link_times(o, tiles, lin, lout);
        // The planner's groups are at most the default.
        let group = b.group.clamp(1, crate::tiling::DEFAULT_GROUP);
        // The tail's C crosses at its tiles' own sizes.
        let (dm, dn) = (sizes(o.m, tm), sizes(o.n, tn));
        let tail_count = tail_classes(
            mt,
            nt,
            [dm[1] > 0, dn[1] > 0],
            unfolded,
            group,
            crate::plan::FOLD_SPREAD,
        );
        let c_contig = contiguity(o, tm, g.tk).2;
        let mut tail_c_bytes = 0usize;
        for x in 0..2 {
            for y in 0..2 {
                let tiles = tail_count[x][y];
                if tiles > 0 {
                    tail_c_bytes += tiles * dm[x] * dn[y] * e;
                    tin +=
                        tiles as f64 * self.h2d.tile_time(dm[x], dn[y], e, c_contig, o.m * e, lin);
                }
            }
        }
        // Copies run slower while products run, for the share of link time compute overlaps.
        let under = |t: f64| {
            if t > 0.0 {
                1.0 + (self.copy_slowdown - 1.0).max(0.0) * (tc / t).min(1.0)
            } else {
                1.0
            }
        };
        let (fi, fo) = (under(tin), under(tout));
        tin *= fi;
        tout *= fo;
        t_wb *= fo;
        // Both directions slow each other where they overlap. The last group's write-backs
        // wait for its last k step, whose A and B tiles are about the last to cross, so only
        // the earlier groups' share of the write-backs counts beside the copies in.
        let c_tiles = mt * nt;
        let g_last = (c_tiles - 1) % group + 1;
        // With one k step and late C, every write-back but the last runs beside the copies
        // in; a last group that is the whole plan is replayed (below).
        let late_one_step = o.get[2] && self.late_c && kt == 1 && g_last == c_tiles;
        let beside_in = if late_one_step {
            (tout - t_wb).max(0.0)
        } else {
            tout * (1.0 - g_last as f64 / c_tiles as f64)
        };
        let both = tin.min(beside_in);
        let tin_eff = tin + (self.h2d.model.bid_slowdown - 1.0).max(0.0) * both;
        let tout_eff = tout + (self.d2h.model.bid_slowdown - 1.0).max(0.0) * both;
        // Products run slower while the links copy, for the share of compute they overlap.
        let mut gemm_factor = 1.0;
        if tc > 0.0 {
            let busy = (tin_eff.max(tout_eff) / tc).min(1.0);
            gemm_factor = 1.0 + (self.dma_slowdown - 1.0).max(0.0) * busy;
            tc *= gemm_factor;
            t_gemm *= gemm_factor;
        }
        // The host issues every task (events, waits, library calls) one after another.
        let tasks = issued_tasks(o, (mt, nt, kt), fold.is_some());
        // The last product and its write-back still run after the host has issued them
        // (without them, calls bound by issuing came out a median 10 us fast on H200).
        let drain = t_gemm + t_wb;
        let issue_path = tasks * self.task_issue_s + drain;
        // One C tile at a time, or one k step with late C: replayed at the closed form's
        // slowed times (both directions' overlap included); else the closed form, whose
        // first group keeps its tiles' real sizes.
        let replayed = (b.group == 1 || late_one_step) && mt * nt * kt <= REPLAY_MAX_STEPS;
        let (slow_in, slow_out) = if replayed {
            (
                if tin > 0.0 { fi * tin_eff / tin } else { fi },
                if tout > 0.0 { fo * tout_eff / tout } else { fo },
            )
        } else {
            (fi, fo)
        };
        let slowed = Slowed {
            lin,
            lout,
            slow_in,
            slow_out,
            gemm_factor,
        };
        let (first_times, grid) = self.tile_times(o, b, fold, staged, &slowed, exec);
        let prediction = |seconds, first_fetch, first_group_stall| PipelinePrediction {
            seconds,
            compute: tc,
            h2d: tin_eff,
            d2h: tout_eff,
            first_fetch,
            first_group_stall,
        };
        if replayed {
            let r = replay(&grid, &first_times);
            let seconds = self.setup_s + r.end().max(issue_path);
            return prediction(seconds, r.first_start, r.idle);
        }
        let (t0, stall, first_done) = first_group(&grid, &first_times);
        // A full tile's fold (0 without folds), as the tile classes priced it.
        let t_fold = first_times.fold[0][0];
        // The last group ends folded, or whole when the unfolded tiles cover it.
        let tail = if unfolded >= g_last {
            self.tail(true, g_last, t_wb, None, t_gemm)
        } else {
            self.tail(o.get[2], g_last, t_wb, fold.map(|_| t_fold), t_gemm)
        };
        let compute_path = t0 + stall + tc + tail;
        // After the last host->device copy: with one k step and late C that copy is the last
        // C tile (fetched after its A and B), and only its add and write-back remain; else it
        // is an A or B tile, and the products still waiting for their tiles, then the tail.
        let h2d_path = if o.get[2] && self.late_c && fold.is_none() && kt == 1 {
            tin_eff + t_wb
        } else {
            tin_eff + products_after_inputs(&grid, &first_times, tin_eff).max(t_gemm) + tail
        };
        // The write-backs start when the first C tile is done: in a group, after the group's
        // earlier k steps and their stalls.
        let d2h_path = if o.set[2] {
            first_done + tout_eff + if unfolded > 0 { 0.0 } else { t_fold }
        } else {
            0.0
        };
        // The first C tile is back in host memory: its group's tiles, all of K, its write-back.
        let first_back = t0 + stall + kt as f64 * t_gemm + t_wb;
        let fold_path = match fold {
            Some(bw) => {
                let folds = (mt * nt - unfolded) as f64;
                let c_bytes = (o.m * o.n * e - tail_c_bytes) as f64;
                // The first fold waits for the first C tile and wakes the fold threads.
                let wake = if folds > 0.0 { self.fold_wake_s } else { 0.0 };
                first_back + c_bytes / bw + folds * crate::fold::TASK_S + wake
            }
            None => 0.0,
        };
        // Staged: the copy-outs run one after another from the first write-back on, and the
        // last one after the last write-back.
        let (copy_path, last_copy) = match staged {
            Some(s) => (
                first_back
                    + (mt * nt) as f64 * s.per_copy_s.max(0.0)
                    + (o.m * o.n * e) as f64 / s.bytes_per_sec,
                s.copy_seconds(tm.min(o.m) * tn.min(o.n) * e),
            ),
            None => (0.0, 0.0),
        };
        let longest = (compute_path.max(h2d_path).max(d2h_path) + last_copy)
            .max(copy_path)
            .max(fold_path)
            .max(issue_path);
        prediction(self.setup_s + longest, t0, stall)
    }

    /// The tail after the last product, for a last group of `g_last` C tiles: its write-backs
    /// (with late C, `reads_c`, each after its add, overlapping only the group's remaining
    /// products) and, when C is folded (`t_fold`), the folds one after the other.
    fn tail(
        &self,
        reads_c: bool,
        g_last: usize,
        t_wb: f64,
        t_fold: Option<f64>,
        t_gemm: f64,
    ) -> f64 {
        let g_last = g_last as f64;
        match t_fold {
            Some(t_fold) => {
                let slow = t_wb.max(t_fold);
                let fast = t_wb.min(t_fold);
                (g_last * slow + fast - (g_last - 1.0) * t_gemm).max(t_wb + t_fold)
            }
            None if self.late_c && reads_c => (g_last * t_wb - (g_last - 1.0) * t_gemm).max(t_wb),
            None => t_wb,
        }
    }

    /// Link seconds of one C tile's write-back, of every tile in and of every tile out, with
    /// the share `lin` / `lout` of each direction's copies running under products.
    fn link_times(
        &self,
        o: &Offload,
        (tm, tn, tk): (usize, usize, usize),
        lin: f64,
        lout: f64,
    ) -> (f64, f64, f64) {
        let e = o.elem_bytes;
        let (a_contig, b_contig, c_contig) = contiguity(o, tm, tk);
        // C's host pitch (N transposes): C has m rows.
        let pc = o.m * e;
        // Totals: every tile of a `rows x cols` operand once, each at its size (edge tiles by
        // class) and its host pitch `rows * e`.
        let sum_tiles = |link: &TileLink,
                         rows: usize,
                         tr: usize,
                         cols: usize,
                         tcl: usize,
                         contig: bool,
                         load: f64| {
            let mut total = 0.0;
            for (cr, dr) in split(rows, tr) {
                for (cc, dc) in split(cols, tcl) {
                    if cr * cc > 0 {
                        total +=
                            (cr * cc) as f64 * link.tile_time(dr, dc, e, contig, rows * e, load);
                    }
                }
            }
            total
        };
        let mut total_in = 0.0;
        if o.get[0] {
            total_in += sum_tiles(&self.h2d, o.m, tm, o.k, tk, a_contig, lin);
        }
        if o.get[1] {
            total_in += sum_tiles(&self.h2d, o.k, tk, o.n, tn, b_contig, lin);
        }
        if o.get[2] {
            total_in += sum_tiles(&self.h2d, o.m, tm, o.n, tn, c_contig, lin);
        }
        if !o.set[2] {
            return (0.0, total_in, 0.0);
        }
        (
            self.d2h.tile_time(tm, tn, e, c_contig, pc, lout),
            total_in,
            sum_tiles(&self.d2h, o.m, tm, o.n, tn, c_contig, lout),
        )
    }

    /// Per tile class (full or edge in m, n, k): copy, fold (or staged copy-out) and product
    /// times slowed as `slowed` says, and the grid they tile.
    fn tile_times(
        &self,
        o: &Offload,
        b: Blocking,
        fold: Option<f64>,
        staged: Option<crate::profile::StagedOut>,
        slowed: &Slowed,
        exec: &dyn ExecTime,
    ) -> (TileTimes, ReplayGrid) {
        let e = o.elem_bytes;
        let g = b.grid(o.m, o.n, o.k);
        let (tm, tn, tk) = (g.tm, g.tn, g.tk);
        let (mt, nt, kt) = (o.m.div_ceil(tm), o.n.div_ceil(tn), o.k.div_ceil(tk));
        let (a_contig, b_contig, c_contig) = contiguity(o, tm, tk);
        let (pa, pb, pc) = (o.m * e, o.k * e, o.m * e);
        // [full, edge] tile sizes per dimension.
        let (dm, dn, dk) = (sizes(o.m, tm), sizes(o.n, tn), sizes(o.k, tk));
        let mut t = TileTimes {
            wake: self.fold_wake_s,
            ..TileTimes::default()
        };
        for x in 0..2 {
            for y in 0..2 {
                let h2d = |rows: usize, cols: usize, contig: bool, pitch: usize| {
                    self.h2d.tile_time(rows, cols, e, contig, pitch, slowed.lin) * slowed.slow_in
                };
                if o.get[0] {
                    t.a[x][y] = h2d(dm[x], dk[y], a_contig, pa);
                }
                if o.get[1] {
                    t.b[x][y] = h2d(dk[x], dn[y], b_contig, pb);
                }
                // C crosses where the device reads it, and for a fold's unfolded tail.
                if o.get[2] || fold.is_some() {
                    t.c_in[x][y] = h2d(dm[x], dn[y], c_contig, pc);
                    t.pieces[x][y] = crate::plan::tail_pieces(dm[x] * dn[y] * e, dn[y], None);
                }
                if o.set[2] {
                    t.c_out[x][y] = self
                        .d2h
                        .tile_time(dm[x], dn[y], e, c_contig, pc, slowed.lout)
                        * slowed.slow_out;
                }
                if let Some(bw) = fold {
                    t.fold[x][y] = crate::fold::seconds(dm[x] * dn[y] * e, bw);
                }
                if let Some(s) = staged.filter(|_| o.set[2]) {
                    t.copy_out[x][y] = s.copy_seconds(dm[x] * dn[y] * e);
                }
                for (z, &dz) in dk.iter().enumerate() {
                    if dm[x] * dn[y] * dz > 0 {
                        t.gemm[x][y][z] = exec.gemm_time(dm[x], dn[y], dz) * slowed.gemm_factor;
                    }
                }
            }
        }
        let grid = ReplayGrid {
            mt,
            nt,
            kt,
            edge: [dm[1] > 0, dn[1] > 0, dk[1] > 0],
            group: b.group,
            fetch_c: o.get[2],
            late_c: self.late_c,
            unfolded: fold.map_or(0, |_| self.fold_tail.min(mt * nt)),
        };
        (t, grid)
    }
}

/// The first group's timeline: when the first product starts (`t0`), how long its products
/// then wait for their tiles (`stall`, per k step) and when its first C tile is done
/// (`first_done`: the group replayed, [`replay`]), when the write-backs can start.
fn first_group(g: &ReplayGrid, t: &TileTimes) -> (f64, f64, f64) {
    let (gr, gc) = group_shape(g.group, g.mt, g.nt);
    let rows: Vec<usize> = (0..gr).map(|i| class(i, g.mt, g.edge[0])).collect();
    let cols: Vec<usize> = (0..gc).map(|j| class(j, g.nt, g.edge[1])).collect();
    let step = |s: usize| class(s, g.kt, g.edge[2]);
    let c_first = g.fetch_c && !g.late_c;
    let (x0, y0, z0) = (rows[0], cols[0], step(0));
    let t0 = if c_first { t.c_in[x0][y0] } else { 0.0 } + t.a[x0][z0] + t.b[z0][y0];
    // Per k step: the group's new A and B tiles, and its products.
    let inputs = |s: usize| {
        let z = step(s);
        rows.iter().map(|&x| t.a[x][z]).sum::<f64>() + cols.iter().map(|&y| t.b[z][y]).sum::<f64>()
    };
    let products = |s: usize| {
        let z = step(s);
        rows.iter()
            .flat_map(|&x| cols.iter().map(move |&y| t.gemm[x][y][z]))
            .sum::<f64>()
    };
    let c_in: f64 = rows
        .iter()
        .flat_map(|&x| cols.iter().map(move |&y| t.c_in[x][y]))
        .sum();
    let first_in = inputs(0) + if c_first { c_in } else { 0.0 };
    let mut stall = (first_in - t0 - products(0)).max(0.0);
    for s in 1..g.kt {
        stall += (inputs(s) - products(s)).max(0.0);
    }
    // Late C crosses during the first group's last steps, delaying the A and B tiles behind
    // it beyond the slack the group's products leave: with two k steps C crosses during the
    // first, so only the second step's slack is left.
    if g.fetch_c && g.late_c {
        let slack_steps = if g.kt == 2 { 1..2 } else { 0..g.kt };
        let slack: f64 = slack_steps
            .map(|s| (products(s) - inputs(s)).max(0.0))
            .sum();
        stall += (c_in - slack).max(0.0);
    }
    // The first group alone, replayed in the plan's order (its tiles keep their edge classes).
    let first = ReplayGrid {
        mt: gr,
        nt: gc,
        edge: [g.edge[0] && gr == g.mt, g.edge[1] && gc == g.nt, g.edge[2]],
        unfolded: 0,
        ..*g
    };
    (t0, stall, replay(&first, t).first_done)
}

/// Plans of more steps are not scanned by [`products_after_inputs`] (one product is counted).
const DRAIN_MAX_STEPS: usize = 1 << 16;

/// How long products still run after the last A or B tile has crossed, when the link feeds
/// them in plan order (`tin` in all, each tile at its class's share): the flow shop's
/// `max over steps s of (products from s on - tiles after s)`, not just the last product.
fn products_after_inputs(g: &ReplayGrid, t: &TileTimes, tin: f64) -> f64 {
    let steps = g.mt * g.nt * g.kt;
    if steps == 0 || steps > DRAIN_MAX_STEPS {
        return 0.0;
    }
    // The plan's order, its group capped as the planner caps it.
    let group = g.group.clamp(1, crate::tiling::DEFAULT_GROUP);
    let mut seen_a = vec![false; g.mt * g.kt];
    let mut seen_b = vec![false; g.kt * g.nt];
    let order: Vec<(f64, f64)> = plan_steps(g, group)
        .iter()
        .map(|st| {
            let (x, y, z) = (
                class(st.i, g.mt, g.edge[0]),
                class(st.j, g.nt, g.edge[1]),
                class(st.l, g.kt, g.edge[2]),
            );
            let mut input = 0.0;
            if !std::mem::replace(&mut seen_a[st.i * g.kt + st.l], true) {
                input += t.a[x][z];
            }
            if !std::mem::replace(&mut seen_b[st.l * g.nt + st.j], true) {
                input += t.b[z][y];
            }
            (input, t.gemm[x][y][z])
        })
        .collect();
    // The tiles' times scaled to the link's total (which counts C and both directions' slowing).
    let fetched: f64 = order.iter().map(|s| s.0).sum();
    if fetched <= 0.0 {
        // No A or B tile crosses (they are on the device): nothing waits for the link's end.
        return 0.0;
    }
    let scale = tin / fetched;
    let (mut products, mut later_inputs, mut most) = (0.0, 0.0, 0.0f64);
    for &(input, product) in order.iter().rev() {
        products += product;
        most = most.max(products - later_inputs);
        later_inputs += input * scale;
    }
    most
}

/// What the closed form found about interference, for the replay: link loads (share of copies
/// under products), how much slower copies run each way, and how much slower products run.
struct Slowed {
    lin: f64,
    lout: f64,
    slow_in: f64,
    slow_out: f64,
    gemm_factor: f64,
}

/// Tasks the host issues for the offload: products, fetches of A and B tiles, C in (and its
/// add), write-backs, folds.
fn issued_tasks(o: &Offload, (mt, nt, kt): (usize, usize, usize), fold: bool) -> f64 {
    let c_tiles = (mt * nt) as f64;
    (mt * nt * kt) as f64
        + if o.get[0] { (mt * kt) as f64 } else { 0.0 }
        + if o.get[1] { (kt * nt) as f64 } else { 0.0 }
        + if o.get[2] { 2.0 * c_tiles } else { 0.0 }
        + if o.set[2] { c_tiles } else { 0.0 }
        + if fold { c_tiles } else { 0.0 }
}

/// Seconds of every tile product of the offload, edge tiles by class.
fn compute_time(o: &Offload, (tm, tn, tk): (usize, usize, usize), exec: &dyn ExecTime) -> f64 {
    let mut tc = 0.0;
    for (cm, dm) in split(o.m, tm) {
        for (cn, dn) in split(o.n, tn) {
            for (ck, dk) in split(o.k, tk) {
                let c = cm * cn * ck;
                if c > 0 {
                    tc += c as f64 * exec.gemm_time(dm, dn, dk);
                }
            }
        }
    }
    tc
}

/// Host tiles are column blocks of column-major operands (A: m x k, B: k x n, C: m x n as
/// stored for N transposes): contiguous only when a tile spans whole columns. (A, B, C).
fn contiguity(o: &Offload, tm: usize, tk: usize) -> (bool, bool, bool) {
    (tm >= o.m, tk >= o.k, tm >= o.m)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::exec::fixed::FixedRate;
    use crate::model::link::LinkModel;
    use crate::scalar::DType;
    use crate::tiling::Blocking;

    /// 50 GB/s both ways, late C, no fold, no interference, no setup.
    pub(crate) fn model() -> PipelineModel {
        PipelineModel {
            h2d: link(50.0),
            d2h: link(50.0),
            late_c: true,
            host_fold: None,
            fold_tail: 0,
            dma_slowdown: 1.0,
            copy_slowdown: 1.0,
            setup_s: 0.0,
            task_issue_s: 0.0,
            fold_wake_s: crate::fold::FIRST_S,
            staged_out: None,
        }
    }

    /// Seconds [`model`]'s links take to copy `bytes` (50 GB/s after 10 us).
    fn copy_s(bytes: f64) -> f64 {
        bytes / 50e9 + 10e-6
    }

    fn link(gbps: f64) -> TileLink {
        TileLink {
            model: LinkModel {
                latency_s: 10e-6,
                sec_per_byte: 1.0 / (gbps * 1e9),
                bid_slowdown: 1.14,
            },
            strided: vec![],
            wide: vec![],
            busy: vec![],
            near: vec![],
            near_busy: vec![],
            busy_always: false,
        }
    }

    /// 2^32 in every dimension overflowed the tile and byte counts (a panic in debug builds,
    /// 0 s and that tile chosen in release builds).
    #[test]
    fn a_problem_too_large_to_model_is_never_predicted_fast() {
        let big = 1usize << 32;
        let o = Offload::from_host_flags(big, big, big, DType::F64, [true; 3], false);
        let exec = FixedRate {
            flops_per_sec: 55e12,
        };
        for t in [256, 4096] {
            let p = model().predict(&o, t, &exec);
            assert!(p.seconds.is_infinite(), "{p:?}");
        }
    }

    #[test]
    fn compute_bound_large_problem() {
        let m = model();
        let o = Offload::from_host_flags(32768, 32768, 32768, DType::F64, [true; 3], false);
        let exec = FixedRate {
            flops_per_sec: 55e12,
        };
        let p = m.predict(&o, 4096, &exec);
        let flops = 2.0 * 32768f64.powi(3);
        assert!((p.compute - flops / 55e12).abs() / p.compute < 1e-9);
        // Compute-bound: within a few percent of the pure compute time.
        assert!(
            p.seconds > p.compute && p.seconds < p.compute * 1.05,
            "{p:?}"
        );
    }

    #[test]
    fn transfer_bound_thin_problem() {
        let m = model();
        // 4096 x 4096 x 32768: 2.28 GB in, 0.13 GB out, 1.1 TFLOP.
        let o = Offload::from_host_flags(4096, 4096, 32768, DType::F64, [true; 3], false);
        let exec = FixedRate {
            flops_per_sec: 55e12,
        };
        let p = m.predict(&o, 4096, &exec);
        assert!(p.h2d > p.compute);
        let bytes = (2 * 4096 * 32768 + 4096 * 4096) as f64 * 8.0;
        assert!(p.seconds >= bytes / 50e9);
        // Smaller tiles shorten the exposed first fetch and the tail.
        assert!(m.predict(&o, 2048, &exec).seconds < p.seconds);
    }

    /// One k step under late C: each C tile crosses in its turn and goes back after it (the
    /// last group's in pieces), so the write-backs overlap the copies in. The closed form wrote
    /// the last group back together after them: these four C tiles were priced near the sum
    /// of both directions.
    #[test]
    fn one_k_step_under_late_c_overlaps_write_backs_with_copies_in() {
        let m = PipelineModel {
            late_c: true,
            ..model()
        };
        let o = Offload::from_host_flags(8192, 8192, 512, DType::F64, [true; 3], false);
        let exec = FixedRate {
            flops_per_sec: 55e12,
        };
        let p = m.predict(&o, 4096, &exec);
        assert!(p.seconds < 0.75 * (p.h2d + p.d2h), "{p:?}");
        assert!(p.seconds >= p.h2d.max(p.d2h), "{p:?}");
    }

    /// A fresh C, staged: each write-back is copied out after its DMA, one copy-out after
    /// another. 8192^3 f64, beta 0, at 55 TFLOP/s. Copy-outs at 30 GB/s (0.2 ms each beyond
    /// their bytes): the last tile's copy-out ends the call, so 4096 tiles (128 MiB) lose more
    /// than 2048 ones (32 MiB), replayed (one C tile at a time) and in closed form (groups of
    /// four) alike. (On H200 NumPy's `a @ b` ran 0.033-0.035 s in 2048 tiles against
    /// 0.040-0.044 in 4096, 2026-11-30.)
    #[test]
    fn a_staged_outputs_copy_outs_favour_tiles_that_finish_early() {
        let plain = model();
        let staged = PipelineModel {
            staged_out: Some(crate::profile::StagedOut {
                bytes_per_sec: 30e9,
                per_copy_s: 0.2e-3,
            }),
            ..plain.clone()
        };
        let o = Offload::from_host_flags(8192, 8192, 8192, DType::F64, [true; 3], true);
        let exec = FixedRate {
            flops_per_sec: 55e12,
        };
        let tile_copy = |t: usize| 0.2e-3 + (t * t * 8) as f64 / 30e9;
        for group in [1, 4] {
            let at = |m: &PipelineModel, t: usize| {
                m.predict(
                    &o,
                    Blocking {
                        group,
                        ..Blocking::square(t)
                    },
                    &exec,
                )
                .seconds
            };
            for t in [2048, 4096] {
                assert!(
                    at(&staged, t) >= at(&plain, t) + tile_copy(t) - 1e-12,
                    "group {group}, tile {t}"
                );
            }
            let gap = |m: &PipelineModel| at(m, 4096) - at(m, 2048);
            assert!(
                gap(&staged) > gap(&plain) + 0.5 * (tile_copy(4096) - tile_copy(2048)),
                "group {group}"
            );
        }
        // C folded on the host is never staged.
        let folding = |m: &PipelineModel| PipelineModel {
            host_fold: Some(20e9),
            ..m.clone()
        };
        let read = Offload::from_host_flags(8192, 8192, 8192, DType::F64, [true; 3], false);
        assert_eq!(
            folding(&staged).predict(&read, 4096, &exec),
            folding(&plain).predict(&read, 4096, &exec)
        );
    }

    /// Write-backs start when the first C tile is done, and in a group of four that is after
    /// the group's first k step and the second step's first A and B tiles: 2x2 C tiles of
    /// 1024, two k steps, beta = 0, products free, no duplex slowdown. The first C tile is
    /// done after 6 tile copies in; its 4 write-backs then take the link out back to back:
    /// 10 copies, where counting one product per k step after the first two tiles said 6 (and
    /// the 8 copies in, then a write-back, made the call 9).
    #[test]
    fn write_backs_wait_for_the_first_groups_earlier_k_steps() {
        let mut m = model();
        m.h2d.model.bid_slowdown = 1.0;
        m.d2h.model.bid_slowdown = 1.0;
        let o = Offload::from_host_flags(2048, 2048, 2048, DType::F64, [true; 3], true);
        let exec = FixedRate {
            flops_per_sec: 1e21,
        };
        let p = m.predict(&o, 1024, &exec);
        let copy = copy_s((1024 * 1024 * 8) as f64);
        assert!(
            (p.seconds - 10.0 * copy).abs() < 1e-3 * copy,
            "{p:?} against {copy}"
        );
    }

    #[test]
    fn streaming_blocking_and_task_issue() {
        let m = model();
        let o = Offload::from_host_flags(4096, 4096, 32768, DType::F64, [true; 3], false);
        let exec = FixedRate {
            flops_per_sec: 55e12,
        };
        // One narrow C tile at a time: C tiles finish while A and B still arrive, so the
        // tail after the last copy in is one narrow product and write-back.
        let stream = Blocking {
            tm: 4096,
            tn: 512,
            tk: 8192,
            group: 1,
        };
        let s = m.predict(&o, stream, &exec);
        assert!(s.seconds < m.predict(&o, 4096, &exec).seconds, "{s:?}");
        assert!(s.seconds >= s.h2d);
        // Issuing tasks costs host time: 1024 tiles of 8192^3 are 512 products, 64 A, 64 B,
        // 64 C fetches, 64 adds (late C) and 64 write-backs; then the last product and
        // write-back run.
        let sq = Offload::from_host_flags(8192, 8192, 8192, DType::F64, [true; 3], false);
        let slow = PipelineModel {
            task_issue_s: 1e-3,
            ..m.clone()
        };
        let p = slow.predict(&sq, 1024, &exec);
        let drain = 2.0 * 1024f64.powi(3) / 55e12 + copy_s(1024.0 * 1024.0 * 8.0);
        assert!(
            (p.seconds - (512.0 + 5.0 * 64.0) * 1e-3 - drain).abs() < 1e-9,
            "{p:?}"
        );
        assert!(m.predict(&sq, 1024, &exec).seconds < 0.1);
    }

    #[test]
    fn streaming_waits_for_the_second_a_row_panel() {
        let m = model();
        let exec = FixedRate {
            flops_per_sec: 55e12,
        };
        // 8192 x 8192 x 32768 in 4096 x 512 C tiles, tk 8192: shell order visits C (0,0) then
        // (1,0), whose products need A's second row-panel (4 tiles of 268 MB, 5.4 ms each at
        // 50 GB/s). The 120 products after the first 8 (0.62 ms each) start only once all of A
        // (43 ms) is in.
        let o = Offload::from_host_flags(8192, 8192, 32768, DType::F64, [true; 3], false);
        let b = Blocking {
            tm: 4096,
            tn: 512,
            tk: 8192,
            group: 1,
        };
        let p = m.predict(&o, b, &exec);
        let a_tile = copy_s(4096.0 * 8192.0 * 8.0);
        let product = 2.0 * 4096.0 * 512.0 * 8192.0 / 55e12;
        assert!(p.seconds >= 8.0 * a_tile + 120.0 * product, "{p:?}");
        assert!(
            p.first_group_stall > 8.0 * a_tile - 8.0 * product - 1e-3,
            "{p:?}"
        );
    }

    /// The two directions slow each other only where they overlap: with every C tile in one
    /// group, the write-backs all follow the last copy in, and the links' bidirectional
    /// slowdown changes nothing; with four groups, the first three groups' write-backs run
    /// beside copies in, and it slows the call.
    #[test]
    fn the_last_groups_write_backs_do_not_slow_the_copies_in() {
        let exec = FixedRate {
            flops_per_sec: 55e12,
        };
        let o = Offload::from_host_flags(8192, 8192, 8192, DType::F64, [true; 3], false);
        let mut m = model();
        m.h2d.model.bid_slowdown = 1.0;
        m.d2h.model.bid_slowdown = 1.0;
        let mut slowed = m.clone();
        slowed.h2d.model.bid_slowdown = 1.5;
        slowed.d2h.model.bid_slowdown = 1.5;
        // 4096 tiles: four C tiles, one group.
        let (plain, slow) = (m.predict(&o, 4096, &exec), slowed.predict(&o, 4096, &exec));
        assert_eq!(plain.h2d, slow.h2d);
        assert_eq!(plain.d2h, slow.d2h);
        assert_eq!(plain.seconds, slow.seconds);
        // 2048 tiles: sixteen, four groups; three quarters of the write-backs (12 tiles of
        // 2048^2 f64) can run beside the copies in, which take longer.
        let (plain, slow) = (m.predict(&o, 2048, &exec), slowed.predict(&o, 2048, &exec));
        let beside = 0.75 * plain.d2h;
        assert!(beside < plain.h2d, "{plain:?}");
        assert!(
            (slow.h2d - plain.h2d - 0.5 * beside).abs() < 1e-9,
            "{plain:?} {slow:?}"
        );
        assert!(slow.seconds > plain.seconds);
    }

    #[test]
    fn late_c_with_two_k_steps_has_one_step_of_slack() {
        // 12288^3 in 6144 tiles: one group of four, two k steps. Late C crosses during the
        // first step, between its A and B tiles; only the second step's slack hides it.
        let m = model();
        let exec = FixedRate {
            flops_per_sec: 55e12,
        };
        let o = Offload::from_host_flags(12288, 12288, 12288, DType::F64, [true; 3], false);
        let p = m.predict(&o, 6144, &exec);
        let tile = copy_s(6144.0 * 6144.0 * 8.0);
        let product = 2.0 * 6144f64.powi(3) / 55e12;
        // Per step 4 tiles in against 4 products; the four C tiles less one step's slack.
        let slack = 4.0 * product - 4.0 * tile;
        let stall = 4.0 * tile - slack;
        assert!(slack > 0.0 && stall > 0.0);
        assert!((p.first_group_stall - stall).abs() < 1e-9, "{p:?}");
    }

    #[test]
    fn a_first_group_at_the_grids_edge_waits_for_its_edge_tiles_only() {
        // 9216 x 90 x 6144 f32 in 8192 tiles (beta 0): the group is one full and one 1024-row
        // A tile. Counted as two full tiles, the stall came out 7x the edge tile's copy and
        // the thin problems of the seeded set 13-20% slow.
        let m = model();
        let exec = FixedRate {
            flops_per_sec: 50e12,
        };
        let o = Offload::from_host_flags(9216, 90, 6144, DType::F32, [true; 3], true);
        let p = m.predict(&o, 8192, &exec);
        let copy = |rows: f64, cols: f64| copy_s(rows * cols * 4.0);
        let product = |rows: f64| 2.0 * rows * 90.0 * 6144.0 / 50e12;
        let stall = copy(1024.0, 6144.0) - product(8192.0) - product(1024.0);
        assert!(stall > 0.0);
        assert!((p.first_group_stall - stall).abs() < 1e-9, "{p:?}");
        assert!((p.first_fetch - copy(8192.0, 6144.0) - copy(6144.0, 90.0)).abs() < 1e-9);
    }

    #[test]
    fn device_resident_operands_move_nothing() {
        let m = model();
        let o = Offload::from_host_flags(8192, 8192, 8192, DType::F64, [false; 3], false);
        let exec = FixedRate {
            flops_per_sec: 50e12,
        };
        let p = m.predict(&o, 2048, &exec);
        assert_eq!(p.h2d, 0.0);
        assert!((p.seconds - p.compute).abs() < 1e-12);
    }

    #[test]
    fn a_calls_first_fold_also_wakes_the_fold_threads() {
        let mut m = model();
        let o = Offload::from_host_flags(8192, 8192, 8192, DType::F64, [true; 3], false);
        let exec = FixedRate {
            flops_per_sec: 60e12,
        };
        // A fold this slow bounds the call: the fold path is the prediction.
        let bw = 1e9;
        m.host_fold = Some(bw);
        let tile = 2048.0 * 2048.0 * 8.0;
        let t_gemm = 2.0 * 2048f64.powi(3) / 60e12;
        // The test link's write-back: its latency and 50 GB/s.
        let t_wb = 10e-6 + tile / 50e9;
        // The priced wake, and a slower one (what the chooser also weighs).
        for wake in [crate::fold::FIRST_S, 1e-3] {
            m.fold_wake_s = wake;
            for (sent, folds) in [(0, 16), (15, 1)] {
                m.fold_tail = sent;
                let p = m.predict(&o, 2048, &exec);
                let path = p.first_fetch + p.first_group_stall + 4.0 * t_gemm + t_wb;
                let expected = path + folds as f64 * (tile / bw + crate::fold::TASK_S) + wake;
                assert!(
                    (p.seconds - expected).abs() < 1e-9,
                    "{sent} sent, wake {wake}: {} against {expected}",
                    p.seconds
                );
            }
        }
        // One C tile at a time (the replay): a fold this slow ends the call, so the wake
        // moves the prediction by exactly its own change.
        m.fold_tail = 0;
        let one = Blocking {
            tm: 2048,
            tn: 2048,
            tk: 8192,
            group: 1,
        };
        let at = |m: &mut PipelineModel, wake| {
            m.fold_wake_s = wake;
            m.predict(&o, one, &exec).seconds
        };
        let (usual, slow) = (at(&mut m, crate::fold::FIRST_S), at(&mut m, 1e-3));
        assert!(
            (slow - usual - (1e-3 - crate::fold::FIRST_S)).abs() < 1e-9,
            "{usual} {slow}"
        );
        // Nothing folded (every tile's C sent): no fold path, so no wake either.
        m.fold_tail = 16;
        let p = m.predict(&o, 2048, &exec);
        assert!(p.seconds < 16.0 * tile / bw, "{p:?}");
    }

    #[test]
    fn host_fold_removes_c_from_the_host_to_device_path() {
        let mut m = model();
        let o = Offload::from_host_flags(8192, 8192, 8192, DType::F64, [true; 3], false);
        let exec = FixedRate {
            flops_per_sec: 60e12,
        };
        let without = m.predict(&o, 2048, &exec);
        m.host_fold = Some(40e9);
        let with = m.predict(&o, 2048, &exec);
        let c_bytes = 8192.0 * 8192.0 * 8.0;
        // C no longer crosses towards the device: a third less host->device time.
        assert!((without.h2d - with.h2d - c_bytes / 50e9).abs() < 0.1 * c_bytes / 50e9);
        assert!(with.seconds < without.seconds, "{with:?} vs {without:?}");
        // A slow fold is the bottleneck.
        m.host_fold = Some(5e9);
        assert!(m.predict(&o, 2048, &exec).seconds >= c_bytes / 5e9);
        // beta == 0 (C not read): the fold changes nothing.
        let o0 = Offload::from_host_flags(8192, 8192, 8192, DType::F64, [true; 3], true);
        assert_eq!(m.predict(&o0, 2048, &exec), {
            m.host_fold = None;
            m.predict(&o0, 2048, &exec)
        });
    }

    #[test]
    fn an_unfolded_tail_trades_fold_time_for_link_time() {
        let mut m = model();
        m.host_fold = Some(10e9);
        // K small next to C: C's traffic dominates, and a slow fold is the bottleneck.
        let o = Offload::from_host_flags(16384, 16384, 2048, DType::F64, [true; 3], false);
        let exec = FixedRate {
            flops_per_sec: 60e12,
        };
        let b = Blocking {
            tm: 4096,
            tn: 4096,
            tk: 2048,
            group: 4,
        };
        let all = m.predict(&o, b, &exec);
        let tile_bytes = 4096.0 * 4096.0 * 8.0;
        let c_bytes = 16.0 * tile_bytes;
        assert!(all.seconds >= c_bytes / 10e9, "{all:?}");
        m.fold_tail = 6;
        let tail = m.predict(&o, b, &exec);
        // Six tiles' C crosses to the device; the fold of the other ten ends sooner.
        let extra = tail.h2d - all.h2d;
        assert!(
            extra > 6.0 * tile_bytes / 50e9 && extra < 1.2 * 6.0 * tile_bytes / 50e9,
            "{tail:?} vs {all:?}"
        );
        assert!(tail.seconds < 0.8 * all.seconds, "{tail:?} vs {all:?}");
        // With a fold as fast as the link, sending C back in only lengthens the link's path.
        m.host_fold = Some(200e9);
        let fast = m.predict(&o, b, &exec);
        m.fold_tail = 0;
        assert!(m.predict(&o, b, &exec).seconds < fast.seconds);
        // beta == 0 (C not read): no fold, so no tail.
        let o0 = Offload::from_host_flags(16384, 16384, 2048, DType::F64, [true; 3], true);
        m.fold_tail = 6;
        let with = m.predict(&o0, b, &exec);
        m.fold_tail = 0;
        assert_eq!(with, m.predict(&o0, b, &exec));
    }

    /// The fold tail is counted at its own tiles: the planner's
    /// [`crate::plan::fold_tail_tiles`] over its steps picks the same classes for every grid,
    /// group, tail length and spread; and `shell_at` walks the grid as `shell_order`
    /// sorts it.
    #[test]
    fn the_tail_is_the_tiles_the_planner_sends() {
        use crate::distribute::shell_order;
        use crate::plan::{build_steps, tail_positions};
        for (mt, nt) in [
            (1, 1),
            (1, 5),
            (5, 1),
            (2, 3),
            (6, 4),
            (4, 6),
            (7, 7),
            (3, 9),
        ] {
            let mut tiles: Vec<(usize, usize)> =
                (0..mt).flat_map(|i| (0..nt).map(move |j| (i, j))).collect();
            shell_order(&mut tiles);
            let walked: Vec<_> = (0..mt * nt).map(|p| shell_at(mt, nt, p)).collect();
            assert_eq!(walked, tiles, "{mt}x{nt}");
            for edge in [[false, false], [true, false], [false, true], [true, true]] {
                for group in [1, 2, 4] {
                    for kt in [1, 3] {
                        let steps = build_steps(&tiles, kt, group);
                        let order: Vec<_> = steps
                            .iter()
                            .filter(|s| s.last)
                            .map(|s| (s.i, s.j))
                            .collect();
                        for n in 0..=mt * nt + 1 {
                            for spread in [0.0, 0.5, 1.0] {
                                let mut want = [[0usize; 2]; 2];
                                for p in tail_positions(order.len(), n, group, spread) {
                                    let (i, j) = order[p];
                                    want[class(i, mt, edge[0])][class(j, nt, edge[1])] += 1;
                                }
                                assert_eq!(
                                    tail_classes(mt, nt, edge, n, group, spread),
                                    want,
                                    "{mt}x{nt}, edges {edge:?}, group {group}, kt {kt}, tail {n}, spread {spread}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// A fold-bound call folds the bytes of the tiles outside its tail, and its tail's C
    /// crosses at those tiles' sizes: 3 full 4096-tiles and a 512 edge in each dimension (16
    /// tiles, 7 of them edge tiles), 7 sent.
    #[test]
    fn a_fold_tail_is_priced_at_its_own_tiles() {
        let mut m = model();
        m.host_fold = Some(5e9);
        m.fold_tail = 7;
        let (d, t, edge) = (3 * 4096 + 512, 4096, 512);
        let o = Offload::from_host_flags(d, d, 1024, DType::F64, [true; 3], false);
        let exec = FixedRate {
            flops_per_sec: 60e12,
        };
        let b = Blocking {
            tm: t,
            tn: t,
            tk: 1024,
            group: 4,
        };
        let count = tail_classes(4, 4, [true, true], 7, 4, crate::plan::FOLD_SPREAD);
        let size = [t, edge];
        let mut sent = 0.0;
        for x in 0..2 {
            for y in 0..2 {
                sent += (count[x][y] * size[x] * size[y] * 8) as f64;
            }
        }
        let folded = (d * d * 8) as f64 - sent;
        // Not 7 full tiles: the last group is the last shell's edge tiles (at spread 0 all 7
        // are edge tiles).
        assert!(sent < 3.0 * (t * t * 8) as f64, "{count:?}");
        let p = m.predict(&o, b, &exec);
        assert!(p.seconds >= folded / 5e9, "{p:?}");
        assert!(p.seconds < 1.1 * folded / 5e9 + 0.01, "{p:?}");
        m.fold_tail = 0;
        let none = m.predict(&o, b, &exec);
        let extra = p.h2d - none.h2d;
        assert!(
            extra > 0.9 * sent / 50e9 && extra < 1.2 * sent / 50e9,
            "{extra} s for {sent} B"
        );
    }

    #[test]
    fn dma_slowdown_applies_only_while_links_copy() {
        let mut m = model();
        let exec = FixedRate {
            flops_per_sec: 55e12,
        };
        let host = Offload::from_host_flags(16384, 16384, 16384, DType::F64, [true; 3], false);
        let dev = Offload::from_host_flags(16384, 16384, 16384, DType::F64, [false; 3], false);
        let (h0, d0) = (m.predict(&host, 4096, &exec), m.predict(&dev, 4096, &exec));
        m.dma_slowdown = 1.1;
        let (h1, d1) = (m.predict(&host, 4096, &exec), m.predict(&dev, 4096, &exec));
        assert_eq!(d0, d1, "nothing moves: no slowdown");
        let busy = (h0.h2d.max(h0.d2h) / h0.compute).min(1.0);
        assert!((h1.compute / h0.compute - (1.0 + 0.1 * busy)).abs() < 1e-9);
        assert!(h1.seconds > h0.seconds);
    }

    fn times(a: f64, b: f64, gemm: f64) -> TileTimes {
        TileTimes {
            a: [[a; 2]; 2],
            b: [[b; 2]; 2],
            gemm: [[[gemm; 2]; 2]; 2],
            ..TileTimes::default()
        }
    }

    fn grid(mt: usize, nt: usize, kt: usize, group: usize) -> ReplayGrid {
        ReplayGrid {
            mt,
            nt,
            kt,
            edge: [false; 3],
            group,
            fetch_c: false,
            late_c: false,
            unfolded: 0,
        }
    }

    #[test]
    fn products_after_inputs_is_the_flow_shops_drain() {
        // One C tile, two k steps: tiles of 1 s in (A and B 0.5 each), products of 3 s. The
        // first product ends at 1 + 3, the second at max(4, 2) + 3 = 7: 5 s after the link.
        let t = times(0.5, 0.5, 3.0);
        let d = products_after_inputs(&grid(1, 1, 2, 1), &t, 2.0);
        assert!((d - 5.0).abs() < 1e-12, "{d}");
        // Products far shorter than their tiles: after the last tile, only the products of
        // the steps that need no new tile after it (here 5 products' worth).
        let t = times(0.5, 0.5, 0.01);
        let d = products_after_inputs(&grid(3, 3, 3, 4), &t, 27.0);
        assert!((d - 0.05).abs() < 1e-12, "{d}");
        // The link's total scales the tiles (slowed copies, C): a slower link leaves less.
        let t = times(0.5, 0.5, 3.0);
        let d = products_after_inputs(&grid(1, 1, 2, 1), &t, 4.0);
        assert!((d - 4.0).abs() < 1e-12, "{d}");
    }

    #[test]
    fn late_small_tiles_leave_their_products_after_the_link() {
        // The shape of 14916x2716x10070 in 4096x512x4096 tiles: large A tiles hold the link
        // while the last C columns wait for small B tiles, so their products (each row's, every
        // k step) run after the last fetch: far more than one product.
        let t = times(2.5, 0.3, 0.25);
        let g = grid(4, 6, 3, 4);
        let fetched = 4.0 * 3.0 * 2.5 + 3.0 * 6.0 * 0.3;
        let d = products_after_inputs(&g, &t, fetched);
        assert!(
            d > 3.0 * 4.0 * 0.25,
            "more than the last group's products: {d}"
        );
        // Beyond DRAIN_MAX_STEPS nothing is scanned.
        assert_eq!(products_after_inputs(&grid(64, 64, 32, 4), &t, 1.0), 0.0);
    }
}
