//! # libhetblas.so: a drop-in BLAS
//!
//! The whole reference BLAS interface (every Level 1, 2 and 3 routine in S, D, C and Z, and the
//! mixed ones: `dsdot`, `sdsdot`, `scasum`, `icamax`, `scabs1`, ...) with the gfortran calling
//! convention, and the whole CBLAS interface (`cblas_*`, row- and column-major), each in LP64
//! (unsuffixed symbols, 32-bit integers) and ILP64 (OpenBLAS's suffix: `dgemm_64_`,
//! `cblas_dgemm64_`). With the `ilp64` feature the unsuffixed symbols take 64-bit integers and
//! there are no suffixed ones, like Debian's `libblas64.so.3`.
//!
//! Preload it (`LD_PRELOAD=libhetblas.so program`) or link it; nothing is configured.
//!
//! ## Where a call goes
//! 1. Its arguments are checked as the reference checks them (hetblas-refblas's checks, same
//!    order, same parameter numbers). A bad one calls `xerbla_` (or `cblas_xerbla`), looked up
//!    at the global scope so a program's own handler wins, and the call does nothing else.
//! 2. Routines with a device path (real GEMM today; see [`routines`]) go to the hetblas
//!    Runtime when [`route`] predicts that the devices gain: the calibrated profile's model
//!    when one is in use, the built-in rule otherwise, after a flop pre-filter that keeps small
//!    calls free. The Runtime starts then, once ([`offload`]).
//! 3. Everything else goes to the host BLAS ([`host`]): a library loaded with `RTLD_DEEPBIND`,
//!    its symbols taken through its handle, resolved once: a plain indirect call. Without a
//!    host BLAS (or with `HETBLAS_CBLAS=rust`) hetblas-refblas answers.
//! 4. A GEMM whose operands are device memory (CUDA, HIP, or the Runtime's emulated devices;
//!    asked only when such memory can exist: [`device_ptr`]) is computed by the Runtime where
//!    the operands live, whatever its size, and never read on the host.
//! 5. A device failure is reported (`HETBLAS_VERBOSE=1`: always) and the call completes on the
//!    host with a correct result.
//!
//! ## Layout
//! `abi` (the macros that generate the entries), `routines` (one line per routine),
//! `functions` (the Level 1 functions), `cblas` / `cblas1` (CBLAS), `xerbla`, `host`,
//! `route` (which calls gain), `offload` (the device path), `release_hooks` (`free`,
//! `munmap`, ... noted for the registration cache), `device_ptr`, `elem` (the four element
//! types), `symbols` (the host symbol table, from `routines`'s lines), `header` (a test:
//! `include/hetblas.h` is the header the CBLAS tables render).
//!
//! Adding a routine: its line in `routines` (names, checks, device hook), its device path in
//! `offload` when it has one, its CBLAS implementation and line in `cblas`. The host symbols,
//! the row-major renumbering and the header's prototypes follow from those lines.

#[macro_use]
mod abi;
pub mod cblas;
pub mod cblas1;
pub mod device_ptr;
pub mod elem;
pub mod factor;
pub mod family;
pub mod functions;
#[cfg(test)]
mod header;
pub mod host;
pub mod lapack;
pub mod loaded;
pub mod measured;
pub mod offload;
pub mod offload_sym;
pub mod release_hooks;
pub mod route;
pub mod routines;
pub mod settings;
pub mod small;
pub mod summary;
pub mod symbols;
pub mod tiling;
pub mod xerbla;
