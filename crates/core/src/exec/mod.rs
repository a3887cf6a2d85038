//! Execution: [`execute`] issues a plan's tasks on the devices' queues; [`trace`] records the
//! device-side timeline of a run.

pub mod execute;
pub mod trace;
pub mod tri;
