//! Planning: the problem cut into tiles ([`tiling`]), the C tiles shared among devices
//! ([`balance`] sets the shares, [`distribute`] places the tiles), and the DAG of fetch / gemm /
//! write-back tasks per device that the executor runs: its vocabulary in `task`, the builder
//! (which simulates every device's tile cache) in `builder`, where each tile comes from in
//! `route`, and the cache of finished plans in [`cache`]; the symmetric routines' tiles in
//! [`symmetric`]. [`fold`] is the host fold a plan may
//! ask for: C = beta*C + P on the host, for C tiles in host memory.

pub mod balance;
mod builder;
pub mod cache;
pub mod distribute;
pub mod fold;
mod route;
pub mod symmetric;
mod task;
pub mod tiling;
pub mod tri;

pub use builder::build;
pub(crate) use builder::{build_steps, fold_tail_tiles, tail_positions, FOLD_SPREAD};
pub use task::{
    piece_columns, BetaUse, DeviceSpec, Plan, PlanDevice, PlanRequest, PlanStats, QueueId, Source,
    Task, TaskId, TaskKind, TileLoc,
};
