//! Performance models: link transfers, kernel execution tables, CoCoPeLia's single-device
//! overlap models (and the Werkhoven CSO model they are compared with), the ATGPU abstract cost
//! model. Pure arithmetic on calibrated numbers ([`crate::profile`]); nothing here touches a
//! device. Tile selection over these models is the autotuner's ([`crate::autotune`]).

pub mod atgpu;
pub mod cocopelia;
pub mod exec;
pub mod link;
pub mod pipeline;
mod replay;

pub use cocopelia::{ModelKind, Offload, SingleDeviceModel, Terms};
pub use exec::{ExecTable, ExecTime, FixedRate};
pub use link::LinkModel;
pub use pipeline::{PipelineModel, PipelinePrediction};

/// Share of a device's GEMM rate that its tile TRSM/TRMM reaches where the profile has no
/// measured share ([`crate::profile::MachineProfile::tri_efficiency_of`]): vendor TRSM on
/// large tiles runs at roughly this share of GEMM.
pub const TRI_EFFICIENCY: f64 = 0.6;
