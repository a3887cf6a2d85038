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
use std::collections::HashMap;

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
