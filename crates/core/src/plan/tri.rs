//! The tile DAG of TRSM and TRMM: B is overwritten in place, so unlike GEMM's independent
//! output tiles, the tasks depend on each other through the tiles they read and write.
//!
//! **Tiling.** A's order is cut into `nt` blocks of `tile`; B's independent lines (columns on
//! the left side, rows on the right) into panels of `panel`. B tile `(k, j)` is A-block `k` of
//! panel `j`. Panels are dealt to devices; a device keeps every B tile of a panel in its memory
//! for all the steps of that panel (fetched once, written back once when final) and fetches
//! each A tile it needs once, kept for the whole call.
//!
//! **Steps.** TRSM walks the diagonal blocks in [`TriProblem::block_order`]: step `s` solves
//! `B(k) := op(A)(k,k)^-1 B(k)` for `k = order[s]`, then updates each later block
//! `B(i) -= coupling(i, k) B(k)` (GEMM tiles). Alpha is applied once, at each tile's first touch
//! (the step-0 solve or the step-0 update's beta). TRMM walks the other way: per step the
//! diagonal multiply `B(i) := alpha op(A)(i,i) B(i)`, then `B(i) += alpha coupling(i, l) B(l)`
//! for the later blocks `l`, which are not yet overwritten.
//!
//! **Dependencies.** Every task names the resources it reads and writes (a slot of a device, or
//! a tile of the operand itself); the builder derives the predecessors (read after write, write
//! after write, write after read), so a tile updated on one device and read on another is read
//! only after the update, and a re-fetch of a tile follows the write that changed it.
//!
//! **Look-ahead.** With two compute queues, the update of the next step's block and that
//! block's diagonal solve go on queue 1, the rest of the trailing update on queue 0: the next
//! panel solve runs while the current trailing update does.
//!
//! **Solves elsewhere.** A `solver` device in host memory (the CPU) can run the diagonal solves
//! of every device: the tile goes back to B, is solved there in place, and comes back.

use super::task::QueueId;
use crate::error::{Error, Result};
use crate::memory::MemorySpace;
use crate::problem::triangular::{Side, TriProblem, TriRoutine};
use crate::trace::Activity;
use std::collections::HashMap;
#[cfg(test)]
use std::collections::HashSet;

pub type TriTaskId = u32;

/// A tile of an operand: a stored block `(r, c)` of A, or block `k` of panel `j` of B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TriKey {
    A { r: u32, c: u32 },
    B { k: u32, j: u32 },
}

/// Where a task finds a tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TriLoc {
    /// In the operand itself (its memory is the device's own).
    InPlace,
    /// In a slot of the device's workspace.
    Slot(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriTaskKind {
    /// Operand tile -> device slot.
    Fetch { key: TriKey, slot: u32 },
    /// Device slot -> operand tile (B only).
    WriteBack { key: TriKey, slot: u32 },
    /// The diagonal solve (TRSM) or multiply (TRMM) of B tile `(k, j)` with A tile `(k, k)`.
    /// `first`: the tile's first touch, which applies alpha (TRMM always applies it).
    Diag {
        k: u32,
        j: u32,
        a: TriLoc,
        b: TriLoc,
        first: bool,
    },
    /// TRSM: `B(i,j) = -coupling(i,k) B(k,j) + beta B(i,j)` with beta alpha on the first
    /// touch, else 1. TRMM: `B(i,j) += alpha coupling(i,k) B(k,j)`.
    Update {
        i: u32,
        k: u32,
        j: u32,
        a: TriLoc,
        src: TriLoc,
        dst: TriLoc,
        first: bool,
    },
}

#[derive(Debug, Clone)]
pub struct TriTask {
    pub device: u16,
    pub queue: QueueId,
    pub kind: TriTaskKind,
    /// Tasks that must complete first (all with smaller ids).
    pub deps: Vec<TriTaskId>,
    /// A task on another queue waits for this one (the executor records an event).
    pub signal: bool,
}

/// What the planner needs to know about a participating device.
#[derive(Debug, Clone)]
pub struct TriDeviceSpec {
    pub label: String,
    pub space: MemorySpace,
    /// Bytes available for slots.
    pub budget: u64,
    pub compute_queues: u16,
}

/// A device's part of the plan.
#[derive(Debug, Clone)]
pub struct TriPlanDevice {
    pub space: MemorySpace,
    pub slots: u32,
    /// The panels of B this device owns, in the order it runs them.
    pub panels: Vec<u32>,
}

/// Input to [`build_tri`].
pub struct TriPlanRequest<'a> {
    pub problem: TriProblem,
    /// Where A and B live.
    pub locations: [MemorySpace; 2],
    pub tile: usize,
    pub panel: usize,
    pub devices: &'a [TriDeviceSpec],
    /// Per device, its panels. Every panel exactly once over all devices.
    pub assignment: &'a [Vec<usize>],
    /// The plan device that runs every diagonal TRSM solve, when not each device its own
    /// (it must compute in the memory where A and B live).
    pub solver: Option<usize>,
    /// Panels of a device resident at once (2: the next panel's fetches overlap this one's
    /// compute).
    pub resident_panels: usize,
}

/// A complete, address-free TRSM/TRMM plan.
#[derive(Debug, Clone)]
pub struct TriPlan {
    pub problem: TriProblem,
    pub locations: [MemorySpace; 2],
    pub tile: usize,
    pub panel: usize,
    pub nt: usize,
    pub np: usize,
    pub slot_bytes: usize,
    pub solver: Option<usize>,
    pub devices: Vec<TriPlanDevice>,
    pub tasks: Vec<TriTask>,
    /// Per device, its task ids in issue order.
    pub order: Vec<Vec<TriTaskId>>,
}

/// Counts of what a plan moves and computes.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct TriPlanStats {
    /// Per device: fetches of A tiles, fetches of B tiles, write-backs.
    pub a_fetches: Vec<usize>,
    pub b_fetches: Vec<usize>,
    pub writebacks: Vec<usize>,
    /// Per device: diagonal tasks, updates.
    pub diags: Vec<usize>,
    pub updates: Vec<usize>,
}

/// One rectangle of an operand: first row, first column, rows, columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub row: usize,
    pub col: usize,
    pub rows: usize,
    pub cols: usize,
}

impl TriPlan {
    /// Start and length of diagonal block `b` (along A's order).
    pub fn block_span(&self, b: usize) -> (usize, usize) {
        let order = self.problem.a_order();
        let s = b * self.tile;
        (s, self.tile.min(order - s))
    }

    /// Start and length of panel `j` (along B's independent lines).
    pub fn panel_span(&self, j: usize) -> (usize, usize) {
        let lines = self.problem.b_lines();
        let s = j * self.panel;
        (s, self.panel.min(lines - s))
    }

    /// The block of the operand a key names.
    pub fn block(&self, key: TriKey) -> Block {
        match key {
            TriKey::A { r, c } => {
                let (row, rows) = self.block_span(r as usize);
                let (col, cols) = self.block_span(c as usize);
                Block {
                    row,
                    col,
                    rows,
                    cols,
                }
            }
            TriKey::B { k, j } => {
                let (a, alen) = self.block_span(k as usize);
                let (p, plen) = self.panel_span(j as usize);
                match self.problem.opts.side {
                    Side::Left => Block {
                        row: a,
                        col: p,
                        rows: alen,
                        cols: plen,
                    },
                    Side::Right => Block {
                        row: p,
                        col: a,
                        rows: plen,
                        cols: alen,
                    },
                }
            }
        }
    }

    /// The stored A tile that couples block `i` of B to block `k` (`op(A)(i,k)` on the left,
    /// `op(A)(k,i)` on the right).
    pub fn coupling(&self, i: u32, k: u32) -> TriKey {
        let left = self.problem.opts.side == Side::Left;
        let transposed = self.problem.opts.transa.is_transposed();
        if left != transposed {
            TriKey::A { r: i, c: k }
        } else {
            TriKey::A { r: k, c: i }
        }
    }

    /// What a task does, as traces show it: activity, label, bytes moved, flops. The executor
    /// and the simulator both label with it, so real and simulated timelines compare task by
    /// task.
    pub fn describe(&self, task: &TriTask) -> (Activity, String, u64, f64) {
        let es = self.problem.dtype.size() as u64;
        let fma = self.problem.dtype.flops_per_fma();
        let tile_bytes = |key: TriKey| {
            let b = self.block(key);
            (b.rows * b.cols) as u64 * es
        };
        let name = |key: TriKey| match key {
            TriKey::A { r, c } => format!("A({r},{c})"),
            TriKey::B { k, j } => format!("B({k},{j})"),
        };
        match task.kind {
            TriTaskKind::Fetch { key, .. } => (
                Activity::Fetch,
                format!("fetch {}", name(key)),
                tile_bytes(key),
                0.0,
            ),
            TriTaskKind::WriteBack { key, .. } => (
                Activity::WriteBack,
                format!("writeback {}", name(key)),
                tile_bytes(key),
                0.0,
            ),
            TriTaskKind::Diag { k, j, .. } => {
                let b = self.block(TriKey::B { k, j });
                let order = self.block_span(k as usize).1 as f64;
                let routine = match self.problem.routine {
                    TriRoutine::Trsm => "trsm",
                    TriRoutine::Trmm => "trmm",
                };
                (
                    Activity::Gemm,
                    format!("{routine} {}", name(TriKey::B { k, j })),
                    0,
                    fma * 0.5 * order * (b.rows * b.cols) as f64,
                )
            }
            TriTaskKind::Update { i, k, j, .. } => {
                let c = self.block(TriKey::B { k: i, j });
                let kk = self.block_span(k as usize).1 as f64;
                (
                    Activity::Gemm,
                    format!("update B({i},{j}) by B({k},{j})"),
                    0,
                    fma * kk * (c.rows * c.cols) as f64,
                )
            }
        }
    }

    pub fn stats(&self) -> TriPlanStats {
        let n = self.devices.len();
        let mut s = TriPlanStats {
            a_fetches: vec![0; n],
            b_fetches: vec![0; n],
            writebacks: vec![0; n],
            diags: vec![0; n],
            updates: vec![0; n],
        };
        for t in &self.tasks {
            let d = t.device as usize;
            match t.kind {
                TriTaskKind::Fetch {
                    key: TriKey::A { .. },
                    ..
                } => s.a_fetches[d] += 1,
                TriTaskKind::Fetch { .. } => s.b_fetches[d] += 1,
                TriTaskKind::WriteBack { .. } => s.writebacks[d] += 1,
                TriTaskKind::Diag { .. } => s.diags[d] += 1,
                TriTaskKind::Update { .. } => s.updates[d] += 1,
            }
        }
        s
    }
}

/// A resource tasks read and write: a slot of a plan device, or a tile of the operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Res {
    Slot(u16, u32),
    Origin(TriKey),
}

#[derive(Default)]
struct ResState {
    writer: Option<TriTaskId>,
    readers: Vec<TriTaskId>,
}

struct Builder {
    tasks: Vec<TriTask>,
    order: Vec<Vec<TriTaskId>>,
    state: HashMap<Res, ResState>,
}

impl Builder {
    fn add(
        &mut self,
        device: usize,
        queue: QueueId,
        kind: TriTaskKind,
        reads: &[Res],
        writes: &[Res],
    ) -> TriTaskId {
        let id = self.tasks.len() as TriTaskId;
        let mut deps = Vec::new();
        for r in reads {
            if let Some(w) = self.state.get(r).and_then(|s| s.writer) {
                deps.push(w);
            }
        }
        for w in writes {
            if let Some(s) = self.state.get(w) {
                deps.extend(s.writer);
                deps.extend(s.readers.iter().copied());
            }
        }
        deps.sort_unstable();
        deps.dedup();
        for &d in &deps {
            let t = &mut self.tasks[d as usize];
            if t.queue != queue || t.device as usize != device {
                t.signal = true;
            }
        }
        for r in reads {
            self.state.entry(*r).or_default().readers.push(id);
        }
        for w in writes {
            let s = self.state.entry(*w).or_default();
            s.writer = Some(id);
            s.readers.clear();
        }
        self.tasks.push(TriTask {
            device: device as u16,
            queue,
            kind,
            deps,
            signal: false,
        });
        self.order[device].push(id);
        id
    }
}

/// Per device while building: where its tiles are.
struct DevState {
    space: MemorySpace,
    queues: u16,
    next_slot: u32,
    a_slots: HashMap<TriKey, u32>,
}

/// Builds the plan.
///
/// # Errors
/// `InvalidInput` for an assignment that does not cover every panel once or a solver that
/// cannot compute where B lives; `OutOfMemory` when a device's slots exceed its budget.
pub fn build_tri(req: &TriPlanRequest<'_>) -> Result<TriPlan> {
    let p = req.problem;
    if req.tile == 0 || req.panel == 0 || req.resident_panels == 0 {
        return Err(Error::InvalidInput(
            "tile, panel and resident panels must be positive".into(),
        ));
    }
    if req.devices.len() != req.assignment.len() || req.devices.is_empty() {
        return Err(Error::InvalidInput("one panel list per device".into()));
    }
    let nt = p.a_order().div_ceil(req.tile);
    let np = p.b_lines().div_ceil(req.panel);
    let mut seen = vec![false; np];
    for &j in req.assignment.iter().flatten() {
        if j >= np || std::mem::replace(&mut seen[j], true) {
            return Err(Error::InvalidInput(format!(
                "panel {j} missing or assigned twice"
            )));
        }
    }
    if seen.iter().any(|s| !s) {
        return Err(Error::InvalidInput(
            "a panel is assigned to no device".into(),
        ));
    }
    let [a_space, b_space] = req.locations;
    if let Some(s) = req.solver {
        let sp = req.devices.get(s).map(|d| d.space);
        if p.routine != TriRoutine::Trsm || sp != Some(b_space) || sp != Some(a_space) {
            return Err(Error::InvalidInput(
                "a separate solver runs TRSM solves where A and B live".into(),
            ));
        }
    }
    let es = p.dtype.size();
    let slot_bytes = (req.tile * req.tile.max(req.panel) * es).max(es);
    let mut plan = TriPlan {
        problem: p,
        locations: req.locations,
        tile: req.tile,
        panel: req.panel,
        nt,
        np,
        slot_bytes,
        solver: req.solver,
        devices: req
            .devices
            .iter()
            .zip(req.assignment)
            .map(|(d, a)| TriPlanDevice {
                space: d.space,
                slots: 0,
                panels: a.iter().map(|&j| j as u32).collect(),
            })
            .collect(),
        tasks: Vec::new(),
        order: Vec::new(),
    };
    let mut b = Builder {
        tasks: Vec::new(),
        order: vec![Vec::new(); req.devices.len()],
        state: HashMap::new(),
    };
    let mut devs: Vec<DevState> = req
        .devices
        .iter()
        .map(|d| DevState {
            space: d.space,
            queues: d.compute_queues.max(1),
            next_slot: 0,
            a_slots: HashMap::new(),
        })
        .collect();
    let order = p.block_order(nt);
    let max_panels = req.assignment.iter().map(Vec::len).max().unwrap_or(0);
    // B slots per device come first: `resident_panels` groups of `nt`; A slots follow.
    for (d, st) in devs.iter_mut().enumerate() {
        if st.space != b_space && !req.assignment[d].is_empty() {
            let groups = req.resident_panels.min(req.assignment[d].len()) as u32;
            st.next_slot = groups * nt as u32;
        }
    }
    // Devices take turns panel by panel so a shared solver serves them in step order.
    for q in 0..max_panels {
        for d in 0..req.devices.len() {
            let Some(&j) = req.assignment[d].get(q) else {
                continue;
            };
            let group = (q % req.resident_panels) as u32;
            emit_panel(&mut b, &mut devs, &plan, req, d, j as u32, &order, |k| {
                group * nt as u32 + k
            });
        }
    }
    for (d, st) in devs.iter().enumerate() {
        plan.devices[d].slots = st.next_slot;
        let need = st.next_slot as u64 * slot_bytes as u64;
        if need > req.devices[d].budget {
            return Err(Error::OutOfMemory {
                device: req.devices[d].label.clone(),
                detail: format!(
                    "triangular plan needs {} slots of {slot_bytes} bytes ({need} bytes), budget {}",
                    st.next_slot, req.devices[d].budget
                ),
            });
        }
    }
    plan.tasks = b.tasks;
    plan.order = b.order;
    Ok(plan)
}

/// The tasks of one panel `j` on device `d`.
#[allow(clippy::too_many_arguments)] // reason: the builder's state, passed apart to borrow apart
fn emit_panel(
    b: &mut Builder,
    devs: &mut [DevState],
    plan: &TriPlan,
    req: &TriPlanRequest<'_>,
    d: usize,
    j: u32,
    order: &[usize],
    b_slot: impl Fn(u32) -> u32,
) {
    let p = plan.problem;
    let [a_space, b_space] = req.locations;
    let space = devs[d].space;
    let queues = devs[d].queues;
    let compute = |index: u16| QueueId::Compute {
        device: d as u16,
        index: index % queues,
    };
    let fetch_q = |src: MemorySpace| QueueId::Link { src, dst: space };
    let b_in_place = space == b_space;
    let bkey = |k: u32| TriKey::B { k, j };
    let bres = |k: u32| {
        if b_in_place {
            Res::Origin(bkey(k))
        } else {
            Res::Slot(d as u16, b_slot(k))
        }
    };
    let bloc = |k: u32| {
        if b_in_place {
            TriLoc::InPlace
        } else {
            TriLoc::Slot(b_slot(k))
        }
    };
    // The A tile `key` on this device: in place, or fetched on first use.
    let a_loc = |b: &mut Builder, devs: &mut [DevState], key: TriKey| -> (TriLoc, Res) {
        if space == a_space {
            return (TriLoc::InPlace, Res::Origin(key));
        }
        let st = &mut devs[d];
        if let Some(&s) = st.a_slots.get(&key) {
            return (TriLoc::Slot(s), Res::Slot(d as u16, s));
        }
        let s = st.next_slot;
        st.next_slot += 1;
        st.a_slots.insert(key, s);
        b.add(
            d,
            fetch_q(a_space),
            TriTaskKind::Fetch { key, slot: s },
            &[Res::Origin(key)],
            &[Res::Slot(d as u16, s)],
        );
        (TriLoc::Slot(s), Res::Slot(d as u16, s))
    };
    if !b_in_place {
        for &k in order {
            let k = k as u32;
            b.add(
                d,
                fetch_q(b_space),
                TriTaskKind::Fetch {
                    key: bkey(k),
                    slot: b_slot(k),
                },
                &[Res::Origin(bkey(k))],
                &[bres(k)],
            );
        }
    }
    let write_back = |b: &mut Builder, k: u32| {
        if !b_in_place {
            b.add(
                d,
                QueueId::Link {
                    src: space,
                    dst: b_space,
                },
                TriTaskKind::WriteBack {
                    key: bkey(k),
                    slot: b_slot(k),
                },
                &[bres(k)],
                &[Res::Origin(bkey(k))],
            );
        }
    };
    let nt = order.len();
    let lookahead = queues > 1;
    match p.routine {
        TriRoutine::Trsm => {
            for s in 0..nt {
                let k = order[s] as u32;
                let diag_q = if lookahead && s > 0 { 1 } else { 0 };
                match req.solver.filter(|&e| e != d) {
                    None => {
                        let (a, ares) = a_loc(b, devs, TriKey::A { r: k, c: k });
                        b.add(
                            d,
                            compute(diag_q),
                            TriTaskKind::Diag {
                                k,
                                j,
                                a,
                                b: bloc(k),
                                first: s == 0,
                            },
                            &[ares, bres(k)],
                            &[bres(k)],
                        );
                        write_back(b, k);
                    }
                    Some(e) => {
                        // The tile goes back to B, the solver solves it there (A read in
                        // place), and the device fetches the solution again.
                        write_back(b, k);
                        let akey = TriKey::A { r: k, c: k };
                        b.add(
                            e,
                            QueueId::Compute {
                                device: e as u16,
                                index: 0,
                            },
                            TriTaskKind::Diag {
                                k,
                                j,
                                a: TriLoc::InPlace,
                                b: TriLoc::InPlace,
                                first: s == 0,
                            },
                            &[Res::Origin(akey), Res::Origin(bkey(k))],
                            &[Res::Origin(bkey(k))],
                        );
                        if s + 1 < nt && !b_in_place {
                            b.add(
                                d,
                                fetch_q(b_space),
                                TriTaskKind::Fetch {
                                    key: bkey(k),
                                    slot: b_slot(k),
                                },
                                &[Res::Origin(bkey(k))],
                                &[bres(k)],
                            );
                        }
                    }
                }
                for (s2, &i) in order.iter().enumerate().skip(s + 1) {
                    let i = i as u32;
                    let q = if lookahead && s2 == s + 1 { 1 } else { 0 };
                    let (a, ares) = a_loc(b, devs, plan.coupling(i, k));
                    b.add(
                        d,
                        compute(q),
                        TriTaskKind::Update {
                            i,
                            k,
                            j,
                            a,
                            src: bloc(k),
                            dst: bloc(i),
                            first: s == 0,
                        },
                        &[ares, bres(k), bres(i)],
                        &[bres(i)],
                    );
                }
            }
        }
        TriRoutine::Trmm => {
            for s in 0..nt {
                let i = order[s] as u32;
                // Rows alternate between the compute queues: they are independent but for
                // the reads of later rows, which the dependencies order.
                let q = if lookahead { (s % 2) as u16 } else { 0 };
                let (a, ares) = a_loc(b, devs, TriKey::A { r: i, c: i });
                b.add(
                    d,
                    compute(q),
                    TriTaskKind::Diag {
                        k: i,
                        j,
                        a,
                        b: bloc(i),
                        first: true,
                    },
                    &[ares, bres(i)],
                    &[bres(i)],
                );
                for &l in order.iter().skip(s + 1) {
                    let l = l as u32;
                    let (a, ares) = a_loc(b, devs, plan.coupling(i, l));
                    b.add(
                        d,
                        compute(q),
                        TriTaskKind::Update {
                            i,
                            k: l,
                            j,
                            a,
                            src: bloc(l),
                            dst: bloc(i),
                            first: false,
                        },
                        &[ares, bres(l), bres(i)],
                        &[bres(i)],
                    );
                }
                write_back(b, i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operand::Trans;
    use crate::problem::triangular::{Diag, TriOptions, Uplo};
    use crate::scalar::DType;
    use rand::seq::SliceRandom;
    use rand::SeedableRng;

    /// What a task reads and writes, derived from its kind alone (independently of the
    /// builder's own bookkeeping).
    fn effects(plan: &TriPlan, t: &TriTask) -> (Vec<Res>, Vec<Res>) {
        let d = t.device;
        let res = |loc: TriLoc, key: TriKey| match loc {
            TriLoc::InPlace => Res::Origin(key),
            TriLoc::Slot(s) => Res::Slot(d, s),
        };
        match t.kind {
            TriTaskKind::Fetch { key, slot } => (vec![Res::Origin(key)], vec![Res::Slot(d, slot)]),
            TriTaskKind::WriteBack { key, slot } => {
                (vec![Res::Slot(d, slot)], vec![Res::Origin(key)])
            }
            TriTaskKind::Diag { k, j, a, b, .. } => {
                let bk = TriKey::B { k, j };
                (
                    vec![res(a, TriKey::A { r: k, c: k }), res(b, bk)],
                    vec![res(b, bk)],
                )
            }
            TriTaskKind::Update {
                i,
                k,
                j,
                a,
                src,
                dst,
                ..
            } => {
                let dk = TriKey::B { k: i, j };
                (
                    vec![
                        res(a, plan.coupling(i, k)),
                        res(src, TriKey::B { k, j }),
                        res(dst, dk),
                    ],
                    vec![res(dst, dk)],
                )
            }
        }
    }

    /// Per task, the version of every resource it reads, when the tasks run in `order`; and
    /// the final version of every resource.
    type Seen = (Vec<Vec<u64>>, HashMap<Res, u64>);
    fn simulate(plan: &TriPlan, order: &[usize]) -> Seen {
        // A version is the id of the task that wrote it (+1), 0 for the caller's data.
        let mut ver: HashMap<Res, u64> = HashMap::new();
        let mut seen = vec![Vec::new(); plan.tasks.len()];
        for &id in order {
            let (reads, writes) = effects(plan, &plan.tasks[id]);
            seen[id] = reads.iter().map(|r| *ver.get(r).unwrap_or(&0)).collect();
            for w in writes {
                ver.insert(w, id as u64 + 1);
            }
        }
        (seen, ver)
    }

    /// A random order of the tasks that respects only the declared predecessors.
    fn random_topological(plan: &TriPlan, seed: u64) -> Vec<usize> {
        let n = plan.tasks.len();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut indeg: Vec<usize> = plan.tasks.iter().map(|t| t.deps.len()).collect();
        let mut succ = vec![Vec::new(); n];
        for (i, t) in plan.tasks.iter().enumerate() {
            for &d in &t.deps {
                assert!((d as usize) < i, "a predecessor with a larger id");
                succ[d as usize].push(i);
            }
        }
        let mut ready: Vec<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
        let mut out = Vec::new();
        while !ready.is_empty() {
            ready.shuffle(&mut rng);
            let x = ready.pop().unwrap();
            out.push(x);
            for &s in &succ[x] {
                indeg[s] -= 1;
                if indeg[s] == 0 {
                    ready.push(s);
                }
            }
        }
        assert_eq!(out.len(), n, "the dependencies have a cycle");
        out
    }

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

    fn spec(space: MemorySpace, queues: u16) -> TriDeviceSpec {
        TriDeviceSpec {
            label: format!("{space:?}"),
            space,
            budget: 1 << 30,
            compute_queues: queues,
        }
    }

    fn plan_for(p: TriProblem, devices: &[TriDeviceSpec], solver: Option<usize>) -> TriPlan {
        let np = p.b_lines().div_ceil(8);
        let computing = devices.len() - usize::from(solver == Some(devices.len() - 1));
        let mut assignment = vec![Vec::new(); devices.len()];
        for j in 0..np {
            assignment[j % computing].push(j);
        }
        build_tri(&TriPlanRequest {
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

    /// Whatever order the executor runs the tasks in, as long as it honours the declared
    /// predecessors, every read sees the version the plan meant (the one of issue order) and
    /// B ends the same: the plan orders every read and write of every tile, across slots,
    /// devices and the operand itself, including a tile solved on another device and fetched
    /// again.
    #[test]
    fn predecessors_order_every_read_and_write() {
        let (d0, d1) = (MemorySpace::new_device(), MemorySpace::new_device());
        let layouts: Vec<(Vec<TriDeviceSpec>, Option<usize>)> = vec![
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
                            let issue: Vec<usize> = (0..plan.tasks.len()).collect();
                            let want = simulate(&plan, &issue);
                            for seed in 0..4 {
                                let got = simulate(&plan, &random_topological(&plan, seed));
                                assert_eq!(
                                    got.0, want.0,
                                    "{routine:?} {side:?} {uplo:?} {transa:?}"
                                );
                                assert_eq!(got.1, want.1);
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 56);
    }

    /// Without the dependencies the check above fails: dropping them lets reads see other
    /// versions (the test can tell a plan that orders nothing).
    #[test]
    fn the_order_check_catches_missing_predecessors() {
        let d0 = MemorySpace::new_device();
        let mut plan = plan_for(
            problem(TriRoutine::Trsm, Side::Left, Uplo::Lower, Trans::N),
            &[spec(d0, 2)],
            None,
        );
        let issue: Vec<usize> = (0..plan.tasks.len()).collect();
        let want = simulate(&plan, &issue);
        for t in &mut plan.tasks {
            t.deps.clear();
        }
        let differs = (0..4).any(|s| simulate(&plan, &random_topological(&plan, s)).0 != want.0);
        assert!(differs);
    }

    /// Each device fetches each A tile it needs once, each B tile of its panels once, and
    /// writes each back once; diagonal solves and updates are counted exactly.
    #[test]
    fn tiles_cross_each_link_once() {
        let (d0, d1) = (MemorySpace::new_device(), MemorySpace::new_device());
        let p = problem(TriRoutine::Trsm, Side::Left, Uplo::Lower, Trans::N);
        let plan = plan_for(p, &[spec(d0, 2), spec(d1, 2)], None);
        let (nt, np) = (plan.nt, plan.np);
        assert_eq!((nt, np), (5, 4));
        let s = plan.stats();
        // Both devices solve against the whole lower triangle: nt (nt + 1) / 2 tiles.
        assert_eq!(s.a_fetches, vec![15, 15]);
        assert_eq!(s.b_fetches, vec![2 * nt, 2 * nt]);
        assert_eq!(s.writebacks, vec![2 * nt, 2 * nt]);
        assert_eq!(s.diags, vec![2 * nt, 2 * nt]);
        assert_eq!(s.updates, vec![nt * (nt - 1), nt * (nt - 1)]);
        let mut fetched = HashSet::new();
        for t in &plan.tasks {
            if let TriTaskKind::Fetch { key, .. } = t.kind {
                assert!(fetched.insert((t.device, key)), "{key:?} fetched twice");
            }
        }
    }

    /// Look-ahead: with two compute queues, after the first step each diagonal solve runs on
    /// queue 1 together with the update of its block by the previous step, and the rest of
    /// the trailing update on queue 0 waits for that solve.
    #[test]
    fn lookahead_puts_the_next_panel_on_its_own_queue() {
        let d0 = MemorySpace::new_device();
        let p = problem(TriRoutine::Trsm, Side::Left, Uplo::Lower, Trans::N);
        let plan = plan_for(p, &[spec(d0, 2)], None);
        let q = |i| QueueId::Compute {
            device: 0,
            index: i,
        };
        for (id, t) in plan.tasks.iter().enumerate() {
            match t.kind {
                TriTaskKind::Diag { k, .. } => {
                    assert_eq!(t.queue, q(if k == 0 { 0 } else { 1 }), "diag {k}");
                    // Diagonal solves with dependents on queue 0 signal them.
                    if k + 1 < plan.nt as u32 {
                        assert!(t.signal, "diag {k} (task {id}) signals nobody");
                    }
                }
                TriTaskKind::Update { i, k, .. } => {
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
        let devs = [spec(d0, 1)];
        let req = |assignment: &[Vec<usize>], budget: u64| {
            let devs = [TriDeviceSpec {
                budget,
                ..devs[0].clone()
            }];
            build_tri(&TriPlanRequest {
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
