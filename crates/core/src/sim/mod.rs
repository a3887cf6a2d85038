//! The simulator: a plan replayed in virtual time against a machine profile.
//!
//! [`simulate`] takes the very plan the executor runs (every task, its queue, its link and its
//! predecessors) and a profile, measured on this machine or another, or synthetic
//! ([`synthetic`]), and predicts the timeline: makespan, each device's busy share and a trace
//! in the executor's format, so the real and predicted timelines open side by side
//! ([`crate::trace::chrome_json_rows`]). Every routine's [`crate::plan::Plan`] replays, its
//! dependencies across queues and devices included: [`mod@lower`] prices each task. [`costs`]
//! says which engine each task occupies and what slows what; [`engine`]
//! is the discrete-event replay; [`machine`] plans for a machine known only by its profile
//! (what `hetblas simulate` does for 4 or 8 GPUs with none present).
//!
//! Where the autotuner may use it: the closed-form pipeline model prices one device and sees
//! only the first group and the totals; the simulator sees every device, peer forwarding,
//! link contention and (for DAG routines) dependency stalls. A replay costs about a
//! microsecond per task (a 16384^3 DGEMM at tile 2048 has about 600 tasks per device), so
//! it suits choosing among a few candidate plans of large calls ([`ProfiledMachine::best_tile`]),
//! where a millisecond of planning is nothing against the call; small calls keep the closed
//! form. Triangular calls are chosen by replaying each candidate plan here.

pub mod costs;
pub mod engine;
pub mod lower;
pub mod machine;
pub mod synthetic;

pub use engine::{simulate, DeviceBusy, SimRequest, SimTask, Simulation, TaskList};
pub use lower::lower;
pub use machine::{MachinePlan, ProfiledMachine};
pub use synthetic::{nominal_profile, Synthetic};
