//! Projection of the distributed GEMM to more nodes than we have: a simulator of the schedule
//! [`crate::summa`] runs, in virtual time.
//!
//! - **Node**: one rank per node, whose runtime spreads each panel's product over the node's
//!   GPUs. A step's time comes from the calibrated profile of a node ([`NodeModel`]): each
//!   GPU's measured DGEMM table (rate interpolated at the step's volume, slowed by DMA as
//!   calibrated) and its measured host-to-device link, which carries the A panel and the GPU's
//!   columns of the B panel (operands live in host memory; local C stays on the GPUs between
//!   panels and crosses the host links once each way). Products and copies of one step overlap:
//!   a step takes the longer of the two on its slowest GPU.
//! - **Network** ([`NetworkModel`]): each broadcast is a chain in chunks (the transport
//!   [`crate::Transport::Chain`]); a node receives its A panel along its process row and its B
//!   panel along its process column through one network port, so the two add up.
//! - **Schedule**: panels in one order on every node; the broadcasts of panel `p + 1 ..= p + L`
//!   are posted when the product of panel `p` starts, travel one after the other through the
//!   port, and panel `p`'s product starts when the previous product has finished and its panels
//!   have arrived. Every node does the same work at the same time (square-ish grids, equal
//!   blocks), so one timeline stands for all.
//!
//! Not modelled: packing panels in host memory, host memory bandwidth shared by the network
//! card and the GPUs' DMA, network contention beyond one port per node, and jitter.

use crate::network::{NetworkLink, NetworkModel};
use hetblas::{DType, MachineProfile, Trans};
use hetblas_core::energy::Objective;
use hetblas_core::problem::GemmProblem;
use hetblas_core::sim::{ProfiledMachine, Synthetic};
use hetblas_core::{LinkKind, MemorySpace};
use std::collections::HashMap;
use std::sync::Mutex;

/// The tile whose first copies start a runtime call (the runtime's tiles for large DGEMMs are
/// 2048-8192; the ramp is a few milliseconds either way).
const RAMP_TILE: usize = 4096;

type GemmTime = Box<dyn Fn(usize, usize, usize) -> f64 + Send + Sync>;

/// One GPU of a node as the projection sees it.
struct GpuModel {
    /// Seconds of an `m x n x k` DGEMM on the GPU, slowed by DMA as calibrated.
    gemm: GemmTime,
    /// Its DGEMM rate at a large size (flop/s), to share the columns of C among GPUs.
    rate: f64,
    /// Its host-to-device and device-to-host links, slowed by concurrent products as
    /// calibrated.
    h2d: NetworkLink,
    d2h: NetworkLink,
}

/// A node: its GPUs' models from a calibrated profile.
pub struct NodeModel {
    gpus: Vec<GpuModel>,
    /// What the node is (the profile's origin and the number of GPUs).
    pub label: String,
}

impl std::fmt::Debug for NodeModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NodeModel({})", self.label)
    }
}

impl NodeModel {
    /// A node of `gpus` GPUs modelled by the accelerators of `profile` (those with a DGEMM
    /// table and a host-to-device link). With more GPUs than the profile holds, its GPUs are
    /// repeated: a synthetic node of the same GPUs, each with its own host link.
    ///
    /// # Errors
    /// A profile without any usable accelerator, or `gpus == 0`.
    pub fn from_profile(profile: &MachineProfile, gpus: usize) -> Result<Self, String> {
        let mut found = Vec::new();
        for d in profile.devices.iter().filter(|d| d.backend != "cpu") {
            let (Some(table), Some(link)) =
                (d.exec_table(DType::F64), profile.link("host", &d.label))
            else {
                continue;
            };
            // Without a measured way back, the way in (PCIe is symmetric).
            let back = profile.link(&d.label, "host").unwrap_or(link);
            found.push((
                table,
                d.gemm_slowdown_under_dma(DType::F64),
                (link.clone(), back.clone()),
                { d.copy_slowdown_under_gemm(DType::F64) },
            ));
        }
        if found.is_empty() || gpus == 0 {
            return Err(format!(
                "profile from {}: no GPU with a DGEMM table and a host link (or 0 GPUs asked)",
                profile.host
            ));
        }
        let total = found.len();
        let gpus_models = (0..gpus)
            .map(|i| {
                let (table, slow, (link, back), copy_slow) = found[i % total].clone();
                let rate = table.rate(8192);
                GpuModel {
                    gemm: Box::new(move |m, n, k| table.time_mnk(m, n, k) * slow),
                    rate,
                    h2d: NetworkLink {
                        latency_s: link.latency_s,
                        bandwidth: link.bytes_per_sec / copy_slow,
                    },
                    d2h: NetworkLink {
                        latency_s: back.latency_s,
                        bandwidth: back.bytes_per_sec / copy_slow,
                    },
                }
            })
            .collect();
        let synthetic = if gpus > total {
            format!(", synthetic: its {total} GPU(s) repeated")
        } else {
            String::new()
        };
        Ok(NodeModel {
            gpus: gpus_models,
            label: format!("{gpus} GPUs of profile {}{synthetic}", profile.host),
        })
    }

    /// The columns of an `n`-column C each GPU takes, in proportion to its rate.
    fn shares(&self, n: usize) -> Vec<usize> {
        let total: f64 = self.gpus.iter().map(|g| g.rate).sum();
        let mut out: Vec<usize> = self
            .gpus
            .iter()
            .map(|g| (n as f64 * g.rate / total).floor() as usize)
            .collect();
        let mut rest = n - out.iter().sum::<usize>();
        for s in out.iter_mut() {
            if rest == 0 {
                break;
            }
            *s += 1;
            rest -= 1;
        }
        out
    }

    /// Seconds of one panel's product on the node: `m x n` local C (on the GPUs), panels of
    /// width `k` in host memory; plus the call's ramp (its first tiles of A and B in before
    /// its first product).
    pub fn step_time(&self, m: usize, n: usize, k: usize) -> f64 {
        let b = 8.0;
        self.gpus
            .iter()
            .zip(self.shares(n))
            .map(|(g, nj)| {
                if nj == 0 {
                    return 0.0;
                }
                let compute = (g.gemm)(m, nj, k);
                let copy = g.h2d.time(b * (m * k + k * nj) as f64);
                let (tm, tn, tk) = (m.min(RAMP_TILE), nj.min(RAMP_TILE), k.min(RAMP_TILE));
                compute.max(copy) + g.h2d.time(b * (tm * tk + tk * tn) as f64)
            })
            .fold(0.0, f64::max)
    }

    /// Seconds to bring an `m x n` local C onto the GPUs (when `read`: beta != 0) and back
    /// once.
    pub fn c_round_trip(&self, m: usize, n: usize, read: bool) -> f64 {
        self.gpus
            .iter()
            .zip(self.shares(n))
            .map(|(g, nj)| {
                let bytes = 8.0 * (m * nj) as f64;
                g.d2h.time(bytes) + if read { g.h2d.time(bytes) } else { 0.0 }
            })
            .fold(0.0, f64::max)
    }

    /// Seconds of one panel's product with local C in host memory, as one runtime call
    /// streams it: each GPU's columns of C come in (when `read`) and go back while it
    /// multiplies, beside the A panel and its B columns; the step is the slowest of its
    /// product, its copies in and its copies out, plus the call's ramp (the first tiles in
    /// before the first product, the last C tile out after the last).
    pub fn step_time_host_c(&self, m: usize, n: usize, k: usize, read: bool) -> f64 {
        let b = 8.0;
        self.gpus
            .iter()
            .zip(self.shares(n))
            .map(|(g, nj)| {
                if nj == 0 {
                    return 0.0;
                }
                let c = b * (m * nj) as f64;
                let compute = (g.gemm)(m, nj, k);
                let copy_in = g
                    .h2d
                    .time(b * (m * k + k * nj) as f64 + if read { c } else { 0.0 });
                let copy_out = g.d2h.time(c);
                let (tm, tn, tk) = (m.min(RAMP_TILE), nj.min(RAMP_TILE), k.min(RAMP_TILE));
                let ramp = g
                    .h2d
                    .time(b * (tm * tk + tk * tn + if read { tm * tn } else { 0 }) as f64)
                    + g.d2h.time(b * (tm * tn) as f64);
                compute.max(copy_in).max(copy_out) + ramp
            })
            .fold(0.0, f64::max)
    }
}

/// What a node's local products cost in a projection: per panel, and once per call.
pub trait NodeSteps {
    /// Seconds of one panel's product: local C `m x n`, panel width `k`.
    fn step(&self, m: usize, n: usize, k: usize) -> f64;
    /// Seconds per call that nothing overlaps (C's round trip, for C kept on the GPUs).
    fn fixed(&self, m: usize, n: usize) -> f64;
    fn gpus(&self) -> usize;
    fn label(&self) -> &str;
}

/// The analytic node with local C kept on its GPUs between panels.
impl NodeSteps for NodeModel {
    fn step(&self, m: usize, n: usize, k: usize) -> f64 {
        self.step_time(m, n, k)
    }
    fn fixed(&self, m: usize, n: usize) -> f64 {
        self.c_round_trip(m, n, true)
    }
    fn gpus(&self) -> usize {
        self.gpus.len()
    }
    fn label(&self) -> &str {
        &self.label
    }
}

/// A node of GPUs whose local products come from the core simulator
/// ([`hetblas_core::sim`]): each panel's product is planned for a synthetic machine of
/// `gpus` GPUs of a measured kind (the runtime's plan builder, the balancer's shares, the
/// best of a few tiles) and replayed in virtual time with link contention, operands and C in
/// host memory, as one runtime call of hetblas-mpi runs it with C in host memory (C streamed
/// in and out by the call). Replays are cached by shape.
pub struct SimulatedNode {
    machine: ProfiledMachine,
    gpus: usize,
    label: String,
    tiles: Vec<usize>,
    cache: Mutex<HashMap<(usize, usize, usize), f64>>,
}

impl std::fmt::Debug for SimulatedNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SimulatedNode({})", self.label)
    }
}

/// Peer bandwidth between the synthetic GPUs when the profile has none: NVLink between two
/// H200s, measured (389 GB/s).
const NVLINK_BYTES_PER_SEC: f64 = 389e9;

impl SimulatedNode {
    /// `gpus` GPUs like the first accelerator of `profile`, every pair joined by the
    /// profile's fastest peer link (NVLink's 389 GB/s when it has none), each with its own
    /// host link.
    ///
    /// # Errors
    /// A profile without a GPU, or one the synthetic machine cannot be built from.
    pub fn from_profile(profile: &MachineProfile, gpus: usize) -> Result<Self, String> {
        let kind = profile
            .devices
            .iter()
            .find(|d| d.backend != "cpu")
            .map(|d| d.label.clone())
            .ok_or_else(|| format!("profile from {}: no GPU", profile.host))?;
        let peer = profile
            .links
            .iter()
            .filter(|l| l.kind == LinkKind::Peer)
            .map(|l| l.bytes_per_sec)
            .fold(NVLINK_BYTES_PER_SEC, f64::max);
        let synthetic = Synthetic::all_to_all(profile.clone(), &kind, gpus.max(1), peer)
            .profile()
            .map_err(|e| e.to_string())?;
        let machine = ProfiledMachine::new(synthetic, None).map_err(|e| e.to_string())?;
        Ok(SimulatedNode {
            machine,
            gpus: gpus.max(1),
            label: format!(
                "{gpus} GPUs like {kind} of profile {} (synthetic, peer links {:.0} GB/s), \
                 simulated by hetblas-core's simulator",
                profile.host,
                peer / 1e9
            ),
            tiles: vec![2048, 4096, 8192],
            cache: Mutex::new(HashMap::new()),
        })
    }
}

impl NodeSteps for SimulatedNode {
    fn step(&self, m: usize, n: usize, k: usize) -> f64 {
        if m == 0 || n == 0 || k == 0 {
            return 0.0;
        }
        if let Some(&t) = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(m, n, k))
        {
            return t;
        }
        let problem = GemmProblem {
            transa: Trans::N,
            transb: Trans::N,
            m,
            n,
            k,
            dtype: DType::F64,
            beta_zero: false,
            locations: [MemorySpace::HOST; 3],
            sym: None,
        };
        let tiles: Vec<usize> = self
            .tiles
            .iter()
            .copied()
            .filter(|&t| t <= m.max(n).max(k))
            .collect();
        let tiles = if tiles.is_empty() {
            vec![m.max(n).max(k)]
        } else {
            tiles
        };
        let t = self
            .machine
            .best_tile(&problem, &tiles, Objective::Time, None)
            .map_or(f64::INFINITY, |(_, sim)| sim.makespan);
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((m, n, k), t);
        t
    }
    fn fixed(&self, _: usize, _: usize) -> f64 {
        0.0
    }
    fn gpus(&self) -> usize {
        self.gpus
    }
    fn label(&self) -> &str {
        &self.label
    }
}

/// Seconds of a chain broadcast of `bytes` over `group` processes on `link`, in chunks.
pub fn chain_time(link: &NetworkLink, group: usize, bytes: f64, chunk_bytes: f64) -> f64 {
    if group < 2 || bytes <= 0.0 {
        return 0.0;
    }
    let chunk = chunk_bytes.min(bytes);
    (group - 1) as f64 * link.latency_s
        + bytes / link.bandwidth
        + (group - 2) as f64 * chunk / link.bandwidth
}

/// The schedule's knobs.
#[derive(Debug, Clone, Copy)]
pub struct ScheduleParams {
    pub panel: usize,
    pub lookahead: usize,
    pub chunk_bytes: usize,
}

/// One simulated run.
#[derive(Debug, Clone, Copy)]
pub struct Projected {
    pub nodes: usize,
    pub grid: (usize, usize),
    pub n: usize,
    pub panel: usize,
    pub seconds: f64,
    /// Per panel: the node's product and the network time of its two broadcasts.
    pub step_seconds: f64,
    pub comm_seconds: f64,
}

impl Projected {
    pub fn tflops(&self) -> f64 {
        2.0 * (self.n as f64).powi(3) / self.seconds / 1e12
    }
}

/// Simulates DGEMM `n^3` (C = A B + beta C, C read) on `nodes` nodes, one rank each, on the
/// grid the model chooses ([`crate::schedule::choose_grid`]).
pub fn simulate(
    node: &dyn NodeSteps,
    net: &NetworkModel,
    nodes: usize,
    n: usize,
    s: ScheduleParams,
) -> Projected {
    let (p, q) = crate::schedule::choose_grid(nodes, n, n);
    let (m_loc, n_loc) = (n.div_ceil(p), n.div_ceil(q));
    let w = s.panel.clamp(1, n.max(1));
    let panels = n.div_ceil(w);
    let t_step = node.step(m_loc, n_loc, w);
    let link = if nodes > 1 {
        net.link(0, net.ranks_per_node)
    } else {
        net.intra_node
    };
    let chunk = s.chunk_bytes as f64;
    let a_bytes = 8.0 * (m_loc * w) as f64;
    let b_bytes = 8.0 * (w * n_loc) as f64;
    let t_comm = chain_time(&link, q, a_bytes, chunk) + chain_time(&link, p, b_bytes, chunk);
    let depth = s.lookahead.max(1);
    let mut start = vec![0.0f64; panels];
    let (mut comm_end, mut compute_end) = (0.0f64, 0.0f64);
    for i in 0..panels {
        // Posted when the product `depth` panels earlier started (panel 0 at once, panels
        // 1..=depth when the first product starts).
        let posted = if i == 0 {
            0.0
        } else {
            start[i.saturating_sub(depth)]
        };
        comm_end = comm_end.max(posted) + t_comm;
        start[i] = compute_end.max(comm_end);
        compute_end = start[i] + t_step;
    }
    Projected {
        nodes,
        grid: (p, q),
        n,
        panel: w,
        seconds: compute_end + node.fixed(m_loc, n_loc),
        step_seconds: t_step,
        comm_seconds: t_comm,
    }
}

/// [`simulate`] with the best of several panel widths (what tuning the panel would pick).
pub fn simulate_best(
    node: &dyn NodeSteps,
    net: &NetworkModel,
    nodes: usize,
    n: usize,
    panels: &[usize],
    lookahead: usize,
    chunk_bytes: usize,
) -> Projected {
    panels
        .iter()
        .map(|&panel| {
            let s = ScheduleParams {
                panel,
                lookahead,
                chunk_bytes,
            };
            simulate(node, net, nodes, n, s)
        })
        .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
        .unwrap_or_else(|| {
            let s = ScheduleParams {
                panel: 4096,
                lookahead,
                chunk_bytes,
            };
            simulate(node, net, nodes, n, s)
        })
}

/// One row of the scaling table: strong (fixed `n`) and weak (fixed memory per node) scaling
/// at `nodes`, each against one node.
#[derive(Debug, Clone, Copy)]
pub struct ScalingRow {
    pub gpus: usize,
    pub strong: Projected,
    pub strong_efficiency: f64,
    pub weak: Projected,
    pub weak_efficiency: f64,
}

/// Options of [`scaling_table`].
#[derive(Debug, Clone)]
pub struct ScalingOptions {
    pub nodes: Vec<usize>,
    /// The strong-scaling size.
    pub strong_n: usize,
    /// The one-node size of weak scaling: `n = weak_n * sqrt(nodes)` keeps the matrices'
    /// memory per node constant.
    pub weak_n: usize,
    pub panels: Vec<usize>,
    pub lookahead: usize,
    pub chunk_bytes: usize,
}

impl Default for ScalingOptions {
    fn default() -> Self {
        ScalingOptions {
            nodes: vec![4, 8, 16, 32, 64],
            strong_n: 131_072,
            weak_n: 32_768,
            panels: vec![2048, 4096, 8192, 16384, 32768],
            lookahead: 2,
            chunk_bytes: crate::broadcast::DEFAULT_CHUNK_BYTES,
        }
    }
}

/// Strong and weak scaling efficiency of `node` over `net` for each node count.
/// Strong: `T(1) / (N T(N))` at `strong_n`. Weak: the flop rate per node at
/// `weak_n * sqrt(N)` over the rate of one node at `weak_n`.
pub fn scaling_table(
    node: &dyn NodeSteps,
    net: &NetworkModel,
    o: &ScalingOptions,
) -> Vec<ScalingRow> {
    let best = |nodes, n| simulate_best(node, net, nodes, n, &o.panels, o.lookahead, o.chunk_bytes);
    let one_strong = best(1, o.strong_n);
    let one_weak = best(1, o.weak_n);
    o.nodes
        .iter()
        .map(|&nodes| {
            let strong = best(nodes, o.strong_n);
            // Rounded to a multiple of 1024, as a user would size it.
            let wn = ((o.weak_n as f64 * (nodes as f64).sqrt() / 1024.0).round() as usize) * 1024;
            let weak = best(nodes, wn);
            ScalingRow {
                gpus: node.gpus(),
                strong,
                strong_efficiency: one_strong.seconds / (nodes as f64 * strong.seconds),
                weak,
                weak_efficiency: weak.tflops() / nodes as f64 / one_weak.tflops(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200_node(gpus: usize) -> NodeModel {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/profiles/nvidia-h200-x4.json"
        );
        let profile = MachineProfile::load(std::path::Path::new(path)).expect("the H200 profile");
        NodeModel::from_profile(&profile, gpus).expect("a node model")
    }

    fn net(gbs: f64) -> NetworkModel {
        let mut net = NetworkModel::infiniband_ndr(1);
        net.inter_node.bandwidth = gbs * 1e9;
        net
    }

    #[test]
    fn a_node_step_runs_at_its_gpus_measured_rate() {
        let node = h200_node(4);
        assert_eq!(node.gpus(), 4);
        // 32768 x 32768 x 8192 over four GPUs: each at 50-70 TFLOP/s (the measured H200
        // DGEMM), the copies of its operands (~0.5 GiB at ~50 GB/s) shorter than its product.
        let t = node.step_time(32768, 32768, 8192);
        let per_gpu = 2.0 * 32768.0 * 8192.0 * 8192.0 / t;
        assert!(
            per_gpu > 45e12 && per_gpu < 70e12,
            "{per_gpu:e} flop/s per GPU"
        );
        // Twice the GPUs (synthetic), half the time within the rounding of shares.
        let t8 = h200_node(8).step_time(32768, 32768, 8192);
        assert!(t8 < 0.6 * t && t8 > 0.45 * t, "{t8} vs {t}");
    }

    #[test]
    fn the_schedule_is_bound_by_the_slower_of_network_and_products() {
        let node = h200_node(4);
        let s = ScheduleParams {
            panel: 4096,
            lookahead: 2,
            chunk_bytes: 64 << 20,
        };
        let n = 65536;
        let panels = n / 4096;
        // A slow network: every panel waits for its broadcasts, one after the other.
        let slow = simulate(&node, &net(0.5), 16, n, s);
        let trip = node.c_round_trip(n / 4, n / 4, true);
        let want = panels as f64 * slow.comm_seconds + slow.step_seconds + trip;
        assert!(slow.comm_seconds > 10.0 * slow.step_seconds);
        assert!(
            (slow.seconds - want).abs() < 1e-9 * want,
            "{} vs {want}",
            slow.seconds
        );
        // A very fast one: only the first panel's broadcasts are not hidden.
        let fast = simulate(&node, &net(1e6), 16, n, s);
        let want = fast.comm_seconds + panels as f64 * fast.step_seconds + trip;
        assert!(
            (fast.seconds - want).abs() < 1e-9 * want,
            "{} vs {want}",
            fast.seconds
        );
    }

    #[test]
    fn scaling_efficiencies_fall_with_the_network() {
        let node = h200_node(4);
        let o = ScalingOptions::default();
        let ndr = scaling_table(&node, &net(50.0), &o);
        let hdr = scaling_table(&node, &net(25.0), &o);
        let ideal = scaling_table(&node, &net(1e6), &o);
        for ((a, b), c) in ndr.iter().zip(&hdr).zip(&ideal) {
            assert!(b.strong.seconds >= a.strong.seconds - 1e-12);
            assert!(b.weak.seconds >= a.weak.seconds - 1e-12);
            assert!(a.strong_efficiency <= c.strong_efficiency + 1e-9);
            // With a free network only the local products move the efficiency: their rates
            // (the measured tables peak below their largest size, so it may pass 1 a
            // little) and each panel call's first copies, a larger share of smaller calls.
            assert!(
                c.strong_efficiency > 0.75 && c.strong_efficiency < 1.05,
                "{}",
                c.strong_efficiency
            );
        }
        // Strong scaling of a fixed problem on 64 nodes is bound by the network.
        let last = ndr.last().unwrap();
        assert_eq!(last.strong.nodes, 64);
        assert!(last.strong_efficiency < 0.8 * ideal.last().unwrap().strong_efficiency);
    }

    #[test]
    fn chain_time_is_one_transfer_plus_the_pipeline_fill() {
        let l = NetworkLink {
            latency_s: 1e-6,
            bandwidth: 1e9,
        };
        assert_eq!(chain_time(&l, 1, 1e9, 1e6), 0.0);
        // Two processes: one message.
        assert!((chain_time(&l, 2, 1e9, 1e6) - (1e-6 + 1.0)).abs() < 1e-12);
        // Eight: seven hops of latency, six chunks of fill.
        let t = chain_time(&l, 8, 1e9, 1e6);
        assert!((t - (7e-6 + 1.0 + 6e-3)).abs() < 1e-12);
    }
}
