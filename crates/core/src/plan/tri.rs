//! The tile graph of TRSM and TRMM: B is overwritten in place, so the tasks depend on each other
//! through the tiles they read and write ([`super::graph`]).
//!
//! **Tiling.** A's order is cut into `nt` blocks of `tile`; B's independent lines (columns on
//! the left side, rows on the right) into panels of `panel`. B tile `(k, j)` is A-block `k` of
//! panel `j`. Panels are dealt to devices; a device keeps a panel's B tiles for all its steps
//! (fetched once, written back once when final) and each A tile it needs for the whole call.
//!
//! **Steps.** TRSM walks the diagonal blocks in [`TriProblem::block_order`]: step `s` solves
//! `B(k) := op(A)(k,k)^-1 B(k)` for `k = order[s]`, then updates each later block
//! `B(i) -= coupling(i, k) B(k)`; alpha is applied at each tile's first touch. TRMM walks the
//! other way: `B(i) := alpha op(A)(i,i) B(i)`, then `B(i) += alpha coupling(i, l) B(l)` for the
//! later blocks `l`. Either way a panel's tiles become final in block order, so after a failure
//! the final ones are a prefix of the order ([`crate::pool`] finishes the rest).
//!
//! **Look-ahead.** With two compute queues, the next step's block update and solve go on queue
//! 1, the rest of the trailing update on queue 0. A `solver` device in host memory (the CPU)
//! can run every device's diagonal solves: the tile goes back to B, is solved there, returns.

use super::graph::Graph;
use super::task::{Coef, DeviceSpec, Loc, Op, Plan, PlanDevice, QueueId, Routine};
use crate::error::{Error, Result};
use crate::memory::MemorySpace;
use crate::operand::Trans;
use crate::problem::triangular::{Side, TriProblem, TriRoutine};
use crate::problem::Operand;
use crate::tiling::{Block, TileKey};
use std::collections::HashMap;

/// Input to the triangular planner.
pub struct TriRequest<'a> {
    pub problem: TriProblem,
    /// Where A and B live.
    pub locations: [MemorySpace; 2],
    pub tile: usize,
    pub panel: usize,
    pub devices: &'a [DeviceSpec],
    /// Per device, its panels. Every panel exactly once over all devices.
    pub assignment: &'a [Vec<usize>],
    /// The plan device that runs every diagonal TRSM solve, when not each device its own
    /// (it must compute in the memory where A and B live).
    pub solver: Option<usize>,
    /// Panels of a device resident at once (2: the next panel's fetches overlap this one's
    /// compute).
    pub resident_panels: usize,
}

/// `panels` panels dealt one by one to the device (of the first `computing` in `rates`, GEMM
/// flops per second) that would finish its share first; the rest (a device added only to
/// solve) get none. Returns each device's panel count and its panels.
pub(crate) fn deal_panels(
    panels: usize,
    rates: &[f64],
    computing: usize,
) -> (Vec<f64>, Vec<Vec<usize>>) {
    let mut load = vec![0.0f64; rates.len()];
    let mut assignment: Vec<Vec<usize>> = vec![Vec::new(); rates.len()];
    for j in 0..panels {
        let best = (0..computing.min(rates.len()))
            .min_by(|&x, &y| ((load[x] + 1.0) / rates[x]).total_cmp(&((load[y] + 1.0) / rates[y])))
            .unwrap_or(0);
        load[best] += 1.0;
        assignment[best].push(j);
    }
    (load, assignment)
}

/// The tiling of a triangular problem: A's diagonal blocks and B's panels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TriTiling {
    pub problem: TriProblem,
    pub tile: usize,
    pub panel: usize,
}

impl TriTiling {
    /// Number of diagonal blocks.
    pub fn nt(&self) -> usize {
        self.problem.a_order().div_ceil(self.tile.max(1))
    }

    /// Number of panels.
    pub fn np(&self) -> usize {
        self.problem.b_lines().div_ceil(self.panel.max(1))
    }

    /// Start and length of diagonal block `b` (along A's order).
    pub fn block_span(&self, b: usize) -> (usize, usize) {
        crate::tiling::span(self.problem.a_order(), self.tile, b)
    }

    /// Start and length of panel `j` (along B's independent lines).
    pub fn panel_span(&self, j: usize) -> (usize, usize) {
        crate::tiling::span(self.problem.b_lines(), self.panel, j)
    }

    /// The stored block a tile names: A's `(r, c)`, or B's block `r` of panel `c`.
    pub fn block(&self, key: TileKey) -> Block {
        let (r, c) = (key.r as usize, key.c as usize);
        match key.op {
            Operand::B => {
                let (a, alen) = self.block_span(r);
                let (p, plen) = self.panel_span(c);
                match self.problem.opts.side {
                    Side::Left => Block::new(a, alen, p, plen),
                    Side::Right => Block::new(p, plen, a, alen),
                }
            }
            _ => {
                let ((row, rows), (col, cols)) = (self.block_span(r), self.block_span(c));
                Block::new(row, rows, col, cols)
            }
        }
    }

    /// The stored A tile that couples block `i` of B to block `k` (`op(A)(i,k)` on the left,
    /// `op(A)(k,i)` on the right).
    pub fn coupling(&self, i: usize, k: usize) -> TileKey {
        let left = self.problem.opts.side == Side::Left;
        let transposed = self.problem.opts.transa.is_transposed();
        if left != transposed {
            TileKey::a(i, k)
        } else {
            TileKey::a(k, i)
        }
    }

    /// Bytes of one slot: the largest tile, packed with its padded leading dimension.
    fn slot_bytes(&self) -> usize {
        let side = self.tile.max(self.panel);
        super::task::slot_size(super::task::slot_ld(side) * side * self.problem.dtype.size())
    }
}

/// Per device while building: where its tiles are.
struct DevState {
    dev: u16,
    space: MemorySpace,
    queues: u16,
    next_slot: u32,
    a_slots: HashMap<TileKey, u32>,
}

/// Builds the plan.
///
/// # Errors
/// `InvalidInput` for an assignment that does not cover every panel once or a solver that
/// cannot compute where B lives; `OutOfMemory` when a device's slots exceed its budget.
pub(super) fn build_tri(req: &TriRequest<'_>) -> Result<Plan> {
    let p = req.problem;
    if req.tile == 0 || req.panel == 0 || req.resident_panels == 0 {
        return super::invalid("tile, panel and resident panels must be positive");
    }
    if req.devices.len() != req.assignment.len() || req.devices.is_empty() {
        return super::invalid("one panel list per device");
    }
    let tiling = TriTiling {
        problem: p,
        tile: req.tile,
        panel: req.panel,
    };
    let (nt, np) = (tiling.nt(), tiling.np());
    let mut seen = vec![false; np];
    for &j in req.assignment.iter().flatten() {
        if j >= np || std::mem::replace(&mut seen[j], true) {
            return super::invalid(format!("panel {j} missing or assigned twice"));
        }
    }
    if seen.iter().any(|s| !s) {
        return super::invalid("a panel is assigned to no device");
    }
    let [a_space, b_space] = req.locations;
    if let Some(s) = req.solver {
        let sp = req.devices.get(s).map(|d| d.space);
        if p.routine != TriRoutine::Trsm || sp != Some(b_space) || sp != Some(a_space) {
            return super::invalid("a separate solver runs TRSM solves where A and B live");
        }
    }
    let slot_bytes = tiling.slot_bytes();
    let mut devs: Vec<DevState> = req
        .devices
        .iter()
        .enumerate()
        .map(|(d, spec)| {
            // B slots come first: `resident_panels` groups of `nt`; A slots follow.
            let panels = req.assignment[d].len();
            let b_groups = if spec.space == b_space {
                0
            } else {
                req.resident_panels.min(panels)
            };
            DevState {
                dev: d as u16,
                space: spec.space,
                queues: spec.compute_queues.max(1),
                next_slot: (b_groups * nt) as u32,
                a_slots: HashMap::new(),
            }
        })
        .collect();
    let order = p.block_order(nt);
    let max_panels = req.assignment.iter().map(Vec::len).max().unwrap_or(0);
    let mut panel = Panel {
        g: Graph::default(),
        tiling,
        req,
        order: &order,
    };
    // Devices take turns panel by panel so a shared solver serves them in step order.
    for q in 0..max_panels {
        for d in 0..req.devices.len() {
            let Some(&j) = req.assignment[d].get(q) else {
                continue;
            };
            let group = (q % req.resident_panels) as u32;
            panel.emit(&mut devs, d, j, group * nt as u32);
        }
    }
    let mut devices = Vec::with_capacity(devs.len());
    for ((st, spec), panels) in devs.iter().zip(req.devices).zip(req.assignment) {
        let need = st.next_slot as u64 * slot_bytes as u64;
        if need > spec.budget {
            return Err(Error::OutOfMemory {
                device: spec.label.clone(),
                detail: format!(
                    "triangular plan needs {} slots of {slot_bytes} bytes ({need} bytes), budget {}",
                    st.next_slot, spec.budget
                ),
            });
        }
        devices.push(PlanDevice::new(spec, st.next_slot, panels.len() * nt));
    }
    let routine = Routine::Tri {
        problem: p,
        tile: req.tile,
        panel: req.panel,
        solver: req.solver,
    };
    let k = p.a_order();
    let operands = [(a_space, k, k), (b_space, p.m, p.n)];
    let graph = panel.g.finish(req.devices.len());
    Ok(Plan::new(
        routine, p.dtype, &operands, slot_bytes, devices, graph,
    ))
}

/// What every panel's tasks are emitted with.
struct Panel<'a> {
    g: Graph,
    tiling: TriTiling,
    req: &'a TriRequest<'a>,
    order: &'a [usize],
}

impl Panel<'_> {
    fn origin(&self, key: TileKey) -> Loc {
        Loc::Operand {
            op: key.op,
            block: self.tiling.block(key),
        }
    }

    fn slot(&self, device: u16, slot: u32, key: TileKey) -> Loc {
        let b = self.tiling.block(key);
        Loc::Slot {
            device,
            slot,
            rows: b.rows,
            cols: b.cols,
        }
    }

    /// The A tile `key` on device `st`: in place, or fetched on first use.
    fn a_tile(&mut self, st: &mut DevState, key: TileKey) -> Loc {
        let a_space = self.req.locations[0];
        if st.space == a_space {
            return self.origin(key);
        }
        let s = match st.a_slots.get(&key) {
            Some(&s) => return self.slot(st.dev, s, key),
            None => st.next_slot,
        };
        st.next_slot += 1;
        st.a_slots.insert(key, s);
        let (src, dst) = (self.origin(key), self.slot(st.dev, s, key));
        self.g
            .copy(st.dev, (a_space, st.space), key, src, dst, None);
        dst
    }

    /// The tasks of panel `j` on device `d`, its B tiles in slots `first..first + nt`.
    fn emit(&mut self, devs: &mut [DevState], d: usize, j: usize, first: u32) {
        let t = self.tiling;
        let p = t.problem;
        let b_space = self.req.locations[1];
        let order = self.order;
        let nt = order.len();
        let space = devs[d].space;
        let queues = devs[d].queues;
        let dev = d as u16;
        let compute = |index: u16| QueueId::Compute {
            device: dev,
            index: index % queues,
        };
        let b_in_place = space == b_space;
        let bkey = |k: usize| TileKey::b(k, j);
        let bloc = |this: &Self, k: usize| {
            if b_in_place {
                this.origin(bkey(k))
            } else {
                this.slot(dev, first + k as u32, bkey(k))
            }
        };
        let lookahead = queues > 1;
        let diag =
            |this: &mut Self, dev: u16, q: QueueId, k: usize, a: Loc, b: Loc, alpha: Coef| {
                let op = Op::Tri {
                    key: bkey(k),
                    routine: p.routine,
                    opts: p.opts,
                    alpha,
                    a,
                    b,
                };
                this.g.add(dev, q, op)
            };
        // `B(i) := alpha_coef coupling B(k) + beta B(i)` as the GEMM of the stored tiles.
        let update =
            |this: &mut Self, q: QueueId, i: usize, k: usize, a: Loc, alpha: Coef, beta: Coef| {
                let (src, dst) = (bloc(this, k), bloc(this, i));
                // The stored coupling tile is op(A)(i,k) (left) or op(A)(k,i) (right) as stored,
                // or its transpose: `transa` applies to it either way.
                let ta = p.opts.transa.for_dtype(p.dtype);
                let (transa, transb, a, b) = match p.opts.side {
                    Side::Left => (ta, Trans::N, a, src),
                    Side::Right => (Trans::N, ta, src, a),
                };
                let op = Op::Gemm {
                    key: bkey(i),
                    l: k as u32,
                    transa,
                    transb,
                    alpha,
                    beta,
                    a,
                    b,
                    c: dst,
                };
                this.g.add(dev, q, op)
            };
        let fetch_b = |this: &mut Self, k: usize| {
            let (src, dst) = (this.origin(bkey(k)), bloc(this, k));
            this.g.copy(dev, (b_space, space), bkey(k), src, dst, None);
        };
        let write_back = |this: &mut Self, k: usize, finishes: bool| {
            let (src, dst) = (bloc(this, k), this.origin(bkey(k)));
            let id = this.g.copy(dev, (space, b_space), bkey(k), src, dst, None);
            this.g.task_mut(id).finishes = finishes;
        };
        if !b_in_place {
            for &k in order {
                fetch_b(self, k);
            }
        }
        match p.routine {
            TriRoutine::Trsm => {
                for s in 0..nt {
                    let k = order[s];
                    // Alpha applies at each tile's first touch: the first step's.
                    let scale = if s == 0 { Coef::Alpha } else { Coef::One };
                    let diag_q = compute(if lookahead && s > 0 { 1 } else { 0 });
                    match self.req.solver.filter(|&e| e != d) {
                        None => {
                            let a = self.a_tile(&mut devs[d], TileKey::a(k, k));
                            let b = bloc(self, k);
                            let id = diag(self, dev, diag_q, k, a, b, scale);
                            if b_in_place {
                                self.g.task_mut(id).finishes = true;
                            } else {
                                write_back(self, k, true);
                            }
                        }
                        Some(e) => {
                            // The tile goes back to B, the solver solves it there (A read in
                            // place), and the device fetches the solution again.
                            write_back(self, k, false);
                            let q = QueueId::Compute {
                                device: e as u16,
                                index: 0,
                            };
                            let (a, b) = (self.origin(TileKey::a(k, k)), self.origin(bkey(k)));
                            let id = diag(self, e as u16, q, k, a, b, scale);
                            self.g.task_mut(id).finishes = true;
                            if s + 1 < nt && !b_in_place {
                                fetch_b(self, k);
                            }
                        }
                    }
                    for (s2, &i) in order.iter().enumerate().skip(s + 1) {
                        let q = compute(if lookahead && s2 == s + 1 { 1 } else { 0 });
                        let a = self.a_tile(&mut devs[d], t.coupling(i, k));
                        update(self, q, i, k, a, Coef::MinusOne, scale);
                    }
                }
            }
            TriRoutine::Trmm => {
                for s in 0..nt {
                    let i = order[s];
                    // Rows alternate between the compute queues: they are independent but for
                    // the reads of later rows, which the dependencies order.
                    let q = compute(if lookahead { (s % 2) as u16 } else { 0 });
                    let a = self.a_tile(&mut devs[d], TileKey::a(i, i));
                    let b = bloc(self, i);
                    let mut last = diag(self, dev, q, i, a, b, Coef::Alpha);
                    for &l in order.iter().skip(s + 1) {
                        let a = self.a_tile(&mut devs[d], t.coupling(i, l));
                        last = update(self, q, i, l, a, Coef::Alpha, Coef::One);
                    }
                    if b_in_place {
                        self.g.task_mut(last).finishes = true;
                    } else {
                        write_back(self, i, true);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::graph::tests::{
        assert_check_catches_missing_dependencies, assert_dependencies_order_every_access,
    };
    use crate::problem::triangular::{Diag, TriOptions, Uplo};
    use crate::scalar::DType;
    use std::collections::HashSet;

    fn problem(routine: TriRoutine, side: Side, uplo: Uplo, transa: Trans) -> TriProblem {
        TriProblem {
            routine,
            opts: TriOptions {
                side,
                uplo,
                transa,
                diag: Diag::NonUnit,
            },
            m: 37,
            n: 29,
            dtype: DType::F64,
        }
    }

    fn spec(space: MemorySpace, queues: u16) -> DeviceSpec {
        DeviceSpec::new(format!("{space:?}"), space, 1 << 30, queues)
    }

    fn plan_for(p: TriProblem, devices: &[DeviceSpec], solver: Option<usize>) -> Plan {
        let np = p.b_lines().div_ceil(8);
        let computing = devices.len() - usize::from(solver == Some(devices.len() - 1));
        let mut assignment = vec![Vec::new(); devices.len()];
        for j in 0..np {
            assignment[j % computing].push(j);
        }
        build_tri(&TriRequest {
            problem: p,
            locations: [MemorySpace::HOST, MemorySpace::HOST],
            tile: 8,
            panel: 8,
            devices,
            assignment: &assignment,
            solver,
            resident_panels: 2,
        })
        .unwrap()
    }

    /// Whatever order the executor runs the tasks in, as long as it honours the derived
    /// dependencies, every read sees the version the plan meant and B ends the same: the
    /// graph orders every read and write of every tile, across slots, devices and the operand
    /// itself, including a tile solved on another device and fetched again.
    #[test]
    fn dependencies_order_every_read_and_write() {
        let (d0, d1) = (MemorySpace::new_device(), MemorySpace::new_device());
        let layouts: Vec<(Vec<DeviceSpec>, Option<usize>)> = vec![
            (vec![spec(d0, 2)], None),
            (vec![spec(d0, 2), spec(d1, 1)], None),
            (
                vec![spec(d0, 2), spec(d1, 2), spec(MemorySpace::HOST, 1)],
                None,
            ),
            (
                vec![spec(d0, 2), spec(d1, 2), spec(MemorySpace::HOST, 1)],
                Some(2),
            ),
        ];
        let mut checked = 0;
        for routine in [TriRoutine::Trsm, TriRoutine::Trmm] {
            for side in [Side::Left, Side::Right] {
                for uplo in [Uplo::Lower, Uplo::Upper] {
                    for transa in [Trans::N, Trans::T] {
                        for (devs, solver) in &layouts {
                            if solver.is_some() && routine == TriRoutine::Trmm {
                                continue;
                            }
                            let plan =
                                plan_for(problem(routine, side, uplo, transa), devs, *solver);
                            assert_dependencies_order_every_access(&plan);
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 56);
        let plan = plan_for(
            problem(TriRoutine::Trsm, Side::Left, Uplo::Lower, Trans::N),
            &[spec(d0, 2)],
            None,
        );
        assert_check_catches_missing_dependencies(&plan);
    }

    /// Each device fetches each A tile it needs once, each B tile of its panels once, and
    /// writes each back once; diagonal solves and updates are counted exactly.
    #[test]
    fn tiles_cross_each_link_once() {
        let (d0, d1) = (MemorySpace::new_device(), MemorySpace::new_device());
        let p = problem(TriRoutine::Trsm, Side::Left, Uplo::Lower, Trans::N);
        let plan = plan_for(p, &[spec(d0, 2), spec(d1, 2)], None);
        let tiling = TriTiling {
            problem: p,
            tile: 8,
            panel: 8,
        };
        let (nt, np) = (tiling.nt(), tiling.np());
        assert_eq!((nt, np), (5, 4));
        let mut a = [0; 2];
        let mut b = [0; 2];
        let mut wb = [0; 2];
        let mut diags = [0; 2];
        let mut updates = [0; 2];
        let mut fetched = HashSet::new();
        for t in &plan.tasks {
            let d = t.device as usize;
            match t.op {
                Op::Copy {
                    key,
                    dst: Loc::Slot { .. },
                    ..
                } => {
                    assert!(fetched.insert((t.device, key)), "{key:?} fetched twice");
                    if key.op == Operand::A {
                        a[d] += 1
                    } else {
                        b[d] += 1
                    }
                }
                Op::Copy { .. } => wb[d] += 1,
                Op::Tri { .. } => diags[d] += 1,
                Op::Gemm { .. } => updates[d] += 1,
                _ => panic!("unexpected {:?}", t.op),
            }
        }
        // Both devices solve against the whole lower triangle: nt (nt + 1) / 2 tiles.
        assert_eq!(a, [15, 15]);
        assert_eq!(b, [2 * nt, 2 * nt]);
        assert_eq!(wb, [2 * nt, 2 * nt]);
        assert_eq!(diags, [2 * nt, 2 * nt]);
        assert_eq!(updates, [nt * (nt - 1), nt * (nt - 1)]);
        // Every B tile is finished exactly once, by its write-back.
        let finished: Vec<_> = plan.tasks.iter().filter(|t| t.finishes).collect();
        assert_eq!(finished.len(), nt * np);
        assert!(finished.iter().all(|t| matches!(
            t.op,
            Op::Copy {
                dst: Loc::Operand { op: Operand::B, .. },
                ..
            }
        )));
    }

    /// Look-ahead: with two compute queues, after the first step each diagonal solve runs on
    /// queue 1 together with the update of its block by the previous step, and the rest of
    /// the trailing update on queue 0 waits for that solve.
    #[test]
    fn lookahead_puts_the_next_panel_on_its_own_queue() {
        let d0 = MemorySpace::new_device();
        let p = problem(TriRoutine::Trsm, Side::Left, Uplo::Lower, Trans::N);
        let plan = plan_for(p, &[spec(d0, 2)], None);
        let nt = p.a_order().div_ceil(8) as u32;
        let q = |i| QueueId::Compute {
            device: 0,
            index: i,
        };
        for (id, t) in plan.tasks.iter().enumerate() {
            match t.op {
                Op::Tri { key, .. } => {
                    let k = key.r;
                    assert_eq!(t.queue, q(if k == 0 { 0 } else { 1 }), "diag {k}");
                    // Diagonal solves with dependents on queue 0 signal them.
                    if k + 1 < nt {
                        assert!(t.signal, "diag {k} (task {id}) signals nobody");
                    }
                }
                Op::Gemm { key, l, .. } => {
                    let (i, k) = (key.r, l);
                    assert_eq!(
                        t.queue,
                        q(if i == k + 1 { 1 } else { 0 }),
                        "update {i} by {k}"
                    );
                }
                _ => {}
            }
        }
    }

    #[test]
    fn bad_requests_are_refused() {
        let d0 = MemorySpace::new_device();
        let p = problem(TriRoutine::Trsm, Side::Left, Uplo::Lower, Trans::N);
        let req = |assignment: &[Vec<usize>], budget: u64| {
            let devs = [DeviceSpec {
                budget,
                ..spec(d0, 1)
            }];
            build_tri(&TriRequest {
                problem: p,
                locations: [MemorySpace::HOST, MemorySpace::HOST],
                tile: 8,
                panel: 8,
                devices: &devs,
                assignment,
                solver: None,
                resident_panels: 2,
            })
        };
        assert!(matches!(
            req(&[vec![0, 1, 2]], 1 << 30),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            req(&[vec![0, 1, 2, 3, 3]], 1 << 30),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            req(&[vec![0, 1, 2, 3]], 1000),
            Err(Error::OutOfMemory { .. })
        ));
        assert!(req(&[vec![3, 1, 0, 2]], 1 << 30).is_ok());
    }
}
