//! Profiles of machines we do not have, and of machines that describe themselves.
//!
//! - [`Synthetic`]: N GPUs of a measured kind (one device of a measured profile, its host
//!   links), a link matrix between them, a host fold rate: "8 H200s on NVLink", "4 GPUs
//!   with PCIe Gen6 host links".
//! - [`nominal_profile`]: devices and links that know their own rates (emulated devices):
//!   GEMM tables at the nominal flop rate (triangular tiles at the same rate), links at their
//!   nominal bandwidth and latency.

use crate::device::Device;
use crate::error::{Error, Result};
use crate::link::{Link, LinkKind};
use crate::profile::{DeviceProfile, GemmTimes, LinkProfile, MachineProfile, HOST_LABEL};
use crate::scalar::DType;
use std::sync::Arc;

/// A machine of `count` identical GPUs built from one measured device.
#[derive(Debug, Clone)]
pub struct Synthetic {
    /// The measured profile the GPU kind comes from.
    pub base: MachineProfile,
    /// The device of `base` that every GPU copies ("cuda:0").
    pub kind: String,
    pub count: usize,
    /// `peer[i][j]`: bandwidth (bytes/s) of the peer link i -> j, `None` for no direct link
    /// (copies go through host memory); the diagonal is ignored.
    pub peer: Vec<Vec<Option<f64>>>,
    /// Latency of every peer link (s).
    pub peer_latency_s: f64,
    /// Factor the host links of the GPUs slow each other down by when several copy at once
    /// (1.0: independent, as two H200s' links measured 110 GB/s together, twice one's 55).
    pub host_contention: f64,
    /// Host fold rate (bytes/s); `None`: `base`'s.
    pub host_fold_bytes_per_sec: Option<f64>,
}

impl Synthetic {
    /// `count` GPUs of `kind`, every pair joined by a peer link of `peer_bytes_per_sec`.
    pub fn all_to_all(
        base: MachineProfile,
        kind: &str,
        count: usize,
        peer_bytes_per_sec: f64,
    ) -> Synthetic {
        Synthetic {
            base,
            kind: kind.to_string(),
            count,
            peer: vec![vec![Some(peer_bytes_per_sec); count]; count],
            peer_latency_s: 1.1e-5,
            host_contention: 1.0,
            host_fold_bytes_per_sec: None,
        }
    }

    /// The profile: devices "cuda:0".."cuda:N-1" (the kind's backend), each with the kind's
    /// tables and host links, the peer links of the matrix, and the base's CPU and power
    /// entries where present.
    ///
    /// # Errors
    /// `Profile` when `base` lacks the kind or its host links; `InvalidInput` for a peer matrix
    /// of the wrong size.
    pub fn profile(&self) -> Result<MachineProfile> {
        let kind = self.base.device(&self.kind).ok_or_else(|| {
            Error::Profile(format!("the base profile has no device {}", self.kind))
        })?;
        let h2d = self.base.link(HOST_LABEL, &self.kind);
        let d2h = self.base.link(&self.kind, HOST_LABEL);
        let (Some(h2d), Some(d2h)) = (h2d, d2h) else {
            return Err(Error::Profile(format!(
                "the base profile has no host links of {}",
                self.kind
            )));
        };
        if self.peer.len() != self.count || self.peer.iter().any(|r| r.len() != self.count) {
            return Err(Error::InvalidInput(format!(
                "peer matrix must be {0} x {0}",
                self.count
            )));
        }
        let backend = kind.backend.clone();
        let label = |i: usize| format!("{backend}:{i}");
        let short = |i: usize| format!("{backend}{i}");
        let mut p = MachineProfile {
            created: self.base.created.clone(),
            host: format!("synthetic: {} x {}", self.count, kind.name),
            host_fold_bytes_per_sec: self
                .host_fold_bytes_per_sec
                .or(self.base.host_fold_bytes_per_sec),
            ..MachineProfile::new()
        };
        let kind_power = self.base.power.iter().find(|w| w.label == self.kind);
        for i in 0..self.count {
            p.devices.push(DeviceProfile {
                label: label(i),
                ..kind.clone()
            });
            if let Some(e) = self.base.tri_efficiency.iter().find(|e| e.0 == self.kind) {
                p.tri_efficiency.push((label(i), e.1));
            }
            if let Some(w) = kind_power {
                p.power.push(crate::energy::DevicePower {
                    label: label(i),
                    ..w.clone()
                });
            }
            // Host links: the kind's, renamed; each slowed by every other GPU's host links.
            let names = [format!("host->{}", short(i)), format!("{}->host", short(i))];
            let ends = [
                (HOST_LABEL.to_string(), label(i)),
                (label(i), HOST_LABEL.to_string()),
            ];
            for (k, template) in [h2d, d2h].into_iter().enumerate() {
                let mut under = vec![(names[1 - k].clone(), template.bid_slowdown)];
                if self.host_contention > 1.0 {
                    for j in (0..self.count).filter(|&j| j != i) {
                        under.push((format!("host->{}", short(j)), self.host_contention));
                        under.push((format!("{}->host", short(j)), self.host_contention));
                    }
                }
                p.links.push(LinkProfile {
                    name: names[k].clone(),
                    src_label: ends[k].0.clone(),
                    dst_label: ends[k].1.clone(),
                    slowdown_under: under,
                    ..template.clone()
                });
            }
        }
        for i in 0..self.count {
            for j in (0..self.count).filter(|&j| j != i) {
                let Some(bw) = self.peer[i][j] else { continue };
                p.links.push(LinkProfile {
                    name: format!("{}->{}", short(i), short(j)),
                    src_label: label(i),
                    dst_label: label(j),
                    kind: LinkKind::Peer,
                    latency_s: self.peer_latency_s,
                    bytes_per_sec: bw,
                    bid_slowdown: 1.0,
                    slowdown_under: Vec::new(),
                    samples: Vec::new(),
                    strided: Vec::new(),
                    strided_wide: Vec::new(),
                    strided_busy: Vec::new(),
                    strided_near: Vec::new(),
                    strided_near_busy: Vec::new(),
                    strided_bid_slowdown: None,
                    staged_out: None,
                });
            }
        }
        // The host CPU, when the base has one, with its power.
        for d in self.base.devices.iter().filter(|d| d.backend == "cpu") {
            p.devices.push(d.clone());
            p.power.extend(
                self.base
                    .power
                    .iter()
                    .filter(|w| w.label == d.label)
                    .cloned(),
            );
        }
        Ok(p)
    }
}

/// A profile of devices and links from what they report of themselves: GEMM tables at each
/// device's nominal rate (for the dtypes given), links at their nominal bandwidth (memcpy
/// speed, taken as 20 GB/s, where they have none) and `latency_s`. Devices without a nominal
/// rate are left out; triangular tiles run at the products' rate (as emulated devices run
/// them).
pub fn nominal_profile(
    devices: &[Arc<dyn Device>],
    links: &[Arc<dyn Link>],
    dtypes: &[DType],
    latency_s: f64,
) -> MachineProfile {
    /// What an unthrottled host memcpy of tiles reaches on the CI machines.
    const MEMCPY_BYTES_PER_SEC: f64 = 20e9;
    let mut p = profile_of(
        devices,
        links,
        dtypes,
        latency_s,
        &|d, dt, _| devices[d].nominal_flops(dt),
        &|l| l.nominal_bandwidth().unwrap_or(MEMCPY_BYTES_PER_SEC),
    );
    p.host = "nominal".into();
    for d in &p.devices {
        p.tri_efficiency.push((d.label.clone(), 1.0));
    }
    p
}

/// A profile of `devices` and `links` at the rates given: GEMM tables from `gemm_rate(device
/// index, dtype, tile)` at tiles 16 to 8192 (devices without a rate are left out), links at
/// `bandwidth(link)` and `latency_s`.
pub fn profile_of(
    devices: &[Arc<dyn Device>],
    links: &[Arc<dyn Link>],
    dtypes: &[DType],
    latency_s: f64,
    gemm_rate: &dyn Fn(usize, DType, usize) -> Option<f64>,
    bandwidth: &dyn Fn(&Arc<dyn Link>) -> f64,
) -> MachineProfile {
    let mut p = MachineProfile::new();
    for (i, d) in devices.iter().enumerate() {
        let info = d.info();
        let gemm: Vec<GemmTimes> = dtypes
            .iter()
            .filter_map(|&dt| {
                let times = (4..=13)
                    .map(|e| {
                        let t = 1usize << e;
                        gemm_rate(i, dt, t).map(|rate| (t, dt.gemm_flops(t, t, t) / rate))
                    })
                    .collect::<Option<Vec<_>>>()?;
                Some(GemmTimes { dtype: dt, times })
            })
            .collect();
        if gemm.is_empty() {
            continue;
        }
        p.devices.push(DeviceProfile {
            label: info.label(),
            name: info.name.clone(),
            backend: info.backend.clone(),
            memory_bytes: info.memory_bytes,
            gemm,
            gemm_under_dma: Vec::new(),
            copy_under_gemm: Vec::new(),
        });
    }
    let label_of = |s: crate::memory::MemorySpace| {
        if s.is_host() {
            Some(HOST_LABEL.to_string())
        } else {
            devices
                .iter()
                .find(|d| d.space() == s)
                .map(|d| d.info().label())
        }
    };
    for l in links {
        let (Some(src), Some(dst)) = (label_of(l.src()), label_of(l.dst())) else {
            continue;
        };
        p.links.push(LinkProfile {
            name: l.name().to_string(),
            src_label: src,
            dst_label: dst,
            kind: l.kind(),
            latency_s,
            bytes_per_sec: bandwidth(l),
            bid_slowdown: 1.0,
            slowdown_under: Vec::new(),
            samples: Vec::new(),
            strided: Vec::new(),
            strided_wide: Vec::new(),
            strided_busy: Vec::new(),
            strided_near: Vec::new(),
            strided_near_busy: Vec::new(),
            strided_bid_slowdown: None,
            staged_out: None,
        });
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> MachineProfile {
        let text = include_str!("../../../../docs/profiles/nvidia-h200-x1.json");
        MachineProfile::from_json(text, "nvidia-h200-x1.json").unwrap()
    }

    #[test]
    fn eight_gpus_of_a_measured_kind() {
        let s = Synthetic::all_to_all(base(), "cuda:0", 8, 389e9);
        let p = s.profile().unwrap();
        let gpus: Vec<_> = p.devices.iter().filter(|d| d.backend == "cuda").collect();
        assert_eq!(gpus.len(), 8);
        assert_eq!(gpus[7].label, "cuda:7");
        assert_eq!(gpus[7].gemm, base().device("cuda:0").unwrap().gemm);
        // 8 x 2 host links and 8 x 7 peer links.
        assert_eq!(p.links.len(), 16 + 56);
        let l = p.link("cuda:3", "cuda:5").unwrap();
        assert_eq!(l.bytes_per_sec, 389e9);
        let h = p.link(HOST_LABEL, "cuda:6").unwrap();
        assert_eq!(h.name, "host->cuda6");
        assert_eq!(
            h.bytes_per_sec,
            base().link(HOST_LABEL, "cuda:0").unwrap().bytes_per_sec
        );
        assert!(h.slowdown_under("cuda6->host") > 1.0);
        let bad = Synthetic {
            peer: vec![vec![None; 3]; 3],
            ..s
        };
        assert!(bad.profile().is_err());
    }
}
