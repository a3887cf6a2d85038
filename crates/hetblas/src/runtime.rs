//! `Runtime`: discovery of every compiled backend's devices, and the device pool they form.

use hetblas_core::{Backend, BackendStatus, Device, DevicePool, Error, Link, Result};
use hetblas_cpu::{emulated_node, CpuDevice, EmulatedConfig};
use std::ops::Deref;
use std::sync::Arc;

/// The devices of this node, ready for BLAS calls.
#[derive(Debug)]
pub struct Runtime {
    pool: DevicePool,
    statuses: Vec<BackendStatus>,
    profile_status: String,
}

/// Chooses what [`Runtime`] discovers.
#[derive(Debug, Clone, Default)]
pub struct RuntimeBuilder {
    emulated: Option<Vec<EmulatedConfig>>,
    without_cpu: bool,
    only: Option<Vec<String>>,
    no_profile: bool,
}

impl RuntimeBuilder {
    /// Adds `n` host-emulated devices (default configuration). `HETBLAS_EMULATED=n` does the same.
    pub fn emulated(mut self, n: usize) -> Self {
        self.emulated = Some(vec![EmulatedConfig::default(); n]);
        self
    }

    /// Adds emulated devices with explicit configurations.
    pub fn emulated_with(mut self, configs: Vec<EmulatedConfig>) -> Self {
        self.emulated = Some(configs);
        self
    }

    /// Leaves the CPU device out.
    pub fn without_cpu(mut self) -> Self {
        self.without_cpu = true;
        self
    }

    /// Discovers only these backends ("cpu", "cuda", "hip"). `HETBLAS_BACKENDS=cuda,cpu` does
    /// the same.
    pub fn only(mut self, backends: &[&str]) -> Self {
        self.only = Some(backends.iter().map(|s| s.to_string()).collect());
        self
    }

    /// Does not load the machine profile (calibration itself starts this way).
    pub fn without_profile(mut self) -> Self {
        self.no_profile = true;
        self
    }

    /// Runs discovery.
    ///
    /// # Errors
    /// Only when no device at all can be used (the CPU backend failed too), or when the
    /// environment asks for something malformed (`HETBLAS_EMULATED=x`).
    pub fn build(self) -> Result<Runtime> {
        let only = self.only.or_else(|| {
            std::env::var("HETBLAS_BACKENDS").ok().map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_ascii_lowercase())
                    .collect()
            })
        });
        let wanted = |name: &str| only.as_ref().is_none_or(|o| o.iter().any(|b| b == name));
        let mut devices: Vec<Arc<dyn Device>> = Vec::new();
        let mut links: Vec<Arc<dyn Link>> = Vec::new();
        let mut statuses = Vec::new();
        for backend in crate::runtime::accelerator_backends() {
            let name = backend.name();
            if !wanted(name) {
                statuses.push(BackendStatus {
                    backend: name.into(),
                    devices: 0,
                    reason: Some("not selected (HETBLAS_BACKENDS / builder)".into()),
                });
                continue;
            }
            match backend.discover() {
                Ok(d) if d.devices.is_empty() => statuses.push(BackendStatus {
                    backend: name.into(),
                    devices: 0,
                    reason: Some("no device found".into()),
                }),
                Ok(d) => {
                    statuses.push(BackendStatus {
                        backend: name.into(),
                        devices: d.devices.len(),
                        reason: None,
                    });
                    devices.extend(d.devices);
                    links.extend(d.links);
                }
                Err(e) => statuses.push(BackendStatus {
                    backend: name.into(),
                    devices: 0,
                    reason: Some(match e {
                        Error::Unavailable { reason, .. } => reason,
                        other => other.to_string(),
                    }),
                }),
            }
        }
        if !self.without_cpu && wanted("cpu") {
            let cpu = CpuDevice::new()?;
            statuses.push(BackendStatus {
                backend: "cpu".into(),
                devices: 1,
                reason: None,
            });
            devices.push(cpu);
        }
        let emulated = match self.emulated {
            Some(c) => c,
            None => match std::env::var("HETBLAS_EMULATED") {
                Ok(v) if !v.trim().is_empty() => {
                    let n: usize = v.trim().parse().map_err(|_| {
                        Error::InvalidInput(format!("HETBLAS_EMULATED={v:?} is not a count"))
                    })?;
                    vec![EmulatedConfig::default(); n]
                }
                _ => vec![],
            },
        };
        if !emulated.is_empty() {
            let blas = hetblas_cpu::choose_blas()?.blas;
            let node = emulated_node(&emulated, blas)?;
            statuses.push(BackendStatus {
                backend: "emulated".into(),
                devices: node.devices.len(),
                reason: None,
            });
            devices.extend(node.devices.into_iter().map(|d| d as Arc<dyn Device>));
            links.extend(node.links);
        }
        if devices.is_empty() {
            return Err(Error::Unavailable {
                backend: "all",
                reason: "no usable device (every backend is unavailable or deselected)".into(),
            });
        }
        let pool = DevicePool::new(devices, links)?;
        let profile_status = if self.no_profile {
            "profile not loaded (builder); built-in tile rule".to_string()
        } else {
            load_profile(&pool)
        };
        Ok(Runtime {
            pool,
            statuses,
            profile_status,
        })
    }
}

/// The accelerator backends compiled into this build (all of them, always; each decides at run
/// time whether it can work here).
pub(crate) fn accelerator_backends() -> Vec<Box<dyn Backend>> {
    vec![
        Box::new(hetblas_cuda::CudaBackend),
        Box::new(hetblas_hip::HipBackend),
    ]
}

/// Loads the profile at `profile::default_path()` when it describes exactly these devices.
/// Returns what happened, for `hetblas devices`.
fn load_profile(pool: &DevicePool) -> String {
    use hetblas_core::profile::{default_path, MachineProfile, ProfileError};
    let path = match default_path() {
        Ok(p) => p,
        Err(e) => return format!("no profile location ({e}); built-in tile rule"),
    };
    match MachineProfile::load(&path) {
        Ok(p) => match p.check_matches(pool.devices()) {
            Ok(()) => {
                let s = format!("calibrated profile {} ({})", path.display(), p.created);
                pool.set_profile(Some(Arc::new(p)));
                s
            }
            Err(e) => format!(
                "profile {} ignored: {e}; run `hetblas calibrate`; built-in tile rule",
                path.display()
            ),
        },
        Err(ProfileError::NotFound { .. }) => format!(
            "no profile at {} (run `hetblas calibrate`): built-in tile rule (T = max dim / 4, \
             power of two in [256, 4096])",
            path.display()
        ),
        Err(e) => format!(
            "profile {} unreadable: {e}; built-in tile rule",
            path.display()
        ),
    }
}

impl Runtime {
    /// Whether a calibrated profile is in use, and from where (or why not).
    pub fn profile_status(&self) -> &str {
        &self.profile_status
    }

    /// Discovers every backend's devices with the default configuration (see
    /// [`RuntimeBuilder`] for the environment variables it honours).
    pub fn discover() -> Result<Runtime> {
        RuntimeBuilder::default().build()
    }

    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// What each backend contributed, or why it did not.
    pub fn backends(&self) -> &[BackendStatus] {
        &self.statuses
    }

    /// The device pool (also reachable through `Deref`).
    pub fn pool(&self) -> &DevicePool {
        &self.pool
    }
}

impl Deref for Runtime {
    type Target = DevicePool;
    fn deref(&self) -> &DevicePool {
        &self.pool
    }
}
