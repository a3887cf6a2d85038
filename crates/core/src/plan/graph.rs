//! Building the task graph: a routine's planner adds tasks in an order that is valid on one
//! device (issue order), and the dependencies are derived here, once, from what each task reads
//! and writes ([`Op::effects`]): a read waits for the tile's last write, a write for its last
//! write and every read since. Tiles are a device's cache slot, a host staging slot, or a block
//! of an operand (or of a device's copy of one), so a tile updated on one device and read on
//! another is read only after the update, and a slot is refilled only after every read of what
//! it held. A plan whose ops take blocks of several sizes (a factorization's panels span many
//! tiles) names a granule: each block then stands for every `granule x granule` cell it covers.

use super::task::{Loc, Op, QueueId, Task, TaskId};
use crate::memory::MemorySpace;
use crate::problem::Operand;
use crate::tiling::TileKey;
use std::collections::HashMap;

/// A tile as the dependency analysis sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Tile {
    Slot(u16, u32),
    Staging(u32),
    /// An operand's block (or cell), by its first row and column, on the host or in its own
    /// device (`None`), or in a device's copy.
    Operand(Option<u16>, Operand, usize, usize),
}

/// The tiles `l` stands for: itself, or with a `granule`, every cell of an operand block.
fn tiles(l: &Loc, granule: Option<usize>) -> Vec<Tile> {
    let (copy, op, b) = match *l {
        Loc::Slot { device, slot, .. } => return vec![Tile::Slot(device, slot)],
        Loc::Staging { slot, .. } => return vec![Tile::Staging(slot)],
        Loc::Operand { op, block } => (None, op, block),
        Loc::Mirror { device, op, block } => (Some(device), op, block),
    };
    match granule {
        Some(g) if b.rows > 0 && b.cols > 0 => {
            let g = g.max(1);
            let rows = b.row / g..=(b.row + b.rows - 1) / g;
            let cols = b.col / g..=(b.col + b.cols - 1) / g;
            cols.flat_map(|c| rows.clone().map(move |r| Tile::Operand(copy, op, r, c)))
                .collect()
        }
        _ => vec![Tile::Operand(copy, op, b.row, b.col)],
    }
}

#[derive(Default)]
struct History {
    writer: Option<TaskId>,
    readers: Vec<TaskId>,
}

/// A graph under construction.
#[derive(Default)]
pub struct Graph {
    tasks: Vec<Task>,
    history: HashMap<Tile, History>,
    granule: Option<usize>,
}

impl Graph {
    /// A graph whose operand blocks are unions of `granule x granule` cells (see the module
    /// documentation).
    pub fn with_granule(granule: usize) -> Graph {
        Graph {
            granule: Some(granule.max(1)),
            ..Graph::default()
        }
    }

    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// Adds a task on `device`'s `queue`; its dependencies follow from `op`'s effects.
    pub fn add(&mut self, device: u16, queue: QueueId, op: Op) -> TaskId {
        let id = self.tasks.len() as TaskId;
        let g = self.granule;
        let (reads, write) = op.effects();
        let reads: Vec<Tile> = reads.iter().flat_map(|r| tiles(r, g)).collect();
        let mut writes = tiles(&write, g);
        if let Some(w) = op.also_written() {
            writes.extend(tiles(&w, g));
        }
        let mut deps: Vec<TaskId> = reads
            .iter()
            .filter_map(|r| self.history.get(r).and_then(|h| h.writer))
            .collect();
        for w in &writes {
            if let Some(h) = self.history.get(w) {
                deps.extend(h.writer);
                deps.extend(h.readers.iter().copied());
            }
        }
        deps.sort_unstable();
        deps.dedup();
        // A dependency that another dependency already waits for adds nothing but an event
        // wait (and would make a task split in pieces wait for another chain whole).
        let all = deps.clone();
        let waits = |e: TaskId, d| self.tasks[e as usize].deps.binary_search(&d).is_ok();
        deps.retain(|&d| !all.iter().any(|&e| e != d && waits(e, d)));
        // A dependency on another queue, or on another device's issuing thread, needs an event.
        for &d in &deps {
            let t = &mut self.tasks[d as usize];
            t.signal |= t.queue != queue || t.device != device;
        }
        for r in &reads {
            self.history.entry(*r).or_default().readers.push(id);
        }
        for w in writes {
            let h = self.history.entry(w).or_default();
            h.writer = Some(id);
            h.readers.clear();
        }
        self.tasks.push(Task {
            device,
            queue,
            op,
            deps,
            signal: false,
            pieces: 1,
            finishes: false,
        });
        id
    }

    /// A copy of tile `key` from `src` to `dst` on the link `from -> to`;
    /// `origin` as [`Op::Copy`]'s.
    pub fn copy(
        &mut self,
        device: u16,
        (from, to): (MemorySpace, MemorySpace),
        key: TileKey,
        src: Loc,
        dst: Loc,
        origin: Option<Loc>,
    ) -> TaskId {
        let queue = QueueId::Link { src: from, dst: to };
        let op = Op::Copy {
            key,
            src,
            dst,
            origin,
        };
        self.add(device, queue, op)
    }

    /// The task `id`, to set its pieces or mark it as finishing its tile.
    pub fn task_mut(&mut self, id: TaskId) -> &mut Task {
        &mut self.tasks[id as usize]
    }

    /// The tasks, and each of `devices` devices' task ids in issue order.
    pub fn finish(self, devices: usize) -> (Vec<Task>, Vec<Vec<TaskId>>) {
        let mut order = vec![Vec::new(); devices];
        for (id, t) in self.tasks.iter().enumerate() {
            order[t.device as usize].push(id as TaskId);
        }
        (self.tasks, order)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::plan::Plan;
    use rand::seq::SliceRandom;
    use rand::SeedableRng;

    /// Per task, the version of every tile it reads, when the tasks run in `order`; and the
    /// final version of every tile. A version is the id of the task that wrote it (+1), 0 for
    /// the caller's data.
    type Seen = (Vec<Vec<u64>>, HashMap<Tile, u64>);
    fn replay(plan: &Plan, order: &[usize], granule: Option<usize>) -> Seen {
        let mut ver: HashMap<Tile, u64> = HashMap::new();
        let mut seen = vec![Vec::new(); plan.tasks.len()];
        for &id in order {
            let op = &plan.tasks[id].op;
            let (reads, write) = op.effects();
            seen[id] = reads
                .iter()
                .flat_map(|r| tiles(r, granule))
                .map(|r| *ver.get(&r).unwrap_or(&0))
                .collect();
            for w in std::iter::once(write).chain(op.also_written()) {
                for t in tiles(&w, granule) {
                    ver.insert(t, id as u64 + 1);
                }
            }
        }
        (seen, ver)
    }

    /// A random order of the tasks that respects only the declared dependencies.
    fn random_topological(plan: &Plan, seed: u64) -> Vec<usize> {
        let n = plan.tasks.len();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut indeg: Vec<usize> = plan.tasks.iter().map(|t| t.deps.len()).collect();
        let mut succ = vec![Vec::new(); n];
        for (i, t) in plan.tasks.iter().enumerate() {
            for &d in &t.deps {
                assert!((d as usize) < i, "a dependency with a larger id");
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

    /// Whatever order the executor runs `plan`'s tasks in, as long as it honours the declared
    /// dependencies (and each queue's order, which the tasks' ids follow), every read sees the
    /// version issue order gives it and every tile ends the same. Checked from the operations
    /// alone, independently of how the planner built the graph.
    pub(crate) fn assert_dependencies_order_every_access(plan: &Plan) {
        let granule = match plan.routine {
            crate::plan::Routine::Factor { nb, .. } => Some(nb),
            _ => None,
        };
        let mut with_queues = plan.clone();
        let mut last: HashMap<(u16, QueueId), TaskId> = HashMap::new();
        for (id, t) in with_queues.tasks.iter_mut().enumerate() {
            if let Some(prev) = last.insert((t.device, t.queue), id as TaskId) {
                t.deps.push(prev);
            }
        }
        let issue: Vec<usize> = (0..plan.tasks.len()).collect();
        let want = replay(plan, &issue, granule);
        for seed in 0..4 {
            let got = replay(plan, &random_topological(&with_queues, seed), granule);
            assert_eq!(got.0, want.0, "a read sees another version (seed {seed})");
            assert_eq!(got.1, want.1, "a tile ends otherwise (seed {seed})");
        }
    }

    /// The check above fails on a plan whose dependencies are dropped: it can tell a graph
    /// that orders nothing.
    pub(crate) fn assert_check_catches_missing_dependencies(plan: &Plan) {
        let issue: Vec<usize> = (0..plan.tasks.len()).collect();
        let want = replay(plan, &issue, None);
        let mut bare = plan.clone();
        for t in &mut bare.tasks {
            t.deps.clear();
        }
        let differs = (0..4).any(|s| replay(plan, &random_topological(&bare, s), None).0 != want.0);
        assert!(differs, "dropping every dependency changed no read");
    }
}
