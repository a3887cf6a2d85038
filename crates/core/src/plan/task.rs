//! The one task graph every routine is planned as: tasks that name their device, their queue
//! and an operation on explicit tiles ([`Loc`]), with the dependencies derived from what each
//! reads and writes ([`super::graph`]). A plan carries no addresses: the executor binds it to a
//! call's operands and workspaces, knowing nothing of the routine ([`Routine`]).

use super::region::{CRegion, TileMask};
use crate::memory::MemorySpace;
use crate::operand::Trans;
use crate::problem::triangular::{TriOptions, TriProblem, TriRoutine};
use crate::problem::{GemmProblem, Operand, Uplo};
use crate::scalar::{DType, ScalarValue};
use crate::sym::SymOp;
use crate::tiling::{Block, TileGrid, TileKey};
use crate::trace::Activity;

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

/// Where a task finds or puts a tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loc {
    /// A block of the call's operand itself, in the operand's own memory.
    Operand { op: Operand, block: Block },
    /// Cache slot `slot` of plan device `device`: `rows x cols`, packed with
    /// [`slot_ld`] as its leading dimension.
    Slot {
        device: u16,
        slot: u32,
        rows: usize,
        cols: usize,
    },
    /// Host staging slot `slot` (routes through host memory, host folds), packed likewise.
    Staging { slot: u32, rows: usize, cols: usize },
    /// A block of plan device `device`'s copy of operand `op` ([`PlanDevice::mirrors`]): the
    /// whole operand in the device's memory, packed with [`slot_ld`] of its rows. The
    /// factorizations keep the matrix on the device and work on blocks of it.
    Mirror {
        device: u16,
        op: Operand,
        block: Block,
    },
}

impl Loc {
    pub fn rows(&self) -> usize {
        match *self {
            Loc::Operand { block, .. } | Loc::Mirror { block, .. } => block.rows,
            Loc::Slot { rows, .. } | Loc::Staging { rows, .. } => rows,
        }
    }

    pub fn cols(&self) -> usize {
        match *self {
            Loc::Operand { block, .. } | Loc::Mirror { block, .. } => block.cols,
            Loc::Slot { cols, .. } | Loc::Staging { cols, .. } => cols,
        }
    }

    /// The operand block this is, if it is one.
    pub fn operand(&self) -> Option<(Operand, Block)> {
        match *self {
            Loc::Operand { op, block } => Some((op, block)),
            _ => None,
        }
    }
}

/// The leading dimension of a packed tile of `rows` rows in a slot: rounded up to 32 elements
/// beyond 16 rows, so every column starts aligned.
pub fn slot_ld(rows: usize) -> usize {
    if rows <= 16 {
        rows.max(1)
    } else {
        rows.div_ceil(32) * 32
    }
}

/// Bytes of a slot holding `bytes`: rounded up to 512 so every slot starts aligned.
pub(crate) fn slot_size(bytes: usize) -> usize {
    bytes.div_ceil(512).max(1) * 512
}

/// A scalar of a task, named so that plans stay independent of the call's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Coef {
    /// The caller's alpha.
    Alpha,
    /// The caller's beta.
    Beta,
    Zero,
    One,
    MinusOne,
}

impl Coef {
    /// The value for a call with `alpha` and `beta`.
    pub fn value(self, alpha: ScalarValue, beta: ScalarValue) -> ScalarValue {
        let dt = alpha.dtype();
        match self {
            Coef::Alpha => alpha,
            Coef::Beta => beta,
            Coef::Zero => ScalarValue::zero(dt),
            Coef::One => ScalarValue::one(dt),
            Coef::MinusOne => ScalarValue::of(dt, -1.0),
        }
    }
}

/// What a task does. Every operation names the tile of the output it works towards (`key`),
/// for traces, transfer records and fault recovery.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    /// `dst := src` over the link between their spaces. `origin`: a copy from a peer's slot
    /// (forwarding) names the operand block it holds, where the copy is made from instead when
    /// the peer fails.
    Copy {
        key: TileKey,
        src: Loc,
        dst: Loc,
        origin: Option<Loc>,
    },
    /// `c := alpha op(a) op(b) + beta c`; `l` is the product's step along the inner dimension.
    Gemm {
        key: TileKey,
        l: u32,
        transa: Trans,
        transb: Trans,
        alpha: Coef,
        beta: Coef,
        a: Loc,
        b: Loc,
        c: Loc,
    },
    /// A symmetric routine's own tile ([`crate::sym_kernel::SymTile`]): a rank update's
    /// diagonal tile, or SYMM/HEMM's product with the symmetric operand's diagonal tile.
    Sym {
        key: TileKey,
        l: u32,
        op: SymOp,
        k: usize,
        alpha: Coef,
        beta: Coef,
        a: Loc,
        b: Loc,
        c: Loc,
    },
    /// TRSM or TRMM of tile `b` in place by the triangular tile `a`.
    Tri {
        key: TileKey,
        routine: TriRoutine,
        opts: TriOptions,
        alpha: Coef,
        a: Loc,
        b: Loc,
    },
    /// `y += beta x` (late C: the caller's C added to a product computed with beta = 0).
    Add {
        key: TileKey,
        beta: Coef,
        x: Loc,
        y: Loc,
    },
    /// Cholesky factorization of the diagonal tile `a` in place (`?potrf`); its `info` goes to
    /// the call's info cell `info` ([`Plan::infos`]).
    Potrf {
        key: TileKey,
        uplo: Uplo,
        a: Loc,
        info: u32,
    },
    /// LU factorization with partial pivoting of the panel `a` in place (`?getrf`), its pivots
    /// (relative to the panel's first row) into `ipiv`, a `rows x 1` block of the pivots'
    /// operand; `info` as for [`Op::Potrf`].
    Getrf {
        key: TileKey,
        a: Loc,
        ipiv: Loc,
        info: u32,
    },
    /// Row interchanges `1..=ipiv.rows()` of the pivots `ipiv` (relative to `a`'s first row)
    /// applied to `a` (`?laswp`).
    Laswp { key: TileKey, a: Loc, ipiv: Loc },
    /// Host fold: `c := beta c + staged` on the host ([`crate::fold`]), on the entries of
    /// `mask` only (a tile its plan's region holds in part: the others are neither read nor
    /// written).
    Fold {
        key: TileKey,
        c: Loc,
        staged: Loc,
        mask: TileMask,
    },
}

impl Op {
    /// The output tile the operation works towards.
    pub fn key(&self) -> TileKey {
        match *self {
            Op::Copy { key, .. }
            | Op::Gemm { key, .. }
            | Op::Sym { key, .. }
            | Op::Tri { key, .. }
            | Op::Add { key, .. }
            | Op::Potrf { key, .. }
            | Op::Getrf { key, .. }
            | Op::Laswp { key, .. }
            | Op::Fold { key, .. } => key,
        }
    }

    /// The tiles the operation reads, and the one it writes (a panel's LU also writes its
    /// pivots: [`Op::also_written`]).
    pub fn effects(&self) -> (Vec<Loc>, Loc) {
        match *self {
            Op::Potrf { a, .. } | Op::Getrf { a, .. } => (vec![a], a),
            Op::Laswp { a, ipiv, .. } => (vec![a, ipiv], a),
            Op::Copy { src, dst, .. } => (vec![src], dst),
            Op::Gemm { a, b, c, beta, .. } | Op::Sym { a, b, c, beta, .. } => {
                if beta == Coef::Zero {
                    (vec![a, b], c)
                } else {
                    (vec![a, b, c], c)
                }
            }
            Op::Tri { a, b, .. } => (vec![a, b], b),
            Op::Add { x, y, .. } => (vec![x, y], y),
            Op::Fold { c, staged, .. } => (vec![staged, c], c),
        }
    }

    /// The tile the operation writes.
    pub fn written(&self) -> Loc {
        self.effects().1
    }

    /// A second tile the operation writes: a panel LU's pivots.
    pub fn also_written(&self) -> Option<Loc> {
        match *self {
            Op::Getrf { ipiv, .. } => Some(ipiv),
            _ => None,
        }
    }

    /// Whether it runs on a device's compute engine (not a copy, not a host fold).
    pub fn computes(&self) -> bool {
        !matches!(self, Op::Copy { .. } | Op::Fold { .. })
    }

    /// `(m, n, k)` of a product (GEMM or a routine's own tile); zeros for other operations.
    pub fn product_shape(&self) -> (usize, usize, usize) {
        match *self {
            Op::Gemm { transa, a, c, .. } => {
                let k = if transa.is_transposed() {
                    a.rows()
                } else {
                    a.cols()
                };
                (c.rows(), c.cols(), k)
            }
            Op::Sym { k, c, .. } => (c.rows(), c.cols(), k),
            _ => (0, 0, 0),
        }
    }

    /// Real flops of the operation (a complex multiply-add counts as 8).
    pub fn flops(&self, dtype: DType) -> f64 {
        let fma = dtype.flops_per_fma();
        match *self {
            Op::Copy { .. } => 0.0,
            Op::Gemm { .. } => {
                let (m, n, k) = self.product_shape();
                fma * (m * n * k) as f64
            }
            Op::Sym { op, k, c, .. } => crate::sym::SymProblem {
                op,
                m: c.rows(),
                n: c.cols(),
                k,
                dtype,
            }
            .flops(),
            Op::Tri { a, b, .. } => fma * 0.5 * a.rows() as f64 * (b.rows() * b.cols()) as f64,
            // One multiply and one add per element: a multiply-add of the dtype.
            Op::Add { y, .. } => fma * (y.rows() * y.cols()) as f64,
            Op::Fold { .. } | Op::Laswp { .. } => 0.0,
            // LAPACK's leading terms: n^3/6 multiply-adds (POTRF), m n^2/2 - n^3/6 (GETRF).
            Op::Potrf { a, .. } => fma * (a.rows() as f64).powi(3) / 6.0,
            Op::Getrf { a, .. } => {
                let (m, n) = (a.rows().max(a.cols()) as f64, a.rows().min(a.cols()) as f64);
                fma * (m * n * n / 2.0 - n * n * n / 6.0)
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Task {
    /// Plan device index.
    pub device: u16,
    pub queue: QueueId,
    pub op: Op,
    /// Tasks that must complete first (all with smaller ids), derived from what each task
    /// reads and writes ([`super::graph`]).
    pub deps: Vec<TaskId>,
    /// Whether a task on another queue waits for this one (the executor records an event).
    pub signal: bool,
    /// Issued as this many pieces of its tile's columns, each waiting only for the same piece
    /// of the task before it (1: whole): the chain of a late C tile at the end of a device's
    /// GEMM plan, so that its write-back overlaps its fetch.
    pub pieces: u16,
    /// Its completion makes its tile of the output final: written whole, for the last time.
    /// After a device fails, the tiles whose final writes completed need not run again.
    pub finishes: bool,
}

/// The columns of piece `p` of a tile of `cols` columns issued in `pieces` pieces
/// ([`Task::pieces`]): the one split the executor issues, fault recovery counts and the
/// simulator replays.
pub fn piece_columns(cols: usize, pieces: usize, p: usize) -> std::ops::Range<usize> {
    let pieces = pieces.max(1);
    p * cols / pieces..(p + 1) * cols / pieces
}

/// What a planner needs to know about a participating device (every routine's: the label,
/// space, budget and queues; GEMM's plans also read the fold and group fields).
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
    /// With `host_fold`: this many of the device's C tiles are not folded but have their C sent
    /// (late, where the kernel adds tiles), shortening the host's fold queue while the link
    /// idles after the last A and B tiles (which tiles: `plan::fold_tail_tiles`).
    pub fold_tail: usize,
    /// C tiles accumulated together (see [`crate::tiling::Blocking`]); at most
    /// [`crate::tiling::DEFAULT_GROUP`], fewer when the budget holds fewer slots.
    pub group: usize,
}

impl DeviceSpec {
    /// A device as the planners other than GEMM's see it (no folds, C tiles in default
    /// groups).
    pub fn new(label: String, space: MemorySpace, budget: u64, compute_queues: u16) -> Self {
        DeviceSpec {
            label,
            space,
            budget,
            compute_queues,
            late_c: false,
            host_fold: false,
            fold_tail: 0,
            group: crate::tiling::DEFAULT_GROUP,
        }
    }
}

/// A device's part of the plan.
#[derive(Debug, Clone)]
pub struct PlanDevice {
    pub space: MemorySpace,
    /// Number of cache slots of `Plan::slot_bytes` each.
    pub slots: u32,
    pub compute_queues: u16,
    /// Output tiles this device computes (C tiles; a triangular plan's B tiles).
    pub tiles: usize,
    /// Operands the device holds a whole copy of ([`Loc::Mirror`]), after its slots.
    pub mirrors: Vec<Operand>,
}

impl PlanDevice {
    /// `spec`'s part: `slots` slots, `tiles` output tiles, no mirrors.
    pub(super) fn new(spec: &DeviceSpec, slots: u32, tiles: usize) -> PlanDevice {
        PlanDevice {
            space: spec.space,
            slots,
            compute_queues: spec.compute_queues.max(1),
            tiles,
            mirrors: Vec::new(),
        }
    }
}

/// An operand as a plan sees it: where it lives and its stored shape (the pitch that a copy
/// of one of its blocks crosses a link at, the plan knowing no larger leading dimension).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperandShape {
    pub space: MemorySpace,
    pub rows: usize,
    pub cols: usize,
}

/// What a plan computes: for reports, statistics and the recovery of a failed call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Routine {
    /// GEMM, or a symmetric routine as the tiles of one GEMM plan (`problem.sym`), over the
    /// `region` of C.
    Gemm {
        problem: GemmProblem,
        grid: TileGrid,
        region: CRegion,
    },
    /// A factorization (`?potrf` or `?getrf`) of an `m x n` matrix in `nb`-wide block columns;
    /// `panels`: the plan device that runs the panels, where not the one that updates.
    Factor {
        routine: FactorRoutine,
        m: usize,
        n: usize,
        nb: usize,
        panels: Option<usize>,
    },
    /// TRSM or TRMM in `tile` blocks of A and `panel` lines of B; `solver`: the plan device
    /// that runs every diagonal solve, where not each device its own.
    Tri {
        problem: TriProblem,
        tile: usize,
        panel: usize,
        solver: Option<usize>,
    },
}

/// Which factorization a plan computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum FactorRoutine {
    /// Cholesky, `A = L L^H` (lower) or `U^H U` (upper).
    Potrf(Uplo),
    /// LU with partial pivoting, `A = P L U`.
    Getrf,
}

/// A complete, address-free execution plan; cached per problem signature and reused.
#[derive(Debug, Clone)]
pub struct Plan {
    pub routine: Routine,
    pub dtype: DType,
    /// The operands, in [`Operand`] order (a routine with two uses A and B).
    pub operands: Vec<OperandShape>,
    pub slot_bytes: usize,
    /// Host staging slots (of `slot_bytes`) for routes through host memory and host folds.
    pub host_slots: u32,
    /// Some device's products are folded into C on the host (`Fold` tasks).
    pub host_folds: bool,
    pub devices: Vec<PlanDevice>,
    pub tasks: Vec<Task>,
    /// Per device, its task ids in issue order.
    pub order: Vec<Vec<TaskId>>,
    /// LAPACK `info` cells the plan's factorization ops fill (one each).
    pub infos: u32,
}

/// Counts of what a plan moves and computes, for reports and tests.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PlanStats {
    /// Tile products (GEMM and the routines' own tiles).
    pub gemms: usize,
    /// Output tiles per plan device.
    pub c_tiles: Vec<usize>,
    /// Share of the output's elements per plan device (tiles differ in size with edges).
    pub c_share: Vec<f64>,
    /// Fetches per operand (A, B, C).
    pub fetches: [usize; 3],
    pub writebacks: usize,
    /// Per plan device: tile products (GEMM and the routines' own).
    pub products: Vec<usize>,
    /// Per plan device: triangular tiles (TRSM/TRMM diagonal solves or multiplies) and
    /// factorization panels (POTRF, GETRF).
    pub tri_tiles: Vec<usize>,
    /// Bytes fetched per plan device from the operands' own locations (the host for host
    /// operands).
    pub bytes_in: Vec<u64>,
    /// Bytes fetched per plan device from another device that held the tile (forwarding).
    pub bytes_peer: Vec<u64>,
    /// Bytes written back per plan device.
    pub bytes_out: Vec<u64>,
}

impl Plan {
    /// A plan of `tasks` on `devices` over `operands` (space, stored rows and columns), with
    /// no host staging slots, host folds or info cells (a planner sets those after).
    pub(super) fn new(
        routine: Routine,
        dtype: DType,
        operands: &[(MemorySpace, usize, usize)],
        slot_bytes: usize,
        devices: Vec<PlanDevice>,
        (tasks, order): (Vec<Task>, Vec<Vec<TaskId>>),
    ) -> Plan {
        let shape = |&(space, rows, cols)| OperandShape { space, rows, cols };
        Plan {
            routine,
            dtype,
            operands: operands.iter().map(shape).collect(),
            slot_bytes,
            host_slots: 0,
            host_folds: false,
            devices,
            tasks,
            order,
            infos: 0,
        }
    }

    /// The GEMM problem and grid of a GEMM plan.
    pub fn gemm(&self) -> Option<(&GemmProblem, &TileGrid)> {
        match &self.routine {
            Routine::Gemm { problem, grid, .. } => Some((problem, grid)),
            Routine::Tri { .. } | Routine::Factor { .. } => None,
        }
    }

    /// Bytes of plan device `d`'s workspace: its slots, then its mirrors.
    pub fn workspace_bytes(&self, d: usize) -> usize {
        let pd = &self.devices[d];
        pd.slots as usize * self.slot_bytes
            + pd.mirrors
                .iter()
                .map(|&op| self.mirror_bytes(op))
                .sum::<usize>()
    }

    /// Bytes of a device's copy of operand `op` (padded like a slot, 512-byte aligned).
    pub fn mirror_bytes(&self, op: Operand) -> usize {
        let o = &self.operands[op.index()];
        (slot_ld(o.rows) * o.cols * self.element_size(op)).div_ceil(512) * 512
    }

    /// Bytes of one element of operand `op` (a factorization's pivots are 4-byte integers).
    pub fn element_size(&self, op: Operand) -> usize {
        match (self.routine, op) {
            (Routine::Factor { .. }, Operand::B) => 4,
            _ => self.dtype.size(),
        }
    }

    /// Bytes a tile holds (a pivot block's elements are 4-byte integers).
    pub fn loc_bytes(&self, loc: &Loc) -> u64 {
        let es = match *loc {
            Loc::Operand { op, .. } | Loc::Mirror { op, .. } => self.element_size(op),
            _ => self.dtype.size(),
        };
        (loc.rows() * loc.cols() * es) as u64
    }

    /// The stored rows of operand `op` (the pitch its blocks are copied at).
    pub fn operand_rows(&self, op: Operand) -> usize {
        self.operands.get(op.index()).map_or(0, |o| o.rows)
    }

    /// What a task does, as traces show it: activity, label, bytes moved, flops. The executor and
    /// the simulator both label with it, so real and simulated timelines compare task by task.
    pub fn describe(&self, task: &Task) -> (Activity, String, u64, f64) {
        let op = &task.op;
        let k = op.key();
        let (activity, verb, bytes) = match *op {
            Op::Copy { src, dst, .. } => {
                let (activity, verb) = match (src, dst) {
                    (Loc::Staging { .. }, _) | (_, Loc::Staging { .. }) => {
                        (Activity::Fetch, "stage")
                    }
                    (_, Loc::Slot { .. } | Loc::Mirror { .. }) => (Activity::Fetch, "fetch"),
                    _ => (Activity::WriteBack, "writeback"),
                };
                (activity, verb.to_string(), self.loc_bytes(&dst))
            }
            Op::Fold { c, .. } => (Activity::WriteBack, "fold".into(), self.loc_bytes(&c)),
            Op::Potrf { .. } => (Activity::Gemm, "potrf".into(), 0),
            Op::Getrf { .. } => (Activity::Gemm, "getrf".into(), 0),
            Op::Laswp { .. } => (Activity::Gemm, "laswp".into(), 0),
            Op::Add { .. } => (Activity::Gemm, "add".into(), 0),
            Op::Gemm { .. } | Op::Sym { .. } => (Activity::Gemm, "gemm".into(), 0),
            Op::Tri { routine, .. } => (Activity::Gemm, routine.name().to_lowercase(), 0),
        };
        let mut label = format!("{verb} {:?}({},{})", k.op, k.r, k.c);
        if let Op::Gemm { l, .. } | Op::Sym { l, .. } = *op {
            label += &format!(" l={l}");
        }
        (activity, label, bytes, op.flops(self.dtype))
    }

    pub fn stats(&self) -> PlanStats {
        let n = self.devices.len();
        let mut s = PlanStats {
            c_tiles: self.devices.iter().map(|d| d.tiles).collect(),
            products: vec![0; n],
            tri_tiles: vec![0; n],
            bytes_in: vec![0; n],
            bytes_peer: vec![0; n],
            bytes_out: vec![0; n],
            c_share: vec![0.0; n],
            ..Default::default()
        };
        let out = match self.routine {
            Routine::Gemm { .. } => Operand::C,
            Routine::Tri { .. } => Operand::B,
            Routine::Factor { .. } => Operand::A,
        };
        let total = self
            .operands
            .get(out.index())
            .map_or(1.0, |o| (o.rows * o.cols).max(1) as f64);
        for t in &self.tasks {
            let d = t.device as usize;
            match t.op {
                Op::Gemm { .. } | Op::Sym { .. } => {
                    s.gemms += 1;
                    s.products[d] += 1;
                }
                Op::Tri { .. } | Op::Potrf { .. } | Op::Getrf { .. } => s.tri_tiles[d] += 1,
                Op::Add { .. } | Op::Laswp { .. } => {}
                Op::Copy { key, src, dst, .. } => match (src, dst) {
                    (_, Loc::Slot { .. } | Loc::Mirror { .. }) => {
                        s.fetches[key.op.index()] += 1;
                        match src {
                            Loc::Slot { .. } => s.bytes_peer[d] += self.loc_bytes(&dst),
                            _ => s.bytes_in[d] += self.loc_bytes(&dst),
                        }
                    }
                    (_, Loc::Operand { .. }) => {
                        s.writebacks += 1;
                        s.bytes_out[d] += self.loc_bytes(&dst);
                    }
                    _ => {}
                },
                Op::Fold { c, .. } => {
                    s.writebacks += 1;
                    s.bytes_out[d] += self.loc_bytes(&c);
                }
            }
            if t.finishes {
                let w = t.op.written();
                s.c_share[d] += (w.rows() * w.cols()) as f64 / total;
            }
        }
        s
    }
}
