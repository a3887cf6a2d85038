//! Tuning: [`calibrate`] measures the machine (links, kernels, the host) into a
//! [`profile::MachineProfile`]; [`autotune`] reads it through the models (`crate::model`) to
//! decide, per problem, the devices, their shares, the tile and the host fold.

pub mod autotune;
pub mod calibrate;
pub mod fold_speed;
pub mod ksplit;
pub mod profile;
