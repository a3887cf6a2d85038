//! `RuntimeBuilder`: which backends discovery asks, and the one loop that asks them.
//!
//! Every source of devices is a [`Backend`]: the GPU vendors, the CPU ([`CpuBackend`]) and the
//! host-emulated devices ([`EmulatedBackend`]). Each is asked in turn; one that cannot run here
//! says why, and the runtime is built from the others.

use crate::runtime::Runtime;
use hetblas_core::{Backend, BackendStatus, Device, DevicePool, Error, Link, Result};
use hetblas_cpu::{CpuBackend, EmulatedBackend, EmulatedConfig};
use std::sync::Arc;

/// The most host-emulated devices a runtime takes. Each device has its own queues and links to
/// the host and every other one (threads grow with the square of the count): 64 is far more
/// than any test of a multi-device plan needs.
pub const MAX_EMULATED: usize = 64;

/// Emulated devices asked for: a count (checked when building) or explicit configurations.
#[derive(Debug, Clone)]
enum Emulated {
    Count(usize),
    Configs(Vec<EmulatedConfig>),
}

/// Chooses what [`Runtime`] discovers.
#[derive(Debug, Clone, Default)]
pub struct RuntimeBuilder {
    emulated: Option<Emulated>,
    without_cpu: bool,
    only: Option<Vec<String>>,
    no_profile: bool,
}

impl RuntimeBuilder {
    /// Adds `n` host-emulated devices (default configuration). `HETBLAS_EMULATED=n` does the same.
    /// More than [`MAX_EMULATED`] makes [`build`](Self::build) fail.
    pub fn emulated(mut self, n: usize) -> Self {
        self.emulated = Some(Emulated::Count(n));
        self
    }

    /// Adds emulated devices with explicit configurations.
    pub fn emulated_with(mut self, configs: Vec<EmulatedConfig>) -> Self {
        self.emulated = Some(Emulated::Configs(configs));
        self
    }

    /// Leaves the CPU device out.
    pub fn without_cpu(mut self) -> Self {
        self.without_cpu = true;
        self
    }

    /// Discovers only these backends ("cpu", "cuda", "hip"). `HETBLAS_BACKENDS=cuda,cpu` does
    /// the same. Emulated devices, being asked for explicitly, are added either way.
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
    /// Only when no device at all can be used (the CPU backend failed too), when more than
    /// [`MAX_EMULATED`] emulated devices are asked for, or when the environment asks for
    /// something malformed (`HETBLAS_EMULATED=x`).
    pub fn build(self) -> Result<Runtime> {
        // An empty variable is no choice (as if unset), not a choice of no backend.
        let only = self.only.or_else(|| {
            std::env::var("HETBLAS_BACKENDS")
                .ok()
                .filter(|v| !v.trim().is_empty())
                .map(|v| {
                    v.split(',')
                        .map(|s| s.trim().to_ascii_lowercase())
                        .collect()
                })
        });
        let wanted = |name: &str| only.as_ref().is_none_or(|o| o.iter().any(|b| b == name));
        let emulated = match self.emulated {
            Some(Emulated::Configs(c)) => c,
            Some(Emulated::Count(n)) => emulated_configs(n)?,
            None => emulated_from_env()?,
        };

        // (backend, left out by the builder): the accelerators, then the CPU, then the
        // emulated devices, which is the order of the pool's device indices.
        let mut backends: Vec<(Box<dyn Backend>, bool)> = accelerator_backends()
            .into_iter()
            .map(|b| {
                let out = !wanted(b.name());
                (b, out)
            })
            .collect();
        backends.push((Box::new(CpuBackend), self.without_cpu || !wanted("cpu")));
        if !emulated.is_empty() {
            backends.push((Box::new(EmulatedBackend::new(emulated)), false));
        }

        let mut devices: Vec<Arc<dyn Device>> = Vec::new();
        let mut links: Vec<Arc<dyn Link>> = Vec::new();
        let mut statuses = Vec::new();
        for (backend, left_out) in backends {
            let name = backend.name();
            let status = |devices: usize, reason: Option<String>| BackendStatus {
                backend: name.into(),
                devices,
                reason,
            };
            if left_out {
                statuses.push(status(
                    0,
                    Some("not selected (HETBLAS_BACKENDS / builder)".into()),
                ));
                continue;
            }
            match backend.discover() {
                Ok(d) if d.devices.is_empty() => {
                    statuses.push(status(0, Some("no device found".into())))
                }
                Ok(d) => {
                    statuses.push(status(d.devices.len(), None));
                    devices.extend(d.devices);
                    links.extend(d.links);
                }
                Err(e) => statuses.push(status(
                    0,
                    Some(match e {
                        Error::Unavailable { reason, .. } => reason,
                        other => other.to_string(),
                    }),
                )),
            }
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
        Ok(Runtime::from_parts(pool, statuses, profile_status))
    }
}

/// The accelerator backends compiled into this build (all of them, always; each decides at run
/// time whether it can work here). A new GPU vendor is registered here.
pub(crate) fn accelerator_backends() -> Vec<Box<dyn Backend>> {
    vec![
        Box::new(hetblas_cuda::CudaBackend),
        Box::new(hetblas_hip::HipBackend),
    ]
}

/// The emulated devices `HETBLAS_EMULATED=n` asks for (none when it is unset or empty).
fn emulated_from_env() -> Result<Vec<EmulatedConfig>> {
    match std::env::var("HETBLAS_EMULATED") {
        Ok(v) if !v.trim().is_empty() => {
            let n: usize = v.trim().parse().map_err(|_| {
                Error::InvalidInput(format!("HETBLAS_EMULATED={v:?} is not a count"))
            })?;
            emulated_configs(n)
        }
        _ => Ok(vec![]),
    }
}

/// `n` default emulated devices, at most [`MAX_EMULATED`].
fn emulated_configs(n: usize) -> Result<Vec<EmulatedConfig>> {
    if n > MAX_EMULATED {
        return Err(Error::InvalidInput(format!(
            "{n} emulated devices asked for; at most {MAX_EMULATED}"
        )));
    }
    Ok(vec![EmulatedConfig::default(); n])
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
