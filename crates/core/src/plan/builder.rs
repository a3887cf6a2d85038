//! The GEMM planner: problem + tile grid + C-tile assignment -> a DAG of fetches, tile products
//! and write-backs per device. It simulates each device's tile cache (Belady eviction: it knows
//! every future use) while it builds the DAG, so the plan says which slot every tile lives in.
//!
//! Invariants (tested): each A/B tile is fetched at most once per device unless the cache is too
//! small to keep it until its next use; each C tile is accumulated over all of K on one device and
//! written back once; with beta == 0, C is never fetched or read. Also planned here: late C
//! (products start at beta = 0 and the caller's C is added at the end), peer forwarding and
//! routes through host staging (`route`).

use super::graph::Graph;
use super::region::CRegion;
use super::symmetric;
use super::task::{DeviceSpec, Loc, Op, Plan, PlanDevice, QueueId, Routine, TaskId};
use crate::error::{Error, Result};
use crate::memory::MemorySpace;
use crate::plan::task::Coef;
use crate::problem::{GemmProblem, Operand};
use crate::tiling::TileKey;
use std::collections::{HashMap, HashSet, VecDeque};

/// Where a product finds one of its tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TileLoc {
    /// In the operand itself: the operand lives in the device's own space.
    InPlace,
    /// In a cache slot of the device.
    Slot(u32),
}

/// Input to the planner ([`crate::plan::build`]).
pub struct PlanRequest<'a> {
    pub problem: GemmProblem,
    pub grid: crate::tiling::TileGrid,
    pub devices: &'a [DeviceSpec],
    /// Per device, its C tiles in execution order. Every tile exactly once over all devices.
    pub assignment: &'a [Vec<(usize, usize)>],
    /// Directed links that exist (src space, dst space).
    pub links: &'a HashSet<(MemorySpace, MemorySpace)>,
    /// Bandwidth (bytes/s) of each link, when known: with it, a tile another device already
    /// holds is forwarded over a faster peer link instead of fetched from its origin again.
    /// `None`: never forward.
    pub link_speed: Option<&'a dyn Fn(MemorySpace, MemorySpace) -> Option<f64>>,
    /// The part of C computed ([`CRegion`]); the assignment holds its tiles alone.
    pub region: CRegion,
    /// Pieces of every split late-C chain instead of one per 16 MiB of C
    /// ([`crate::DevicePool::set_tail_pieces`]: tests split small tiles); `None`: by size.
    pub tail_pieces: Option<usize>,
}

/// One gemm step of a device's program.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Step {
    pub(crate) i: usize,
    pub(crate) j: usize,
    pub(crate) l: usize,
    /// Position in the tile's k loop.
    pub(crate) ll: usize,
    pub(crate) first: bool,
    pub(crate) last: bool,
}

pub(super) struct DeviceState {
    pub(super) dev: u16,
    pub(super) space: MemorySpace,
    pub(super) steps: Vec<Step>,
    pub(super) next: usize,
    pub(super) resident: HashMap<TileKey, u32>,
    pub(super) owner: Vec<Option<TileKey>>,
    /// Future step indices at which each A/B tile is used (Belady).
    pub(super) uses: HashMap<TileKey, VecDeque<usize>>,
    /// Slots never used yet (taken first), and slots released by a write-back, oldest first.
    pub(super) fresh: Vec<u32>,
    pub(super) released: VecDeque<u32>,
    /// C tiles being accumulated: (slot or in place, compute queue).
    pub(super) acc: HashMap<(usize, usize), (TileLoc, u16)>,
    /// Late C: the slot of the caller's C tile, fetched during the last k steps, and its fetch.
    pub(super) late: HashMap<(usize, usize), (u32, TaskId)>,
    /// C arrives late on this device: its kernel adds tiles, beta != 0, C lives elsewhere and
    /// is not folded on the host.
    pub(super) late_c: bool,
    /// This device's C tiles are folded on the host (see [`DeviceSpec::host_fold`]), but for
    /// those in `unfolded`.
    pub(super) host_fold: bool,
    /// With `host_fold`: the C tiles not folded ([`fold_tail_tiles`]); their C is sent, late
    /// where the kernel adds tiles.
    pub(super) unfolded: HashSet<(usize, usize)>,
    /// Under late C, the last C tiles to finish, whose chain is issued in pieces
    /// ([`tail_pieces`]).
    pub(super) split: HashSet<(usize, usize)>,
    /// The kernel adds tiles (C can arrive late).
    pub(super) adds: bool,
    pub(super) region: CRegion,
    pub(super) kt: usize,
    pub(super) c_count: u16,
    pub(super) compute_queues: u16,
    /// Elements this device's plan fetches over its link from their origin so far.
    pub(super) fetched: usize,
}

impl DeviceState {
    pub(super) fn in_place(&self, p: &GemmProblem, op: Operand) -> bool {
        p.location(op) == self.space
    }

    /// C tile `(i, j)` is folded on the host: where the device folds, and a tile of which
    /// the region holds a part always.
    pub(super) fn folds(&self, i: usize, j: usize) -> bool {
        (self.host_fold && !self.unfolded.contains(&(i, j))) || self.in_part(i, j)
    }

    /// C tile `(i, j)` is one of which the region holds a part.
    pub(super) fn in_part(&self, i: usize, j: usize) -> bool {
        !self.region.mask(i, j).is_whole()
    }

    /// C tile `(i, j)`'s caller C arrives late: everywhere under `late_c`, and on the tiles a
    /// folding device leaves unfolded when its kernel adds tiles.
    pub(super) fn late_for(&self, i: usize, j: usize) -> bool {
        !self.in_part(i, j)
            && (self.late_c || (self.adds && self.host_fold && self.unfolded.contains(&(i, j))))
    }
}

/// Builds the plan.
///
/// # Errors
/// `OutOfMemory` when a device's budget holds fewer than the 3 slots one tile product needs;
/// `Unsupported` when no link reaches a device from an operand's location.
pub(super) fn build(req: &PlanRequest<'_>) -> Result<Plan> {
    let p = req.problem;
    let g = req.grid;
    let slot_bytes = g.slot_bytes(p.dtype.size());
    if req.assignment.len() != req.devices.len() {
        return Err(Error::internal(
            "assignment and device list differ in length",
        ));
    }
    let mut states = Vec::with_capacity(req.devices.len());
    let mut plan_devices = Vec::with_capacity(req.devices.len());
    for (d, (spec, tiles)) in req.devices.iter().zip(req.assignment).enumerate() {
        let (st, pd) = device_state(req, d, spec, tiles, slot_bytes)?;
        states.push(st);
        plan_devices.push(pd);
    }

    let mut b = Builder {
        p,
        graph: Graph::default(),
        holders: HashMap::new(),
        host_ring: host_ring_len(&states, slot_bytes),
        host_next: 0,
        host_used: false,
        host_folds: false,
        req,
    };
    b.all_steps(&mut states)?;

    let (ar, ac) = p.transa.stored_shape(p.m, p.k);
    let (br, bc) = p.transb.stored_shape(p.k, p.n);
    let [la, lb, lc] = Operand::ALL.map(|op| p.location(op));
    let routine = Routine::Gemm {
        problem: p,
        grid: g,
        region: req.region,
    };
    let operands = [(la, ar, ac), (lb, br, bc), (lc, p.m, p.n)];
    let graph = b.graph.finish(req.devices.len());
    let mut plan = Plan::new(routine, p.dtype, &operands, slot_bytes, plan_devices, graph);
    plan.host_slots = if b.host_used { b.host_ring as u32 } else { 0 };
    plan.host_folds = b.host_folds;
    Ok(plan)
}

/// Plan device `d`'s starting state: its program of steps, the future uses of each tile
/// (Belady), and its cache slots (as many as its tiles need, within its budget).
fn device_state(
    req: &PlanRequest<'_>,
    d: usize,
    spec: &DeviceSpec,
    tiles: &[(usize, usize)],
    slot_bytes: usize,
) -> Result<(DeviceState, PlanDevice)> {
    let p = req.problem;
    let kt = req.grid.kt();
    let c_in_place = p.location(Operand::C) == spec.space;
    let host_fold = spec.host_fold
        && !p.beta_zero
        && !c_in_place
        && p.location(Operand::C).is_host()
        && req.links.contains(&(spec.space, MemorySpace::HOST));
    let late_c = spec.late_c && !host_fold && !p.beta_zero && !c_in_place;
    let tail = if host_fold {
        spec.fold_tail.min(tiles.len())
    } else {
        0
    };
    // C tiles that take C late (all under late C, a fold tail's where the kernel adds tiles)
    // may hold two slots each: the accumulator and the caller's C.
    let late_tiles = if late_c {
        tiles.len()
    } else if spec.late_c {
        tail
    } else {
        0
    };
    let any_late = late_tiles > 0;
    let distinct = distinct_tiles(&p, spec.space, tiles, kt, req.region);
    check_routes(req, spec, &distinct, !tiles.is_empty())?;
    let objects = distinct.len() + late_tiles;
    let slots = (objects as u64).min(spec.budget / slot_bytes as u64) as u32;
    let min_needed = objects.min(if any_late { 4 } else { 3 }) as u32;
    // C tiles accumulated together; each holds a slot until written back.
    let most = spec.group.clamp(1, crate::tiling::DEFAULT_GROUP);
    let group = if c_in_place {
        most
    } else if any_late {
        ((slots as usize).saturating_sub(2) / 2).clamp(1, most)
    } else {
        (slots as usize).saturating_sub(2).clamp(1, most)
    };
    let steps = build_steps(tiles, kt, group);
    let unfolded = fold_tail_tiles(&steps, tail, group);
    // Under late C only (a fold tail's last write-backs queue behind its others: pieces gained
    // nothing). Not for symmetric routines: their fault recovery reruns a tile whole.
    let split = if late_c && p.sym.is_none() {
        tail_tiles(&steps, group)
    } else {
        HashSet::new()
    };
    let mut uses: HashMap<TileKey, VecDeque<usize>> = HashMap::new();
    for (s, step) in steps.iter().enumerate() {
        for key in operand_keys(&p, step.i, step.j, step.l) {
            if distinct.contains(&key) {
                uses.entry(key).or_default().push_back(s);
            }
        }
    }
    if slots < min_needed {
        return Err(Error::OutOfMemory {
            device: spec.label.clone(),
            detail: format!(
                "budget {} B holds {slots} tiles of {slot_bytes} B; one tile product needs {min_needed}",
                spec.budget
            ),
        });
    }
    let st = DeviceState {
        dev: d as u16,
        space: spec.space,
        steps,
        next: 0,
        resident: HashMap::new(),
        owner: vec![None; slots as usize],
        uses,
        fresh: (0..slots).rev().collect(),
        released: VecDeque::new(),
        acc: HashMap::new(),
        late: HashMap::new(),
        late_c,
        host_fold,
        unfolded,
        split,
        adds: spec.late_c,
        region: req.region,
        kt,
        c_count: 0,
        compute_queues: spec.compute_queues.max(1),
        fetched: 0,
    };
    Ok((st, PlanDevice::new(spec, slots, tiles.len())))
}

/// The `n` C tiles of a fold tail, whose C is sent rather than folded (the model picks them
/// the same way): the last to finish, so that no fold runs after the last products, but a
/// share ([`FOLD_SPREAD`]) spread over the tiles before, so that the folds and the sent C do
/// not each leave one half of the call idle.
pub(crate) fn fold_tail_tiles(steps: &[Step], n: usize, group: usize) -> HashSet<(usize, usize)> {
    let order: Vec<(usize, usize)> = finish_order(steps).collect();
    tail_positions(order.len(), n, group, FOLD_SPREAD)
        .into_iter()
        .map(|p| order[p])
        .collect()
}

/// Positions in finishing order (0 = first finished) of a fold tail of `n` among `count` C
/// tiles (see [`fold_tail_tiles`]): the share `spread` of them (0 to 1) one at the end of each
/// of as many equal stretches of the tiles between the first group and the rest; the rest,
/// and at least the last `group`, the last to finish. The first group is never sent: its C
/// would wait ahead of the first products (the model's first group fetches A and B alone).
pub(crate) fn tail_positions(count: usize, n: usize, group: usize, spread: f64) -> Vec<usize> {
    let n = n.min(count);
    let group = group.max(1);
    let want = ((spread.clamp(0.0, 1.0) * n as f64).round() as usize).min(n - n.min(group));
    // Room for `x` spread tiles between the first group and the kept ones: count - n + x -
    // group >= x, whatever x, when count >= n + group.
    let spread_out = if count >= n + group { want } else { 0 };
    let kept = n - spread_out;
    let mut at: Vec<usize> = (count - kept..count).collect();
    if spread_out > 0 {
        let stretch = count - kept - group;
        at.extend((0..spread_out).map(|x| group + (x + 1) * stretch / spread_out - 1));
    }
    at
}

/// The share of a fold tail spread over the earlier tiles ([`fold_tail_tiles`]): on H200,
/// 1.7% faster than 0 over seven folding calls; all but the last group lost up to 7%.
pub(crate) const FOLD_SPREAD: f64 = 0.5;

/// The tiles of a device's C tiles that need a slot there (those not already in its space),
/// whatever the order they are used in.
fn distinct_tiles(
    p: &GemmProblem,
    space: MemorySpace,
    tiles: &[(usize, usize)],
    kt: usize,
    region: CRegion,
) -> HashSet<TileKey> {
    let c_in_place = p.location(Operand::C) == space;
    let mut distinct: HashSet<TileKey> = HashSet::new();
    for &(i, j) in tiles {
        for l in 0..kt {
            for key in operand_keys(p, i, j, l) {
                if p.location(key.op) != space {
                    distinct.insert(key);
                }
            }
        }
        // A tile the region holds in part is computed in a slot even where C is in place.
        if !c_in_place || !region.mask(i, j).is_whole() {
            distinct.insert(TileKey::c(i, j));
        }
    }
    distinct
}

/// Every operand a device needs reaches it (directly or through host memory), and its C tiles
/// (if it has any) reach C's location back.
fn check_routes(
    req: &PlanRequest<'_>,
    spec: &DeviceSpec,
    distinct: &HashSet<TileKey>,
    has_tiles: bool,
) -> Result<()> {
    let p = req.problem;
    let reaches = |from: MemorySpace, to: MemorySpace| {
        req.links.contains(&(from, to))
            || (req.links.contains(&(from, MemorySpace::HOST))
                && req.links.contains(&(MemorySpace::HOST, to)))
    };
    for op in Operand::ALL {
        let loc = p.location(op);
        let needed = distinct.iter().any(|k| k.op == op);
        if needed && loc != spec.space && !reaches(loc, spec.space) {
            return Err(Error::Unsupported {
                device: spec.label.clone(),
                detail: format!("no link from {loc:?} (operand {op:?}) to {:?}", spec.space),
            });
        }
    }
    let c_loc = p.location(Operand::C);
    if c_loc != spec.space && has_tiles && !reaches(spec.space, c_loc) {
        return Err(Error::Unsupported {
            device: spec.label.clone(),
            detail: format!("no link back to C's location {c_loc:?}"),
        });
    }
    Ok(())
}

/// The cached tiles of A and B that product `(i, j, l)` reads (see [`symmetric`]).
fn operand_keys(p: &GemmProblem, i: usize, j: usize, l: usize) -> [TileKey; 2] {
    [symmetric::a_tile(p, i, l).0, symmetric::b_tile(p, l, j).0]
}

/// Host staging slots: 4 per device for routes between backends; with host folds, 8 per device
/// (C tiles finish in groups of four and each holds its slot until folded), within 4 GiB.
fn host_ring_len(states: &[DeviceState], slot_bytes: usize) -> usize {
    let n = states.len().max(1);
    if states.iter().any(|s| s.host_fold || !s.region.is_all()) {
        let cap = (4usize << 30) / slot_bytes.max(1);
        (8 * n).min(cap).max(2 * n)
    } else {
        4 * n
    }
}

/// The gemm steps of a device: its C tiles in groups of `group`; within a group, for each k
/// step, every tile of the group. K runs forward in even groups and backward in odd ones
/// (serpentine: the tiles used last by one group are used first by the next).
pub(crate) fn build_steps(tiles: &[(usize, usize)], kt: usize, group: usize) -> Vec<Step> {
    let group = group.max(1);
    let mut steps = Vec::with_capacity(tiles.len() * kt);
    for (g, chunk) in tiles.chunks(group).enumerate() {
        for ll in 0..kt {
            let l = if g % 2 == 0 { ll } else { kt - 1 - ll };
            for &(i, j) in chunk {
                steps.push(Step {
                    i,
                    j,
                    l,
                    ll,
                    first: ll == 0,
                    last: ll + 1 == kt,
                });
            }
        }
    }
    steps
}

/// Pieces for the chain of a late C tile at the end of a device's plan (its C fetch, add and
/// write-back, [`Task::pieces`]) whose stored C block is `bytes` over `cols` columns: `forced`
/// when given ([`PlanRequest::tail_pieces`]; 1 turns the split off), else one piece per
/// [`TAIL_PIECE_BYTES`], at most [`TAIL_PIECES_MAX`]. Why: each piece's write-back then
/// follows its own fetch and add instead of the whole tile's (on H200, 8192x8192x2048 DGEMM
/// in 4096 tiles: 16.48 TFLOP/s in 4 pieces against 15.34 whole).
pub(crate) fn tail_pieces(bytes: usize, cols: usize, forced: Option<usize>) -> usize {
    forced
        .unwrap_or(bytes / TAIL_PIECE_BYTES)
        .clamp(1, TAIL_PIECES_MAX)
        .min(cols.max(1))
}

/// Bytes of C per piece of a split tail chain ([`tail_pieces`]): below this a piece's three
/// operations cost more than they overlap.
const TAIL_PIECE_BYTES: usize = 16 << 20;
/// Most pieces of a split tail chain.
const TAIL_PIECES_MAX: usize = 8;

/// The C tiles whose chain may be split ([`tail_pieces`]): the last `group` tiles to finish.
pub(crate) fn tail_tiles(steps: &[Step], group: usize) -> HashSet<(usize, usize)> {
    finish_order(steps).rev().take(group.max(1)).collect()
}

/// The C tiles of `steps` in the order they finish (their last step).
fn finish_order(steps: &[Step]) -> impl DoubleEndedIterator<Item = (usize, usize)> + '_ {
    steps.iter().filter(|s| s.last).map(|s| (s.i, s.j))
}

pub(super) struct Builder<'a> {
    pub(super) p: GemmProblem,
    pub(super) graph: Graph,
    /// A/B tiles resident on some device: (device, slot).
    pub(super) holders: HashMap<TileKey, Vec<(u16, u32)>>,
    /// Host staging slots for two-hop routes and host folds, used round-robin.
    pub(super) host_ring: usize,
    pub(super) host_next: usize,
    pub(super) host_used: bool,
    pub(super) host_folds: bool,
    pub(super) req: &'a PlanRequest<'a>,
}

impl Builder<'_> {
    /// The operand block tile `key` is.
    pub(super) fn origin(&self, key: TileKey) -> Loc {
        Loc::Operand {
            op: key.op,
            block: self.req.grid.stored_block(&self.p, key),
        }
    }

    /// Tile `key` in slot `slot` of plan device `device`.
    pub(super) fn slot(&self, device: u16, slot: u32, key: TileKey) -> Loc {
        let b = self.req.grid.stored_block(&self.p, key);
        Loc::Slot {
            device,
            slot,
            rows: b.rows,
            cols: b.cols,
        }
    }

    /// Tile `key` in the next host staging slot (its earlier use's readers are waited for
    /// through the graph).
    pub(super) fn staging(&mut self, key: TileKey) -> Loc {
        let slot = self.host_next as u32;
        self.host_next = (self.host_next + 1) % self.host_ring.max(1);
        self.host_used = true;
        let b = self.req.grid.stored_block(&self.p, key);
        Loc::Staging {
            slot,
            rows: b.rows,
            cols: b.cols,
        }
    }

    /// Picks a slot for `key`: a free one, else the resident tile used furthest in the future
    /// (never one in `pinned`). What the slot held is waited for through the graph.
    pub(super) fn acquire(
        &mut self,
        st: &mut DeviceState,
        key: TileKey,
        pinned: &[TileKey],
    ) -> Result<u32> {
        // A slot nobody used yet costs no wait; else the slot released longest ago (its readers
        // are the most likely to be done by the time the refill runs); else evict.
        let free = st.fresh.pop().or_else(|| st.released.pop_front());
        let slot = match free.map(|s| s as usize) {
            Some(s) => s,
            None => {
                // The resident tile used furthest in the future (the first such slot).
                let next_use = |k: &TileKey| st.uses.get(k).and_then(|q| q.front().copied());
                let owners = st.owner.iter().enumerate().rev();
                let (s, old) = owners
                    .filter_map(|(s, o)| o.map(|k| (s, k)))
                    .filter(|(_, k)| !pinned.contains(k) && k.op != Operand::C)
                    .max_by_key(|(_, k)| next_use(k).unwrap_or(usize::MAX))
                    .ok_or_else(|| {
                        Error::internal(format!(
                            "no evictable slot on plan device {} ({} slots)",
                            st.dev,
                            st.owner.len()
                        ))
                    })?;
                st.resident.remove(&old);
                if let Some(h) = self.holders.get_mut(&old) {
                    h.retain(|&(dev, _)| dev != st.dev);
                }
                s
            }
        };
        st.owner[slot] = Some(key);
        if key.op != Operand::C {
            st.resident.insert(key, slot as u32);
        }
        Ok(slot as u32)
    }

    /// Every device's steps, interleaved step by step so task ids follow a plausible global
    /// timeline (peer forwarding's dependencies then point backwards). In each round the device
    /// that has fetched least from its tiles' origins goes first (ties rotate), so a tile
    /// several devices need comes over the least loaded link and the others take it from a peer.
    fn all_steps(&mut self, states: &mut [DeviceState]) -> Result<()> {
        let n = states.len();
        let mut round = 0usize;
        loop {
            let mut progressed = false;
            let mut order: Vec<usize> = (0..n).map(|r| (round + r) % n).collect();
            order.sort_by_key(|&d| states[d].fetched);
            for d in order {
                if states[d].next < states[d].steps.len() {
                    self.step(states, d)?;
                    progressed = true;
                }
            }
            round += 1;
            if !progressed {
                return Ok(());
            }
        }
    }

    /// Device `d`'s next step: its C tile (fetched, zeroed or accumulated), its A and B tiles,
    /// the product, and when the step is the tile's last, its late C and its write-back.
    fn step(&mut self, states: &mut [DeviceState], d: usize) -> Result<()> {
        let st = &mut states[d];
        let s = st.next;
        st.next += 1;
        let step = st.steps[s];
        let [ka, kb] = operand_keys(&self.p, step.i, step.j, step.l);
        let kc = TileKey::c(step.i, step.j);
        // A rank update's diagonal C tile travels whole (see `symmetric::triangle_tile`).
        let whole = symmetric::triangle_tile(&self.p, step.i, step.j);
        for key in [ka, kb] {
            if let Some(q) = st.uses.get_mut(&key) {
                while q.front().is_some_and(|&u| u <= s) {
                    q.pop_front();
                }
            }
        }
        let (c_loc, c_queue, beta) = self.c_tile(st, &step, [ka, kb, kc], whole)?;
        let a_loc = self.ensure(states, d, ka, &[kb, kc])?;
        let b_loc = self.ensure(states, d, kb, &[ka, kc])?;
        let st = &mut states[d];
        let queue = QueueId::Compute {
            device: st.dev,
            index: c_queue,
        };
        let op = self.product(st, &step, [a_loc, b_loc, c_loc], beta);
        let gemm = self.graph.add(st.dev, queue, op);
        // A product on C in place is C's last write when it is the tile's last.
        if step.last && c_loc == TileLoc::InPlace {
            self.graph.task_mut(gemm).finishes = true;
        }
        st.acc.insert((step.i, step.j), (c_loc, c_queue));
        // Late C crosses during the tile's second-last k step, so that it is there for the
        // last; a fold tail's C at the last step, behind that step's A and B tiles (sent
        // earlier, it held back the last products' tiles on the busy link).
        let lead = if st.late_c { 2 } else { 1 };
        if st.late_for(step.i, step.j)
            && !whole
            && step.ll + lead >= st.kt
            && !st.late.contains_key(&(step.i, step.j))
        {
            let slot = self.acquire(st, kc, &[ka, kb])?;
            let f = self.fetch(st, kc, slot);
            st.late.insert((step.i, step.j), (slot, f));
        }
        if step.last {
            self.finish_c(st, &step, c_loc, queue, whole);
        }
        Ok(())
    }

    /// Product `(i, j, l)` of the step: a GEMM of the stored tiles it reads (transposed as
    /// [`symmetric`] says), or the routine's own tile on a symmetric plan's diagonal.
    fn product(&self, st: &DeviceState, step: &Step, locs: [TileLoc; 3], beta: Coef) -> Op {
        let p = &self.p;
        let (i, j, l) = (step.i, step.j, step.l);
        let (ka, ta) = symmetric::a_tile(p, i, l);
        let (kb, tb) = symmetric::b_tile(p, l, j);
        let key = TileKey::c(i, j);
        let at = |loc, key| match loc {
            TileLoc::InPlace => self.origin(key),
            TileLoc::Slot(s) => self.slot(st.dev, s, key),
        };
        let (a, b, c) = (at(locs[0], ka), at(locs[1], kb), at(locs[2], key));
        match p.sym {
            Some(s) if symmetric::routine_product(p, i, j, l) => {
                // SYMM/HEMM on the right multiplies the other operand by the symmetric one.
                let (a, b) = match s.op {
                    crate::sym::SymOp::Multiply {
                        side: crate::sym::Side::Right,
                        ..
                    } => (b, a),
                    _ => (a, b),
                };
                Op::Sym {
                    key,
                    l: l as u32,
                    op: s.op,
                    k: self.req.grid.k_span(l).1,
                    alpha: Coef::Alpha,
                    beta,
                    a,
                    b,
                    c,
                }
            }
            _ => Op::Gemm {
                key,
                l: l as u32,
                transa: ta.for_dtype(p.dtype),
                transb: tb.for_dtype(p.dtype),
                alpha: Coef::Alpha,
                beta,
                a,
                b,
                c,
            },
        }
    }

    /// Where the step's C tile accumulates, on which compute queue, and the beta its product
    /// applies. A tile's first step takes a slot (fetching the caller's C unless beta == 0, C
    /// arrives late or is folded on the host); later steps accumulate.
    fn c_tile(
        &mut self,
        st: &mut DeviceState,
        step: &Step,
        [ka, kb, kc]: [TileKey; 3],
        whole: bool,
    ) -> Result<(TileLoc, u16, Coef)> {
        if !step.first {
            let (loc, q) = *st
                .acc
                .get(&(step.i, step.j))
                .ok_or_else(|| Error::internal("accumulation step without a C tile"))?;
            return Ok((loc, q, Coef::One));
        }
        let (loc, beta) = if st.in_place(&self.p, Operand::C) && !st.in_part(step.i, step.j) {
            (TileLoc::InPlace, Coef::Beta)
        } else {
            let slot = self.acquire(st, kc, &[ka, kb])?;
            if !whole
                && (self.p.beta_zero || st.late_for(step.i, step.j) || st.folds(step.i, step.j))
            {
                // C is not read now.
                (TileLoc::Slot(slot), Coef::Zero)
            } else {
                self.fetch(st, kc, slot);
                (TileLoc::Slot(slot), Coef::Beta)
            }
        };
        st.c_count += 1;
        Ok((loc, (st.c_count - 1) % st.compute_queues, beta))
    }

    /// Issues a late C tile's fetch, add and write-back in column pieces ([`tail_pieces`]),
    /// when the chain is the plain one (an add of C fetched from its origin, written back
    /// over a link); `add` is the tile's last task before its write-back `wb`.
    fn split_chain(&mut self, kc: TileKey, fetch: TaskId, add: TaskId, wb: TaskId) {
        let tasks = self.graph.tasks();
        let plain_fetch = matches!(tasks[fetch as usize].op,
            Op::Copy { key, src: Loc::Operand { .. }, dst: Loc::Slot { .. }, .. } if key == kc);
        let plain_wb = matches!(
            tasks[wb as usize].op,
            Op::Copy {
                src: Loc::Slot { .. },
                dst: Loc::Operand { .. },
                ..
            }
        );
        if !plain_fetch || !plain_wb || !matches!(tasks[add as usize].op, Op::Add { .. }) {
            return;
        }
        let b = self.req.grid.stored_block(&self.p, kc);
        let bytes = b.rows * b.cols * self.p.dtype.size();
        let pieces = tail_pieces(bytes, b.cols, self.req.tail_pieces) as u16;
        for t in [fetch, add, wb] {
            self.graph.task_mut(t).pieces = pieces;
        }
    }

    /// After a C tile's last product: the caller's C added (late C), then the tile written
    /// back (or folded on the host) and its slot released.
    fn finish_c(
        &mut self,
        st: &mut DeviceState,
        step: &Step,
        c_loc: TileLoc,
        queue: QueueId,
        whole: bool,
    ) {
        let kc = TileKey::c(step.i, step.j);
        let mut added = None;
        if let (Some((orig, f)), TileLoc::Slot(acc)) = (st.late.remove(&(step.i, step.j)), c_loc) {
            let add = self.graph.add(
                st.dev,
                queue,
                Op::Add {
                    key: kc,
                    beta: Coef::Beta,
                    x: self.slot(st.dev, orig, kc),
                    y: self.slot(st.dev, acc, kc),
                },
            );
            st.owner[orig as usize] = None;
            st.released.push_back(orig);
            added = Some((f, add));
        }
        st.acc.remove(&(step.i, step.j));
        if let TileLoc::Slot(slot) = c_loc {
            let wb = self.write_back(st, kc, slot, whole);
            if let (Some((f, add)), true) = (added, st.split.contains(&(step.i, step.j))) {
                self.split_chain(kc, f, add, wb);
            }
            st.owner[slot as usize] = None;
            st.released.push_back(slot);
            st.resident.remove(&kc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::symmetric;
    use super::*;

    /// The request of a plan over all of C, with no forwarding and late-C chains split by
    /// size.
    fn request<'a>(
        problem: GemmProblem,
        grid: crate::tiling::TileGrid,
        devices: &'a [DeviceSpec],
        assignment: &'a [Vec<(usize, usize)>],
        links: &'a HashSet<(MemorySpace, MemorySpace)>,
    ) -> PlanRequest<'a> {
        PlanRequest {
            problem,
            grid,
            devices,
            assignment,
            links,
            link_speed: None,
            region: CRegion::All,
            tail_pieces: None,
        }
    }

    /// A task as the tests below look at it: what its operation is in GEMM's terms.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Kind {
        /// A copy into a device slot (`peer`: from another device's slot).
        Fetch {
            key: TileKey,
            peer: bool,
        },
        WriteBack {
            key: TileKey,
        },
        Gemm {
            i: u32,
            j: u32,
            beta: Coef,
        },
        AddC {
            i: u32,
            j: u32,
        },
        FoldC {
            key: TileKey,
            host: u32,
        },
        StageOut {
            key: TileKey,
            host: u32,
        },
        Other,
    }

    fn kind(t: &crate::plan::Task) -> Kind {
        match t.op {
            Op::Copy {
                key,
                src,
                dst: Loc::Slot { .. },
                ..
            } => Kind::Fetch {
                key,
                peer: matches!(src, Loc::Slot { .. }),
            },
            Op::Copy {
                key,
                src: Loc::Slot { .. },
                dst: Loc::Operand { .. },
                ..
            } => Kind::WriteBack { key },
            Op::Copy {
                key,
                src: Loc::Slot { .. },
                dst: Loc::Staging { slot, .. },
                ..
            } => Kind::StageOut { key, host: slot },
            Op::Gemm { key, beta, .. } | Op::Sym { key, beta, .. } => Kind::Gemm {
                i: key.r,
                j: key.c,
                beta,
            },
            Op::Add { key, .. } => Kind::AddC { i: key.r, j: key.c },
            Op::Fold {
                key,
                staged: Loc::Staging { slot, .. },
                ..
            } => Kind::FoldC { key, host: slot },
            _ => Kind::Other,
        }
    }
    use crate::distribute::block_cyclic;
    use crate::operand::Trans;
    use crate::scalar::DType;
    use crate::tiling::TileGrid;

    fn problem(
        m: usize,
        n: usize,
        k: usize,
        beta_zero: bool,
        locs: [MemorySpace; 3],
    ) -> GemmProblem {
        GemmProblem {
            transa: Trans::N,
            transb: Trans::T,
            m,
            n,
            k,
            dtype: DType::F64,
            beta_zero,
            locations: locs,
            sym: None,
        }
    }

    fn all_links(spaces: &[MemorySpace]) -> HashSet<(MemorySpace, MemorySpace)> {
        let mut l = HashSet::new();
        for &a in spaces {
            for &b in spaces {
                if a != b {
                    l.insert((a, b));
                }
            }
        }
        l
    }

    /// Emulated devices in `spaces` that add tiles (C may arrive late), in groups of the
    /// default size.
    fn specs(
        spaces: &[MemorySpace],
        budget: u64,
        compute_queues: u16,
        host_fold: bool,
        fold_tail: usize,
    ) -> Vec<DeviceSpec> {
        spaces
            .iter()
            .enumerate()
            .map(|(i, &s)| DeviceSpec {
                label: format!("emulated:{i}"),
                space: s,
                budget,
                compute_queues,
                late_c: true,
                host_fold,
                fold_tail,
                group: crate::tiling::DEFAULT_GROUP,
            })
            .collect()
    }

    /// The plan of `p` on devices in `spaces` (and the host, every link between them), C
    /// tiles dealt block-cyclically.
    fn build_cyclic(
        spaces: &[MemorySpace],
        p: GemmProblem,
        g: TileGrid,
        devs: &[DeviceSpec],
        link_speed: Option<&dyn Fn(MemorySpace, MemorySpace) -> Option<f64>>,
    ) -> Result<Plan> {
        let mut all = spaces.to_vec();
        all.push(MemorySpace::HOST);
        let assign = block_cyclic(g.mt(), g.nt(), spaces.len());
        build(&PlanRequest {
            link_speed,
            ..request(p, g, devs, &assign, &all_links(&all))
        })
    }

    fn plan_for(ndev: usize, budget: u64, beta_zero: bool) -> Plan {
        try_plan(ndev, budget, beta_zero).unwrap()
    }

    fn try_plan(ndev: usize, budget: u64, beta_zero: bool) -> Result<Plan> {
        try_plan_with(ndev, budget, beta_zero, false, 0)
    }

    fn try_plan_with(
        ndev: usize,
        budget: u64,
        beta_zero: bool,
        host_fold: bool,
        fold_tail: usize,
    ) -> Result<Plan> {
        let spaces: Vec<_> = (0..ndev).map(|_| MemorySpace::new_device()).collect();
        let mut all = spaces.clone();
        all.push(MemorySpace::HOST);
        let p = problem(10, 9, 11, beta_zero, [MemorySpace::HOST; 3]);
        let g = TileGrid::square(10, 9, 11, 3);
        let devs = specs(&spaces, budget, 2, host_fold, fold_tail);
        let assign = block_cyclic(g.mt(), g.nt(), ndev);
        build(&request(p, g, &devs, &assign, &all_links(&all)))
    }

    /// Every tile runs each k step once, `first` and `last` mark its first and last step in
    /// the order, and `ll` counts its steps.
    #[test]
    fn steps_cover_every_tile_once_per_k_step() {
        let tiles: Vec<(usize, usize)> = (0..3).flat_map(|i| (0..5).map(move |j| (i, j))).collect();
        for (kt, group) in [(1, 4), (3, 4), (2, 2), (4, 1)] {
            let steps = build_steps(&tiles, kt, group);
            assert_eq!(steps.len(), tiles.len() * kt);
            for &(i, j) in &tiles {
                let mine: Vec<&Step> = steps.iter().filter(|s| (s.i, s.j) == (i, j)).collect();
                let mut ls: Vec<usize> = mine.iter().map(|s| s.l).collect();
                ls.sort_unstable();
                assert_eq!(ls, (0..kt).collect::<Vec<_>>(), "{kt} {group}");
                for (x, s) in mine.iter().enumerate() {
                    assert_eq!((s.ll, s.first, s.last), (x, x == 0, x + 1 == kt));
                }
            }
            if kt > 1 && tiles.len() > group {
                // Serpentine: the second group starts at the last k step.
                assert_eq!(steps[group * kt].l, kt - 1);
            }
        }
    }

    /// Two equal devices sharing tiles over a fast peer link take from the host link equal
    /// loads. Before the steps of a round were ordered by what each device had fetched, the
    /// device going first by rotation fetched 28 of the 48 tiles of 16384^3 DGEMM in 4096
    /// tiles on two H200s (3.76 GB against 2.68), and its products waited on its link.
    #[test]
    fn equal_devices_fetch_equal_shares_from_the_host() {
        let spaces = [MemorySpace::new_device(), MemorySpace::new_device()];
        let speed = |s: MemorySpace, d: MemorySpace| -> Option<f64> {
            Some(if s.is_host() || d.is_host() {
                55e9
            } else {
                375e9
            })
        };
        let p = problem(16, 16, 16, false, [MemorySpace::HOST; 3]);
        let g = TileGrid::square(16, 16, 16, 4);
        let devs = specs(&spaces, u64::MAX, 1, false, 0);
        let plan = build_cyclic(&spaces, p, g, &devs, Some(&speed)).unwrap();
        let mut origin = [0usize; 2];
        let mut peer = [0usize; 2];
        for t in &plan.tasks {
            if let Kind::Fetch {
                peer: from_peer, ..
            } = kind(t)
            {
                if from_peer {
                    peer[t.device as usize] += 1;
                } else {
                    origin[t.device as usize] += 1;
                }
            }
        }
        assert_eq!(
            origin[0] + origin[1],
            16 + 32,
            "each C tile and A/B tile from the host once"
        );
        assert!(
            origin[0].abs_diff(origin[1]) <= 2,
            "host fetches {origin:?}, peer {peer:?}"
        );
    }

    #[test]
    fn each_tile_fetched_once_with_room() {
        for ndev in 1..=3 {
            let plan = plan_for(ndev, u64::MAX, false);
            let mut seen = HashSet::new();
            let mut wb = HashSet::new();
            for t in &plan.tasks {
                match kind(t) {
                    Kind::Fetch { key, .. } => {
                        assert!(seen.insert((t.device, key)));
                        // With room for every tile no fetch waits for anything: transfers run
                        // as far ahead of compute as the link allows.
                        assert!(t.deps.is_empty(), "fetch {key:?} waits for {:?}", t.deps);
                    }
                    Kind::WriteBack { key, .. } => assert!(wb.insert(key)),
                    _ => {}
                }
                for &d in &t.deps {
                    assert!((d as usize) < plan.tasks.len());
                }
            }
            assert_eq!(wb.len(), 4 * 3);
            let s = plan.stats();
            assert_eq!(s.gemms, 4 * 3 * 4);
            assert_eq!(s.fetches[2], 12, "beta != 0 fetches each C tile once");
        }
    }

    #[test]
    fn late_c_lets_first_products_start_without_c() {
        let plan = plan_for(1, u64::MAX, false);
        let c_fetches: HashSet<TaskId> = plan
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| matches!(kind(t), Kind::Fetch { key, .. } if key.op == Operand::C))
            .map(|(i, _)| i as TaskId)
            .collect();
        let mut adds = 0;
        for t in &plan.tasks {
            match kind(t) {
                Kind::Gemm { beta, .. } => {
                    assert_ne!(beta, Coef::Beta, "late C: products start at beta = 0");
                    assert!(t.deps.iter().all(|d| !c_fetches.contains(d)));
                }
                Kind::AddC { .. } => {
                    adds += 1;
                    assert!(t.deps.iter().any(|d| c_fetches.contains(d)));
                }
                _ => {}
            }
        }
        assert_eq!(adds, 12, "one add per C tile");
    }

    #[test]
    fn a_fold_tail_keeps_its_last_group_and_spreads_the_rest() {
        // 32 tiles, 16 sent, groups of 4: spread 0 sends the last 16; 1 the last 4 and one at
        // the end of each of 12 stretches of tiles 4-27; 0.5 the last 8 and 8 over 4-23. The
        // first group (0-3) is never sent.
        assert_eq!(tail_positions(32, 16, 4, 0.0), (16..32).collect::<Vec<_>>());
        let all = tail_positions(32, 16, 4, 1.0);
        assert_eq!(&all[..4], &[28, 29, 30, 31]);
        assert_eq!(&all[4..], &[5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27]);
        let half = tail_positions(32, 16, 4, 0.5);
        assert_eq!(&half[..8], &(24..32).collect::<Vec<_>>()[..]);
        assert_eq!(&half[8..], &[5, 8, 10, 13, 15, 18, 20, 23]);
        // No room beside the first group: the last n.
        assert_eq!(tail_positions(10, 8, 4, 1.0), (2..10).collect::<Vec<_>>());
        // 7 * 0.5 rounds to 4 (3 kept), but at least the last group (4) is kept.
        assert_eq!(
            tail_positions(20, 7, 4, 0.5),
            vec![16, 17, 18, 19, 7, 11, 15]
        );
        for (count, n, group, spread) in [
            (5, 4, 4, 1.0),
            (7, 9, 4, 0.5),
            (1, 1, 4, 1.0),
            (40, 0, 4, 1.0),
            (5, 5, 1, 1.0),
            (12, 7, 0, 0.5),
            (9, 3, 1, 0.7),
        ] {
            let at = tail_positions(count, n, group, spread);
            let distinct: HashSet<usize> = at.iter().copied().collect();
            assert_eq!(distinct.len(), n.min(count), "{count} {n} {group} {spread}");
            assert!(at.iter().all(|&p| p < count));
            // The last group (or the whole tail, when smaller) is always sent; the first
            // group only when the tail leaves no room beside it.
            let g = group.max(1);
            assert!((count - n.min(count).min(g)..count).all(|p| distinct.contains(&p)));
            if count >= n + g {
                assert!(
                    at.iter().all(|&p| p >= g),
                    "{count} {n} {group} {spread}: {at:?}"
                );
            }
        }
    }

    /// The late C chains (C fetch, add, write-back) of the last group of tiles each device
    /// finishes go in pieces, one per 16 MiB of the tile; nothing else does, and nothing with
    /// beta = 0 (no C to fetch), with small tiles, or in a host fold's unfolded tail.
    #[test]
    fn the_last_groups_late_c_chains_go_in_pieces() {
        for (ndev, tile, beta_zero, host_fold, tail, want) in [
            (1, 2048, false, false, 0, 2),
            (2, 4096, false, false, 0, 8),
            (1, 2048, false, true, 3, 1),
            (1, 2048, true, false, 0, 1),
            (1, 1024, false, false, 0, 1),
        ] {
            let spaces: Vec<_> = (0..ndev).map(|_| MemorySpace::new_device()).collect();
            let p = problem(8192, 8192, 8192, beta_zero, [MemorySpace::HOST; 3]);
            let g = TileGrid::square(8192, 8192, 8192, tile);
            let devs = specs(&spaces, u64::MAX, 1, host_fold, tail);
            let plan = build_cyclic(&spaces, p, g, &devs, None).unwrap();
            let case = format!("{ndev} {tile} {beta_zero} {host_fold} {tail}");
            for d in 0..ndev as u16 {
                let mine = || plan.tasks.iter().filter(move |t| t.device == d);
                // The tiles in the order they finish (their last product).
                let mut finished: Vec<(u32, u32)> = Vec::new();
                for t in mine() {
                    if let Kind::Gemm { i, j, .. } = kind(t) {
                        finished.retain(|&x| x != (i, j));
                        finished.push((i, j));
                    }
                }
                let group = crate::tiling::DEFAULT_GROUP.min(finished.len());
                let last: HashSet<_> = finished[finished.len() - group..].iter().collect();
                let late = |i: u32, j: u32| {
                    mine().any(
                        |t| matches!(kind(t), Kind::AddC { i: a, j: b, .. } if (a, b) == (i, j)),
                    )
                };
                for t in mine() {
                    let tile = match kind(t) {
                        Kind::Fetch { key, .. } | Kind::WriteBack { key, .. }
                            if key.op == Operand::C =>
                        {
                            Some((key.r, key.c))
                        }
                        Kind::AddC { i, j, .. } => Some((i, j)),
                        _ => None,
                    };
                    let split = tile.is_some_and(|(i, j)| last.contains(&(i, j)) && late(i, j));
                    let expect = if split { want } else { 1 };
                    assert_eq!(t.pieces, expect, "{case}: {:?}", kind(t));
                }
                if want > 1 {
                    assert!(mine().any(|t| t.pieces > 1), "{case}: nothing split");
                }
            }
        }
    }

    #[test]
    fn a_fold_tail_sends_its_tiles_c_late_and_folds_the_rest() {
        for (ndev, tail) in [(1, 3), (2, 2), (1, 12), (3, 0), (1, 7)] {
            let plan = try_plan_with(ndev, u64::MAX, false, true, tail).unwrap();
            let per_device = |d: u16| plan.tasks.iter().filter(move |t| t.device == d);
            for d in 0..ndev as u16 {
                let tiles = plan.devices[d as usize].tiles;
                let sent = tail.min(tiles);
                // The order in which the device's C tiles finish (their last product).
                let mut finished = Vec::new();
                let (mut fetched, mut added, mut folded, mut written) = (
                    HashSet::new(),
                    HashSet::new(),
                    HashSet::new(),
                    HashSet::new(),
                );
                let mut last = HashMap::new();
                for t in per_device(d) {
                    match kind(t) {
                        Kind::Gemm { i, j, beta, .. } => {
                            assert_ne!(beta, Coef::Beta, "C is late or folded");
                            last.insert((i, j), finished.len());
                            finished.push((i, j));
                        }
                        Kind::Fetch { key, .. } if key.op == Operand::C => {
                            assert!(fetched.insert((key.r, key.c)));
                        }
                        Kind::AddC { i, j, .. } => assert!(added.insert((i, j))),
                        Kind::FoldC { key, .. } => assert!(folded.insert((key.r, key.c))),
                        Kind::WriteBack { key, .. } => assert!(written.insert((key.r, key.c))),
                        _ => {}
                    }
                }
                let mut order: Vec<_> = last.into_iter().collect();
                order.sort_by_key(|&(_, at)| at);
                let group = crate::tiling::DEFAULT_GROUP;
                let at = tail_positions(order.len(), sent, group, FOLD_SPREAD);
                let tail_tiles: HashSet<(u32, u32)> = at.iter().map(|&p| order[p].0).collect();
                assert_eq!(tail_tiles.len(), sent);
                assert_eq!(fetched, tail_tiles, "dev {d}: C sent for the tail only");
                assert_eq!(added, tail_tiles, "dev {d}: each sent C added once");
                assert_eq!(written, tail_tiles, "dev {d}: sent tiles go back whole");
                assert_eq!(folded.len(), tiles - sent, "dev {d}: the rest folded");
                assert!(folded.is_disjoint(&tail_tiles));
            }
            assert_eq!(plan.host_folds, tail < 12 || ndev > 1, "{ndev} {tail}");
        }
    }

    #[test]
    fn host_fold_never_sends_c_to_the_device() {
        for ndev in 1..=3 {
            let plan = try_plan_with(ndev, u64::MAX, false, true, 0).unwrap();
            let s = plan.stats();
            assert_eq!(s.fetches[2], 0, "C stays on the host");
            assert_eq!(s.writebacks, 12, "each product folded once");
            assert!(plan.host_slots >= 2 * ndev as u32);
            assert!(plan.host_folds);
            let mut folded = HashSet::new();
            for t in &plan.tasks {
                match kind(t) {
                    Kind::Gemm { beta, .. } => assert_ne!(beta, Coef::Beta),
                    Kind::AddC { .. } | Kind::WriteBack { .. } => {
                        panic!("no device-side C with host fold: {t:?}")
                    }
                    Kind::FoldC { key, host } => {
                        assert_eq!(t.queue, QueueId::HostFold);
                        assert!(folded.insert(key));
                        // It reads what its StageOut brought into the same slot.
                        let out = &plan.tasks[t.deps[0] as usize];
                        assert!(matches!(kind(out),
                            Kind::StageOut { key: k, host: h, .. } if k == key && h == host));
                    }
                    Kind::StageOut { host, .. } => {
                        // A reused staging slot waits for the fold that read it before.
                        for &d in &t.deps {
                            if let Kind::FoldC { host: h, .. } = kind(&plan.tasks[d as usize]) {
                                assert_eq!(h, host);
                            }
                        }
                    }
                    _ => {}
                }
            }
            assert_eq!(folded.len(), 12);
        }
        // beta == 0 needs no fold: plain write-backs.
        let plan = try_plan_with(1, u64::MAX, true, true, 0).unwrap();
        assert!(plan
            .tasks
            .iter()
            .all(|t| !matches!(kind(t), Kind::FoldC { .. })));
        assert_eq!(plan.host_slots, 0);
        assert!(!plan.host_folds);
    }

    #[test]
    fn beta_zero_never_fetches_c() {
        let plan = plan_for(2, u64::MAX, true);
        assert_eq!(plan.stats().fetches[2], 0);
        assert_eq!(plan.stats().writebacks, 12);
    }

    #[test]
    fn small_budget_still_plans_and_refetches() {
        let slot = 512; // 3x3 f64 tiles, one 512-byte-aligned slot each
        let plan = plan_for(1, 4 * slot, false);
        assert_eq!(plan.devices[0].slots, 4);
        let s = plan.stats();
        assert!(s.fetches[0] + s.fetches[1] > 16 + 12);
        // Every gemm depends on the fetches of its slots and slot reuse waits for readers.
        for t in &plan.tasks {
            for &d in &t.deps {
                assert!(d < plan.tasks.len() as u32);
            }
        }
        match try_plan(1, 2 * slot, false) {
            Err(Error::OutOfMemory { device, .. }) => assert_eq!(device, "emulated:0"),
            other => panic!("expected OutOfMemory, got {other:?}"),
        }
    }

    /// A symmetric plan on one device with late C and host folds allowed.
    fn sym_plan(op: crate::sym::SymOp, beta_zero: bool, transb: Trans) -> Plan {
        let space = MemorySpace::new_device();
        let mut p = problem(10, 10, 10, beta_zero, [MemorySpace::HOST; 3]);
        p.transb = transb;
        p.sym = Some(crate::sym::SymTiles { op, diagonal: true });
        let g = TileGrid::square(10, 10, 10, 3);
        let dev = DeviceSpec {
            label: "emulated:0".into(),
            space,
            budget: u64::MAX,
            compute_queues: 2,
            late_c: true,
            host_fold: true,
            fold_tail: 0,
            group: crate::tiling::DEFAULT_GROUP,
        };
        let assign = crate::distribute::weighted_where(g.mt(), g.nt(), &[1.0], &|i, j| {
            symmetric::has_c_tile(&p, i, j)
        });
        build(&request(
            p,
            g,
            &[dev],
            &assign,
            &all_links(&[space, MemorySpace::HOST]),
        ))
        .unwrap()
    }

    #[test]
    fn a_rank_update_plans_its_triangle_and_fetches_each_a_tile_once() {
        use crate::sym::{SymOp, Uplo};
        let op = SymOp::Rank {
            uplo: Uplo::Lower,
            trans: Trans::N,
            two: false,
            herm: false,
        };
        for beta_zero in [true, false] {
            let plan = sym_plan(op, beta_zero, Trans::T);
            let mut c_fetched = HashSet::new();
            let mut a_fetched = HashSet::new();
            for t in &plan.tasks {
                match kind(t) {
                    Kind::Gemm { i, j, beta, .. } => {
                        assert!(i >= j, "C({i},{j}) is above the diagonal");
                        if i == j {
                            assert_ne!(beta, Coef::Zero, "diagonal C({i},{i}) not fetched");
                        }
                    }
                    Kind::Fetch { key, .. } => {
                        assert_ne!(key.op, Operand::B, "B is A: its tiles are A's");
                        let fresh = if key.op == Operand::C {
                            c_fetched.insert((key.r, key.c))
                        } else {
                            a_fetched.insert((key.r, key.c))
                        };
                        assert!(fresh, "{key:?} fetched twice");
                    }
                    Kind::AddC { i, j, .. } => assert_ne!(i, j, "late C on the diagonal"),
                    Kind::FoldC { key, .. } => {
                        assert_ne!(key.r, key.c, "a diagonal tile folded whole on the host")
                    }
                    _ => {}
                }
            }
            // Diagonal tiles travel whole (beta 0 included); the others are folded on the host.
            let diagonal: HashSet<(u32, u32)> = (0..4).map(|i| (i, i)).collect();
            assert_eq!(c_fetched, diagonal, "beta_zero {beta_zero}");
            assert_eq!(a_fetched.len(), 4 * 4, "each A tile once");
            assert_eq!(plan.stats().writebacks, 10, "the triangle's 10 tiles");
        }
    }

    #[test]
    fn a_symmetric_operand_is_read_from_its_stored_triangle() {
        use crate::sym::{Side, SymOp, Uplo};
        for uplo in [Uplo::Lower, Uplo::Upper] {
            let op = SymOp::Multiply {
                side: Side::Left,
                uplo,
                herm: false,
            };
            let plan = sym_plan(op, false, Trans::N);
            let mut a_fetched = HashSet::new();
            for t in &plan.tasks {
                if let Kind::Fetch { key, .. } = kind(t) {
                    if key.op == Operand::A {
                        assert!(uplo.contains(key.r as usize, key.c as usize), "{key:?}");
                        assert!(a_fetched.insert((key.r, key.c)), "{key:?} fetched twice");
                    }
                }
            }
            assert_eq!(
                a_fetched.len(),
                10,
                "the stored triangle's tiles, once each"
            );
            assert_eq!(plan.stats().gemms, 4 * 4 * 4, "every C tile, all of K");
        }
    }

    /// The dependencies derived from the tasks' reads and writes order every access of every
    /// GEMM plan the builder makes: late C and its pieces, host folds, peer forwarding,
    /// routes through host staging between spaces with no link, small caches that refetch,
    /// C in a device's own memory, symmetric plans. Checked from the operations alone.
    #[test]
    fn dependencies_order_every_access_of_every_gemm_plan() {
        use crate::plan::graph::tests::{
            assert_check_catches_missing_dependencies, assert_dependencies_order_every_access,
        };
        let mut plans = Vec::new();
        for ndev in 1..=3 {
            for beta_zero in [false, true] {
                plans.push(plan_for(ndev, u64::MAX, beta_zero));
            }
            plans.push(try_plan_with(ndev, u64::MAX, false, true, 2).unwrap());
        }
        plans.push(plan_for(1, 4 * 512, false));
        // Two devices, peer forwarding over a fast link.
        let spaces = [MemorySpace::new_device(), MemorySpace::new_device()];
        let speed = |s: MemorySpace, d: MemorySpace| -> Option<f64> {
            Some(if s.is_host() || d.is_host() {
                55e9
            } else {
                375e9
            })
        };
        let p = problem(16, 16, 16, false, [MemorySpace::HOST; 3]);
        let g = TileGrid::square(16, 16, 16, 4);
        let devs = specs(&spaces, u64::MAX, 1, false, 0);
        plans.push(build_cyclic(&spaces, p, g, &devs, Some(&speed)).unwrap());
        // Two devices with no link between them, C in the first one's memory: the second's
        // tiles of C go through host staging.
        let mut links = all_links(&[spaces[0], MemorySpace::HOST]);
        links.extend(all_links(&[spaces[1], MemorySpace::HOST]));
        let p = problem(
            10,
            9,
            11,
            false,
            [MemorySpace::HOST, MemorySpace::HOST, spaces[0]],
        );
        let g = TileGrid::square(10, 9, 11, 3);
        plans.push(
            build(&request(
                p,
                g,
                &specs(&spaces, u64::MAX, 2, false, 0),
                &block_cyclic(g.mt(), g.nt(), 2),
                &links,
            ))
            .unwrap(),
        );
        // Late C chains in pieces (8192^3 in 4096 tiles on two devices).
        let p = problem(8192, 8192, 8192, false, [MemorySpace::HOST; 3]);
        let g = TileGrid::square(8192, 8192, 8192, 4096);
        let devs = specs(&spaces, u64::MAX, 1, false, 0);
        let split = build_cyclic(&spaces, p, g, &devs, None).unwrap();
        assert!(split.tasks.iter().any(|t| t.pieces > 1));
        plans.push(split);
        use crate::sym::{Side, SymOp, Uplo};
        let rank = SymOp::Rank {
            uplo: Uplo::Lower,
            trans: Trans::N,
            two: false,
            herm: false,
        };
        plans.push(sym_plan(rank, false, Trans::T));
        let multiply = SymOp::Multiply {
            side: Side::Right,
            uplo: Uplo::Upper,
            herm: true,
        };
        plans.push(sym_plan(multiply, false, Trans::N));
        assert!(plans.iter().any(|p| p.tasks.iter().any(|t| matches!(
            t.op,
            Op::Copy {
                src: Loc::Staging { .. },
                ..
            }
        ))));
        for plan in &plans {
            assert_dependencies_order_every_access(plan);
        }
        assert_check_catches_missing_dependencies(&plans[0]);
    }
}
