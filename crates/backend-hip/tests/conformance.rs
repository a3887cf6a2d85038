//! The shared conformance suite on GPUs driven through HIP (skipped without one unless
//! HETBLAS_REQUIRE=hip): one GPU, and every GPU together when there are several.

use hetblas_conformance::{conformance_suite, gpu_targets, Target};
use hetblas_core::Backend;
use hetblas_hip::HipBackend;

fn targets() -> Option<Vec<Target>> {
    gpu_targets("hip", || HipBackend.discover())
}

conformance_suite!(targets);
