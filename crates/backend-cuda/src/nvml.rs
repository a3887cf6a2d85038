//! Power and energy of NVIDIA GPUs through NVML (nvml-wrapper, which loads
//! `libnvidia-ml.so.1` at run time): [`NvmlMeter::open`] reports why it cannot measure (no
//! driver, no library) instead of failing, so hetblas runs the same without it.
//!
//! Devices are matched by ordinal: hetblas's `cuda:i` is CUDA ordinal `i` (or the i-th of the
//! ordinals the CUDA backend takes, `HETBLAS_CUDA_DEVICES`), which is NVML index
//! `CUDA_VISIBLE_DEVICES[ordinal]` when the driver's variable lists indices, else the ordinal
//! itself (CUDA orders identical GPUs, like the H200s of one node, by PCI bus as NVML does).

use hetblas_core::energy::meter::PowerMeter;
use nvml_wrapper::Nvml;

/// The GPUs NVML can measure.
pub struct NvmlMeter {
    nvml: Nvml,
    /// (hetblas label, NVML index).
    devices: Vec<(String, u32)>,
}

impl NvmlMeter {
    /// NVML with the GPUs it sees (of those, the CUDA ordinals `ordinals` when given: the CUDA
    /// backend's [`hetblas_gpu::GpuBackend::devices`]), or why there is none.
    ///
    /// # Errors
    /// A sentence: NVML not loadable, not initialised, or without devices.
    pub fn open(ordinals: Option<&[i32]>) -> Result<NvmlMeter, String> {
        let nvml = Nvml::builder()
            .lib_path(std::ffi::OsStr::new("libnvidia-ml.so.1"))
            .init()
            .or_else(|_| Nvml::init())
            .map_err(|e| format!("NVML unavailable: {e}"))?;
        let count = nvml
            .device_count()
            .map_err(|e| format!("NVML: no device count: {e}"))?;
        let visible: Option<Vec<u32>> = std::env::var("CUDA_VISIBLE_DEVICES")
            .ok()
            .and_then(|v| v.split(',').map(|s| s.trim().parse().ok()).collect());
        let filter: Option<Vec<u32>> =
            ordinals.map(|f| f.iter().filter_map(|&x| u32::try_from(x).ok()).collect());
        let ordinals: Vec<u32> = match (&filter, &visible) {
            (Some(f), _) => f.clone(),
            (None, Some(v)) => (0..v.len() as u32).collect(),
            (None, None) => (0..count).collect(),
        };
        let devices: Vec<(String, u32)> = ordinals
            .iter()
            .enumerate()
            .filter_map(|(i, &ord)| {
                let index = match &visible {
                    Some(v) => *v.get(ord as usize)?,
                    None => ord,
                };
                (index < count).then(|| (format!("cuda:{i}"), index))
            })
            .collect();
        if devices.is_empty() {
            return Err("NVML sees no GPU".into());
        }
        Ok(NvmlMeter { nvml, devices })
    }

    fn index(&self, label: &str) -> Option<u32> {
        self.devices.iter().find(|d| d.0 == label).map(|d| d.1)
    }
}

impl PowerMeter for NvmlMeter {
    fn name(&self) -> &str {
        "nvml"
    }
    fn devices(&self) -> Vec<String> {
        self.devices.iter().map(|d| d.0.clone()).collect()
    }
    fn power_w(&self, label: &str) -> Option<f64> {
        let d = self.nvml.device_by_index(self.index(label)?).ok()?;
        d.power_usage().ok().map(|mw| f64::from(mw) / 1e3)
    }
    fn energy_j(&self, label: &str) -> Option<f64> {
        let d = self.nvml.device_by_index(self.index(label)?).ok()?;
        d.total_energy_consumption().ok().map(|mj| mj as f64 / 1e3)
    }
}
