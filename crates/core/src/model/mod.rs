//! Performance models: link transfers, kernel execution tables, CoCoPeLia's single-device
//! overlap models (and the Werkhoven CSO model they are compared with). Pure arithmetic on
//! calibrated numbers ([`crate::profile`]); nothing here touches a device. Tile selection over these models is the autotuner's ([`crate::autotune`]).

pub mod cocopelia;
pub mod exec;
pub mod link;
pub mod pipeline;
mod replay;

pub use cocopelia::{ModelKind, Offload, SingleDeviceModel, Terms};

/// Share of a device's GEMM rate that its tile TRSM/TRMM reaches where the profile has no
/// measured share ([`crate::profile::MachineProfile::tri_efficiency_of`]): vendor TRSM on
/// large tiles runs at roughly this share of GEMM.
pub const TRI_EFFICIENCY: f64 = 0.6;

/// The share of a device's GEMM rate (at the op's tile) that a factorization op reaches where
/// the profile has no measured one. A panel is a chain of narrow steps: on a GPU its library
/// runs it at a fraction of GEMM's rate (cuSOLVER's LU of a 32768 x 1024 panel, a quarter);
/// the host LAPACK on the CPU, blocked, at most of it. Row interchanges move memory: priced as
/// a pass over the block.
pub fn panel_efficiency(backend: &str, op: crate::factor_kernel::FactorOp) -> f64 {
    use crate::factor_kernel::FactorOp;
    match (backend, op) {
        ("cpu", FactorOp::Potrf | FactorOp::Getrf) => 0.7,
        ("emulated", _) => 1.0,
        (_, FactorOp::Potrf) => 0.35,
        (_, FactorOp::Getrf) => 0.25,
        (_, FactorOp::Laswp) => 1.0,
    }
}
