//! The machine side of a replay: the engines tasks occupy (a device's compute engine, a link's
//! DMA engine, the host fold) and how much slower each runs while others are busy (the
//! slowdowns calibration measures).

use crate::error::{Error, Result};
use crate::link::LinkKind;
use crate::memory::MemorySpace;
use crate::model::exec::ExecTable;
use crate::model::link::TileLink;
use crate::plan::QueueId;
use crate::profile::{LinkProfile, MachineProfile, HOST_LABEL};
use crate::scalar::DType;

/// Contention factors never exceed this (PARALiA caps its link slowdowns at 2).
pub const MAX_SLOWDOWN: f64 = 2.0;

/// The engine a task occupies while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Engine {
    /// The compute engine of plan device `d` (its compute queues share it).
    Compute(u16),
    /// The DMA engine of link `i` (index into [`Contention::links`]).
    Link(usize),
    /// The host threads that fold products into C.
    Fold,
}

/// One link of the plan as the simulator sees it.
#[derive(Debug, Clone)]
pub struct SimLink {
    pub src: MemorySpace,
    pub dst: MemorySpace,
    pub profile: LinkProfile,
    pub tile: TileLink,
    /// The plan device at the device end of a host link.
    pub device: Option<u16>,
}

/// The engines of one plan's devices and links on a profiled machine, and what slows what.
#[derive(Debug, Clone)]
pub struct Contention {
    /// The links the plan uses, in order of first use.
    pub links: Vec<SimLink>,
    /// Per plan device: its label in the profile.
    pub labels: Vec<String>,
    /// Per plan device: its GEMM table of the plan's dtype.
    pub tables: Vec<ExecTable>,
    /// Per plan device: its memory space.
    spaces: Vec<MemorySpace>,
    /// Per plan device: slowdown of a product while its host links copy.
    gemm_under_dma: Vec<f64>,
    /// Per plan device: slowdown of a host->device copy while it computes.
    copy_under_gemm: Vec<f64>,
}

impl Contention {
    /// Plan device `d` (in memory space `spaces[d]`) being the profile's device `labels[d]`,
    /// computing in `dtype`.
    ///
    /// # Errors
    /// `Profile` when the profile lacks a device or its GEMM table of `dtype`;
    /// `InvalidInput` when the labels do not match the plan's devices.
    pub fn new(
        profile: &MachineProfile,
        labels: &[String],
        spaces: &[MemorySpace],
        dtype: DType,
    ) -> Result<Contention> {
        if labels.len() != spaces.len() {
            return Err(Error::InvalidInput(format!(
                "simulator: {} device labels for a plan of {} devices",
                labels.len(),
                spaces.len()
            )));
        }
        let mut tables = Vec::new();
        let mut gemm_under_dma = Vec::new();
        let mut copy_under_gemm = Vec::new();
        for l in labels {
            let dp = profile
                .device(l)
                .ok_or_else(|| Error::Profile(format!("the profile has no device {l}")))?;
            tables.push(dp.exec_table(dtype).ok_or_else(|| {
                Error::Profile(format!("the profile has no {dtype} gemm table for {l}"))
            })?);
            gemm_under_dma.push(dp.gemm_slowdown_under_dma(dtype));
            copy_under_gemm.push(dp.copy_slowdown_under_gemm(dtype));
        }
        Ok(Contention {
            links: Vec::new(),
            labels: labels.to_vec(),
            tables,
            spaces: spaces.to_vec(),
            gemm_under_dma,
            copy_under_gemm,
        })
    }

    /// The plan device whose memory is `s` (the first, for the host).
    fn device_of(&self, s: MemorySpace) -> Option<usize> {
        self.spaces.iter().position(|&x| x == s)
    }

    /// The link `src -> dst` (added on first use), as an index into [`Contention::links`].
    ///
    /// # Errors
    /// `Profile` when the profile has no such link; `InvalidInput` for a memory space of no
    /// plan device.
    pub fn link(
        &mut self,
        profile: &MachineProfile,
        src: MemorySpace,
        dst: MemorySpace,
    ) -> Result<usize> {
        if let Some(i) = self.links.iter().position(|l| l.src == src && l.dst == dst) {
            return Ok(i);
        }
        let label_of = |s: MemorySpace| -> Result<String> {
            if s.is_host() {
                return Ok(HOST_LABEL.to_string());
            }
            self.device_of(s)
                .map(|d| self.labels[d].clone())
                .ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "simulator: memory space {s:?} belongs to no device of the plan"
                    ))
                })
        };
        let (sl, dl) = (label_of(src)?, label_of(dst)?);
        let lp = profile
            .link(&sl, &dl)
            .ok_or_else(|| Error::Profile(format!("the profile has no link {sl} -> {dl}")))?;
        let device = match lp.kind {
            LinkKind::HostToDevice => self.device_of(dst),
            LinkKind::DeviceToHost => self.device_of(src),
            LinkKind::Peer => None,
        }
        .map(|d| d as u16);
        self.links.push(SimLink {
            src,
            dst,
            tile: lp.tile_link(),
            profile: lp.clone(),
            device,
        });
        Ok(self.links.len() - 1)
    }

    /// How many times slower than alone the task on `engine` runs while `busy` engines run;
    /// `beside_products`: its own slowdown while its device computes (a 2D copy's, from its
    /// link's tables).
    pub fn slowdown(&self, engine: Engine, beside_products: f64, busy: &[Engine]) -> f64 {
        match engine {
            Engine::Fold => 1.0,
            Engine::Compute(d) => {
                let dma = busy
                    .iter()
                    .any(|&e| matches!(e, Engine::Link(i) if self.links[i].device == Some(d)));
                if dma {
                    self.gemm_under_dma[d as usize].min(MAX_SLOWDOWN)
                } else {
                    1.0
                }
            }
            Engine::Link(i) => {
                let me = &self.links[i];
                let mut f: f64 = 1.0;
                for e in busy {
                    match *e {
                        Engine::Link(j) if j != i => {
                            let other = &self.links[j];
                            // Both directions at once: the measured duplex, and a 2D copy
                            // slow beside products is as slow beside the other direction's
                            // copies (as H200 timelines showed).
                            let s = if other.src == me.dst && other.dst == me.src {
                                me.tile.model.bid_slowdown.max(beside_products)
                            } else {
                                me.profile.slowdown_under(&other.profile.name)
                            };
                            f = f.max(s);
                        }
                        Engine::Compute(d) if me.device == Some(d) => {
                            f = f.max(beside_products);
                            if me.profile.kind == LinkKind::HostToDevice {
                                f = f.max(self.copy_under_gemm[d as usize]);
                            }
                        }
                        _ => {}
                    }
                }
                f.clamp(1.0, MAX_SLOWDOWN)
            }
        }
    }

    /// A queue's name when the caller gives none: "cuda:0/compute0", the link's name, "host
    /// fold".
    pub fn default_queue_name(&self, q: QueueId) -> String {
        match q {
            QueueId::Compute { device, index } => {
                format!("{}/compute{index}", self.labels[device as usize])
            }
            QueueId::Link { src, dst } => self
                .links
                .iter()
                .find(|l| l.src == src && l.dst == dst)
                .map_or_else(|| format!("{src:?}->{dst:?}"), |l| l.profile.name.clone()),
            QueueId::HostFold => "host fold".to_string(),
        }
    }
}
