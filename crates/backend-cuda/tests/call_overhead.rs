//! The call overhead measured through a pool of the CUDA GPUs: the shared check of
//! [`hetblas_conformance::call_overhead`] (quick calibration, the measurement, and the model
//! with it against fresh calls).

use hetblas_core::DevicePool;
use hetblas_cuda::CudaBackend;

#[test]
fn each_gpus_call_overhead_is_measured_and_the_model_meets_its_calls() {
    let Some(d) = hetblas_conformance::discovered_or_skip("cuda", CudaBackend.discover_gpus())
    else {
        return;
    };
    let d = d.into_discovery();
    let pool = DevicePool::new(d.devices, d.links).expect("pool");
    hetblas_conformance::call_overhead::check_call_overhead(&pool, 0.25);
}
