//! `hetblas-mpi project`: the simulated scaling table of the distributed DGEMM. Prints a
//! Markdown table (and writes it to `--out`), labelled as simulated, with the assumptions it
//! rests on.

use clap::Args;
use hetblas::MachineProfile;
use hetblas_mpi::project::{scaling_table, NodeModel, NodeSteps, ScalingOptions, SimulatedNode};
use hetblas_mpi::{NetworkLink, NetworkModel};
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ProjectArgs {
    /// The measured machine whose GPU kind the nodes are made of (a calibrated profile, e.g.
    /// docs/profiles/nvidia-h200-x4.json).
    #[arg(long)]
    pub profile: PathBuf,
    /// GPUs per node.
    #[arg(long, value_delimiter = ',', default_value = "4,8")]
    pub gpus: Vec<usize>,
    /// Node counts.
    #[arg(long, value_delimiter = ',', default_value = "1,4,8,16,32,64")]
    pub nodes: Vec<usize>,
    /// The size of strong scaling (n^3 fixed).
    #[arg(long, default_value_t = 131_072)]
    pub strong_n: usize,
    /// The one-node size of weak scaling: n = WEAK_N sqrt(nodes), the matrices' memory per
    /// node constant.
    #[arg(long, default_value_t = 32_768)]
    pub weak_n: usize,
    /// Panels in flight ahead of the one being multiplied.
    #[arg(long, default_value_t = 2)]
    pub lookahead: usize,
    /// Chunk of the chain broadcasts, MiB.
    #[arg(long, default_value_t = 64.0)]
    pub chunk_mib: f64,
    /// Bandwidth of one network port, GB/s one way (InfiniBand NDR: 50).
    #[arg(long, default_value_t = 50.0)]
    pub inter_gbs: f64,
    /// Network ports per node, used together (a DGX H200 has one 400 Gb/s port per GPU; 0:
    /// one per GPU).
    #[arg(long, default_value_t = 1)]
    pub ports: usize,
    /// Latency of a message between nodes, microseconds.
    #[arg(long, default_value_t = 1.0)]
    pub inter_latency_us: f64,
    /// The node's local products from the analytic model (C kept on the GPUs between panels)
    /// instead of the core simulator (C streamed by each panel's runtime call).
    #[arg(long)]
    pub analytic: bool,
    /// Also write the table to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(a: &ProjectArgs) -> Result<(), String> {
    let profile = MachineProfile::load(&a.profile).map_err(|e| e.to_string())?;
    let nodes: Vec<Box<dyn NodeSteps>> = a
        .gpus
        .iter()
        .map(|&g| -> Result<Box<dyn NodeSteps>, String> {
            Ok(if a.analytic {
                Box::new(NodeModel::from_profile(&profile, g)?)
            } else {
                Box::new(SimulatedNode::from_profile(&profile, g)?)
            })
        })
        .collect::<Result<_, _>>()?;
    let defaults = ScalingOptions::default();
    let o = ScalingOptions {
        nodes: a.nodes.clone(),
        strong_n: a.strong_n,
        weak_n: a.weak_n,
        lookahead: a.lookahead,
        chunk_bytes: (a.chunk_mib * (1u64 << 20) as f64) as usize,
        ..defaults
    };
    let mut net = NetworkModel::infiniband_ndr(1);
    net.inter_node = NetworkLink {
        latency_s: a.inter_latency_us * 1e-6,
        bandwidth: a.inter_gbs * 1e9,
    };

    let ports_text = if a.ports == 0 {
        "one port per GPU".to_string()
    } else {
        format!("{} port(s) per node", a.ports)
    };
    let mut md = String::new();
    let w = &mut md;
    let _ = writeln!(
        w,
        "**Simulated** (not measured): DGEMM with host operands, one rank per node, SUMMA as \
         hetblas-mpi runs it (chain broadcasts in {} MiB chunks, look-ahead {}, the best panel \
         width of {:?}).\n",
        o.chunk_bytes >> 20,
        o.lookahead,
        o.panels
    );
    let _ = writeln!(w, "Assumptions:");
    let node_text = if a.analytic {
        "per panel, each GPU multiplies its share of local C's columns (in proportion to its \
         measured DGEMM rate, slowed under DMA as calibrated) while its host link brings the A \
         panel and its B columns; a step is the slower of the two on the slowest GPU, plus the \
         first tiles' copy. Local C stays on the GPUs (one round trip per call). The CPU takes \
         no share."
    } else {
        "each panel's local product (local C x panel width, A, B and C in host memory, C read) \
         is planned for a synthetic node of identical GPUs by hetblas's own plan builder and \
         replayed by its simulator (crates/core/src/sim: the measured DGEMM tables, host links \
         with their slowdowns, link contention, the best tile of 2048/4096/8192): what one \
         runtime call of a rank costs. The network and the panel schedule are modelled in \
         hetblas-mpi on top (the core simulator has no network). The CPU takes no share."
    };
    let _ = writeln!(
        w,
        "- Node: calibrated profile `{}` ({}); {node_text} Nodes: {}.",
        a.profile.display(),
        profile.host,
        nodes
            .iter()
            .map(|n| n.label())
            .collect::<Vec<_>>()
            .join("; ")
    );
    let _ = writeln!(
        w,
        "- Network: InfiniBand NDR, {ports_text}, each taken as {:.0} GB/s and {:.1} us per \
         message one way (datasheet figures, not measured); a node's A and B broadcasts share \
         its ports. Panels are broadcast in chains of chunks, posted `look-ahead` panels ahead \
         of the product.",
        net.inter_node.bandwidth / 1e9,
        net.inter_node.latency_s * 1e6
    );
    let _ = writeln!(
        w,
        "- Not modelled: packing panels, host memory bandwidth shared by the NIC and the GPUs' \
         DMA, switch contention, jitter. Grids: the model's (`schedule::choose_grid`, square \
         where the node count allows).\n- Strong scaling: n = {} fixed, efficiency T(1) / (N \
         T(N)). Weak scaling: n = {} sqrt(N) (matrix memory per node constant), efficiency = \
         TFLOP/s per node over one node's at n = {}.\n",
        o.strong_n, o.weak_n, o.weak_n
    );
    let _ = writeln!(
        w,
        "| nodes | GPUs/node | grid | strong n | panel | s | TFLOP/s | strong eff. | weak n | \
         panel | s | TFLOP/s | weak eff. |"
    );
    let _ = writeln!(
        w,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for node in &nodes {
        let ports = if a.ports == 0 { node.gpus() } else { a.ports };
        let mut net = net;
        net.inter_node.bandwidth *= ports as f64;
        for r in scaling_table(node.as_ref(), &net, &o) {
            let (s, k) = (r.strong, r.weak);
            let _ = writeln!(
                w,
                "| {} | {} | {}x{} | {} | {} | {:.3} | {:.1} | {:.2} | {} | {} | {:.3} | {:.1} | {:.2} |",
                s.nodes,
                r.gpus,
                s.grid.0,
                s.grid.1,
                s.n,
                s.panel,
                s.seconds,
                s.tflops(),
                r.strong_efficiency,
                k.n,
                k.panel,
                k.seconds,
                k.tflops(),
                r.weak_efficiency
            );
        }
    }
    print!("{md}");
    if let Some(out) = &a.out {
        std::fs::write(out, &md).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    Ok(())
}
