//! # hetblas-conformance
//!
//! The one conformance suite, written once and instantiated for every backend (CPU, emulated
//! devices, CUDA, HIP). "Conformant" means the same thing for all of them: every case here
//! passes against the f64-accumulating reference GEMM, with relative error bounds per dtype, in
//! f32, f64, c32 and c64 (`Trans::C` conjugating the complex operands). The factorization
//! tiles ([`factor`]) are checked on each computing device's kernel directly, against LAPACK's
//! residual tests, `info` values and pivots.
//!
//! A backend's `tests/conformance.rs` is a single macro call:
//!
//! ```ignore
//! hetblas_conformance::conformance_suite!(my_backend_targets);
//! fn my_backend_targets() -> Option<Vec<hetblas_conformance::Target>> { ... }
//! ```
//!
//! The function returns `None` when the backend's hardware is absent: each test then prints why
//! it skipped, unless `HETBLAS_REQUIRE` names the backend, in which case it fails.

pub mod cases;
pub mod check;
pub mod data;
pub mod factor;
pub mod gemmt_cases;
pub mod runtimes;
pub mod sym_cases;
pub mod tri;

pub use cases::{run_case, CaseSpec, Placement};
pub use check::{check_against_reference, Tolerance};

use hetblas_core::DevicePool;
use std::sync::Arc;

/// One configuration the suite runs on: a pool and which of its devices compute.
pub struct Target {
    pub name: String,
    pub pool: Arc<DevicePool>,
    /// Devices that compute (indices into the pool).
    pub compute: Vec<usize>,
    /// Devices on which device-resident operands may be placed (may be empty, e.g. CPU only).
    pub homes: Vec<usize>,
    /// A tile size much smaller than the test matrices, to exercise edge tiles and caching.
    pub small_tile: usize,
}

/// Whether `HETBLAS_REQUIRE` (a comma-separated list) names `backend`.
pub fn required(backend: &str) -> bool {
    std::env::var("HETBLAS_REQUIRE")
        .map(|v| v.split(',').any(|b| b.trim().eq_ignore_ascii_case(backend)))
        .unwrap_or(false)
}

/// A backend's discovery, or a skip: `None` (the reason printed) when the backend is
/// unavailable and `HETBLAS_REQUIRE` does not name it. Panics when it is required, and on any
/// other discovery error (a present backend that fails to start is a failure, not a skip).
pub fn discovered_or_skip<T>(backend: &str, found: hetblas_core::Result<T>) -> Option<T> {
    match found {
        Ok(d) => Some(d),
        Err(hetblas_core::Error::Unavailable { reason, .. }) => {
            assert!(
                !required(backend),
                "HETBLAS_REQUIRE={backend} but {backend} is unavailable: {reason}"
            );
            eprintln!("SKIPPED ({backend} unavailable: {reason})");
            None
        }
        Err(other) => panic!("{backend} discovery failed: {other}"),
    }
}

/// Resolves a target factory: `Some(targets)`, or a skip (message printed), or a panic when the
/// backend is required.
pub fn targets_or_skip(
    backend: &str,
    make: impl FnOnce() -> Result<Vec<Target>, String>,
) -> Option<Vec<Target>> {
    match make() {
        Ok(t) if !t.is_empty() => Some(t),
        Ok(_) => skip(backend, "no device found"),
        Err(why) => skip(backend, &why),
    }
}

/// The targets of a GPU backend: its first device alone, and all its devices together when there
/// are several (device-resident operands on each), from the backend's discovery.
pub fn gpu_targets(
    backend: &str,
    discover: impl FnOnce() -> hetblas_core::Result<hetblas_core::Discovery>,
) -> Option<Vec<Target>> {
    // Only an absent backend skips; one that is present and fails discovery fails the suite.
    let d = discovered_or_skip(backend, discover())?;
    targets_or_skip(backend, || {
        let n = d.devices.len();
        let pool = Arc::new(
            DevicePool::new(d.devices, d.links)
                .unwrap_or_else(|e| panic!("{backend} devices found but no pool: {e}")),
        );
        let mut t = vec![Target {
            name: format!("{backend}:0"),
            pool: pool.clone(),
            compute: vec![0],
            homes: vec![0],
            small_tile: 64,
        }];
        if n > 1 {
            t.push(Target {
                name: format!("{backend} x{n}"),
                pool,
                compute: (0..n).collect(),
                homes: (0..n).collect(),
                small_tile: 64,
            });
        }
        Ok(t)
    })
}

fn skip(backend: &str, why: &str) -> Option<Vec<Target>> {
    if required(backend) {
        panic!("HETBLAS_REQUIRE={backend} but the backend is unavailable: {why}");
    }
    eprintln!("SKIPPED ({backend} unavailable: {why})");
    None
}

/// Instantiates every conformance case as a `#[test]` for the targets returned by `$make`
/// (`fn() -> Option<Vec<Target>>`).
#[macro_export]
macro_rules! conformance_suite {
    ($make:path) => {
        $crate::conformance_suite!(@cases $make;
            all_transposes_f64, all_transposes_f32, all_transposes_c32, all_transposes_c64,
            complex_edge_cases, alpha_zero_reads_no_operands, beta_zero_ignores_nan_in_c,
            leading_dimensions_larger_than_rows, quick_returns, tiny_and_skinny_shapes,
            odd_shapes_default_tile, operand_placements, bad_arguments_are_reported,
            repeated_call_reuses_plan, multi_tile_with_small_cache, non_square_blockings,
            borrowed_device_memory, k_split_sums_partials
        );
        $crate::conformance_suite!(@tri $make;
            tri_all_combinations_f64, tri_all_combinations_f32, tri_all_combinations_c32,
            tri_all_combinations_c64, tri_alpha_zero_reads_no_a, tri_odd_shapes_default_tile,
            tri_device_resident_b, tri_bad_arguments_and_quick_returns
        );
        $crate::conformance_suite!(@sym $make;
            sym_every_option_f32, sym_every_option_f64, sym_every_option_c32,
            sym_every_option_c64, sym_alpha_zero_reads_no_operands, sym_beta_zero_overwrites_nan,
            sym_device_operands, sym_quick_returns, sym_bad_arguments_are_reported,
            sym_reference_program_grid
        );
        $crate::conformance_suite!(@module gemmt_cases $make;
            gemmt_every_option_f64, gemmt_every_option_f32, gemmt_every_option_c32,
            gemmt_every_option_c64, gemmt_shapes_and_placements, gemmt_bad_arguments_are_reported
        );
        $crate::conformance_suite!(@module factor $make;
            factor_potrf_every_uplo, factor_potrf_not_positive_definite, factor_potrf_nan_pivot,
            factor_getrf_panels,
            factor_getrf_pivots_match_lapack, factor_getrf_exactly_singular, factor_laswp_ranges,
            factor_laswp_many_pivots,
            factor_pivots_move_between_devices, factor_bad_tiles_are_refused,
            factor_potrf_calls, factor_potrf_call_info, factor_getrf_calls, factor_getrf_call_info,
            factor_solves, factor_calls_in_device_memory
        );
        $crate::conformance_suite!(@pairs $make; pools_sharing_pages);
    };
    (@pairs $make:path; $($case:ident),*) => {
        $(
            // Two runtimes: the targets made twice.
            #[test]
            fn $case() {
                let (Some(first), Some(second)) = ($make(), $make()) else { return };
                for (f, s) in first.iter().zip(&second) {
                    if let Err(e) = $crate::runtimes::$case(f, s) {
                        panic!("[{}] {}: {}", f.name, stringify!($case), e);
                    }
                }
            }
        )*
    };
    (@tri $make:path; $($case:ident),*) => {
        $crate::conformance_suite!(@module tri $make; $($case),*);
    };
    (@sym $make:path; $($case:ident),*) => {
        $crate::conformance_suite!(@module sym_cases $make; $($case),*);
    };
    (@module $module:ident $make:path; $($case:ident),*) => {
        $(
            #[test]
            fn $case() {
                let Some(targets) = $make() else { return };
                for t in &targets {
                    if let Err(e) = $crate::$module::$case(t) {
                        panic!("[{}] {}: {}", t.name, stringify!($case), e);
                    }
                }
            }
        )*
    };
    (@cases $make:path; $($case:ident),*) => {
        $crate::conformance_suite!(@module cases $make; $($case),*);
    };
}
