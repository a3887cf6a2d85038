//! The power meters of this node: NVML for NVIDIA GPUs, RAPL for the CPU where readable.
//! Each is optional; [`power_meters`] says why one is absent.

use hetblas_core::energy::meter::PowerMeter;
use std::sync::Arc;

/// The meters that work here, and why each other one does not. `cpu_label` names the CPU
/// device RAPL measures ("cpu:0"); `cuda_devices` are the CUDA ordinals the runtime took
/// ([`crate::Settings::cuda_devices`]).
pub fn power_meters(
    cpu_label: &str,
    cuda_devices: Option<&[i32]>,
) -> (Vec<Arc<dyn PowerMeter>>, Vec<String>) {
    let mut meters: Vec<Arc<dyn PowerMeter>> = Vec::new();
    let mut absent = Vec::new();
    match hetblas_cuda::nvml::NvmlMeter::open(cuda_devices) {
        Ok(m) => meters.push(Arc::new(m)),
        Err(why) => absent.push(why),
    }
    match hetblas_cpu::rapl::RaplMeter::open(cpu_label) {
        Ok(m) => meters.push(Arc::new(m)),
        Err(why) => absent.push(why),
    }
    (meters, absent)
}
