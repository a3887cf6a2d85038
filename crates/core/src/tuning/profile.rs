//! The machine profile: what calibration measured on this machine (links and devices), as
//! versioned JSON keyed by the devices' [`MachineProfile::fingerprint`].
//!
//! Location ([`default_path_with`]): `$HETBLAS_PROFILE` if set, else
//! `$XDG_CACHE_HOME/hetblas/profile.json`, else `$HOME/.cache/hetblas/profile.json`.

use crate::device::Device;
use crate::error::Error;
use crate::link::LinkKind;
use crate::model::exec::ExecTable;
use crate::model::link::LinkModel;
use crate::scalar::DType;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The profile format this hetblas writes and reads.
pub const PROFILE_VERSION: u32 = 1;

/// The label of host memory in link profiles.
pub const HOST_LABEL: &str = "host";

/// Why a profile could not be found, read, written or used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileError {
    #[error("no profile at {path}")]
    NotFound { path: String },
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    #[error("cannot write {path}: {message}")]
    Write { path: String, message: String },
    #[error("{path} is not a valid profile: {message}")]
    Parse { path: String, message: String },
    #[error(
        "{path} has profile version {found}; this hetblas reads version {supported} (recalibrate)"
    )]
    Version {
        path: String,
        found: u64,
        supported: u32,
    },
    #[error("no profile location: set HETBLAS_PROFILE, XDG_CACHE_HOME or HOME")]
    NoLocation,
    #[error("profile is for another machine (fingerprint {profile}, this machine {machine}); recalibrate")]
    Mismatch { profile: String, machine: String },
}

impl From<ProfileError> for Error {
    fn from(e: ProfileError) -> Self {
        Error::Profile(e.to_string())
    }
}

/// Measured GEMM times of one dtype on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GemmTimes {
    pub dtype: DType,
    /// `(T, seconds)` of a square `T x T x T` GEMM, ascending T.
    pub times: Vec<(usize, f64)>,
}

/// What calibration measured on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceProfile {
    /// "cuda:0" ([`crate::DeviceInfo::label`]).
    pub label: String,
    /// The device's name ("NVIDIA H200").
    pub name: String,
    /// Backend name ("cuda", "cpu", ...).
    pub backend: String,
    pub memory_bytes: u64,
    #[serde(default)]
    pub gemm: Vec<GemmTimes>,
    /// Per dtype: how much longer a tile product takes while the device's host links copy in
    /// both directions (>= 1; absent: not measured).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gemm_under_dma: Vec<(DType, f64)>,
    /// Per dtype: how much longer host->device copies take while tile products of that dtype
    /// run (>= 1; absent: not measured): the products' memory traffic competes with DMA.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copy_under_gemm: Vec<(DType, f64)>,
}

impl DeviceProfile {
    /// The measured `(T, seconds)` points of a dtype, if any.
    pub fn gemm_times(&self, dtype: DType) -> Option<&[(usize, f64)]> {
        self.gemm
            .iter()
            .find(|g| g.dtype == dtype)
            .map(|g| g.times.as_slice())
    }

    /// The interpolating execution table of a dtype; `None` when it was not measured (or the
    /// stored points are unusable). An unmeasured complex dtype is modelled from the real type
    /// of its precision: four real multiply-adds a complex one, at the same flop rate.
    pub fn exec_table(&self, dtype: DType) -> Option<ExecTable> {
        self.exec_table_measured(dtype).or_else(|| {
            let real = self.exec_table_measured(dtype.real())?;
            if !dtype.is_complex() {
                return None;
            }
            let times = real.points().iter().map(|&(t, s)| (t, 4.0 * s));
            ExecTable::new(dtype, times).ok()
        })
    }

    /// The execution table of a dtype only when it was measured.
    pub fn exec_table_measured(&self, dtype: DType) -> Option<ExecTable> {
        ExecTable::new(dtype, self.gemm_times(dtype)?.iter().copied()).ok()
    }

    /// The slowdown of host->device copies while products of `dtype` run (see `per_dtype`).
    pub fn copy_slowdown_under_gemm(&self, dtype: DType) -> f64 {
        per_dtype(&self.copy_under_gemm, dtype)
    }

    /// The slowdown of a tile product under DMA traffic (see `per_dtype`).
    pub fn gemm_slowdown_under_dma(&self, dtype: DType) -> f64 {
        per_dtype(&self.gemm_under_dma, dtype)
    }
}

/// The factor of `dtype` in a per-dtype list, falling back to its real type, then to 1.
fn per_dtype(list: &[(DType, f64)], dtype: DType) -> f64 {
    let find = |d: DType| list.iter().find(|(x, _)| *x == d).map(|x| x.1.max(1.0));
    find(dtype).or_else(|| find(dtype.real())).unwrap_or(1.0)
}

/// What calibration measured on one directed link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkProfile {
    /// The link's name ("host->cuda0").
    pub name: String,
    /// Labels of the source and destination memories ([`HOST_LABEL`] or a device label).
    pub src_label: String,
    pub dst_label: String,
    pub kind: LinkKind,
    /// Fitted latency `t_i` (s).
    pub latency_s: f64,
    /// Fitted bandwidth `1/t_b` (bytes/s).
    pub bytes_per_sec: f64,
    /// Slowdown while the opposite direction is busy (1.0 when unmeasured).
    pub bid_slowdown: f64,
    /// Slowdown while another link (by name) is busy.
    #[serde(default)]
    pub slowdown_under: Vec<(String, f64)>,
    /// The `(bytes, seconds)` points the fit was made from.
    #[serde(default)]
    pub samples: Vec<(usize, f64)>,
    /// Host links: `(bytes per column, bytes per second)` of 2D copies of tiles that are
    /// columns of a larger host matrix, by column length.
    #[serde(default)]
    pub strided: Vec<(usize, f64)>,
    /// The same at a wider host pitch ([`crate::model::link::WIDE_PITCH`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub strided_wide: Vec<(usize, f64)>,
    /// The strided table measured while the device computes (what a pipeline's copies see);
    /// when present the model uses it for every 2D tile copy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub strided_busy: Vec<(usize, f64)>,
    /// The strided table at a near host pitch ([`crate::model::link::NEAR_PITCH`]), for
    /// columns shorter than that pitch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub strided_near: Vec<(usize, f64)>,
    /// The same while the device computes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub strided_near_busy: Vec<(usize, f64)>,
    /// Host links: slowdown of those 2D tile copies while the opposite direction runs the same;
    /// where measured it replaces `bid_slowdown` (taken on contiguous copies) for tile copies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strided_bid_slowdown: Option<f64>,
    /// Device->host links: write-backs into a fresh host output, which the backend stages
    /// rather than page-locks ([`StagedOut`]); `None` where not measured or not staged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staged_out: Option<StagedOut>,
}

/// Write-backs into a fresh host output (NumPy's `a @ b`), which its backend stages rather than
/// page-locks: each tile is DMA'd into a pinned buffer, then copied out by host threads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StagedOut {
    pub bytes_per_sec: f64,
    /// What each copy-out costs beyond its bytes (its host function, the copy threads' wake).
    pub per_copy_s: f64,
}

impl StagedOut {
    /// Seconds of the copy-out of `bytes`.
    pub fn copy_seconds(&self, bytes: usize) -> f64 {
        self.per_copy_s.max(0.0) + bytes as f64 / self.bytes_per_sec
    }

    /// Usable: a positive, finite speed.
    pub fn usable(self) -> Option<StagedOut> {
        (self.bytes_per_sec.is_finite() && self.bytes_per_sec > 0.0 && self.per_copy_s.is_finite())
            .then_some(self)
    }
}

impl LinkProfile {
    pub fn model(&self) -> LinkModel {
        LinkModel::new(self.latency_s, self.bytes_per_sec, self.bid_slowdown)
    }

    /// The link as tiles use it (contiguous model plus the strided table).
    pub fn tile_link(&self) -> crate::model::link::TileLink {
        let mut model = self.model();
        // Tiles cross as 2D copies: where the duplex of those was measured, it is theirs.
        if let Some(s) = self.strided_bid_slowdown.filter(|s| s.is_finite()) {
            model.bid_slowdown = s.max(1.0);
        }
        // Net of the per-copy latency first, then monotone (see `model::link::monotone`).
        let net = |t: &[(usize, f64)]| {
            // A profile edited by hand may hold unsorted or unusable entries.
            let mut t: Vec<(usize, f64)> = t
                .iter()
                .copied()
                .filter(|&(c, bps)| c > 0 && bps.is_finite() && bps > 0.0)
                .collect();
            t.sort_by_key(|&(c, _)| c);
            crate::model::link::monotone(
                &crate::model::link::without_latency(&t, model.latency_s, model.bytes_per_sec()),
                &crate::model::link::latency_bound(&t, model.latency_s),
            )
        };
        crate::model::link::TileLink {
            strided: net(&self.strided),
            wide: net(&self.strided_wide),
            busy: net(&self.strided_busy),
            near: net(&self.strided_near),
            near_busy: net(&self.strided_near_busy),
            // Not measured yet: every host->device link takes it (see `TileLink::busy_always`).
            busy_always: self.kind == LinkKind::HostToDevice,
            model,
        }
    }

    /// The slowdown while link `other` is busy (1.0 when not measured).
    pub fn slowdown_under(&self, other: &str) -> f64 {
        self.slowdown_under
            .iter()
            .find(|(n, _)| n == other)
            .map_or(1.0, |s| s.1)
    }
}

/// Everything calibration measured on a machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineProfile {
    /// Format version ([`PROFILE_VERSION`]).
    pub version: u32,
    /// When it was measured (RFC 3339, UTC).
    pub created: String,
    pub host: String,
    pub devices: Vec<DeviceProfile>,
    pub links: Vec<LinkProfile>,
    /// Host fold speed ([`crate::fold`]): bytes of C folded per second with the fold's threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_fold_bytes_per_sec: Option<f64>,
    /// The host fold speed calibration measured, where a re-check has since lowered
    /// `host_fold_bytes_per_sec` (a re-check raises it again up to this, never beyond).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_fold_calibrated_bytes_per_sec: Option<f64>,
    /// Power of the devices while busy and idle ([`crate::energy`]), where known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub power: Vec<crate::energy::DevicePower>,
    /// Per device label: the share of its GEMM rate that its TRSM/TRMM tiles reach (absent:
    /// [`crate::model::TRI_EFFICIENCY`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tri_efficiency: Vec<(String, f64)>,
    /// Per device label and factorization op: the share of its GEMM rate (at the op's tile)
    /// that the op reaches, where measured ([`crate::calibrate::measure_panels`]); absent ones are
    /// taken at [`crate::model::panel_efficiency`]'s defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub panel_efficiency: Vec<(String, crate::factor_kernel::FactorOp, f64)>,
    /// The calibration's phases and the seconds each took.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calibration_seconds: Vec<(String, f64)>,
}

impl MachineProfile {
    /// An empty profile of this machine, created now.
    pub fn new() -> MachineProfile {
        MachineProfile {
            version: PROFILE_VERSION,
            created: rfc3339_utc(SystemTime::now()),
            host: hostname(),
            devices: Vec::new(),
            links: Vec::new(),
            host_fold_bytes_per_sec: None,
            host_fold_calibrated_bytes_per_sec: None,
            power: Vec::new(),
            tri_efficiency: Vec::new(),
            panel_efficiency: Vec::new(),
            calibration_seconds: Vec::new(),
        }
    }

    /// The share of device `label`'s GEMM rate that its factorization op `op` reaches
    /// ([`MachineProfile::panel_efficiency`]).
    pub fn panel_efficiency_of(&self, label: &str, op: crate::factor_kernel::FactorOp) -> f64 {
        let backend = self.device(label).map_or("", |d| d.backend.as_str());
        self.panel_efficiency
            .iter()
            .find(|(l, o, _)| l == label && *o == op)
            .map_or_else(|| crate::model::panel_efficiency(backend, op), |e| e.2)
    }

    /// The share of device `label`'s GEMM rate that its TRSM/TRMM tiles reach
    /// ([`MachineProfile::tri_efficiency`]).
    pub fn tri_efficiency_of(&self, label: &str) -> f64 {
        self.tri_efficiency
            .iter()
            .find(|(l, _)| l == label)
            .map_or(crate::model::TRI_EFFICIENCY, |e| e.1)
    }

    /// Identifies the device set (labels, names, memory sizes); see [`fingerprint_of`].
    pub fn fingerprint(&self) -> String {
        fingerprint_of(
            self.devices
                .iter()
                .map(|d| (d.label.as_str(), d.name.as_str(), d.memory_bytes)),
        )
    }

    /// Whether the profile describes every one of these devices (same label, name and memory
    /// size); it may describe more.
    pub fn matches(&self, devices: &[Arc<dyn Device>]) -> bool {
        devices.iter().all(|d| {
            let i = d.info();
            self.device(&i.label())
                .is_some_and(|p| p.name == i.name && p.memory_bytes == i.memory_bytes)
        })
    }

    /// Like [`MachineProfile::matches`], as an error saying both fingerprints.
    ///
    /// # Errors
    /// [`ProfileError::Mismatch`] when a device is missing from the profile or differs.
    pub fn check_matches(&self, devices: &[Arc<dyn Device>]) -> Result<(), ProfileError> {
        if self.matches(devices) {
            Ok(())
        } else {
            Err(ProfileError::Mismatch {
                profile: self.fingerprint(),
                machine: fingerprint_devices(devices),
            })
        }
    }

    pub fn device(&self, label: &str) -> Option<&DeviceProfile> {
        self.devices.iter().find(|d| d.label == label)
    }

    pub fn link(&self, src_label: &str, dst_label: &str) -> Option<&LinkProfile> {
        self.links
            .iter()
            .find(|l| l.src_label == src_label && l.dst_label == dst_label)
    }

    /// The power of the device with this label: (busy W, idle W).
    pub fn power_of(&self, label: &str) -> Option<(f64, f64)> {
        self.power
            .iter()
            .find(|p| p.label == label)
            .map(|p| (p.busy_w, p.idle_w))
    }

    pub fn link_named(&self, name: &str) -> Option<&LinkProfile> {
        self.links.iter().find(|l| l.name == name)
    }

    /// The profile as pretty JSON.
    ///
    /// # Errors
    /// [`ProfileError::Write`] if serialisation fails.
    pub fn to_json(&self) -> Result<String, ProfileError> {
        serde_json::to_string_pretty(self).map_err(|e| ProfileError::Write {
            path: "<memory>".into(),
            message: e.to_string(),
        })
    }

    /// Parses a profile; `origin` names the source in errors.
    ///
    /// # Errors
    /// [`ProfileError::Version`] for another format version, [`ProfileError::Parse`] otherwise.
    pub fn from_json(text: &str, origin: &str) -> Result<MachineProfile, ProfileError> {
        let parse = |e: serde_json::Error| ProfileError::Parse {
            path: origin.to_string(),
            message: e.to_string(),
        };
        let v: serde_json::Value = serde_json::from_str(text).map_err(parse)?;
        let found = v
            .get("version")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| ProfileError::Parse {
                path: origin.to_string(),
                message: "no numeric \"version\" field".into(),
            })?;
        if found != u64::from(PROFILE_VERSION) {
            return Err(ProfileError::Version {
                path: origin.to_string(),
                found,
                supported: PROFILE_VERSION,
            });
        }
        serde_json::from_value(v).map_err(parse)
    }

    /// A profile recorded in `docs/profiles` (`name`, e.g. `nvidia-h200-x1.json`), for tests
    /// that decide on a real machine's figures without its devices.
    #[cfg(test)]
    pub(crate) fn recorded(name: &str) -> MachineProfile {
        let path = format!("{}/../../docs/profiles/{name}", env!("CARGO_MANIFEST_DIR"));
        MachineProfile::load(Path::new(&path)).unwrap()
    }

    /// Reads a profile file.
    ///
    /// # Errors
    /// [`ProfileError::NotFound`] when there is no file, `Read`, `Parse` or `Version` otherwise.
    pub fn load(path: &Path) -> Result<MachineProfile, ProfileError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ProfileError::NotFound {
                    path: shown.clone(),
                }
            } else {
                ProfileError::Read {
                    path: shown.clone(),
                    message: e.to_string(),
                }
            }
        })?;
        MachineProfile::from_json(&text, &shown)
    }

    /// Writes the profile atomically (a temporary file renamed over `path`), creating missing
    /// directories.
    ///
    /// # Errors
    /// [`ProfileError::Write`].
    pub fn save(&self, path: &Path) -> Result<(), ProfileError> {
        let shown = path.display().to_string();
        let werr = |e: std::io::Error| ProfileError::Write {
            path: shown.clone(),
            message: e.to_string(),
        };
        let json = self.to_json()?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir).map_err(werr)?;
        let file_name = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .ok_or_else(|| ProfileError::Write {
                path: shown.clone(),
                message: "not a file path".into(),
            })?;
        let tmp = dir.join(format!(".{file_name}.tmp.{}", std::process::id()));
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(json.as_bytes())?;
            f.write_all(b"\n")?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            werr(e)
        })
    }
}

impl Default for MachineProfile {
    fn default() -> Self {
        MachineProfile::new()
    }
}

/// A stable fingerprint of a device set, whatever its order: FNV-1a (64 bit) over the sorted
/// `label \t name \t memory_bytes` lines, as `"fnv1a64:<16 hex digits>"`.
pub fn fingerprint_of<'a>(devices: impl IntoIterator<Item = (&'a str, &'a str, u64)>) -> String {
    let mut lines: Vec<String> = devices
        .into_iter()
        .map(|(label, name, mem)| format!("{label}\t{name}\t{mem}\n"))
        .collect();
    lines.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in lines.iter().flat_map(|l| l.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("fnv1a64:{h:016x}")
}

/// The fingerprint of live devices.
pub fn fingerprint_devices(devices: &[Arc<dyn Device>]) -> String {
    let infos: Vec<(String, String, u64)> = devices
        .iter()
        .map(|d| {
            let i = d.info();
            (i.label(), i.name.clone(), i.memory_bytes)
        })
        .collect();
    fingerprint_of(infos.iter().map(|(l, n, m)| (l.as_str(), n.as_str(), *m)))
}

/// Where the profile lives, given the value of each variable (`var`; the `hetblas` crate passes
/// the environment's): `$HETBLAS_PROFILE`, else `$XDG_CACHE_HOME/hetblas/profile.json`, else
/// `$HOME/.cache/hetblas/profile.json` (empty variables count as unset; a relative
/// `XDG_CACHE_HOME` is ignored, as the XDG spec says).
///
/// # Errors
/// [`ProfileError::NoLocation`] when none is set.
pub fn default_path_with(var: impl Fn(&str) -> Option<PathBuf>) -> Result<PathBuf, ProfileError> {
    let get = |k: &str| var(k).filter(|p| !p.as_os_str().is_empty());
    if let Some(p) = get("HETBLAS_PROFILE") {
        return Ok(p);
    }
    if let Some(x) = get("XDG_CACHE_HOME").filter(|p| p.is_absolute()) {
        return Ok(x.join("hetblas").join("profile.json"));
    }
    if let Some(h) = get("HOME") {
        return Ok(h.join(".cache").join("hetblas").join("profile.json"));
    }
    Err(ProfileError::NoLocation)
}

/// This machine's host name ("unknown" when it cannot be found).
pub fn hostname() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .find(|s| !s.is_empty())
        .or_else(system_hostname)
        .unwrap_or_else(|| "unknown".into())
}

/// The host name the system call gives, where there is no file to read it from.
#[cfg(unix)]
fn system_hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into the buffer it is given.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0)?;
    (r == 0 && end > 0).then(|| String::from_utf8_lossy(&buf[..end]).into_owned())
}

#[cfg(not(unix))]
fn system_hostname() -> Option<String> {
    None
}

/// `t` as RFC 3339 in UTC, to the second ("2024-05-01T12:34:56Z"). Times before 1970 print as
/// the epoch.
pub fn rfc3339_utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (the era arithmetic: 400-year eras
/// of 146097 days, years starting in March so the leap day is last).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sample() -> MachineProfile {
        let mut p = MachineProfile::new();
        p.devices.push(DeviceProfile {
            gemm_under_dma: Vec::new(),
            copy_under_gemm: Vec::new(),
            label: "cuda:0".into(),
            name: "NVIDIA H200".into(),
            backend: "cuda".into(),
            memory_bytes: 150_000_000_000,
            gemm: vec![
                GemmTimes {
                    dtype: DType::F64,
                    times: vec![(1024, 4e-4), (2048, 2.6e-3), (4096, 2e-2)],
                },
                GemmTimes {
                    dtype: DType::F32,
                    times: vec![(1024, 2e-4)],
                },
            ],
        });
        p.links.push(LinkProfile {
            strided_bid_slowdown: None,
            staged_out: None,
            strided_wide: Vec::new(),
            strided_busy: Vec::new(),
            strided_near: Vec::new(),
            strided_near_busy: Vec::new(),
            name: "host->cuda0".into(),
            src_label: HOST_LABEL.into(),
            dst_label: "cuda:0".into(),
            kind: LinkKind::HostToDevice,
            latency_s: 2.5e-6,
            bytes_per_sec: 5.5e10,
            bid_slowdown: 1.1,
            slowdown_under: vec![("cuda0->host".into(), 1.1), ("host->cuda1".into(), 1.6)],
            samples: vec![(4096, 3e-6), (1 << 20, 2.2e-5)],
            strided: vec![],
        });
        p.links.push(LinkProfile {
            strided_bid_slowdown: None,
            staged_out: None,
            strided_wide: Vec::new(),
            strided_busy: Vec::new(),
            strided_near: Vec::new(),
            strided_near_busy: Vec::new(),
            name: "cuda0->host".into(),
            src_label: "cuda:0".into(),
            dst_label: HOST_LABEL.into(),
            kind: LinkKind::DeviceToHost,
            latency_s: 3e-6,
            bytes_per_sec: 5.3e10,
            bid_slowdown: 1.2,
            slowdown_under: vec![],
            samples: vec![],
            strided: vec![],
        });
        p
    }

    fn temp_path(tag: &str) -> PathBuf {
        std::env::temp_dir()
            .join(format!("hetblas-profile-test-{}-{tag}", std::process::id()))
            .join("sub")
            .join("profile.json")
    }

    /// Tile copies take the duplex slowdown of 2D copies where it was measured, monotone
    /// strided tables, and host->device copies the busy speed whatever runs beside them.
    #[test]
    fn tile_links_take_the_2d_duplex_monotone_tables_and_busy_host_to_device() {
        let p = sample();
        let mut h2d = p.links[0].clone();
        h2d.strided_bid_slowdown = Some(1.05);
        h2d.strided_busy = vec![(8192, 33e9), (12288, 18e9), (32768, 48e9)];
        let t = h2d.tile_link();
        assert_eq!(t.model.bid_slowdown, 1.05);
        assert!(t.busy_always);
        assert!(t.busy.windows(2).all(|w| w[1].1 >= w[0].1));
        let mut d2h = p.links[1].clone();
        d2h.strided_bid_slowdown = Some(1.3);
        let t = d2h.tile_link();
        assert_eq!(t.model.bid_slowdown, 1.3);
        assert!(!t.busy_always);
        // Without a 2D measurement the contiguous duplex stands.
        assert_eq!(p.links[1].tile_link().model.bid_slowdown, 1.2);
    }

    /// A hand-edited table (unsorted, a NaN, a zero rate, a duplex below 1) prices as the clean
    /// one: bad entries dropped, the rest sorted, the duplex at least 1.
    #[test]
    fn hand_edited_tables_price_as_clean_ones() {
        let p = sample();
        let mut clean = p.links[0].clone();
        clean.strided_busy = vec![(8192, 33e9), (16384, 40e9), (32768, 48e9)];
        let mut edited = clean.clone();
        edited.strided_busy = vec![
            (32768, 48e9),
            (4096, f64::NAN),
            (8192, 33e9),
            (12288, 0.0),
            (16384, 40e9),
        ];
        edited.strided_bid_slowdown = Some(0.5);
        let (c, e) = (clean.tile_link(), edited.tile_link());
        assert_eq!(c.busy, e.busy);
        assert_eq!(e.model.bid_slowdown, 1.0);
    }

    #[test]
    fn round_trip_through_file() {
        let p = sample();
        let path = temp_path("rt");
        p.save(&path).unwrap();
        let q = MachineProfile::load(&path).unwrap();
        assert_eq!(p, q);
        assert_eq!(q.fingerprint(), p.fingerprint());
        // Saving again replaces the file atomically and leaves no temporary behind.
        p.save(&path).unwrap();
        let dir = path.parent().unwrap();
        let names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["profile.json".to_string()]);
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }

    #[test]
    fn load_errors() {
        let path = temp_path("missing");
        assert!(matches!(
            MachineProfile::load(&path),
            Err(ProfileError::NotFound { .. })
        ));
        assert!(matches!(
            MachineProfile::from_json("{", "x"),
            Err(ProfileError::Parse { .. })
        ));
        let mut v: serde_json::Value = serde_json::from_str(&sample().to_json().unwrap()).unwrap();
        v["version"] = serde_json::json!(99);
        assert!(matches!(
            MachineProfile::from_json(&v.to_string(), "x"),
            Err(ProfileError::Version { found: 99, .. })
        ));
        let e: Error = ProfileError::NoLocation.into();
        assert!(matches!(e, Error::Profile(_)));
    }

    #[test]
    fn fingerprint_tracks_devices() {
        let p = sample();
        let f = p.fingerprint();
        assert!(f.starts_with("fnv1a64:") && f.len() == 24, "{f}");
        let mut q = p.clone();
        q.links.clear();
        q.created = "other".into();
        assert_eq!(q.fingerprint(), f, "only devices count");
        q.devices[0].memory_bytes += 1;
        assert_ne!(q.fingerprint(), f);
        // Order independent.
        let a = fingerprint_of([("a", "x", 1), ("b", "y", 2)]);
        let b = fingerprint_of([("b", "y", 2), ("a", "x", 1)]);
        assert_eq!(a, b);
        assert_ne!(a, fingerprint_of([("a", "x", 1)]));
        // Known value: FNV-1a of the empty input is the offset basis.
        assert_eq!(fingerprint_of([]), "fnv1a64:cbf29ce484222325");
    }

    #[test]
    fn lookups_and_models() {
        let p = sample();
        let d = p.device("cuda:0").unwrap();
        let e = d.exec_table(DType::F64).unwrap();
        assert_eq!(e.time(2048), 2.6e-3);
        assert!(d.exec_table(DType::F32).is_some());
        // Complex tables were not measured: four real multiply-adds per complex one, at the
        // real type's rate, so the same flop rate and four times the time.
        assert!(d.exec_table_measured(DType::C64).is_none());
        let z = d.exec_table(DType::C64).unwrap();
        assert_eq!(z.dtype(), DType::C64);
        assert!((z.time(2048) - 4.0 * 2.6e-3).abs() < 1e-15);
        assert!((z.rate(2048) - e.rate(2048)).abs() <= 1e-9 * e.rate(2048));
        let mut measured = d.clone();
        measured.gemm.push(GemmTimes {
            dtype: DType::C64,
            times: vec![(2048, 9.0e-3)],
        });
        assert_eq!(measured.exec_table(DType::C64).unwrap().time(2048), 9.0e-3);
        let h2d = p.link(HOST_LABEL, "cuda:0").unwrap().model();
        assert_eq!(h2d.latency_s, 2.5e-6);
        assert!((h2d.bytes_per_sec() - 5.5e10).abs() < 1.0);
        assert_eq!(
            p.link("cuda:0", HOST_LABEL).unwrap().model().bid_slowdown,
            1.2
        );
        let l = p.link_named("host->cuda0").unwrap();
        assert_eq!(l.slowdown_under("host->cuda1"), 1.6);
        assert_eq!(l.slowdown_under("nope"), 1.0);
        assert!(p.link(HOST_LABEL, "cuda:1").is_none());
    }

    #[test]
    fn default_path_rules() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| PathBuf::from(v))
            }
        };
        assert_eq!(
            default_path_with(env(&[("HETBLAS_PROFILE", "/x/p.json"), ("HOME", "/h")])).unwrap(),
            PathBuf::from("/x/p.json")
        );
        assert_eq!(
            default_path_with(env(&[("XDG_CACHE_HOME", "/c"), ("HOME", "/h")])).unwrap(),
            PathBuf::from("/c/hetblas/profile.json")
        );
        assert_eq!(
            default_path_with(env(&[("XDG_CACHE_HOME", "rel"), ("HOME", "/h")])).unwrap(),
            PathBuf::from("/h/.cache/hetblas/profile.json")
        );
        assert_eq!(
            default_path_with(env(&[("HETBLAS_PROFILE", ""), ("HOME", "/h")])).unwrap(),
            PathBuf::from("/h/.cache/hetblas/profile.json")
        );
        assert_eq!(default_path_with(env(&[])), Err(ProfileError::NoLocation));
    }

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        // 2000-03-01 (after a 400-year leap day) and 2024-02-29 12:34:56.
        assert_eq!(
            rfc3339_utc(UNIX_EPOCH + Duration::from_secs(951_868_800)),
            "2000-03-01T00:00:00Z"
        );
        assert_eq!(
            rfc3339_utc(UNIX_EPOCH + Duration::from_secs(1_709_210_096)),
            "2024-02-29T12:34:56Z"
        );
        assert!(!hostname().is_empty());
    }
}
