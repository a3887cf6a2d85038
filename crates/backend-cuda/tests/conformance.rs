//! The shared conformance suite on CUDA GPUs (skipped without a GPU unless
//! HETBLAS_REQUIRE=cuda): one GPU, and every GPU together when there are several.

use hetblas_conformance::{conformance_suite, gpu_targets, Target};
use hetblas_core::Backend;
use hetblas_cuda::CudaBackend;

fn targets() -> Option<Vec<Target>> {
    gpu_targets("cuda", || CudaBackend.discover())
}

conformance_suite!(targets);
