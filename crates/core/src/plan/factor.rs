//! The task graphs of the factorizations: Cholesky (`?potrf`) and LU with partial pivoting
//! (`?getrf`), both *left-looking with look-ahead*, in block columns of `nb`.
//!
//! **Where the matrix lives.** The updating device keeps the whole matrix in its memory (a
//! copy, [`Loc::Mirror`], or the operand itself), so that its updates are few large GEMMs. A
//! block column crosses to the device just before the step that needs it and goes back as soon
//! as it is final, under the updates of other columns.
//!
//! **Left-looking.** Step `j` brings column `j` up to date with every column before it, then
//! factors it (its *panel*); column `j` is final after it (for LU, but for later panels' row
//! interchanges): the order in which a host matrix can stream in and out.
//!
//! **Look-ahead.** Column `j + 1`'s update is split: by the columns before `j` (*bulk*, on
//! compute queue 0 while panel `j` runs on queue 1 or on the `panels` device, the CPU, which
//! factors it in the operand's memory) and by column `j` (*last*, on the critical path).
//!
//! **LU's row interchanges.** Each panel's pivots (relative to its first row) are applied to a
//! column before its update, and to the columns before the panel afterwards, so that L ends as
//! LAPACK leaves it. A block row of L is final once its own panel's interchanges are applied.
//!
//! The dependencies come from the graph (blocks of many sizes: it tracks `nb x nb` cells).

use super::graph::Graph;
use super::task::{
    Coef, DeviceSpec, FactorRoutine, Loc, Op, Plan, PlanDevice, QueueId, Routine, TaskId,
};
use crate::error::{Error, Result};
use crate::memory::MemorySpace;
use crate::operand::Trans;
use crate::problem::triangular::{Diag, Side, TriOptions, TriRoutine};
use crate::problem::{Operand, Uplo};
use crate::scalar::DType;
use crate::sym::SymOp;
use crate::tiling::{Block, TileKey};

/// Input to the factorization planner.
pub struct FactorRequest<'a> {
    pub routine: FactorRoutine,
    pub m: usize,
    pub n: usize,
    pub dtype: DType,
    /// Where the matrix lives (and the pivots, in host memory).
    pub location: MemorySpace,
    /// Block column width.
    pub nb: usize,
    /// Plan device 0 updates; a second one may run the panels ([`FactorRequest::panels`]).
    pub devices: &'a [DeviceSpec],
    /// The plan device that factors the panels, when not device 0: it must compute in the
    /// matrix's own memory.
    pub panels: Option<usize>,
    /// The first step to run (Cholesky): the block columns before it are final in the matrix
    /// (a call that goes on after a device failed).
    pub start: usize,
}

/// Builds the plan.
///
/// # Errors
/// `InvalidInput` for a request without devices, a zero block width, or a panel device that
/// does not compute where the matrix lives; `OutOfMemory` when the updating device's budget
/// cannot hold its copy of the matrix.
pub(super) fn build_factor(req: &FactorRequest<'_>) -> Result<Plan> {
    if req.devices.is_empty() || req.nb == 0 {
        return super::invalid("a factorization needs a device and a positive block width");
    }
    if let FactorRoutine::Potrf(_) = req.routine {
        if req.m != req.n {
            return super::invalid("Cholesky of a matrix that is not square");
        }
    } else if req.start > 0 {
        return super::invalid("an LU starts at its first column");
    }
    if let Some(p) = req.panels {
        if req.devices.get(p).map(|d| d.space) != Some(req.location) || p == 0 {
            return super::invalid("the panel device computes where the matrix lives");
        }
    }
    let (m, n) = (req.m, req.n);
    let pivots = matches!(req.routine, FactorRoutine::Getrf);
    let mut operands = vec![(req.location, m, n)];
    if pivots {
        operands.push((MemorySpace::HOST, m.min(n), 1));
    }
    let updater = &req.devices[0];
    let in_place = updater.space == req.location;
    // The pivots live in host memory: a device copy wherever the updater is not the host,
    // even when it computes A in place (A in its own memory).
    let pivots_in_place = updater.space.is_host();
    let mut mirrors = Vec::new();
    if !in_place {
        mirrors.push(Operand::A);
    }
    if pivots && !pivots_in_place {
        mirrors.push(Operand::B);
    }
    let routine = Routine::Factor {
        routine: req.routine,
        m,
        n,
        nb: req.nb,
        panels: req.panels,
    };
    let no_slots = |spec| PlanDevice::new(spec, 0, 0);
    let mut devices: Vec<_> = req.devices.iter().map(no_slots).collect();
    devices[0].mirrors = mirrors;
    let no_tasks = (Vec::new(), Vec::new());
    let mut plan = Plan::new(routine, req.dtype, &operands, 0, devices, no_tasks);
    let need = plan.workspace_bytes(0) as u64;
    if need > updater.budget {
        return Err(Error::OutOfMemory {
            device: updater.label.clone(),
            detail: format!(
                "its copy of the {m}x{n} matrix needs {need} bytes, budget {}",
                updater.budget
            ),
        });
    }
    let mut b = Steps {
        g: Graph::with_granule(req.nb),
        req,
        in_place,
        pivots_in_place,
        infos: 0,
    };
    match req.routine {
        FactorRoutine::Potrf(uplo) => b.potrf(uplo),
        FactorRoutine::Getrf => b.getrf(),
    }
    plan.infos = b.infos;
    (plan.tasks, plan.order) = b.g.finish(req.devices.len());
    plan.devices[0].tiles = req.n.div_ceil(req.nb);
    Ok(plan)
}

/// The planner's state while it emits the steps.
struct Steps<'a> {
    g: Graph,
    req: &'a FactorRequest<'a>,
    /// The updating device computes in the matrix's own memory.
    in_place: bool,
    /// ... and in the pivots' (host) memory.
    pivots_in_place: bool,
    infos: u32,
}

/// Block `(r0, rows, c0, cols)` in the lower triangle's terms: itself, or its transpose
/// for the upper triangle.
fn side(lower: bool, r0: usize, rows: usize, c0: usize, cols: usize) -> Block {
    if lower {
        Block::new(r0, rows, c0, cols)
    } else {
        Block::new(c0, cols, r0, rows)
    }
}

impl Steps<'_> {
    /// Columns of block column `j`: first, width.
    fn span(&self, j: usize, len: usize) -> (usize, usize) {
        crate::tiling::span(len, self.req.nb, j)
    }

    /// A block of the matrix where the updating device works on it.
    fn work(&self, b: Block) -> Loc {
        self.at(Operand::A, b)
    }

    /// A block of operand `op` where the updating device works on it: its copy, or the operand.
    fn at(&self, op: Operand, b: Block) -> Loc {
        if !self.in_place_of(op) {
            Loc::Mirror {
                device: 0,
                op,
                block: b,
            }
        } else {
            Loc::Operand { op, block: b }
        }
    }

    /// Whether the updating device works on operand `op` where it lives (no copy).
    fn in_place_of(&self, op: Operand) -> bool {
        match op {
            Operand::B => self.pivots_in_place,
            _ => self.in_place,
        }
    }

    fn host(op: Operand, b: Block) -> Loc {
        Loc::Operand { op, block: b }
    }

    /// `op` on plan device `d`'s compute queue `queue`.
    fn run(&mut self, d: usize, queue: u16, op: Op) -> TaskId {
        let index = queue % self.req.devices[d].compute_queues.max(1);
        let queue = QueueId::Compute {
            device: d as u16,
            index,
        };
        self.g.add(d as u16, queue, op)
    }

    /// A copy of block `b` of `op` between the host operand and the updating device's copy
    /// (`up`: towards the device); none when the device computes in place.
    fn cross(&mut self, op: Operand, b: Block, key: TileKey, up: bool, finishes: bool) {
        if self.in_place_of(op) || b.rows == 0 || b.cols == 0 {
            return;
        }
        let dev = self.req.devices[0].space;
        let home = match op {
            Operand::B => MemorySpace::HOST,
            _ => self.req.location,
        };
        let (host, copy) = (Self::host(op, b), self.at(op, b));
        let (src, dst, link) = if up {
            (host, copy, (home, dev))
        } else {
            (copy, host, (dev, home))
        };
        let id = self.g.copy(0, link, key, src, dst, None);
        self.g.task_mut(id).finishes = finishes;
    }

    fn next_info(&mut self) -> u32 {
        self.infos += 1;
        self.infos - 1
    }

    /// `c -= a op(b)` as one GEMM on the updating device's queue `q`.
    fn gemm(
        &mut self,
        q: u16,
        key: TileKey,
        (transa, a): (Trans, Block),
        (transb, b): (Trans, Block),
        c: Block,
    ) {
        if c.rows == 0 || c.cols == 0 {
            return;
        }
        let op = Op::Gemm {
            key,
            l: 0,
            transa,
            transb,
            alpha: Coef::MinusOne,
            beta: Coef::One,
            a: self.work(a),
            b: self.work(b),
            c: self.work(c),
        };
        self.run(0, q, op);
    }

    /// `c -= a a^H` on `c`'s `uplo` triangle (`trans`: `a` is `k x n` and `c -= a^H a`).
    fn rank(&mut self, q: u16, key: TileKey, uplo: Uplo, trans: Trans, a: Block, c: Block) {
        if c.rows == 0 {
            return;
        }
        let herm = self.req.dtype.is_complex();
        let k = if trans == Trans::N { a.cols } else { a.rows };
        let op = Op::Sym {
            key,
            l: 0,
            op: SymOp::Rank {
                uplo,
                trans,
                two: false,
                herm,
            },
            k,
            alpha: Coef::MinusOne,
            beta: Coef::One,
            a: self.work(a),
            b: self.work(a),
            c: self.work(c),
        };
        self.run(0, q, op);
    }

    /// TRSM of block `b` by the triangular block `t` on the updating device's queue `q`.
    fn trsm(&mut self, q: u16, key: TileKey, opts: TriOptions, t: Block, b: Block) {
        if b.rows == 0 || b.cols == 0 {
            return;
        }
        let op = Op::Tri {
            key,
            routine: TriRoutine::Trsm,
            opts,
            alpha: Coef::One,
            a: self.work(t),
            b: self.work(b),
        };
        self.run(0, q, op);
    }

    /// The conjugate transpose for the dtype (`T` for real ones).
    fn ctrans(&self) -> Trans {
        Trans::C.for_dtype(self.req.dtype)
    }

    /// Cholesky. `uplo` = Lower: column steps; Upper: the same on row blocks (`A = U^H U`), so
    /// that only the triangle LAPACK reads is read and written.
    fn potrf(&mut self, uplo: Uplo) {
        let n = self.req.n;
        let nt = n.div_ceil(self.req.nb);
        let lower = uplo == Uplo::Lower;
        // Uploads first: the link runs ahead in step order.
        for j in 0..nt {
            let (o, w) = self.span(j, n);
            let whole = side(lower, o, n - o, o, w);
            self.cross(Operand::A, whole, TileKey::a(j, j), true, false);
        }
        let start = self.req.start.min(nt);
        for j in start..nt {
            // Going on after a failure: the whole update by the final columns.
            let from = if j == start { 0 } else { j - 1 };
            self.potrf_update(uplo, j, from..j);
            // The panel: its diagonal block, and the rest of its column (lower) or row (upper).
            let (o, w) = self.span(j, n);
            let (d, r) = (Block::new(o, w, o, w), side(lower, o + w, n - o - w, o, w));
            let info = self.next_info();
            let key = TileKey::a(j, j);
            match self.req.panels {
                Some(p) => {
                    self.cross(Operand::A, d, key, false, false);
                    let a = Self::host(Operand::A, d);
                    let id = self.run(p, 0, Op::Potrf { key, uplo, a, info });
                    self.g.task_mut(id).finishes = true;
                    self.cross(Operand::A, d, key, true, false);
                }
                None => {
                    let a = self.work(d);
                    let id = self.run(0, 1, Op::Potrf { key, uplo, a, info });
                    // In place, its last write is the potrf itself.
                    self.g.task_mut(id).finishes = self.in_place;
                }
            }
            let opts = TriOptions {
                side: if lower { Side::Right } else { Side::Left },
                uplo,
                transa: self.ctrans(),
                diag: Diag::NonUnit,
            };
            self.trsm(1, key, opts, d, r);
            // Back to the host: the diagonal block (unless its panel ran there) and the rest.
            if self.req.panels.is_none() {
                self.cross(Operand::A, d, key, false, true);
            }
            self.cross(Operand::A, r, TileKey::a(j + 1, j), false, true);
            if j + 1 < nt && j >= 1 {
                self.potrf_update(uplo, j + 1, 0..j);
            }
        }
    }

    /// Step `j`'s update by the steps `ks` (a range of earlier block columns or rows):
    /// `A(j, j) -= L(j, K) L(j, K)^H` on its lower triangle (`U(K, j)^H U(K, j)` on its upper),
    /// the rest of its column (row) by GEMM.
    fn potrf_update(&mut self, uplo: Uplo, j: usize, ks: std::ops::Range<usize>) {
        let n = self.req.n;
        let (o, w) = self.span(j, n);
        let (k0, k1) = (ks.start * self.req.nb, (ks.end * self.req.nb).min(o));
        if k1 <= k0 {
            return;
        }
        let key = TileKey::a(j, ks.start);
        let (ct, lower, rest) = (self.ctrans(), uplo == Uplo::Lower, n - o - w);
        let own = side(lower, o, w, k0, k1 - k0);
        let beyond = side(lower, o + w, rest, k0, k1 - k0);
        let (trans, a, b) = if lower {
            (Trans::N, (Trans::N, beyond), (ct, own))
        } else {
            (ct, (ct, own), (Trans::N, beyond))
        };
        self.rank(0, key, uplo, trans, own, Block::new(o, w, o, w));
        self.gemm(0, key, a, b, side(lower, o + w, rest, o, w));
    }

    /// LU with partial pivoting.
    fn getrf(&mut self) {
        let (m, n) = (self.req.m, self.req.n);
        let mn = m.min(n);
        let nt = n.div_ceil(self.req.nb);
        // Panels: the block columns that reach the diagonal (width within min(m, n)).
        let np = mn.div_ceil(self.req.nb);
        for j in 0..nt {
            self.cross_column(j, true);
        }
        for j in 0..nt {
            if j >= 1 {
                self.getrf_update(j, j - 1..j);
                // Panel j - 1's interchanges on the columns before it: after this column's
                // last update (which reads only panel j - 1's own column) and before the next
                // bulk (which reads those columns' rows in their new order).
                if j - 1 < np {
                    self.left_swaps(j - 1);
                }
            }
            if j < np {
                self.panel(j);
            } else {
                // A column past the last panel: U only, final now.
                self.cross_column(j, false);
            }
            if j + 1 < nt && j >= 1 {
                self.getrf_update(j + 1, 0..j);
            }
        }
        // The last panel's interchanges, when no column after it took them above.
        if np == nt && np >= 1 {
            self.left_swaps(np - 1);
        }
        // Rows below every panel (a tall matrix): final after the last interchanges.
        if m > mn {
            let rows = Block::new(mn, m - mn, 0, n);
            self.cross(Operand::A, rows, TileKey::a(np, 0), false, true);
        }
    }

    /// Block column `j` whole to the device (`up`), or back to the host, final.
    fn cross_column(&mut self, j: usize, up: bool) {
        let (o, w) = self.span(j, self.req.n);
        let col = Block::new(0, self.req.m, o, w);
        self.cross(Operand::A, col, TileKey::a(0, j), up, !up);
    }

    /// Panel `j`: LU of rows `o..m` of block column `j`, its pivots, and what is final after it
    /// (the column's rows down to the end of its diagonal block, and its pivots).
    fn panel(&mut self, j: usize) {
        let (m, n) = (self.req.m, self.req.n);
        let (o, w) = self.span(j, n);
        let ab = Block::new(o, m - o, o, w);
        let piv = Block::new(o, w.min(m - o), 0, 1);
        let info = self.next_info();
        let key = TileKey::a(j, j);
        match self.req.panels {
            Some(p) => {
                self.cross(Operand::A, ab, key, false, false);
                let (a, ipiv) = (Self::host(Operand::A, ab), Self::host(Operand::B, piv));
                self.run(p, 0, Op::Getrf { key, a, ipiv, info });
                self.cross(Operand::A, ab, key, true, false);
                self.cross(Operand::B, piv, key, true, false);
            }
            None => {
                let (a, ipiv) = (self.work(ab), self.at(Operand::B, piv));
                self.run(0, 1, Op::Getrf { key, a, ipiv, info });
                self.cross(Operand::B, piv, key, false, true);
            }
        }
        // Final now: U above and the diagonal block.
        let u = Block::new(0, (o + w).min(m), o, w);
        self.cross(Operand::A, u, TileKey::a(0, j), false, true);
    }

    /// Panel `j`'s interchanges applied to the columns before it, after which block row `j`
    /// of L is final.
    fn left_swaps(&mut self, j: usize) {
        let (m, n) = (self.req.m, self.req.n);
        let (o, w) = self.span(j, n);
        let (key, rows) = (TileKey::a(j, 0), w.min(m - o));
        if o > 0 {
            let ipiv = self.at(Operand::B, Block::new(o, rows, 0, 1));
            let a = self.work(Block::new(o, m - o, 0, o));
            self.run(0, 1, Op::Laswp { key, a, ipiv });
        }
        // Block row `j` of L back to the host: final.
        self.cross(Operand::A, Block::new(o, rows, 0, o), key, false, true);
    }

    /// Column `j` brought up to date with the panels `ps`: their interchanges, the solve of its
    /// rows in their diagonal blocks, and the update of the rows below.
    fn getrf_update(&mut self, j: usize, ps: std::ops::Range<usize>) {
        let (m, n) = (self.req.m, self.req.n);
        let mn = m.min(n);
        // Only block columns that reach the diagonal have panels.
        let ps = ps.start..ps.end.min(mn.div_ceil(self.req.nb));
        if ps.is_empty() {
            return;
        }
        let (o, w) = self.span(j, n);
        let q = 0;
        let key = TileKey::a(ps.start, j);
        for p in ps.clone() {
            let (po, pw) = self.span(p, mn);
            let ipiv = self.at(Operand::B, Block::new(po, pw, 0, 1));
            let a = self.work(Block::new(po, m - po, o, w));
            self.run(0, q, Op::Laswp { key, a, ipiv });
        }
        let r0 = ps.start * self.req.nb;
        let r1 = (ps.end * self.req.nb).min(mn);
        if r1 <= r0 {
            return;
        }
        // U(r0..r1, j) = L(r0..r1, r0..r1)^-1 A(r0..r1, j), L unit lower.
        let opts = TriOptions {
            side: Side::Left,
            uplo: Uplo::Lower,
            transa: Trans::N,
            diag: Diag::Unit,
        };
        let l = Block::new(r0, r1 - r0, r0, r1 - r0);
        let u = Block::new(r0, r1 - r0, o, w);
        self.trsm(q, key, opts, l, u);
        // A(r1.., j) -= L(r1.., r0..r1) U(r0..r1, j).
        let below = Block::new(r1, m - r1, r0, r1 - r0);
        let c = Block::new(r1, m - r1, o, w);
        self.gemm(q, key, (Trans::N, below), (Trans::N, u), c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::graph::tests::assert_dependencies_order_every_access;

    fn dev(space: MemorySpace, queues: u16) -> DeviceSpec {
        DeviceSpec::new(format!("{space:?}"), space, 1 << 30, queues)
    }

    fn plan(routine: FactorRoutine, (m, n): (usize, usize), nb: usize, panels: bool) -> Plan {
        let gpu = MemorySpace::new_device();
        let devices = vec![dev(gpu, 2), dev(MemorySpace::HOST, 1)];
        build_factor(&FactorRequest {
            routine,
            m,
            n,
            dtype: DType::F64,
            location: MemorySpace::HOST,
            nb,
            devices: if panels { &devices } else { &devices[..1] },
            panels: panels.then_some(1),
            start: 0,
        })
        .unwrap()
    }

    /// Every task order the dependencies allow gives every read the version issue order gives
    /// it: the graph orders every access of the factorizations' overlapping blocks (panels,
    /// updates, interchanges, copies), for both triangles, square, tall and wide LUs, with
    /// panels on the updating device or on the host, and a block width that does not divide.
    #[test]
    fn dependencies_order_every_access_of_every_factorization() {
        let mut n = 0;
        for panels in [false, true] {
            for (shape, nb) in [((37, 37), 8), ((40, 40), 10), ((8, 8), 8)] {
                for uplo in [Uplo::Lower, Uplo::Upper] {
                    assert_dependencies_order_every_access(&plan(
                        FactorRoutine::Potrf(uplo),
                        shape,
                        nb,
                        panels,
                    ));
                    n += 1;
                }
            }
            for (shape, nb) in [((37, 37), 8), ((45, 21), 8), ((21, 45), 8), ((16, 16), 16)] {
                assert_dependencies_order_every_access(&plan(
                    FactorRoutine::Getrf,
                    shape,
                    nb,
                    panels,
                ));
                n += 1;
            }
        }
        assert_eq!(n, 20);
    }

    /// Each block column crosses to the device once and every block of the matrix goes back
    /// once, finishing it: the host matrix streams in and out.
    #[test]
    fn every_block_crosses_once_each_way() {
        for routine in [FactorRoutine::Potrf(Uplo::Lower), FactorRoutine::Getrf] {
            let p = plan(routine, (50, 50), 8, false);
            let (mut up, mut down) = (0usize, 0usize);
            for t in &p.tasks {
                if let Op::Copy {
                    src:
                        Loc::Operand {
                            op: Operand::A,
                            block,
                        },
                    ..
                } = t.op
                {
                    up += block.rows * block.cols;
                }
                if let Op::Copy {
                    dst:
                        Loc::Operand {
                            op: Operand::A,
                            block,
                        },
                    ..
                } = t.op
                {
                    assert!(t.finishes, "{:?}", t.op);
                    down += block.rows * block.cols;
                }
            }
            // Cholesky moves the lower triangle's block columns (diagonal blocks whole).
            let want = match routine {
                FactorRoutine::Getrf => 50 * 50,
                _ => (0..7).map(|j| 8.min(50 - 8 * j) * (50 - 8 * j)).sum(),
            };
            assert_eq!((up, down), (want, want), "{routine:?}");
        }
    }

    /// Look-ahead: the bulk of each step's update runs on compute queue 0 while the panel
    /// before it runs on queue 1, and does not wait for it.
    #[test]
    fn the_bulk_update_does_not_wait_for_the_panel_before_it() {
        let p = plan(FactorRoutine::Potrf(Uplo::Lower), (64, 64), 8, false);
        let potrfs: Vec<usize> = (0..p.tasks.len())
            .filter(|&t| matches!(p.tasks[t].op, Op::Potrf { .. }))
            .collect();
        assert_eq!(potrfs.len(), 8);
        // The GEMM issued right after panel j's factorization (the bulk of column j + 2)
        // depends on no task of panel j.
        let mut checked = 0;
        for &j in &potrfs[1..potrfs.len() - 1] {
            let bulk = (j..p.tasks.len())
                .find(|&t| matches!(p.tasks[t].op, Op::Sym { .. }) && t > j)
                .unwrap();
            let mut reach = vec![false; p.tasks.len()];
            reach[bulk] = true;
            for t in (0..=bulk).rev() {
                if reach[t] {
                    for &d in &p.tasks[t].deps {
                        reach[d as usize] = true;
                    }
                }
            }
            assert!(!reach[j], "the bulk after potrf {j} waits for it");
            assert_eq!(
                p.tasks[bulk].queue,
                QueueId::Compute {
                    device: 0,
                    index: 0
                }
            );
            assert_eq!(
                p.tasks[j].queue,
                QueueId::Compute {
                    device: 0,
                    index: 1
                }
            );
            checked += 1;
        }
        assert!(checked >= 5);
    }
}
