//! `RuntimeBuilder`: which backends discovery asks, told what by the [`Settings`], and the one
//! loop that asks them.
//!
//! Every source of devices is a [`Backend`]: the GPU vendors, the CPU ([`CpuBackend`]) and the
//! host-emulated devices ([`EmulatedBackend`]). Each is asked in turn; one that cannot run here
//! says why, and the runtime is built from the others. [`RuntimeBuilder::build`] refuses what
//! the settings got wrong (a bad value, a host BLAS named that does not load, a corrupt
//! profile); [`RuntimeBuilder::survey`] reports it and carries on, for `hetblas devices`.

use crate::runtime::Runtime;
use crate::settings::{setting_error, Settings};
use hetblas_core::{Backend, BackendStatus, Device, DevicePool, Error, Link, Result};
use hetblas_cpu::{BlasLibrary, CpuBackend, EmulatedBackend, EmulatedConfig};
use hetblas_gpu::PinPolicy;
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
    settings: Option<Settings>,
    pin: PinPolicy,
}

/// What discovery found, whether or not a runtime could be built from it
/// ([`RuntimeBuilder::survey`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct Survey {
    /// The settings discovery used: the defaults in place of the values that cannot be used.
    pub settings: Settings,
    /// The values that cannot be used ([`Error::Setting`], one per variable).
    pub setting_errors: Vec<Error>,
    /// What each backend contributed, or why it did not.
    pub backends: Vec<BackendStatus>,
    /// The machine profile: in use, absent (and why), or not usable.
    pub profile_status: String,
    /// The runtime, or why none could be built (no device at all, too many emulated ones).
    pub runtime: Result<Runtime>,
}

/// What the backends gave.
struct Found {
    devices: Vec<Arc<dyn Device>>,
    links: Vec<Arc<dyn Link>>,
    statuses: Vec<BackendStatus>,
    /// Backends absent because of a setting's value (the host BLAS named does not load).
    setting_failures: Vec<Error>,
}

impl RuntimeBuilder {
    /// Adds `n` host-emulated devices (default configuration), in place of `HETBLAS_EMULATED`.
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

    /// Discovers only these backends ("cpu", "cuda", "hip"), in place of `HETBLAS_BACKENDS`.
    /// Emulated devices, being asked for explicitly, are added either way.
    pub fn only(mut self, backends: &[&str]) -> Self {
        self.only = Some(backends.iter().map(|s| s.to_string()).collect());
        self
    }

    /// Does not load the machine profile (calibration itself starts this way).
    pub fn without_profile(mut self) -> Self {
        self.no_profile = true;
        self
    }

    /// Uses `settings` instead of reading the environment ([`Settings::from_env`]).
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = Some(settings);
        self
    }

    /// How the GPUs prepare host memory for their copies ([`PinPolicy::Cache`] unless told):
    /// [`PinPolicy::Staging`] never page-locks the caller's buffers.
    pub fn pin_policy(mut self, policy: PinPolicy) -> Self {
        self.pin = policy;
        self
    }

    /// Runs discovery.
    ///
    /// # Errors
    /// - [`Error::Setting`] when a setting holds a value that cannot be used (checked before
    ///   any backend is asked), or when the host BLAS `HETBLAS_CBLAS` names cannot be loaded;
    /// - `Profile` when the profile file exists but cannot be read or is not a profile
    ///   (corrupt: a profile steers every decision, so a calibrated machine must not run on
    ///   the built-in rules without a word; `hetblas calibrate` rewrites it). A profile of
    ///   another format version or of other devices is no error: the runtime says it is not
    ///   used ([`Runtime::profile_status`]) and the built-in rules decide;
    /// - `InvalidInput` when more than [`MAX_EMULATED`] emulated devices are asked for;
    /// - `Unavailable` when no device at all can be used, with each backend's reason.
    pub fn build(self) -> Result<Runtime> {
        let (settings, mut errors) = self.read_settings();
        if !errors.is_empty() {
            return Err(errors.swap_remove(0));
        }
        let emulated = self.emulated_configs(&settings)?;
        let mut found = self.discover(&settings, emulated);
        if !found.setting_failures.is_empty() {
            return Err(found.setting_failures.swap_remove(0));
        }
        let pool = pool_of(found.devices, found.links, &found.statuses)?;
        let profile_status = self.load_profile(&pool, &settings)?;
        for note in &settings.retired {
            tracing::warn!("{note}");
        }
        Ok(Runtime::from_parts(
            pool,
            found.statuses,
            profile_status,
            settings,
        ))
    }

    /// Runs discovery and reports what it found, never failing: settings that cannot be used
    /// are reported and their defaults taken, a backend they make fail is reported absent
    /// with why, a profile that cannot be used is reported and not used.
    pub fn survey(self) -> Survey {
        let (settings, setting_errors) = self.read_settings();
        let emulated = match self.emulated_configs(&settings) {
            Ok(e) => e,
            Err(e) => {
                return Survey {
                    settings,
                    setting_errors,
                    backends: Vec::new(),
                    profile_status: "not loaded".into(),
                    runtime: Err(e),
                }
            }
        };
        let found = self.discover(&settings, emulated);
        let statuses = found.statuses.clone();
        let (runtime, profile_status) = match pool_of(found.devices, found.links, &statuses) {
            Ok(pool) => {
                let status = self
                    .load_profile(&pool, &settings)
                    .unwrap_or_else(|e| format!("{e}; built-in tile rule"));
                let rt =
                    Runtime::from_parts(pool, statuses.clone(), status.clone(), settings.clone());
                (Ok(rt), status)
            }
            Err(e) => (Err(e), "not loaded (no device)".into()),
        };
        Survey {
            settings,
            setting_errors,
            backends: statuses,
            profile_status,
            runtime,
        }
    }

    /// The builder's settings, or the environment's (defaults in place of bad values, and the
    /// errors).
    fn read_settings(&self) -> (Settings, Vec<Error>) {
        match &self.settings {
            Some(s) => (s.clone(), Vec::new()),
            None => Settings::read_env(),
        }
    }

    /// The emulated devices asked for: the builder's, else `HETBLAS_EMULATED`'s.
    fn emulated_configs(&self, settings: &Settings) -> Result<Vec<EmulatedConfig>> {
        match &self.emulated {
            Some(Emulated::Configs(c)) => Ok(c.clone()),
            Some(Emulated::Count(n)) => emulated_configs(*n),
            None => emulated_configs(settings.emulated),
        }
    }

    /// Asks every backend (those deselected only for the reason), in the order of the pool's
    /// device indices: the accelerators, the CPU, the emulated devices.
    fn discover(&self, settings: &Settings, emulated: Vec<EmulatedConfig>) -> Found {
        let deselected = |name: &str| -> Option<String> {
            if let Some(only) = &self.only {
                return (!only.iter().any(|b| b == name))
                    .then(|| "not selected (RuntimeBuilder::only)".to_string());
            }
            let only = settings.backends.as_ref()?;
            (!only.iter().any(|b| b == name))
                .then(|| format!("not selected (HETBLAS_BACKENDS={})", only.join(",")))
        };
        let mut backends: Vec<(Box<dyn Backend>, Option<String>)> =
            accelerator_backends(settings, self.pin)
                .into_iter()
                .map(|b| {
                    let out = deselected(b.name());
                    (b, out)
                })
                .collect();
        let cpu_out = if self.without_cpu {
            Some("left out (RuntimeBuilder::without_cpu)".to_string())
        } else {
            deselected("cpu")
        };
        let cpu = CpuBackend {
            library: settings.host_blas.clone(),
        };
        backends.push((Box::new(cpu), cpu_out));
        if !emulated.is_empty() {
            let mut e = EmulatedBackend::new(emulated);
            e.library = settings.host_blas.clone();
            e.faults = settings.faults.clone();
            backends.push((Box::new(e), None));
        }

        let mut found = Found {
            devices: Vec::new(),
            links: Vec::new(),
            statuses: Vec::new(),
            setting_failures: Vec::new(),
        };
        for (backend, left_out) in backends {
            let name = backend.name();
            let status = |devices: usize, reason: Option<String>| BackendStatus {
                backend: name.into(),
                devices,
                reason,
            };
            if let Some(why) = left_out {
                found.statuses.push(status(0, Some(why)));
                continue;
            }
            match backend.discover() {
                Ok(d) if d.devices.is_empty() => found
                    .statuses
                    .push(status(0, Some("no device found".into()))),
                Ok(d) => {
                    found.statuses.push(status(d.devices.len(), None));
                    found.devices.extend(d.devices);
                    found.links.extend(d.links);
                }
                Err(e) => {
                    let reason = match e {
                        Error::Unavailable { reason, .. } => reason,
                        other => other.to_string(),
                    };
                    // The CPU and the emulated devices compute with the host BLAS: one the
                    // user named that does not load is the setting's fault, said as such.
                    let named = match &settings.host_blas {
                        BlasLibrary::Path(p) if name == "cpu" || name == "emulated" => Some(p),
                        _ => None,
                    };
                    let reason = match named {
                        Some(p) => {
                            let e = setting_error(
                                "HETBLAS_CBLAS",
                                &p.display().to_string(),
                                format!("the host BLAS cannot be used: {reason}"),
                            );
                            let text = e.to_string();
                            found.setting_failures.push(e);
                            text
                        }
                        None => reason,
                    };
                    found.statuses.push(status(0, Some(reason)));
                }
            }
        }
        found
    }

    /// Loads the profile at the settings' location when it describes exactly these devices.
    /// Returns what happened, for `hetblas devices`.
    ///
    /// # Errors
    /// `Profile` when the file exists but cannot be read or is not a profile (see
    /// [`RuntimeBuilder::build`]).
    fn load_profile(&self, pool: &DevicePool, settings: &Settings) -> Result<String> {
        use hetblas_core::profile::{MachineProfile, ProfileError};
        if self.no_profile {
            return Ok("profile not loaded (builder); built-in tile rule".to_string());
        }
        let Some(path) = &settings.profile else {
            return Ok(format!(
                "no profile location ({}); built-in tile rule",
                ProfileError::NoLocation
            ));
        };
        match MachineProfile::load(path) {
            Ok(p) => match p.check_matches(pool.devices()) {
                Ok(()) => {
                    let s = format!("calibrated profile {} ({})", path.display(), p.created);
                    pool.set_profile(Some(Arc::new(p)));
                    Ok(s)
                }
                Err(e) => Ok(format!(
                    "profile {} ignored: {e}; run `hetblas calibrate`; built-in tile rule",
                    path.display()
                )),
            },
            Err(ProfileError::NotFound { .. }) => Ok(format!(
                "no profile at {} (run `hetblas calibrate`): built-in tile rule (T = max dim / \
                 4, power of two in [256, 4096])",
                path.display()
            )),
            Err(e @ ProfileError::Version { .. }) => {
                tracing::warn!("{e}; built-in tile rule");
                Ok(format!("profile not used: {e}; built-in tile rule"))
            }
            Err(e) => Err(Error::Profile(format!(
                "{e} (run `hetblas calibrate` to rewrite it, or remove it)"
            ))),
        }
    }
}

/// The pool of what was found.
///
/// # Errors
/// `Unavailable` when nothing was, with each backend's reason.
fn pool_of(
    devices: Vec<Arc<dyn Device>>,
    links: Vec<Arc<dyn Link>>,
    statuses: &[BackendStatus],
) -> Result<DevicePool> {
    if devices.is_empty() {
        let why: Vec<String> = statuses
            .iter()
            .map(|s| {
                format!(
                    "{}: {}",
                    s.backend,
                    s.reason.as_deref().unwrap_or("no device")
                )
            })
            .collect();
        return Err(Error::Unavailable {
            backend: "all",
            reason: format!("no usable device ({})", why.join("; ")),
        });
    }
    DevicePool::new(devices, links)
}

/// The accelerator backends compiled into this build (all of them, always; each decides at run
/// time whether it can work here), told the devices, faults and pin policy. A new GPU vendor
/// is registered here.
fn accelerator_backends(settings: &Settings, pin: PinPolicy) -> Vec<Box<dyn Backend>> {
    let mut cuda = hetblas_cuda::CudaBackend;
    cuda.devices = settings.cuda_devices.clone();
    cuda.faults = settings.faults.clone();
    cuda.pin = pin;
    let mut hip = hetblas_hip::HipBackend;
    hip.devices = settings.hip_devices.clone();
    hip.faults = settings.faults.clone();
    hip.pin = pin;
    vec![Box::new(cuda), Box::new(hip)]
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
