//! `hetblas-mpi project`: the simulated scaling table of the distributed DGEMM.
//!
//!   hetblas-mpi project --profile docs/profiles/nvidia-h200-x4.json [--gpus 4,8]
//!       [--nodes 4,8,16,32,64] [--strong-n 131072] [--weak-n 32768] [--lookahead 2]
//!       [--chunk-mib 64] [--inter-gbs 50] [--inter-latency-us 1] [--out FILE.md]
//!
//! Prints a Markdown table (and writes it to `--out`), labelled as simulated, with the
//! assumptions it rests on.

use hetblas::MachineProfile;
use hetblas_mpi::project::{scaling_table, NodeModel, ScalingOptions};
use hetblas_mpi::{NetworkLink, NetworkModel};
use std::fmt::Write as _;
use std::path::Path;

pub fn run(args: &[String]) -> Result<(), String> {
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let list = |name: &str, default: &str| -> Result<Vec<usize>, String> {
        opt(name)
            .unwrap_or_else(|| default.into())
            .split(',')
            .map(|v| v.parse().map_err(|_| format!("{name} {v:?}")))
            .collect()
    };
    let num = |name: &str, default: f64| -> Result<f64, String> {
        opt(name).map_or(Ok(default), |v| {
            v.parse().map_err(|_| format!("{name} {v:?}"))
        })
    };
    let path = opt("--profile").ok_or("--profile FILE is required")?;
    let profile = MachineProfile::load(Path::new(&path)).map_err(|e| e.to_string())?;
    let gpus = list("--gpus", "4,8")?;
    let nodes = gpus
        .iter()
        .map(|&g| NodeModel::from_profile(&profile, g))
        .collect::<Result<Vec<_>, _>>()?;
    let defaults = ScalingOptions::default();
    let o = ScalingOptions {
        nodes: list("--nodes", "1,4,8,16,32,64")?,
        strong_n: num("--strong-n", defaults.strong_n as f64)? as usize,
        weak_n: num("--weak-n", defaults.weak_n as f64)? as usize,
        lookahead: num("--lookahead", defaults.lookahead as f64)? as usize,
        chunk_bytes: (num("--chunk-mib", 64.0)? * (1u64 << 20) as f64) as usize,
        ..defaults
    };
    let mut net = NetworkModel::infiniband_ndr(1);
    net.inter_node = NetworkLink {
        latency_s: num("--inter-latency-us", 1.0)? * 1e-6,
        bandwidth: num("--inter-gbs", 50.0)? * 1e9,
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
    let _ = writeln!(
        w,
        "- Node: calibrated profile `{path}` ({}); per panel, each GPU multiplies its share of \
         local C's columns (in proportion to its measured DGEMM rate, slowed under DMA as \
         calibrated) while its host link brings the A panel and its B columns; a step is the \
         slower of the two on the slowest GPU. Local C stays on the GPUs (one round trip). \
         The CPU takes no share. Nodes: {}.",
        profile.host,
        nodes
            .iter()
            .map(|n| n.label.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    );
    let _ = writeln!(
        w,
        "- Network: InfiniBand NDR, one 400 Gb/s port per node, taken as {:.0} GB/s and {:.1} us \
         per message one way (datasheet figures, not measured); a node's A and B broadcasts \
         share its port.",
        net.inter_node.bandwidth / 1e9,
        net.inter_node.latency_s * 1e6
    );
    let _ = writeln!(
        w,
        "- Not modelled: packing panels, host memory bandwidth shared by the NIC and the GPUs' \
         DMA, switch contention, jitter. Grids as square as the node count allows.\n- Strong \
         scaling: n = {} fixed, efficiency T(1) / (N T(N)). Weak scaling: n = {} sqrt(N) \
         (matrix memory per node constant), efficiency = TFLOP/s per node over one node's at \
         n = {}.\n",
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
        for r in scaling_table(node, &net, &o) {
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
    if let Some(out) = opt("--out") {
        std::fs::write(&out, &md).map_err(|e| format!("{out}: {e}"))?;
    }
    Ok(())
}
