//! # hetblas-mpi
//!
//! Distributed GEMM over MPI (rsmpi) for matrices too large for one node, with each rank's
//! local products running on its node [`hetblas::Runtime`] (its GPUs and CPU, as hetblas does on
//! one node).
//!
//! - [`ProcessGrid`]: `nprow x npcol` processes of a communicator, row-major (BLACS' default).
//! - [`DistMatrix`]: a 2D block-cyclic matrix with a ScaLAPACK [`Descriptor`]; [`DistRef`] /
//!   [`DistMut`] borrow a submatrix of any local array with a descriptor.
//! - [`gemm`] / [`gemm_sub`]: SUMMA with non-blocking panel broadcasts overlapping the local
//!   products ([`summa`] explains the schedule and why SUMMA rather than COSMA's; [`Transport`]
//!   how the panels travel: [`broadcast`], [`shared`]);
//!   [`gemm_in`] / [`gemm_sub_in`] keep the panel buffers in a [`Workspace`] between calls.
//!   Each call's [`SummaReport`] lists its local products ([`LocalProduct`]: the seconds of
//!   each runtime call and the runtime's devices, shares, tile and traffic), which is how
//!   `hetblas-mpi bench` tells a slow local product from slow communication.
//!
//! Argument errors are agreed on by every process before any communication, so all return the
//! same error. A failure during the products (a device lost on one rank) returns an error on
//! that rank while the others wait for it in the next broadcast: treat errors from the
//! distributed calls as fatal for the job (`MPI_Abort`), as `hetblas-mpi` does.
//! - `pdgemm_` / `psgemm_` ([`scalapack`]): ScaLAPACK's Fortran entry points, exported by
//!   `libhetblas_mpi.so`, so a ScaLAPACK program switches by preloading it.
//! - [`NetworkModel`]: the bandwidth and latency of the links between ranks; [`project`]
//!   simulates the schedule on more nodes than we have (`hetblas-mpi project`).
//!
//! This crate is outside the root workspace: building it needs an MPI library (see
//! `crates/mpi/ci.sh`). MPI is initialised by the program (or by BLACS, for `pdgemm_`);
//! local products run on a helper thread while the calling thread drives MPI, so
//! `MPI_THREAD_FUNNELED` is enough.

pub mod broadcast;
pub mod desc;
pub mod error;
pub mod grid;
pub mod matrix;
pub mod network;
pub mod project;
mod redistribute;
pub mod scalapack;
pub mod schedule;
pub mod shared;
pub mod summa;
pub mod timeline;

pub use broadcast::Transport;
pub use desc::{Axis, Descriptor};
pub use error::{DistError, Result};
pub use grid::ProcessGrid;
pub use matrix::{DistMatrix, DistMut, DistRef};
pub use network::{NetworkLink, NetworkModel};
pub use summa::{
    choose_layout, gemm, gemm_in, gemm_sub, gemm_sub_in, CPlacement, LocalProduct, SummaOptions,
    SummaReport, Workspace,
};
