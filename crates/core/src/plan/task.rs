//! A plan's vocabulary: tasks (fetch, gemm, write-back, staging, fold), the queues they run on,
//! where tiles live, and the plan itself with its per-device slot counts and traffic counts.
//! A plan carries no addresses: the executor binds it to the operands and workspaces of a call.

use crate::memory::MemorySpace;
use crate::problem::GemmProblem;
use crate::tiling::{TileGrid, TileKey};
use std::collections::HashSet;

pub type TaskId = u32;

/// The queue a task is issued on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueId {
    /// Compute queue `index` of plan device `device`.
    Compute { device: u16, index: u16 },
    /// The copy queue of the link `src -> dst`.
    Link { src: MemorySpace, dst: MemorySpace },
    /// The host queue that folds returned products into C in host memory.
    HostFold,
}

/// Where a tile used by a gemm is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TileLoc {
    /// In the operand itself: the operand lives in the device's own space.
    InPlace,
    /// In a cache slot of the device.
    Slot(u32),
}

/// Which beta a tile product applies to its C tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BetaUse {
    /// The caller's beta (first product on a C tile that holds the caller's C).
    Caller,
    /// 0: overwrite (beta == 0, or late C).
    Zero,
    /// 1: accumulate.
    One,
}

/// Where a fetch reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The operand's authoritative copy.
    Origin,
    /// A slot of another plan device that holds the tile (peer forwarding).
    Peer { device: u16, slot: u32 },
    /// A host staging slot a `StageIn` filled (second hop of a route through host memory).
    Staged { host: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    Fetch {
        key: TileKey,
        source: Source,
        slot: u32,
    },
    /// C(i, j) (+)= alpha * op(A)(i, l) * op(B)(l, j), with the beta `beta` says.
    Gemm {
        i: u32,
        j: u32,
        l: u32,
        a: TileLoc,
        b: TileLoc,
        c: TileLoc,
        beta: BetaUse,
    },
    /// acc += beta * orig: folds the caller's C (fetched into `orig`) into an accumulator that
    /// was computed with beta = 0 ("late C": the first products need not wait for C).
    AddC {
        i: u32,
        j: u32,
        acc: u32,
        orig: u32,
    },
    WriteBack {
        key: TileKey,
        slot: u32,
    },
    /// First hop of a fetch between spaces with no direct link (devices of two backends):
    /// operand -> host staging slot `host`.
    StageIn {
        key: TileKey,
        host: u32,
    },
    /// First hop of a write-back with no direct link: device slot -> host staging slot.
    StageOut {
        key: TileKey,
        slot: u32,
        host: u32,
    },
    /// Second hop of that write-back: host staging slot -> C.
    Unstage {
        key: TileKey,
        host: u32,
    },
    /// Host fold: C = beta * C + the product a `StageOut` returned into host staging slot `host`
    /// (C in host memory; its tile never crosses the link towards the device).
    FoldC {
        key: TileKey,
        host: u32,
    },
}

#[derive(Debug, Clone)]
pub struct Task {
    /// Plan device index.
    pub device: u16,
    pub kind: TaskKind,
    pub queue: QueueId,
    /// Tasks that must complete first (all with smaller ids).
    pub deps: Vec<TaskId>,
    /// Whether a task on another queue waits for this one (the executor records an event).
    pub signal: bool,
    /// Issued as this many pieces of the C tile's columns, each waiting only for the same
    /// piece of the task before it (1: whole). Set on the chain of a late C tile at the end
    /// of a device's plan (its C fetch, add and write-back; `plan::builder::tail_pieces`), so that
    /// the last write-back overlaps the last fetch instead of following it.
    pub pieces: u16,
}

/// The columns of piece `p` of a C tile of `cols` columns issued in `pieces` pieces
/// ([`Task::pieces`]): the one split the executor issues, fault recovery counts and the
/// simulator replays.
pub fn piece_columns(cols: usize, pieces: usize, p: usize) -> std::ops::Range<usize> {
    let pieces = pieces.max(1);
    p * cols / pieces..(p + 1) * cols / pieces
}

/// What the planner needs to know about a participating device.
#[derive(Debug, Clone)]
pub struct DeviceSpec {
    /// The device's label ("cuda:0"), for errors.
    pub label: String,
    pub space: MemorySpace,
    /// Bytes available for cache slots.
    pub budget: u64,
    pub compute_queues: u16,
    /// The device's kernel can add a tile to a tile (`Kernel::add`), so C can arrive late.
    pub late_c: bool,
    /// With C in host memory and beta != 0, fold the product into C on the host instead of
    /// sending C to the device ([`crate::fold`]).
    pub host_fold: bool,
    /// With `host_fold`: this many of the device's C tiles are not folded: their C is sent to
    /// the device (late, where the kernel adds tiles) and they go back whole. Why: the folds
    /// queue up on the host while the host->device link, busy until the last A and B tiles,
    /// then idles; sending C shortens the fold queue more than it lengthens the link's. Which
    /// tiles: the last to finish, and a share spread earlier
    /// (`plan::fold_tail_tiles`).
    pub fold_tail: usize,
    /// C tiles accumulated together (see [`crate::tiling::Blocking`]); at most
    /// [`crate::tiling::DEFAULT_GROUP`], fewer when the budget holds fewer slots.
    pub group: usize,
}

/// A device's part of the plan.
#[derive(Debug, Clone)]
pub struct PlanDevice {
    pub space: MemorySpace,
    /// Number of cache slots of `Plan::slot_bytes` each.
    pub slots: u32,
    pub compute_queues: u16,
    /// C tiles this device computes.
    pub c_tiles: usize,
}

/// A complete, address-free execution plan; cached per problem signature and reused.
#[derive(Debug, Clone)]
pub struct Plan {
    pub problem: GemmProblem,
    pub grid: TileGrid,
    pub slot_bytes: usize,
    /// Host staging slots (of `slot_bytes`) for routes through host memory.
    pub host_slots: u32,
    /// Some device's products are folded into C on the host (`FoldC` tasks).
    pub host_folds: bool,
    pub devices: Vec<PlanDevice>,
    pub tasks: Vec<Task>,
    /// Per device, its task ids in issue order.
    pub order: Vec<Vec<TaskId>>,
}

/// Input to [`super::build`].
pub struct PlanRequest<'a> {
    pub problem: GemmProblem,
    pub grid: TileGrid,
    pub devices: &'a [DeviceSpec],
    /// Per device, its C tiles in execution order. Every tile exactly once over all devices.
    pub assignment: &'a [Vec<(usize, usize)>],
    /// Directed links that exist (src space, dst space).
    pub links: &'a HashSet<(MemorySpace, MemorySpace)>,
    /// Bandwidth (bytes/s) of each link, when known: with it, a tile another device already
    /// holds is forwarded over a faster peer link instead of fetched from its origin again.
    /// `None`: never forward.
    pub link_speed: Option<&'a dyn Fn(MemorySpace, MemorySpace) -> Option<f64>>,
    /// Pieces of every split late-C chain instead of one per 16 MiB of C
    /// ([`crate::DevicePool::set_tail_pieces`]: tests split small tiles); `None`: by size.
    pub tail_pieces: Option<usize>,
}

/// Counts of what a plan moves, for reports and tests.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PlanStats {
    pub gemms: usize,
    /// C tiles per plan device.
    pub c_tiles: Vec<usize>,
    /// Share of C's elements per plan device (tiles differ in size with edges and strips).
    pub c_share: Vec<f64>,
    /// Fetches per operand (A, B, C).
    pub fetches: [usize; 3],
    pub writebacks: usize,
    /// Bytes fetched per plan device from the operands' own locations (the host for host
    /// operands).
    pub bytes_in: Vec<u64>,
    /// Bytes fetched per plan device from another device that held the tile (forwarding).
    pub bytes_peer: Vec<u64>,
    /// Bytes written back per plan device.
    pub bytes_out: Vec<u64>,
}

impl Plan {
    /// The flops of product `(i, j, l)`: a GEMM tile's, or the routine's own for the diagonal
    /// tiles of a symmetric plan (a rank update's triangle).
    pub fn product_flops(&self, i: usize, j: usize, l: usize) -> f64 {
        let p = &self.problem;
        let g = &self.grid;
        let (m, n, k) = (g.m_span(i).1, g.n_span(j).1, g.k_span(l).1);
        match p.sym {
            Some(s) if super::symmetric::routine_product(p, i, j, l) => crate::sym::SymProblem {
                op: s.op,
                m,
                n,
                k,
                dtype: p.dtype,
            }
            .flops(),
            _ => p.dtype.flops_per_fma() * m as f64 * n as f64 * k as f64,
        }
    }

    pub fn stats(&self) -> PlanStats {
        let mut s = PlanStats {
            c_tiles: self.devices.iter().map(|d| d.c_tiles).collect(),
            bytes_in: vec![0; self.devices.len()],
            bytes_peer: vec![0; self.devices.len()],
            bytes_out: vec![0; self.devices.len()],
            c_share: vec![0.0; self.devices.len()],
            ..Default::default()
        };
        let c_total = (self.problem.m * self.problem.n).max(1) as f64;
        let es = self.problem.dtype.size() as u64;
        for t in &self.tasks {
            match t.kind {
                TaskKind::Gemm { i, j, l, .. } => {
                    s.gemms += 1;
                    if l == 0 {
                        let g = &self.grid;
                        let area = g.m_span(i as usize).1 * g.n_span(j as usize).1;
                        s.c_share[t.device as usize] += area as f64 / c_total;
                    }
                }
                TaskKind::AddC { .. } => {}
                TaskKind::Fetch { key, source, .. } => {
                    s.fetches[key.op.index()] += 1;
                    let (r, c) = self.grid.op_shape(key);
                    let b = (r * c) as u64 * es;
                    match source {
                        Source::Origin | Source::Staged { .. } => {
                            s.bytes_in[t.device as usize] += b
                        }
                        Source::Peer { .. } => s.bytes_peer[t.device as usize] += b,
                    }
                }
                TaskKind::StageIn { .. } | TaskKind::StageOut { .. } => {}
                TaskKind::WriteBack { key, .. }
                | TaskKind::Unstage { key, .. }
                | TaskKind::FoldC { key, .. } => {
                    s.writebacks += 1;
                    let (r, c) = self.grid.op_shape(key);
                    s.bytes_out[t.device as usize] += (r * c) as u64 * es;
                }
            }
        }
        s
    }
}
