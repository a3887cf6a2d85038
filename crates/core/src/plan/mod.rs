//! Planning: the problem cut into tiles ([`tiling`]), the C tiles shared among devices
//! ([`balance`] sets the shares, [`distribute`] places the tiles), and the DAG of fetch / gemm /
//! write-back tasks per device that the executor runs. [`fold`] is the host fold a plan may ask
//! for: C = beta*C + P on the host, for C tiles in host memory.

pub mod balance;
mod builder;
pub mod distribute;
pub mod fold;
pub mod tiling;

pub use builder::*;
