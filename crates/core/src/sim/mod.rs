//! The simulator: the very plan the executor runs replayed in virtual time against a profile
//! (measured here or elsewhere, or [`synthetic`]), predicting the makespan, each device's busy
//! share and a trace in the executor's format. [`mod@lower`] prices each task, [`costs`] says
//! which engine it occupies and what slows what, [`engine`] is the discrete-event replay and
//! [`machine`] plans for a machine known only by its profile. Unlike the closed-form pipeline
//! model it sees every device, peer forwarding, link contention and dependency stalls, at
//! about a microsecond per task: it suits choosing among a few plans of large calls.

pub mod costs;
pub mod engine;
pub mod lower;
pub mod machine;
pub mod synthetic;

pub use engine::{simulate, DeviceBusy, SimRequest, SimTask, Simulation, TaskList};
pub use lower::lower;
pub use machine::{MachinePlan, ProfiledMachine};
pub use synthetic::{nominal_profile, Synthetic};
