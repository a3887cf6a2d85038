//! Planning: every routine becomes one kind of task graph ([`Plan`]: tasks on explicit tiles,
//! their dependencies derived from what each reads and writes, in [`graph`]). Its vocabulary
//! is in `task`. The routines' planners: GEMM and the symmetric routines in `builder` (the C
//! tiles shared among devices by [`balance`] and [`distribute`] over the tile grid of
//! [`tiling`]; the builder simulates every device's tile cache, `route` says where each tile
//! comes from, and [`region`] which of C's entries the plan computes), TRSM and TRMM in
//! [`tri`]. [`build`] is the one entry; [`cache`] keeps finished GEMM plans. [`fold`] is the
//! host fold a plan may ask for: C = beta*C + P on the host, for C tiles in host memory.

pub mod balance;
mod builder;
pub mod cache;
pub mod distribute;
pub mod factor;
pub mod fold;
pub mod graph;
pub mod region;
mod route;
pub mod symmetric;
mod task;
pub mod tiling;
pub mod tri;

pub use builder::PlanRequest;
pub(crate) use builder::{
    build_steps, fold_tail_tiles, tail_pieces, tail_positions, tail_tiles, Step, FOLD_SPREAD,
};
pub use factor::FactorRequest;
pub use region::{CRegion, TileMask};
pub use task::{
    piece_columns, slot_ld, Coef, DeviceSpec, FactorRoutine, Loc, Op, OperandShape, Plan,
    PlanDevice, PlanStats, QueueId, Routine, Task, TaskId,
};
pub use tri::{TriRequest, TriTiling};

use crate::error::{Error, Result};

/// What to plan: one request per routine family, one planner entry.
pub enum Request<'a> {
    /// GEMM, or a symmetric routine as the tiles of one GEMM plan.
    Gemm(PlanRequest<'a>),
    /// TRSM or TRMM.
    Tri(TriRequest<'a>),
    /// A factorization (POTRF, GETRF).
    Factor(FactorRequest<'a>),
}

/// Builds the plan of a request.
///
/// # Errors
/// `OutOfMemory` when a device's budget cannot hold what one of its tasks needs;
/// `Unsupported` when no link reaches a device from an operand's location; `InvalidInput` for
/// a request that does not cover its problem.
pub fn build(req: &Request<'_>) -> Result<Plan> {
    match req {
        Request::Gemm(r) => builder::build(r),
        Request::Tri(r) => tri::build_tri(r),
        Request::Factor(r) => factor::build_factor(r),
    }
}

/// A request's `InvalidInput` error.
fn invalid<T>(why: impl Into<String>) -> Result<T> {
    Err(Error::InvalidInput(why.into()))
}
