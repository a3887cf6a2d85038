//! The shared conformance suite over the GPU layer, on a runtime faked in host memory: every
//! generic path (planning onto GPU devices, links, staging, registration, kernels, events)
//! runs on CI, one device and two with peer links.

mod fake;

use fake::FakeBackend;
use hetblas_conformance::{conformance_suite, gpu_targets, Target};
use hetblas_core::Backend;

fn targets() -> Option<Vec<Target>> {
    gpu_targets("fake", || FakeBackend::new().discover())
}

conformance_suite!(targets);
