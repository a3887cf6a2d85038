//! Execution: [`execute`] issues a plan's tasks on the devices' queues; [`trace`] records the
//! device-side timeline of a run; [`undo`] keeps what a call overwrites in C until it is known
//! to succeed.

pub mod execute;
pub mod trace;
pub mod undo;
